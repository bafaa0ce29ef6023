package contextpack

import (
	"encoding/json"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/contextpack/contextpacktest"
)

// BenchmarkBuild is the service's capsule of the bench's context line: Build at the
// default budget and tokenizer (the lines' counts cached, as a serving process's are
// after its first request).
func BenchmarkBuild(b *testing.B) {
	tk, err := Tokenizer(accountable.TokenizerO200k)
	if err != nil {
		b.Fatal(err)
	}
	o := Options{Tokens: tk, Budget: accountable.DefaultContextPayloadTokens, Mode: accountable.ContextDeliveryFull}
	src := contextpacktest.BenchSources() // Build leaves its sources as they are
	p, err := Build(src, o)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(p.Text)), "text-bytes")
	b.ReportMetric(float64(p.Tokens), "text-tokens")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(src, o); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnswer is the data of POST /context-pack's answer to the bench's context line
// (the capsule, its delivery and the full transfer), encoded as the API encoded it
// (encoding=json.Marshal: Fiber's c.JSON) and as it does (encoding=AppendJSON).
func BenchmarkAnswer(b *testing.B) {
	tk, err := Tokenizer(accountable.TokenizerO200k)
	if err != nil {
		b.Fatal(err)
	}
	p, err := Build(contextpacktest.BenchSources(), Options{Tokens: tk, Budget: accountable.DefaultContextPayloadTokens, Mode: accountable.ContextDeliveryFull})
	if err != nil {
		b.Fatal(err)
	}
	out := accountable.ContextPreparation{ContextCapsule: &p.Capsule, ContextDelivery: p.Delivery,
		ContextTransfer: &accountable.ContextTransfer{SchemaVersion: accountable.ContextTransferSchema,
			Mode: string(accountable.ContextDeliveryFull), Version: p.Version, Serialized: &p.Text}}
	b.Run("encoding=json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding=AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			// as api.respond calls it
			if _, err := out.AppendJSON(append(make([]byte, 0, 1<<10), `{"data":`...)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
