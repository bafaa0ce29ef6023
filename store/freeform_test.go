package store

import (
	"encoding/json"
	"testing"

	"github.com/accountablework/accountable"
)

// What the store reads back from jsonb (its member order, spacing and numbers) decodes
// with its free-form JSON in canonical form, wherever it sits; the rest as it is.
func TestDecodeStoredCanonicalisesFreeForm(t *testing.T) {
	type doc struct {
		Name     string                        `json:"name"`
		Metadata accountable.Object            `json:"metadata"`
		Absent   accountable.Object            `json:"absent"`
		List     []accountable.Object          `json:"list"`
		ByName   map[string]accountable.Object `json:"by_name"`
		Ref      *accountable.RevisionContent  `json:"ref"`
		Other    any                           `json:"other"`
	}
	stored := `{"ref": {"stages": [{"x": {"bb": 1.0, "a": 2}, "key": "k", "name": "n"}], "triggerSpec": {"b": 1, "ab": 2}}, ` +
		`"list": [{"b": 1e2, "ab": "é"}], "name": "a  b", "other": {"b": 1, "ab": 2}, "by_name": {"k": {"b": 1, "ab": 2}}, ` +
		`"metadata": {"b": [1.50, {"d": 1, "c": 2}], "ab": 2}}`
	var d doc
	if err := decodeStored([]byte(stored), &d); err != nil {
		t.Fatal(err)
	}
	stage, _ := json.Marshal(d.Ref.Stages[0])
	for _, c := range [][2]string{
		{string(d.Metadata), `{"ab":2,"b":[1.5,{"c":2,"d":1}]}`}, {string(d.List[0]), `{"ab":"é","b":100}`},
		{string(d.ByName["k"]), `{"ab":2,"b":1}`}, {string(d.Ref.TriggerSpec), `{"ab":2,"b":1}`},
		{string(stage), `{"key":"k","name":"n","x":{"a":2,"bb":1}}`}, {d.Name, "a  b"},
	} {
		if c[0] != c[1] {
			t.Errorf("got %s, want %s", c[0], c[1])
		}
	}
	if d.Absent != nil || d.Other.(map[string]any)["ab"] != 2.0 {
		t.Errorf("absent %s, other %v", d.Absent, d.Other)
	}
}
