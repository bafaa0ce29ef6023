package accountable_test

import (
	"encoding/json"
	"testing"

	"github.com/accountablework/accountable"
)

// benchWorkload is the bench's doctor line request (cmd/bench doctorBody): three
// systems, six actions.
const benchWorkload = `{"schema_version":"workload-diagnosis/0.1","workload":{"name":"Release notes agent",` +
	`"outcome":"Draft release notes from merged pull requests and post them for review.","time_horizon":"recurring",` +
	`"agent_count":2,"coordination":"handoff","systems":[` +
	`{"category":"code_repository","access":"read","side_effect":"none","data_class":"internal"},` +
	`{"category":"document_store","access":"write","side_effect":"reversible","data_class":"internal"},` +
	`{"category":"messaging","access":"write","side_effect":"external","data_class":"confidential"}],` +
	`"authority":{"actions":["research","draft","read_internal_data","write_internal_records","send_external_message","modify_code"],` +
	`"approval_policy":"sensitive_actions","budget_control":"fixed_limit"},` +
	`"accountability":{"evidence":"artifact","acceptance":"human","consequence":"moderate","retention":"long_term"}}}`

// BenchmarkDiagnose is the domain's share of POST /doctor/workload, for profiling.
func BenchmarkDiagnose(b *testing.B) {
	var r accountable.WorkloadRequest
	if err := json.Unmarshal([]byte(benchWorkload), &r); err != nil {
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
