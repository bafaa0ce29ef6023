package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/activities"
	"github.com/accountablework/accountable/workflows"
)

func slaEnv(t *testing.T, breaches *int, failFirst bool) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.Handoffs
	env.OnActivity(a.BreachHandoffSLA, mock.Anything, mock.Anything).Return(func(context.Context, activities.HandoffRef) (accountable.HandoffStatus, error) {
		*breaches++
		if failFirst && *breaches == 1 {
			return "", errors.New("the database restarted") // retried by Temporal
		}
		return accountable.HandoffEscalated, nil
	})
	return env
}

// The timer fires at the due time (time skipped) and escalates once, through a retried
// activity.
func TestHandoffSLAEscalatesWhenDue(t *testing.T) {
	breaches := 0
	env := slaEnv(t, &breaches, true)
	start := env.Now()
	env.ExecuteWorkflow(workflows.HandoffSLA, workflows.HandoffSLAInput{WorkspaceID: "ws", HandoffID: "h", DueAt: start.Add(90 * time.Minute)})
	var status accountable.HandoffStatus
	if err := env.GetWorkflowError(); err != nil || env.GetWorkflowResult(&status) != nil || status != accountable.HandoffEscalated {
		t.Fatalf("err=%v status=%s", env.GetWorkflowError(), status)
	}
	if breaches != 2 || env.Now().Sub(start) < 90*time.Minute {
		t.Fatalf("breach attempts %d after %s", breaches, env.Now().Sub(start))
	}
}

// A handoff that ends before it is due stops its timer: nothing is escalated.
func TestHandoffSLAStopsWhenClosed(t *testing.T) {
	breaches := 0
	env := slaEnv(t, &breaches, false)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.HandoffClosedSignal, map[string]any{"status": "fulfilled"})
	}, 30*time.Minute)
	env.ExecuteWorkflow(workflows.HandoffSLA, workflows.HandoffSLAInput{WorkspaceID: "ws", HandoffID: "h", DueAt: env.Now().Add(time.Hour)})
	var status accountable.HandoffStatus
	if err := env.GetWorkflowError(); err != nil || env.GetWorkflowResult(&status) != nil || status != accountable.HandoffFulfilled || breaches != 0 {
		t.Fatalf("err=%v status=%s breaches=%d", env.GetWorkflowError(), status, breaches)
	}
}

// A timer started after its due time (the outbox was behind) escalates at once.
func TestHandoffSLAStartedLate(t *testing.T) {
	breaches := 0
	env := slaEnv(t, &breaches, false)
	env.ExecuteWorkflow(workflows.HandoffSLA, workflows.HandoffSLAInput{WorkspaceID: "ws", HandoffID: "h", DueAt: env.Now().Add(-time.Minute)})
	if err := env.GetWorkflowError(); err != nil || breaches != 1 {
		t.Fatalf("err=%v breaches=%d", env.GetWorkflowError(), breaches)
	}
}
