package workflows_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/activities"
	"github.com/accountablework/accountable/workflows"
)

func TestLedgerVerificationReturnsTheRecordedResult(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.Ledger
	head := "sha256:0000"
	want := accountable.LedgerVerification{Verified: true, EventCount: 7, HeadHash: &head}
	in := workflows.LedgerVerificationInput{WorkspaceID: "ws-1", VerificationID: "ver-1"}
	env.OnActivity(a.VerifyAndRecordLedger, mock.Anything, activities.VerificationRef{WorkspaceID: "ws-1", VerificationID: "ver-1"}).
		Return(want, nil).Once()

	env.ExecuteWorkflow(workflows.LedgerVerification, in)
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed=%v err=%v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var got accountable.LedgerVerification
	if err := env.GetWorkflowResult(&got); err != nil || got.EventCount != 7 || !got.Verified {
		t.Fatalf("result %+v %v", got, err)
	}
	env.AssertExpectations(t)
}

func TestLedgerVerificationRetriesTransientFailuresAndRecordsAFailure(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	var a *activities.Ledger
	in := workflows.LedgerVerificationInput{WorkspaceID: "ws", VerificationID: "v"}
	ref := activities.VerificationRef{WorkspaceID: "ws", VerificationID: "v"}

	// A transient failure (the database restarting) is retried until it succeeds.
	env := s.NewTestWorkflowEnvironment()
	calls := 0
	env.OnActivity(a.VerifyAndRecordLedger, mock.Anything, ref).Return(
		func(context.Context, activities.VerificationRef) (accountable.LedgerVerification, error) {
			calls++
			if calls < 3 {
				return accountable.LedgerVerification{}, errors.New("connection refused")
			}
			return accountable.LedgerVerification{Verified: true}, nil
		})
	env.ExecuteWorkflow(workflows.LedgerVerification, in)
	if env.GetWorkflowError() != nil || calls != 3 {
		t.Fatalf("err=%v calls=%d", env.GetWorkflowError(), calls)
	}

	// A non-retryable error ends the verification at once, and the failure is recorded.
	env = s.NewTestWorkflowEnvironment()
	calls = 0
	env.OnActivity(a.VerifyAndRecordLedger, mock.Anything, ref).Return(
		func(context.Context, activities.VerificationRef) (accountable.LedgerVerification, error) {
			calls++
			return accountable.LedgerVerification{}, temporal.NewNonRetryableApplicationError("gone", accountable.ECodeNotFound, nil)
		})
	recorded := false
	env.OnActivity(a.FailLedgerVerification, mock.Anything, mock.MatchedBy(func(f activities.FailedVerification) bool {
		return f.WorkspaceID == "ws" && f.VerificationID == "v" && f.Reason != ""
	})).Return(func(context.Context, activities.FailedVerification) error { recorded = true; return nil })
	env.ExecuteWorkflow(workflows.LedgerVerification, in)
	var appErr *temporal.ApplicationError
	if !errors.As(env.GetWorkflowError(), &appErr) || appErr.Type() != accountable.ECodeNotFound || calls != 1 || !recorded {
		t.Fatalf("err=%v calls=%d recorded=%v", env.GetWorkflowError(), calls, recorded)
	}
}

// A history recorded from the released workflow on the real server must replay without a
// non-determinism error against the current code.
func TestLedgerVerificationReplaysRecordedHistory(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(workflows.LedgerVerification, workflow.RegisterOptions{Name: workflows.LedgerVerificationName})
	if err := r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/ledger_verification.history.json"); err != nil {
		t.Fatal(err)
	}
}
