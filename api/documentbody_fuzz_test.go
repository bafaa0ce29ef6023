package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/accountablework/accountable"
)

// The body of an import, {receipt, workspace_id} (splitDocumentBody): whatever it is, it
// is refused with invalid_json or with validation_failed at /receipt or /workspace_id, or
// the document is the text of the body's member receipt, a JSON object (its own duplicate
// members and invalid text left for its checks), with workspace_id the body's string.
// Where the body is well-formed I-JSON, encoding/json reads the same member and
// workspace_id. It never panics. `make test` runs the seeds; `go test -fuzz
// FuzzSplitDocumentBody ./api` explores further.
func FuzzSplitDocumentBody(f *testing.F) {
	for _, seed := range []string{
		``, ` `, `{}`, `[]`, `null`, `"x"`, `7`, `{"receipt":{}}`, `{"receipt":{"a":1,"a":2}}`, "{\"receipt\":{\"a\":\"\xff\"}}",
		`{"receipt":null}`, `{"receipt":"x"}`, `{"receipt":[{}]}`, `{"receipt":{},"receipt":{}}`, `{"receipt":{},"re\u0063eipt":{}}`,
		`{"receipt":{},"workspace_id":"01a20eb2-7486-758e-a1b1-0aa0f7f07708"}`, `{"receipt":{},"workspace_id":7}`,
		`{"receipt":{},"workspace_id":null}`, `{"workspace_id":"x"}`, `{"receipt":{}} {}`, `{"receipt":{}`, `{"receipt":{"a":}}`,
		`{"idempotency_key":"k","receipt":{"receipt_id":"r"},"other":[1,2,{"x":null}]}`, `{"receipt":{"n":1e400}}`,
		"\ufeff{\"receipt\":{}}", `{"receipt":{}, "workspace_id":"\ud800"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		doc, ws, err := splitDocumentBody(body, receiptMember)
		// encoding/json's reading, where the body is well-formed I-JSON (no duplicate
		// member anywhere, valid UTF-8).
		var m map[string]json.RawMessage
		iJSON := jsontext.Value(body).IsValid() && json.Unmarshal(body, &m) == nil
		if err != nil {
			var e *accountable.Error
			switch code := accountable.ErrorCode(err); code {
			case accountable.ECodeInvalidJSON:
			case accountable.ECodeValidationFailed:
				if !errors.As(err, &e) {
					t.Fatalf("%q: %v", body, err)
				}
				for _, is := range e.Details["issues"].(accountable.Issues) {
					if is.Path != "/receipt" && is.Path != "/workspace_id" {
						t.Fatalf("%q: an issue at %s: %v", body, is.Path, err)
					}
				}
			default:
				t.Fatalf("%q: refused with %s: %v", body, code, err)
			}
			if k := jsontext.Value(m["workspace_id"]).Kind(); iJSON && jsontext.Value(m[receiptMember]).Kind() == '{' && (k == 0 || k == 'n' || k == '"') {
				t.Fatalf("%q: a receipt object (and a string workspace_id, if any), refused: %v", body, err)
			}
			return
		}
		if jsontext.Value(doc).Kind() != '{' || !bytes.Contains(body, doc) ||
			!jsontext.Value(doc).IsValid(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)) {
			t.Fatalf("%q: the document %q is not an object of the body", body, doc)
		}
		if !iJSON {
			return
		}
		if !bytes.Equal(m[receiptMember], doc) {
			t.Fatalf("%q: the document %q, encoding/json's %q", body, doc, m[receiptMember])
		}
		var want *string
		_ = json.Unmarshal(m["workspace_id"], &want)
		if (ws == nil) != (want == nil) || ws != nil && *ws != *want {
			t.Fatalf("%q: workspace_id %v, encoding/json's %v", body, ws, want)
		}
	})
}
