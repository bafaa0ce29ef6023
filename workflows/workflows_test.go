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
	req := accountable.LedgerVerificationRequest{WorkspaceID: "ws-1", VerificationID: "ver-1",
		RequestedBy: accountable.Actor{Type: accountable.ActorHuman, ID: "u-1"}}
	// The request is recorded before the ledger is verified.
	recorded := false
	env.OnActivity(a.RecordLedgerVerificationRequest, mock.Anything, req).Return(func(context.Context, accountable.LedgerVerificationRequest) error {
		recorded = true
		return nil
	}).Once()
	env.OnActivity(a.VerifyAndRecordLedger, mock.Anything, "ws-1", "ver-1").Return(
		func(context.Context, string, string) (accountable.LedgerVerification, error) {
			if !recorded {
				t.Error("verified before the request was recorded")
			}
			return want, nil
		}).Once()

	env.ExecuteWorkflow(workflows.LedgerVerification, req)
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed=%v err=%v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var got accountable.LedgerVerification
	if err := env.GetWorkflowResult(&got); err != nil || got.EventCount != 7 || !got.Verified {
		t.Fatalf("result %+v %v", got, err)
	}
	env.AssertExpectations(t)
}

func TestLedgerVerificationRetriesTransientFailuresButNotDomainErrors(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	var a *activities.Ledger

	req := accountable.LedgerVerificationRequest{WorkspaceID: "ws", VerificationID: "v"}

	// A transient failure (the database restarting) is retried until it succeeds.
	env := s.NewTestWorkflowEnvironment()
	env.OnActivity(a.RecordLedgerVerificationRequest, mock.Anything, req).Return(nil)
	calls := 0
	env.OnActivity(a.VerifyAndRecordLedger, mock.Anything, "ws", "v").Return(
		func(_ context.Context, _, _ string) (accountable.LedgerVerification, error) {
			calls++
			if calls < 3 {
				return accountable.LedgerVerification{}, errors.New("connection refused")
			}
			return accountable.LedgerVerification{Verified: true}, nil
		})
	env.ExecuteWorkflow(workflows.LedgerVerification, req)
	if env.GetWorkflowError() != nil || calls != 3 {
		t.Fatalf("err=%v calls=%d", env.GetWorkflowError(), calls)
	}

	// A non-retryable error ends the workflow at once.
	env = s.NewTestWorkflowEnvironment()
	env.OnActivity(a.RecordLedgerVerificationRequest, mock.Anything, req).Return(nil)
	calls = 0
	env.OnActivity(a.VerifyAndRecordLedger, mock.Anything, "ws", "v").Return(
		func(_ context.Context, _, _ string) (accountable.LedgerVerification, error) {
			calls++
			return accountable.LedgerVerification{}, temporal.NewNonRetryableApplicationError("gone", accountable.ECodeNotFound, nil)
		})
	env.ExecuteWorkflow(workflows.LedgerVerification, req)
	var appErr *temporal.ApplicationError
	if !errors.As(env.GetWorkflowError(), &appErr) || appErr.Type() != accountable.ECodeNotFound || calls != 1 {
		t.Fatalf("err=%v calls=%d", env.GetWorkflowError(), calls)
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
