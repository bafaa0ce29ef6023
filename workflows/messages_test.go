package workflows_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/workflows"
)

// Messages (what the store's commands send) are the constructors' messages, byte for byte:
// the same workflow names, ids, signals and inputs the API handlers used to hand over.
func TestMessagesAreTheConstructorsMessages(t *testing.T) {
	const ws, id = "0190a3b4-0000-7000-8000-000000000001", "0190a3b4-0000-7000-8000-000000000002"
	due := accountable.TimeOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	h := accountable.Handoff{WorkspaceID: ws, ID: id, Status: accountable.HandoffFulfilled, DueAt: &due}
	run := accountable.RunChanged{RunID: id, JobID: id, Status: accountable.RunSucceeded, CostCents: 12}
	paused := accountable.RunChanged{RunID: id, JobID: id, Status: accountable.RunPaused}
	decided := accountable.DecisionDecided{DecisionID: id, JobID: id, Status: accountable.DecisionApproved}
	m := workflows.Messages{RunTimeout: 90 * time.Second}
	type made func() (accountable.WorkflowMessage, error)
	for _, c := range []struct {
		name      string
		got, want made
	}{
		{"HandoffSLAStart", func() (accountable.WorkflowMessage, error) { return m.HandoffSLAStart(h) },
			func() (accountable.WorkflowMessage, error) { return workflows.HandoffSLAStart(h) }},
		{"HandoffClosed", func() (accountable.WorkflowMessage, error) { return m.HandoffClosed(h) },
			func() (accountable.WorkflowMessage, error) { return workflows.HandoffClosed(h) }},
		{"LaunchDispatchStart", func() (accountable.WorkflowMessage, error) { return m.LaunchDispatchStart(ws, id) },
			func() (accountable.WorkflowMessage, error) {
				return workflows.LaunchDispatchStart(ws, id, 90*time.Second)
			}},
		{"LaunchDispatchStart without a run timeout", func() (accountable.WorkflowMessage, error) {
			return workflows.Messages{}.LaunchDispatchStart(ws, id)
		}, func() (accountable.WorkflowMessage, error) {
			return workflows.LaunchDispatchStart(ws, id, workflows.DefaultRunTimeout)
		}},
		{"RunChanged (finalised)", func() (accountable.WorkflowMessage, error) { return m.RunChanged(ws, id, run) },
			func() (accountable.WorkflowMessage, error) { return workflows.RunChangedSignal(ws, id, run) }},
		{"RunChanged (paused)", func() (accountable.WorkflowMessage, error) { return m.RunChanged(ws, id, paused) },
			func() (accountable.WorkflowMessage, error) { return workflows.RunChangedSignal(ws, id, paused) }},
		{"DecisionDecided", func() (accountable.WorkflowMessage, error) { return m.DecisionDecided(ws, id, decided) },
			func() (accountable.WorkflowMessage, error) {
				return workflows.LaunchSignal(ws, id, workflows.DecisionDecidedSignal, decided)
			}},
		{"WebhookDeliveryStart", func() (accountable.WorkflowMessage, error) { return m.WebhookDeliveryStart(ws, id) },
			func() (accountable.WorkflowMessage, error) { return workflows.WebhookDeliveryStart(ws, id) }},
		{"DiscoveryRunStart", func() (accountable.WorkflowMessage, error) { return m.DiscoveryRunStart(ws, id) },
			func() (accountable.WorkflowMessage, error) { return workflows.DiscoveryRunStart(ws, id) }},
		{"LedgerVerificationStart", func() (accountable.WorkflowMessage, error) { return m.LedgerVerificationStart(ws, id) },
			func() (accountable.WorkflowMessage, error) { return workflows.LedgerVerificationStart(ws, id) }},
	} {
		got, err := c.got()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want, err := c.want()
		if err != nil {
			t.Fatalf("%s (constructor): %v", c.name, err)
		}
		if !reflect.DeepEqual(got, want) || got.WorkflowID == "" {
			t.Errorf("%s: %+v (input %s), want %+v (input %s)", c.name, got, got.Input, want, want.Input)
		}
	}
}
