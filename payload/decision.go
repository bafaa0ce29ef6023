package payload

import "github.com/accountablework/accountable"

// The payload types of these events (Types).
func init() {
	describes[DecisionProposed](accountable.EventDecisionProposed)
	describes[DecisionDecided](accountable.EventDecisionApproved, accountable.EventDecisionDeclined)
}

// DecisionProposed is the payload of decision.proposed: the pending decision as proposed.
type DecisionProposed = accountable.Decision

// DecisionDecided is the payload of decision.approved and decision.declined.
type DecisionDecided struct {
	DecisionID     string                     `json:"decision_id"`
	Status         accountable.DecisionStatus `json:"status"`
	SelectedOption *string                    `json:"selected_option"`
	Note           *string                    `json:"note"`
	CommandID      *string                    `json:"command_id"`
}
