package receipt_test

import (
	"encoding/json"
	"reflect"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/accountablework/accountable/receipt"
	"github.com/accountablework/accountable/receipt/receipttest"
	"github.com/accountablework/accountable/receipt/schema"
)

// The receipt's Go type read from the decoded document (document.go) is what
// go-json-experiment/json decodes from its text (the decoder the service used before),
// error for error and value for value, for every document the schema accepts among the
// fixtures and every single change of them: each value dropped, nulled, emptied or
// replaced by a value of another type or an odd number.
func TestReceiptFromDocumentIsTheDecoders(t *testing.T) {
	s, err := schema.Load()
	if err != nil {
		t.Fatal(err)
	}
	values := []any{nil, true, json.Number("0"), json.Number("-0"), json.Number("1.0"), json.Number("1e2"), json.Number("-5"),
		json.Number("1.5"), json.Number("1e-400"), json.Number("9007199254740991"), json.Number("99999999999999999999"), "",
		"x", "2026-11-24T10:00:00Z", []any{}, []any{nil}, []any{"a"}, map[string]any{}}
	checked, accepted := 0, 0
	for _, name := range []string{"claude-code.json", "codex.json", "openclaw.json"} {
		raw := readReceiptFile(t, "fixtures/"+name)
		fresh := func() map[string]any {
			doc, issue := receipt.DecodeReceiptJSON(raw, 0)
			if issue != nil {
				t.Fatal(issue)
			}
			return doc.(map[string]any)
		}
		paths := receipttest.Paths(fresh())
		docs := []map[string]any{fresh()}
		for _, path := range paths[1:] {
			d := fresh()
			docs = append(docs, receipttest.Put(d, path, nil, true).(map[string]any))
			for _, v := range values {
				d := fresh()
				docs = append(docs, receipttest.Put(d, path, v, false).(map[string]any))
			}
		}
		for _, doc := range docs {
			checked++
			if len(s.CheckReceipt(doc)) > 0 {
				continue
			}
			accepted++
			text, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			var want, got receipt.AgentWorkReceipt
			wantErr := jsonv2.Unmarshal(text, &want)
			gotErr := receipt.ReceiptFromDocument(doc, &got)
			if (wantErr == nil) != (gotErr == nil) || wantErr == nil && !reflect.DeepEqual(want, got) {
				t.Fatalf("%s: decoder %v, from the document %v\n%+v\n%+v\n%.400s", name, wantErr, gotErr, want, got, text)
			}
		}
	}
	t.Logf("%d documents, %d accepted by the schema and compared", checked, accepted)
	if accepted < 900 {
		t.Fatalf("only %d documents compared", accepted)
	}
}
