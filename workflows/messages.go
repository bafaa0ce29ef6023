package workflows

import (
	"time"

	"github.com/accountablework/accountable"
)

// Messages makes the outbox messages the store's commands send (store.WorkflowMessages,
// bound to the store in cmd): each method is the message of one of this package's
// workflows, as its constructor makes it.
type Messages struct {
	// RunTimeout is how long a launch waits for its runs to be finalised (LaunchDispatchStart;
	// 0: DefaultRunTimeout).
	RunTimeout time.Duration
}

// HandoffSLAStart is HandoffSLAStart.
func (Messages) HandoffSLAStart(h accountable.Handoff) (accountable.WorkflowMessage, error) {
	return HandoffSLAStart(h)
}

// HandoffClosed is HandoffClosed.
func (Messages) HandoffClosed(h accountable.Handoff) (accountable.WorkflowMessage, error) {
	return HandoffClosed(h)
}

// LaunchDispatchStart is LaunchDispatchStart with m's RunTimeout.
func (m Messages) LaunchDispatchStart(workspaceID, launchID string) (accountable.WorkflowMessage, error) {
	return LaunchDispatchStart(workspaceID, launchID, m.RunTimeout)
}

// RunChanged is RunChangedSignal.
func (Messages) RunChanged(workspaceID, launchID string, f accountable.RunChanged) (accountable.WorkflowMessage, error) {
	return RunChangedSignal(workspaceID, launchID, f)
}

// DecisionDecided is the launch's DecisionDecidedSignal.
func (Messages) DecisionDecided(workspaceID, launchID string, d accountable.DecisionDecided) (accountable.WorkflowMessage, error) {
	return LaunchSignal(workspaceID, launchID, DecisionDecidedSignal, d)
}

// WebhookDeliveryStart is WebhookDeliveryStart.
func (Messages) WebhookDeliveryStart(workspaceID, webhookID string) (accountable.WorkflowMessage, error) {
	return WebhookDeliveryStart(workspaceID, webhookID)
}

// DiscoveryRunStart is DiscoveryRunStart.
func (Messages) DiscoveryRunStart(workspaceID, runID string) (accountable.WorkflowMessage, error) {
	return DiscoveryRunStart(workspaceID, runID)
}

// LedgerVerificationStart is LedgerVerificationStart.
func (Messages) LedgerVerificationStart(workspaceID, verificationID string) (accountable.WorkflowMessage, error) {
	return LedgerVerificationStart(workspaceID, verificationID)
}
