package schema_test

import (
	"testing"

	"github.com/accountablework/accountable/receipt"
)

// BenchmarkValidateReceipt is one validation of the Codex fixture (the bench's validate
// line), and its stages alone, for profiling: go test -bench . -cpuprofile.
func BenchmarkValidateReceipt(b *testing.B) {
	raw := read(b, "fixtures/codex.json")
	v := validator(b)
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			if !v.Validate(raw).Valid() {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			receipt.DecodeReceiptJSON(raw, 1<<20)
		}
	})
	doc, _ := receipt.DecodeReceiptJSON(raw, 1<<20)
	b.Run("schema", func(b *testing.B) {
		for b.Loop() {
			v.Schema.CheckReceipt(doc)
		}
	})
	b.Run("noschema", func(b *testing.B) {
		v := v
		v.Schema = nil
		for b.Loop() {
			v.Validate(raw)
		}
	})
}
