package canonical_test

import (
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/payload"
)

// The canonical form of a work.completed payload, as the ledger computes its digest on
// every completion: a struct with a free-form evidence object inside.
func BenchmarkCanonicalJSONPayload(b *testing.B) {
	hours, cents, cmd := 1.5, int64(1200), "cmd-1"
	evidence := []byte(`{"links":["https://example.com/pr/1","https://example.com/ci/2"],"notes":"shipped","checks":{"tests":true,"lint":true}}`)
	o, err := canonical.Transform(evidence) // as the API decodes it
	if err != nil {
		b.Fatal(err)
	}
	p := payload.WorkCompleted{TaskID: "01a20eb2-8b0f-77a5-8e99-d935ffff857a", Status: "completed", CommandID: &cmd,
		Receipt: accountable.Receipt{ID: "01a20eb2-7486-758e-a1b1-0aa0f7f07708", TaskID: "01a20eb2-8b0f-77a5-8e99-d935ffff857a",
			Status: "completed", Summary: "Shipped the change", MeasuredDurationHours: &hours, CostCents: &cents, Evidence: accountable.Object(o),
			CreatedAt: accountable.NowTime()}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := canonical.JSON(p); err != nil {
			b.Fatal(err)
		}
	}
}

// The canonical form of a stored payload's text, as verification computes it: jsonb's
// spacing takes the long path.
func BenchmarkCanonicalizeStoredPayload(b *testing.B) {
	stored := []byte(`{"status": "completed", "receipt": {"id": "01a20eb2-7486-758e-a1b1-0aa0f7f07708", "status": "completed", "summary": "Shipped the change", "task_id": "01a20eb2-8b0f-77a5-8e99-d935ffff857a", "evidence": {"links": ["https://example.com/pr/1", "https://example.com/ci/2"], "notes": "shipped", "checks": {"lint": true, "tests": true}}, "cost_cents": 1200, "created_at": "2026-11-24T18:04:35.431340Z", "measured_duration_hours": 1.5}, "task_id": "01a20eb2-8b0f-77a5-8e99-d935ffff857a", "command_id": "cmd-1"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := canonical.Transform(stored); err != nil {
			b.Fatal(err)
		}
	}
}
