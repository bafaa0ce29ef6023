package workflows_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/activities"
	"github.com/accountablework/accountable/workflows"
)

// A mining attempt lost with its worker (its heartbeat timed out) is mined again, and the
// run finishes; nothing is recorded as failed.
func TestDiscoveryRunSurvivesALostWorker(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.Discovery
	attempts, failed := 0, 0
	env.OnActivity(a.MineDiscoveryRun, mock.Anything, mock.Anything).Return(func(context.Context, activities.DiscoveryRef) (accountable.DiscoveryStatus, error) {
		attempts++
		if attempts == 1 {
			return "", temporal.NewHeartbeatTimeoutError("the worker stopped heartbeating")
		}
		return accountable.DiscoverySucceeded, nil
	})
	env.OnActivity(a.FailDiscoveryRun, mock.Anything, mock.Anything, mock.Anything).Return(func(context.Context, activities.DiscoveryRef, string) error {
		failed++
		return nil
	})
	env.ExecuteWorkflow(workflows.DiscoveryRun, workflows.DiscoveryRunInput{WorkspaceID: "ws", RunID: "r"})
	var status accountable.DiscoveryStatus
	if err := env.GetWorkflowError(); err != nil || env.GetWorkflowResult(&status) != nil || status != accountable.DiscoverySucceeded || attempts != 2 || failed != 0 {
		t.Fatalf("err=%v status=%s attempts=%d failed=%d", env.GetWorkflowError(), status, attempts, failed)
	}
}

// Mining that fails for good records the run as failed.
func TestDiscoveryRunRecordsAFailure(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.Discovery
	var reason string
	env.OnActivity(a.MineDiscoveryRun, mock.Anything, mock.Anything).Return(accountable.DiscoveryStatus(""),
		temporal.NewNonRetryableApplicationError("the run is gone", "not_found", errors.New("gone")))
	env.OnActivity(a.FailDiscoveryRun, mock.Anything, mock.Anything, mock.Anything).Return(func(_ context.Context, _ activities.DiscoveryRef, r string) error {
		reason = r
		return nil
	})
	env.ExecuteWorkflow(workflows.DiscoveryRun, workflows.DiscoveryRunInput{WorkspaceID: "ws", RunID: "r"})
	var status accountable.DiscoveryStatus
	if err := env.GetWorkflowError(); err != nil || env.GetWorkflowResult(&status) != nil || status != accountable.DiscoveryFailed || reason == "" {
		t.Fatalf("err=%v status=%s reason=%q", env.GetWorkflowError(), status, reason)
	}
}
