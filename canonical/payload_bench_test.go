package canonical_test

import (
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/payload"
)

// The canonical form of a work.created payload, as the ledger computes its digest on
// every POST /work: a task with a description, an estimate and a metadata object the API
// canonicalised when it decoded the request.
func BenchmarkCanonicalJSONWorkCreated(b *testing.B) {
	desc, cents, cmd := "Collect the numbers from finance and draft the summary", int64(25000), "cmd-1"
	metadata, err := canonical.Transform([]byte(`{"source":"bench","labels":["finance","q3"],"owner":{"team":"ops","oncall":false}}`))
	if err != nil {
		b.Fatal(err)
	}
	now := accountable.NowTime()
	p := payload.WorkCreated{CommandID: &cmd, Task: accountable.Task{ID: "01a20eb2-8b0f-77a5-8e99-d935ffff857a",
		WorkspaceID: "01a20eb2-7486-758e-a1b1-0aa0f7f07708", Title: "Prepare the quarterly report", Description: &desc,
		Status: accountable.TaskTodo, Priority: accountable.PriorityMedium, Metadata: accountable.Object(metadata),
		EstimatedCostCents: &cents, CreatedAt: now, UpdatedAt: now, AggregateVersion: 1}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := canonical.JSON(p); err != nil {
			b.Fatal(err)
		}
	}
}

// The canonical forms of a handoff's transition and of a launch job's step, as the
// ledger computes their digests on each.
func BenchmarkCanonicalJSONTransitions(b *testing.B) {
	reason, cmd, run, blocked := "Waiting for the security review", "cmd-1", "01a20eb2-8b0f-77a5-8e99-d935ffff8580", accountable.BlockCode("budget")
	result, err := canonical.Transform([]byte(`{"links":["https://example.com/pr/1"],"notes":"reviewed"}`))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		v    any
	}{
		{"handoff", payload.HandoffChanged{HandoffID: "01a20eb2-8b0f-77a5-8e99-d935ffff857a", Action: "fulfill", From: "claimed", To: "fulfilled",
			CurrentActor: accountable.Actor{Type: accountable.ActorHuman, ID: "01a20eb2-7486-758e-a1b1-0aa0f7f07708"}, Reason: &reason,
			Result: accountable.Object(result), MissingProofs: []accountable.ProofKind{"link"}, CommandID: &cmd}},
		{"launch-job", payload.LaunchJobChanged{JobID: "01a20eb2-8b0f-77a5-8e99-d935ffff857b", Status: "blocked", BlockCode: &blocked,
			RunID: &run, ReservedCents: 1500, SettledCents: 0}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := canonical.JSON(c.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
