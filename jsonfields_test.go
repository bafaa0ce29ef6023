package accountable

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/accountablework/accountable/canonical"
)

// The root's JSON members (jsonfields.go, which orders the issues of validation) are the
// members canonical JSON writes, in its order: the two walkers are kept alike.
func TestJSONFieldsAgreeWithCanonicalJSON(t *testing.T) {
	for _, v := range []any{Task{}, CreateArtifact{}, ProcessSpecRevision{}, RevisionInput{}, Event{}, Reconcile{},
		InitiativeProposal{}, ArtifactSummary{}, Handoff{}, struct {
			B  int `json:"b"`
			A  int `json:"a"`
			AB int `json:"ab,omitempty"`
			É  int
			Z  int `json:"-"`
		}{}} {
		var names []string
		for _, f := range jsonFieldsOf(reflect.TypeOf(v)) {
			names = append(names, f.name)
		}
		b, err := canonical.JSON(v)
		if err != nil {
			t.Fatal(err)
		}
		var written []string
		dec := json.NewDecoder(bytes.NewReader(b))
		if _, err := dec.Token(); err != nil { // {
			t.Fatal(err)
		}
		for dec.More() {
			name, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			written = append(written, name.(string))
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatal(err)
			}
		}
		// Members left out (omitempty, omitzero) are the only difference.
		kept := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return !slices.Contains(written, n) })
		if !slices.Equal(kept, written) {
			t.Errorf("%T: members %q, canonical JSON writes %q", v, names, written)
		}
	}
}
