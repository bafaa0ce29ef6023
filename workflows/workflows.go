// Package workflows holds the Temporal workflow functions with their names, inputs and ID
// builders. Workflow code is deterministic: it does no I/O and reaches the world only
// through activities. Inputs and results are structs with explicit JSON names, so a
// renamed Go field cannot break a running workflow's history.
package workflows

import (
	"encoding/json"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/activities"
)

// DefaultTaskQueue is the task queue the worker polls unless configured otherwise.
const DefaultTaskQueue = "accountable"

// WorkspaceIDAttribute is the search attribute (Keyword) every workflow carries, so an
// operator can filter by workspace in the Temporal UI. The dev server of `make run` and
// compose register it.
const WorkspaceIDAttribute = "WorkspaceId"

// LedgerVerificationName is the registered name of LedgerVerification.
const LedgerVerificationName = "LedgerVerification"

// LedgerVerificationID is the workflow id of one verification: starting it twice starts it once.
func LedgerVerificationID(workspaceID, verificationID string) string {
	return "ledger-verification/" + workspaceID + "/" + verificationID
}

// LedgerVerificationInput is the input of LedgerVerification.
type LedgerVerificationInput struct {
	WorkspaceID    string `json:"workspaceId"`
	VerificationID string `json:"verificationId"`
}

// LedgerVerificationStart is the outbox message that starts the verification of a
// workspace's ledger, once the command that recorded its request has committed.
func LedgerVerificationStart(workspaceID, verificationID string) (accountable.WorkflowMessage, error) {
	input, err := json.Marshal(LedgerVerificationInput{WorkspaceID: workspaceID, VerificationID: verificationID})
	return accountable.WorkflowMessage{
		WorkspaceID: workspaceID, Kind: accountable.StartWorkflow, WorkflowName: LedgerVerificationName,
		WorkflowID: LedgerVerificationID(workspaceID, verificationID), Input: input,
	}, err
}

// LedgerVerification verifies a workspace's ledger in the background and records the
// result (with its ledger event). Its request was recorded by the command that started it.
// When verifying fails for good, it records that the verification failed.
func LedgerVerification(ctx workflow.Context, in LedgerVerificationInput) (accountable.LedgerVerification, error) {
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
	err := workflow.ExecuteActivity(ctx, a.VerifyAndRecordLedger, activities.VerificationRef(in)).Get(ctx, &res)
	if err == nil {
		return res, nil
	}
	failed := activities.FailedVerification{WorkspaceID: in.WorkspaceID, VerificationID: in.VerificationID, Reason: err.Error()}
	if ferr := workflow.ExecuteActivity(ctx, a.FailLedgerVerification, failed).Get(ctx, nil); ferr != nil {
		return res, ferr
	}
	return res, err
}
