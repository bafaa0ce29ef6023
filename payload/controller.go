package payload

import "github.com/accountablework/accountable"

// The payload types of these events (Types).
func init() {
	describes[ControllerReconciled](accountable.EventControllerReconcile)
}

// ControllerReconciled is the payload of controller.reconciled: one run of a domain's
// controller and what it did.
type ControllerReconciled struct {
	RunID        string                   `json:"run_id"`
	Domain       accountable.Domain       `json:"domain"`
	SpecRevision string                   `json:"spec_revision"`
	Result       string                   `json:"result"`
	NoopReason   string                   `json:"noop_reason"`
	SignalID     *string                  `json:"signal_id"`
	DecisionID   *string                  `json:"decision_id"`
	ReceiptID    *string                  `json:"receipt_id"`
	SourceHealth accountable.SourceHealth `json:"source_health"`
}
