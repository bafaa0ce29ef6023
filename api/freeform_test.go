package api

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/accountablework/accountable"
)

// nestedObject returns n objects nested in each other around inner.
func nestedObject(n int, inner string) string {
	return strings.Repeat(`{"a":`, n) + inner + strings.Repeat(`}`, n)
}

// Free-form JSON in a request (an Object, a process stage's other members) is decoded in
// its canonical form, nested at most MaxFreeFormDepth deep, so a payload that carries it
// stays well within the canonical form's bound; deeper is the refusal validation reports
// at its member, and text without a canonical form is invalid_json.
func TestFreeFormJSONIsCanonicalAndBounded(t *testing.T) {
	type body struct {
		Metadata accountable.Object         `json:"metadata"`
		List     []accountable.Object       `json:"list"`
		Stages   []accountable.ProcessStage `json:"stages"`
	}
	deep := accountable.MaxFreeFormDepth
	tooDeep := accountable.ErrFreeFormTooDeep.Error()
	for _, tc := range []struct {
		name, body string
		code       string // "" for none
		path, msg  string
		metadata   string
		stage      string // the first stage as it renders
	}{
		{name: "canonical", body: `{"metadata": {"b": 1.50, "a": [1e2, "\u00e9"]}, "stages": [{"name": "N", "x": {"z": 1.0, "y": null}, "key": "k"}]}`,
			metadata: `{"a":[100,"é"],"b":1.5}`, stage: `{"key":"k","name":"N","x":{"y":null,"z":1}}`},
		{name: "null", body: `{"metadata": null}`},
		{name: "at the bound", body: `{"metadata": ` + nestedObject(deep, `1`) + `}`, metadata: nestedObject(deep, `1`)},
		{name: "at the bound, an array inside", body: `{"metadata": ` + nestedObject(deep-1, `[]`) + `}`, metadata: nestedObject(deep-1, `[]`)},
		{name: "too deep", body: `{"metadata": ` + nestedObject(deep+1, `1`) + `}`, code: accountable.ECodeValidationFailed, path: "/metadata", msg: tooDeep},
		{name: "far too deep", body: `{"metadata": ` + nestedObject(1000, `1`) + `}`, code: accountable.ECodeValidationFailed, path: "/metadata", msg: tooDeep},
		{name: "in a list", body: `{"list": [{}, ` + nestedObject(deep, `[ ]`) + `]}`, code: accountable.ECodeValidationFailed, path: "/list/1", msg: tooDeep},
		{name: "not an object", body: `{"metadata": [1]}`, code: accountable.ECodeValidationFailed, path: "/metadata", msg: "must be a JSON object"},
		{name: "beyond double", body: `{"metadata": {"a": 1e400}}`, code: accountable.ECodeInvalidJSON},
		{name: "a stage's member too deep", body: `{"stages": [{"key": "k", "name": "n"}, {"key": "k", "name": "n", "x": ` + nestedObject(deep+1, `1`) + `}]}`,
			code: accountable.ECodeValidationFailed, path: "/stages/1", msg: "a stage's x " + tooDeep},
		{name: "a stage's member beyond double", body: `{"stages": [{"key": "k", "name": "n", "x": 1e400}]}`, code: accountable.ECodeInvalidJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b body
			_, err := decodeJSONBody([]byte(tc.body), scopedBody(reflect.TypeFor[body]()), &b, false)
			var ae *accountable.Error
			switch {
			case tc.code == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.code != "" && (!errors.As(err, &ae) || ae.Code != tc.code):
				t.Fatalf("got %v, want %s", err, tc.code)
			case tc.path != "":
				issues, _ := ae.Details["issues"].(accountable.Issues)
				if len(issues) != 1 || issues[0].Path != tc.path || issues[0].Message != tc.msg {
					t.Fatalf("issues %v, want %s: %s", issues, tc.path, tc.msg)
				}
			}
			if tc.code != "" {
				return
			}
			if string(b.Metadata) != tc.metadata {
				t.Errorf("metadata %s, want %s", b.Metadata, tc.metadata)
			}
			if tc.stage != "" {
				if got, _ := json.Marshal(b.Stages[0]); string(got) != tc.stage {
					t.Errorf("stage %s, want %s", got, tc.stage)
				}
			}
		})
	}
}
