package discovery_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/discovery"
)

// benchHandoffEvents are the events of a page the bench's discovery line reads: n
// handoff.proposed events whose payloads are the handoffs POST /handoffs records for its
// seed bodies (cases intake → triage → fix or close), as PostgreSQL's jsonb gives them
// back (its member order, ", " and ": ").
func benchHandoffEvents(n int) []accountable.Event {
	stages := [][2]string{{"intake", "triage"}, {"triage", "fix"}, {"intake", "triage"}, {"triage", "close"}}
	at := accountable.Time{Time: time.Date(2026, 11, 27, 8, 0, 0, 123456000, time.UTC)}
	out := make([]accountable.Event, n)
	for i := range out {
		st := stages[i%4]
		h := accountable.Handoff{SchemaVersion: "1.0.0", ID: fmt.Sprintf("0190c0de-0006-7000-8000-%012x", i),
			WorkspaceID: "0190c0de-0000-7000-8000-000000000001", HandoffKey: fmt.Sprintf("case-%d", i/2),
			FromStageKey: st[0], ToStageKey: st[1], Title: fmt.Sprintf("Case %d: %s to %s", i/2, st[0], st[1]),
			Priority: accountable.HandoffNormal, CurrentActor: accountable.Actor{Type: "user", ID: "0190c0de-0000-7000-8000-000000000002"},
			ProofRequirements: []accountable.ProofRequirement{}, Status: "proposed", AggregateVersion: 1, CreatedAt: at, UpdatedAt: at}
		raw, err := json.Marshal(h)
		if err != nil {
			panic(err)
		}
		out[i] = accountable.Event{EventHeader: accountable.EventHeader{ID: fmt.Sprintf("0190c0de-0007-7000-8000-%012x", i),
			EventType: accountable.EventHandoffProposed, AggregateType: "handoff", AggregateID: h.ID}, Payload: accountable.Object(discovery.JSONBText(raw))}
	}
	return out
}

// BenchmarkTraceEventsOf is the mining activity's work on each page of the bench's
// discovery line (2,000 handoff.proposed events) besides the read: the payloads decoded
// into trace events.
func BenchmarkTraceEventsOf(b *testing.B) {
	events := benchHandoffEvents(2000)
	all := func(accountable.SourceKind) bool { return true }
	b.ReportAllocs()
	for b.Loop() {
		if out, _ := discovery.TraceEventsOf(events, nil, 0, all); len(out) != 4000 {
			b.Fatalf("%d trace events", len(out))
		}
	}
}
