package workload_test

import (
	"encoding/json"
	"os"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/accountablework/accountable/workload"
)

// BenchmarkDiagnose is the domain's share of POST /doctor/workload, for profiling, on the
// workload make bench's doctor line posts.
func BenchmarkDiagnose(b *testing.B) {
	raw, err := os.ReadFile("testdata/release-notes-agent.json") // the bench's doctor line's
	if err != nil {
		b.Fatal(err)
	}
	var r workload.WorkloadRequest
	if err := json.Unmarshal(raw, &r); err != nil {
		b.Fatal(err)
	}
	if err := r.Validate(); err != nil {
		b.Fatal(err)
	}
	b.Run("validate", func(b *testing.B) {
		for b.Loop() {
			_ = r.Validate()
		}
	})
	b.Run("diagnose", func(b *testing.B) {
		for b.Loop() {
			workload.Diagnose(r)
		}
	})
	b.Run("id", func(b *testing.B) {
		for b.Loop() {
			workload.WorkloadDiagnosisID(r)
		}
	})
	d := workload.Diagnose(r)
	b.Run("encode", func(b *testing.B) { // as the API encodes it
		for b.Loop() {
			d.AppendJSON(make([]byte, 0, 8<<10))
		}
	})
	b.Run("encode_reflect", func(b *testing.B) { // encoding/json, the same bytes
		for b.Loop() {
			if _, err := json.Marshal(d); err != nil {
				b.Fatal(err)
			}
		}
	})
	// path is the request's whole CPU in the handler, but Fiber's: the body decoded as the
	// API decodes it (go-json-experiment, unknown members refused), validated, diagnosed
	// and encoded as the API encodes it.
	b.Run("path", func(b *testing.B) {
		for b.Loop() {
			var in workload.WorkloadRequest
			if err := jsonv2.Unmarshal(raw, &in, jsonv2.RejectUnknownMembers(true)); err != nil {
				b.Fatal(err)
			}
			if err := in.Validate(); err != nil {
				b.Fatal(err)
			}
			workload.Diagnose(in).AppendJSON(make([]byte, 0, 8<<10))
		}
	})
}
