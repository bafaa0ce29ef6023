// Package workflows holds the Temporal workflow functions with their names, inputs and ID
// builders. Workflow code is deterministic: it does no I/O and reaches the world only
// through activities.
package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/activities"
)

// DefaultTaskQueue is the task queue the worker polls unless configured otherwise.
const DefaultTaskQueue = "accountable"

// LedgerVerificationName is the registered name of LedgerVerification.
const LedgerVerificationName = "LedgerVerification"

// LedgerVerificationID is the workflow id of one verification: starting it twice starts it once.
func LedgerVerificationID(workspaceID, verificationID string) string {
	return "ledger-verification/" + workspaceID + "/" + verificationID
}

// LedgerVerification verifies a workspace's ledger in the background: it records the
// request (with its ledger event), recomputes the ledger and records the result (with its
// ledger event). The API only starts it, so a request the workflow engine did not accept
// leaves nothing behind.
func LedgerVerification(ctx workflow.Context, req accountable.LedgerVerificationRequest) (accountable.LedgerVerification, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		// Transient failures (the database restarting) are retried for up to an hour.
		ScheduleToCloseTimeout: time.Hour,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
		},
	})
	var a *activities.Ledger
	var res accountable.LedgerVerification
	if err := workflow.ExecuteActivity(ctx, a.RecordLedgerVerificationRequest, req).Get(ctx, nil); err != nil {
		return res, err
	}
	err := workflow.ExecuteActivity(ctx, a.VerifyAndRecordLedger, req.WorkspaceID, req.VerificationID).Get(ctx, &res)
	return res, err
}
