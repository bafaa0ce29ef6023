// Package contextpacktest holds the context packs' test data shared by packages: the
// scope of make bench's context line, which contextpack's benchmarks build and api's
// benchmark of the whole request answers.
package contextpacktest

import (
	"fmt"
	"time"

	"github.com/accountablework/accountable"
)

// BenchSources is the bench's context line's scope (cmd/bench/contextpack.go): the first
// task of the committed status-page initiative, with 12 pending and 4 decided decisions on
// the initiative, a full read of the busy workspace's open handoffs (more than the read
// limit), the task's few events and 8 artifacts; no runs or receipts. Its capsule is over
// the default budget, so it is trimmed as the line's is.
func BenchSources() accountable.ContextSources {
	id := func(kind, i int) string { return fmt.Sprintf("0190c0de-%04x-7000-8000-%012x", kind, i) }
	at := accountable.Time{Time: time.Date(2026, 11, 27, 8, 0, 0, 123456000, time.UTC)}
	desc, agent := "Aggregate the components' checks.", "agent-engineering"
	cost := int64(0)
	s := accountable.ContextSources{
		WorkspaceID: id(0, 1), AsOfGlobalSequence: 100000,
		Scope: accountable.ContextScope{Kind: accountable.ContextScopeTask,
			Initiative: &accountable.ContextInitiative{Ref: accountable.Ref("initiative", id(1, 1)), Title: "Public status page",
				Summary: "Ship a public status page that shows the health of the API and its incidents.", Status: "active"},
			Workstream: &accountable.ContextWorkstream{Ref: accountable.Ref("workstream", id(2, 1)), Name: "Status API",
				Goal: "Expose component health and incidents as JSON.", Domain: "engineering", AgentName: &agent},
			Task: &accountable.ContextTask{Ref: accountable.Ref("task", id(3, 1)), Title: "Implement the health endpoint", Description: &desc,
				Status: "todo", Priority: "high", EstimatedCostCents: &cost, AggregateVersion: 1}},
	}
	urgencies := []string{"critical", "urgent", "urgent", "standard", "standard", "standard", "standard", "standard", "deferred", "standard", "urgent", "standard"}
	for i, u := range urgencies {
		s.Pending = append(s.Pending, accountable.ContextDecision{Ref: accountable.Ref("decision", id(4, i)),
			Summary: fmt.Sprintf("Status page question %d: pick the incident severity shown to the public", i+1),
			Status:  "pending", Provenance: "requested", Urgency: u})
	}
	for i := range 4 {
		status := "approved"
		if i == 3 {
			status = "declined"
		}
		s.Decided = append(s.Decided, accountable.ContextDecision{Ref: accountable.Ref("decision", id(5, i)),
			Summary: fmt.Sprintf("Decided %d: host the status page apart from the API", i+1), Status: status, Provenance: "decided", Urgency: "standard"})
	}
	for i := range accountable.ContextSectionReadLimit {
		due := accountable.Time{Time: at.Add(time.Duration(i) * time.Minute)}
		s.Handoffs = append(s.Handoffs, accountable.ContextHandoff{Ref: accountable.Ref("handoff", id(6, i)),
			Summary: fmt.Sprintf("Case %d: intake to triage", 9000+i), Status: "open", Priority: "normal", From: "intake", To: "triage", DueAt: &due})
	}
	s.MoreOfEach.OpenRisks = 1
	for i, typ := range []string{"task.created", "task.updated"} {
		s.Events = append(s.Events, accountable.ContextEvent{Ref: accountable.Ref("ledger_event", id(7, i)), EventType: typ, AggregateType: "task",
			AggregateID: id(3, 1), AggregateVersion: int64(2 - i), RecordedAt: at, EventHash: fmt.Sprintf("sha256:%064x", 0xabcdef*(i+1))})
	}
	for i := range 8 {
		s.Artifacts = append(s.Artifacts, accountable.ContextArtifact{Ref: accountable.Ref("artifact", id(8, i)),
			Summary: fmt.Sprintf("Status page note %d", i+1), ArtifactType: "document", Status: "draft", Version: 1})
	}
	return s
}
