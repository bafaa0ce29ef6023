package activities

import (
	"context"

	"github.com/accountablework/accountable"
)

// HandoffStore is what the handoff activities need.
type HandoffStore interface {
	BreachHandoffSLA(ctx context.Context, workspaceID, handoffID string) (accountable.Handoff, error)
}

// Handoffs holds the handoff activities.
type Handoffs struct {
	Store HandoffStore
}

// HandoffRef names a handoff.
type HandoffRef struct {
	WorkspaceID string `json:"workspaceId"`
	HandoffID   string `json:"handoffId"`
}

// BreachHandoffSLA escalates a handoff that came due unfulfilled (one command, idempotent:
// a handoff that has ended or was breached before is left as it is). It returns the
// handoff's status after.
func (a *Handoffs) BreachHandoffSLA(ctx context.Context, in HandoffRef) (accountable.HandoffStatus, error) {
	h, err := a.Store.BreachHandoffSLA(ctx, in.WorkspaceID, in.HandoffID)
	return h.Status, retryable(err)
}
