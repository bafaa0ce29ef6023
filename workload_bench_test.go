package accountable_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/accountablework/accountable"
)

// BenchmarkDiagnose is the domain's share of POST /doctor/workload, for profiling, on the
// workload make bench's doctor line posts.
func BenchmarkDiagnose(b *testing.B) {
	raw, err := os.ReadFile("testdata/workload/release-notes-agent.json") // the bench's doctor line's
	if err != nil {
		b.Fatal(err)
	}
	var r accountable.WorkloadRequest
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
			accountable.Diagnose(r)
		}
	})
	b.Run("id", func(b *testing.B) {
		for b.Loop() {
			accountable.WorkloadDiagnosisID(r)
		}
	})
	d := accountable.Diagnose(r)
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(d); err != nil {
				b.Fatal(err)
			}
		}
	})
}
