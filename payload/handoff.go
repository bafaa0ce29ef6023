package payload

import "github.com/accountablework/accountable"

// The payload types of these events (Types).
func init() {
	describes[HandoffProposed](accountable.EventHandoffProposed)
	describes[HandoffSLABreached](accountable.EventHandoffSLABreached)
	for _, a := range accountable.HandoffActions {
		describes[HandoffChanged](a.Event())
	}
}

// HandoffProposed is the payload of handoff.proposed: the handoff as proposed.
type HandoffProposed = accountable.Handoff

// HandoffChanged is the payload of a handoff's transitions (handoff.claimed, .fulfilled,
// .returned, .escalated, .cancelled: accountable.HandoffAction.Event).
type HandoffChanged struct {
	HandoffID     string                    `json:"handoff_id"`
	Action        accountable.HandoffAction `json:"action"`
	From          accountable.HandoffStatus `json:"from"`
	To            accountable.HandoffStatus `json:"to"`
	CurrentActor  accountable.Actor         `json:"current_actor"`
	Reason        *string                   `json:"reason"`
	Result        accountable.Object        `json:"result,omitzero"`
	MissingProofs []accountable.ProofKind   `json:"missing_proofs,omitzero"`
	CommandID     *string                   `json:"command_id"`
}

// HandoffSLABreached is the payload of handoff.sla_breached.
type HandoffSLABreached struct {
	HandoffID  string                    `json:"handoff_id"`
	DueAt      accountable.Time          `json:"due_at"`
	DecisionID string                    `json:"decision_id"`
	Status     accountable.HandoffStatus `json:"status"`
}
