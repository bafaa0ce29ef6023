package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// fakeMessages are WorkflowMessages for the store's tests, whose outbox no relay reads:
// each message names the method that made it (its workflow) and its ids.
type fakeMessages struct{}

var _ store.WorkflowMessages = fakeMessages{}

func fakeMessage(kind accountable.WorkflowMessageKind, name, workspaceID, id string) (accountable.WorkflowMessage, error) {
	return accountable.WorkflowMessage{WorkspaceID: workspaceID, Kind: kind, WorkflowName: name,
		WorkflowID: name + "/" + workspaceID + "/" + id, Input: []byte(`{}`)}, nil
}

func (fakeMessages) HandoffSLAStart(h accountable.Handoff) (accountable.WorkflowMessage, error) {
	return fakeMessage(accountable.StartWorkflow, "HandoffSLAStart", h.WorkspaceID, h.ID)
}

func (fakeMessages) HandoffClosed(h accountable.Handoff) (accountable.WorkflowMessage, error) {
	return fakeMessage(accountable.SignalWorkflow, "HandoffClosed", h.WorkspaceID, h.ID)
}

func (fakeMessages) LaunchDispatchStart(workspaceID, launchID string) (accountable.WorkflowMessage, error) {
	return fakeMessage(accountable.StartWorkflow, "LaunchDispatchStart", workspaceID, launchID)
}

func (fakeMessages) RunChanged(workspaceID, launchID string, _ accountable.RunChanged) (accountable.WorkflowMessage, error) {
	return fakeMessage(accountable.SignalWorkflow, "RunChanged", workspaceID, launchID)
}

func (fakeMessages) DecisionDecided(workspaceID, launchID string, _ accountable.DecisionDecided) (accountable.WorkflowMessage, error) {
	return fakeMessage(accountable.SignalWorkflow, "DecisionDecided", workspaceID, launchID)
}

func (fakeMessages) WebhookDeliveryStart(workspaceID, webhookID string) (accountable.WorkflowMessage, error) {
	return fakeMessage(accountable.StartWorkflow, "WebhookDeliveryStart", workspaceID, webhookID)
}

func (fakeMessages) DiscoveryRunStart(workspaceID, runID string) (accountable.WorkflowMessage, error) {
	return fakeMessage(accountable.StartWorkflow, "DiscoveryRunStart", workspaceID, runID)
}

func (fakeMessages) LedgerVerificationStart(workspaceID, verificationID string) (accountable.WorkflowMessage, error) {
	return fakeMessage(accountable.StartWorkflow, "LedgerVerificationStart", workspaceID, verificationID)
}

// A command that sends a workflow message on a DB without bound WorkflowMessages is
// refused with a clear error and leaves nothing: no event, no row, no message (a state
// never commits without its workflow). Bound, the same command commits with the message
// the bound messages made.
func TestCommandWithoutWorkflowMessagesIsRefused(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	p := storetest.NewTenant(t, db).Principal
	outbox := func() (ids []string) {
		t.Helper()
		rows, err := storetest.Conn(t).Query(ctx, `SELECT workflow_id FROM outbox WHERE workspace_id = $1 ORDER BY id`, p.WorkspaceID)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	register := func() (accountable.WebhookRegistration, error) {
		reg, _, err := db.RegisterWebhook(ctx, p, nil, accountable.RegisterWebhook{URL: "https://hooks.example.test/in", EventTypes: []string{"*"}}, 10,
			func(string) []byte { return []byte("sealed") })
		return reg, err
	}

	before := ledgerEvents(t, p.WorkspaceID)
	if _, err := register(); !errors.Is(err, store.ErrNoWorkflowMessages) {
		t.Fatalf("registered without bound messages: error %v, want %v", err, store.ErrNoWorkflowMessages)
	}
	if n := ledgerEvents(t, p.WorkspaceID) - before; n != 0 {
		t.Fatalf("the refused command wrote %d events", n)
	}
	if hooks, err := db.ListWebhooks(ctx, p.WorkspaceID); err != nil || len(hooks) != 0 {
		t.Fatalf("the refused command left endpoints %v (%v)", hooks, err)
	}
	if ids := outbox(); len(ids) != 0 {
		t.Fatalf("the refused command left messages %v", ids)
	}

	db.UseWorkflowMessages(fakeMessages{})
	reg, err := register()
	if err != nil {
		t.Fatal(err)
	}
	if ids, want := outbox(), "WebhookDeliveryStart/"+p.WorkspaceID+"/"+reg.Webhook.ID; len(ids) != 1 || ids[0] != want {
		t.Fatalf("outbox %v, want [%s]", ids, want)
	}
}
