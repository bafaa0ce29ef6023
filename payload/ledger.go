package payload

import "github.com/accountablework/accountable"

// The payload types of these events (Types).
func init() {
	describes[LedgerVerificationRequested](accountable.EventLedgerVerificationRequested)
	describes[LedgerVerificationCompleted](accountable.EventLedgerVerificationCompleted)
	describes[LedgerVerificationFailed](accountable.EventLedgerVerificationFailed)
}

// Payloads of background ledger verifications.
type (
	// LedgerVerificationRequested is the payload of ledger.verification_requested.
	LedgerVerificationRequested struct {
		VerificationID string           `json:"verification_id"`
		RequestedAt    accountable.Time `json:"requested_at"`
		WorkflowID     string           `json:"workflow_id"`
	}
	// LedgerVerificationCompleted is the payload of ledger.verification_completed: the
	// result's fields beside the verification's id.
	LedgerVerificationCompleted struct {
		VerificationID string `json:"verification_id"`
		accountable.LedgerVerification
	}
	// LedgerVerificationFailed is the payload of ledger.verification_failed.
	LedgerVerificationFailed struct {
		VerificationID string `json:"verification_id"`
		Reason         string `json:"reason"`
	}
)
