// Package activities holds the Temporal activities: structs whose fields are small
// interfaces, declared here and satisfied by the store (bound in cmd). Activities are
// idempotent, so Temporal may retry them freely. Their inputs are structs with explicit
// JSON names.
package activities

import (
	"context"

	"go.temporal.io/sdk/temporal"

	"github.com/accountablework/accountable"
)

// LedgerStore is what the ledger activities need.
type LedgerStore interface {
	VerifyLedger(ctx context.Context, workspaceID string, scope accountable.LedgerScope) (accountable.LedgerVerification, error)
	CompleteLedgerVerification(ctx context.Context, workspaceID, id string, res accountable.LedgerVerification) error
	FailLedgerVerification(ctx context.Context, workspaceID, id, reason string) error
}

// Ledger holds the ledger activities.
type Ledger struct {
	Store LedgerStore
}

// VerificationRef names one background verification.
type VerificationRef struct {
	WorkspaceID    string `json:"workspaceId"`
	VerificationID string `json:"verificationId"`
}

// VerifyAndRecordLedger recomputes the workspace's ledger and records the result of the
// verification (with its ledger event) once; a retry after success changes nothing.
func (a *Ledger) VerifyAndRecordLedger(ctx context.Context, in VerificationRef) (accountable.LedgerVerification, error) {
	res, err := a.Store.VerifyLedger(ctx, in.WorkspaceID, accountable.LedgerScope{})
	if err != nil {
		return res, retryable(err)
	}
	if err := a.Store.CompleteLedgerVerification(ctx, in.WorkspaceID, in.VerificationID, res); err != nil {
		return res, retryable(err)
	}
	return res, nil
}

// FailedVerification is a verification that ended without a result.
type FailedVerification struct {
	WorkspaceID    string `json:"workspaceId"`
	VerificationID string `json:"verificationId"`
	Reason         string `json:"reason"`
}

// FailLedgerVerification records that the verification failed (with its ledger event), once.
func (a *Ledger) FailLedgerVerification(ctx context.Context, in FailedVerification) error {
	return retryable(a.Store.FailLedgerVerification(ctx, in.WorkspaceID, in.VerificationID, in.Reason))
}

// retryable marks domain errors (invalid, not found, conflicts) as not worth retrying;
// anything else (the database being down, a 429: the workspace's long reads queue one at a
// time) is retried by Temporal.
func retryable(err error) error {
	if err == nil {
		return nil
	}
	code := accountable.ErrorCode(err)
	if status := accountable.ErrorStatus(code); code != accountable.ECodeInternal && status >= 400 && status < 500 && status != 429 {
		return temporal.NewNonRetryableApplicationError(err.Error(), code, err)
	}
	return err
}
