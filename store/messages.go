package store

import (
	"errors"

	"github.com/accountablework/accountable"
)

// WorkflowMessages makes the workflow messages the store's commands write to the outbox
// (tx.Send), one method per message. The store declares what it needs and workflows
// provides it (workflows.Messages: the workflow names, ids and inputs are theirs); cmd
// binds it with UseWorkflowMessages, once per DB. A command calls it inside its
// transaction, where it sends the message.
type WorkflowMessages interface {
	// HandoffSLAStart starts the SLA timer of handoff h, which has come due.
	HandoffSLAStart(h accountable.Handoff) (accountable.WorkflowMessage, error)
	// HandoffClosed tells the SLA timer of handoff h that it ended (fulfilled or cancelled).
	HandoffClosed(h accountable.Handoff) (accountable.WorkflowMessage, error)
	// LaunchDispatchStart starts a launch's LaunchDispatch workflow.
	LaunchDispatchStart(workspaceID, launchID string) (accountable.WorkflowMessage, error)
	// RunChanged tells a run's launch of the run's new status (ended, paused or resumed).
	RunChanged(workspaceID, launchID string, f accountable.RunChanged) (accountable.WorkflowMessage, error)
	// DecisionDecided tells a launch that the decision blocking one of its jobs was decided.
	DecisionDecided(workspaceID, launchID string, d accountable.DecisionDecided) (accountable.WorkflowMessage, error)
	// WebhookDeliveryStart starts the deliveries of a registered webhook endpoint.
	WebhookDeliveryStart(workspaceID, webhookID string) (accountable.WorkflowMessage, error)
	// DiscoveryRunStart starts a discovery run's workflow.
	DiscoveryRunStart(workspaceID, runID string) (accountable.WorkflowMessage, error)
	// LedgerVerificationStart starts a background verification of the workspace's ledger.
	LedgerVerificationStart(workspaceID, verificationID string) (accountable.WorkflowMessage, error)
}

// UseWorkflowMessages binds the messages the DB's commands send (cmd binds
// workflows.Messages). Call it before the DB serves commands.
func (db *DB) UseWorkflowMessages(m WorkflowMessages) { db.messages = m }

// workflowMessages returns the bound messages, or, on a DB without them, messages that
// fail: a command that needs one is refused with errNoWorkflowMessages (and rolled back),
// never committed without its message.
func (db *DB) workflowMessages() WorkflowMessages {
	if db.messages == nil {
		return unboundMessages{}
	}
	return db.messages
}

// errNoWorkflowMessages is the error of a command that sends a workflow message on a DB
// without bound WorkflowMessages: a wiring bug. (The command path prefixes it "store: ".)
var errNoWorkflowMessages = errors.New("no WorkflowMessages bound to this DB (DB.UseWorkflowMessages; cmd binds workflows.Messages): " +
	"a command that sends a workflow message cannot run")

// unboundMessages are the messages of a DB without bound ones: each is errNoWorkflowMessages.
type unboundMessages struct{}

func (unboundMessages) HandoffSLAStart(accountable.Handoff) (accountable.WorkflowMessage, error) {
	return accountable.WorkflowMessage{}, errNoWorkflowMessages
}

func (unboundMessages) HandoffClosed(accountable.Handoff) (accountable.WorkflowMessage, error) {
	return accountable.WorkflowMessage{}, errNoWorkflowMessages
}

func (unboundMessages) LaunchDispatchStart(string, string) (accountable.WorkflowMessage, error) {
	return accountable.WorkflowMessage{}, errNoWorkflowMessages
}

func (unboundMessages) RunChanged(string, string, accountable.RunChanged) (accountable.WorkflowMessage, error) {
	return accountable.WorkflowMessage{}, errNoWorkflowMessages
}

func (unboundMessages) DecisionDecided(string, string, accountable.DecisionDecided) (accountable.WorkflowMessage, error) {
	return accountable.WorkflowMessage{}, errNoWorkflowMessages
}

func (unboundMessages) WebhookDeliveryStart(string, string) (accountable.WorkflowMessage, error) {
	return accountable.WorkflowMessage{}, errNoWorkflowMessages
}

func (unboundMessages) DiscoveryRunStart(string, string) (accountable.WorkflowMessage, error) {
	return accountable.WorkflowMessage{}, errNoWorkflowMessages
}

func (unboundMessages) LedgerVerificationStart(string, string) (accountable.WorkflowMessage, error) {
	return accountable.WorkflowMessage{}, errNoWorkflowMessages
}
