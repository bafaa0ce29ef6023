// Package activities holds the Temporal activities: structs whose fields are small
// interfaces, declared here and satisfied by the store (bound in cmd). Activities are
// idempotent, so Temporal may retry them freely.
package activities

import (
	"context"

	"go.temporal.io/sdk/temporal"

	"github.com/accountablework/accountable"
)

// LedgerStore is what the ledger activities need.
type LedgerStore interface {
	RecordLedgerVerificationRequest(ctx context.Context, req accountable.LedgerVerificationRequest) error
	VerifyLedger(ctx context.Context, workspaceID string, scope accountable.LedgerScope) (accountable.LedgerVerification, error)
	CompleteLedgerVerification(ctx context.Context, workspaceID, id string, res accountable.LedgerVerification) error
}

// Ledger holds the ledger activities.
type Ledger struct {
	Store LedgerStore
}

// RecordLedgerVerificationRequest records the request and its ledger event once.
func (a *Ledger) RecordLedgerVerificationRequest(ctx context.Context, req accountable.LedgerVerificationRequest) error {
	return retryable(a.Store.RecordLedgerVerificationRequest(ctx, req))
}

// VerifyAndRecordLedger recomputes the workspace's ledger and records the result of the
// verification (with its ledger event) once; a retry after success changes nothing.
func (a *Ledger) VerifyAndRecordLedger(ctx context.Context, workspaceID, verificationID string) (accountable.LedgerVerification, error) {
	res, err := a.Store.VerifyLedger(ctx, workspaceID, accountable.LedgerScope{})
	if err != nil {
		return res, retryable(err)
	}
	if err := a.Store.CompleteLedgerVerification(ctx, workspaceID, verificationID, res); err != nil {
		return res, retryable(err)
	}
	return res, nil
}

// retryable marks domain errors (invalid, not found, conflicts) as not worth retrying;
// anything else (the database being down) is retried by Temporal.
func retryable(err error) error {
	if err == nil {
		return nil
	}
	code := accountable.ErrorCode(err)
	if status := accountable.ErrorStatus(code); code != accountable.ECodeInternal && status >= 400 && status < 500 {
		return temporal.NewNonRetryableApplicationError(err.Error(), code, err)
	}
	return err
}
