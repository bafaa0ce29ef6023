package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/activities"
	"github.com/accountablework/accountable/workflows"
)

// fakeLaunch is the launch state the mocked activities keep: what each job came to, and
// how often settlement ran per job (it must run once per job whatever the signals).
type fakeLaunch struct {
	blocked  map[string]bool // jobs whose first reservation blocks on a decision
	cancel   map[string]bool
	settled  map[string]int
	costs    map[string]int64
	attempts map[string]int
	paused   map[string]bool      // runs paused in the store
	timedOut map[string]time.Time // when each run was timed out (workflow time)
}

func launchEnv(t *testing.T, f *fakeLaunch, jobs []string) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.Launches
	env.OnActivity(a.LaunchJobs, mock.Anything, mock.Anything).Return(jobs, nil)
	env.OnActivity(a.ReserveJob, mock.Anything, mock.Anything).Return(func(_ context.Context, j activities.JobRef) (accountable.JobReservation, error) {
		f.attempts["reserve-"+j.JobID]++
		if f.attempts["reserve-"+j.JobID] == 1 && j.JobID == "j1" {
			return accountable.JobReservation{}, errors.New("the database restarted") // retried by Temporal
		}
		if f.blocked[j.JobID] && !j.Approved {
			return accountable.JobReservation{DecisionID: "d-" + j.JobID}, nil
		}
		return accountable.JobReservation{Reserved: true}, nil
	})
	env.OnActivity(a.CancelJob, mock.Anything, mock.Anything).Return(func(_ context.Context, j activities.JobRef) error {
		f.cancel[j.JobID] = true
		return nil
	})
	env.OnActivity(a.DispatchJob, mock.Anything, mock.Anything).Return(func(_ context.Context, j activities.JobRef) (string, error) {
		return "run-" + j.JobID, nil
	})
	env.OnActivity(a.SettleJob, mock.Anything, mock.Anything).Return(func(_ context.Context, s activities.Settlement) error {
		f.settled[s.Job.JobID]++
		f.costs[s.Job.JobID] += s.CostCents
		return nil
	})
	env.OnActivity(a.TimeOutRun, mock.Anything, mock.Anything).Return(func(_ context.Context, r activities.RunRef) (accountable.Run, error) {
		if r.SparePaused && f.paused[r.RunID] {
			return accountable.Run{ID: r.RunID, Status: accountable.RunPaused}, nil
		}
		f.timedOut[r.RunID] = env.Now()
		return accountable.Run{ID: r.RunID, Status: accountable.RunFailed}, nil
	})
	env.OnActivity(a.EndLaunch, mock.Anything, mock.Anything).Return(accountable.LaunchCompleted, nil)
	return env
}

func newFake() *fakeLaunch {
	return &fakeLaunch{blocked: map[string]bool{}, cancel: map[string]bool{}, settled: map[string]int{}, costs: map[string]int64{},
		attempts: map[string]int{}, paused: map[string]bool{}, timedOut: map[string]time.Time{}}
}

var launchInput = workflows.LaunchDispatchInput{WorkspaceID: "ws", LaunchID: "l", RunTimeoutSeconds: 3600}

// Duplicate finalize signals settle a job once; a retried activity changes nothing.
func TestLaunchDispatchSettlesEachJobOnce(t *testing.T) {
	f := newFake()
	env := launchEnv(t, f, []string{"j1", "j2"})
	fin := func(job string, cost int64) accountable.RunChanged {
		return accountable.RunChanged{RunID: "run-" + job, JobID: job, Status: accountable.RunSucceeded, CostCents: cost}
	}
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.RunFinalizedSignal, fin("j1", 300))
		env.SignalWorkflow(workflows.RunFinalizedSignal, fin("j1", 300)) // a redelivery
		env.SignalWorkflow(workflows.RunFinalizedSignal, accountable.RunChanged{RunID: "run-unknown", Status: accountable.RunSucceeded})
	}, time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.RunFinalizedSignal, fin("j2", 200)) }, 2*time.Minute)
	env.ExecuteWorkflow(workflows.LaunchDispatch, launchInput)
	var state accountable.LaunchState
	if err := env.GetWorkflowError(); err != nil || env.GetWorkflowResult(&state) != nil || state != accountable.LaunchCompleted {
		t.Fatalf("err=%v state=%s", env.GetWorkflowError(), state)
	}
	if f.settled["j1"] != 1 || f.settled["j2"] != 1 || f.costs["j1"] != 300 || f.costs["j2"] != 200 || f.attempts["reserve-j1"] != 2 {
		t.Fatalf("settled %v costs %v attempts %v", f.settled, f.costs, f.attempts)
	}
}

// A blocked job waits for its decision: approved, it is reserved again and runs; declined,
// it is cancelled. Decisions of other jobs do not release it.
func TestLaunchDispatchWaitsForBudgetDecisions(t *testing.T) {
	f := newFake()
	f.blocked["j2"], f.blocked["j3"] = true, true
	env := launchEnv(t, f, []string{"j2", "j3"})
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.DecisionDecidedSignal, accountable.DecisionDecided{DecisionID: "d-other", JobID: "other", Status: accountable.DecisionApproved})
		env.SignalWorkflow(workflows.DecisionDecidedSignal, accountable.DecisionDecided{DecisionID: "d-j2", JobID: "j2", Status: accountable.DecisionApproved})
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.DecisionDecidedSignal, accountable.DecisionDecided{DecisionID: "d-j3", JobID: "j3", Status: accountable.DecisionDeclined})
	}, 2*time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.RunFinalizedSignal, accountable.RunChanged{RunID: "run-j2", JobID: "j2", Status: accountable.RunSucceeded, CostCents: 50})
	}, 3*time.Minute)
	env.ExecuteWorkflow(workflows.LaunchDispatch, launchInput)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if f.settled["j2"] != 1 || f.settled["j3"] != 0 || !f.cancel["j3"] || f.cancel["j2"] || f.attempts["reserve-j2"] != 2 {
		t.Fatalf("settled %v cancelled %v attempts %v", f.settled, f.cancel, f.attempts)
	}
}

// Runs not finalised before the timeout are timed out and settled with what they reported.
func TestLaunchDispatchTimesOutRuns(t *testing.T) {
	f := newFake()
	env := launchEnv(t, f, []string{"j2"})
	env.ExecuteWorkflow(workflows.LaunchDispatch, launchInput)
	if err := env.GetWorkflowError(); err != nil || f.settled["j2"] != 1 || f.costs["j2"] != 0 {
		t.Fatalf("err=%v settled %v", env.GetWorkflowError(), f.settled)
	}
}

// A paused run is not timed out: the launch waits for it, whether the pause was signalled
// (j1: resumed later, then timed out a run timeout after the first one passed) or only
// found when timing out (j3: finalised while waited for). The others time out as before.
func TestLaunchDispatchWaitsForPausedRuns(t *testing.T) {
	f := newFake()
	env := launchEnv(t, f, []string{"j1", "j2", "j3"})
	start := env.Now()
	f.paused["run-j3"] = true // its pause signal is still on its way
	env.RegisterDelayedCallback(func() {
		f.paused["run-j1"] = true
		env.SignalWorkflow(workflows.RunActionedSignal, accountable.RunChanged{RunID: "run-j1", JobID: "j1", Status: accountable.RunPaused})
	}, 10*time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.RunFinalizedSignal, accountable.RunChanged{RunID: "run-j3", JobID: "j3", Status: accountable.RunSucceeded, CostCents: 70})
	}, 70*time.Minute)
	env.RegisterDelayedCallback(func() {
		f.paused["run-j1"] = false
		env.SignalWorkflow(workflows.RunActionedSignal, accountable.RunChanged{RunID: "run-j1", JobID: "j1", Status: accountable.RunRunning})
	}, 90*time.Minute)
	env.ExecuteWorkflow(workflows.LaunchDispatch, launchInput)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if f.settled["j1"] != 1 || f.settled["j2"] != 1 || f.settled["j3"] != 1 || f.costs["j3"] != 70 {
		t.Fatalf("settled %v costs %v", f.settled, f.costs)
	}
	if got := f.timedOut["run-j2"].Sub(start); got < time.Hour || got > time.Hour+time.Minute {
		t.Fatalf("j2 timed out after %s, want the run timeout (1h)", got)
	}
	if got := f.timedOut["run-j1"].Sub(start); got < 2*time.Hour || got > 2*time.Hour+time.Minute {
		t.Fatalf("the paused j1 timed out after %s, want a second run timeout (2h)", got)
	}
	if _, ok := f.timedOut["run-j3"]; ok {
		t.Fatal("the paused j3 was timed out")
	}
}

// A launch recorded from the dev server (a job blocked on its budget decision, approved,
// both runs finalised and settled) must replay against the current code.
//
// launch_dispatch.history.json was recorded before paused runs were waited for (it replays
// the version before pausedRunsVersion); launch_dispatch_paused.history.json after (a run
// paused, the other timed out, the paused one resumed and finalised: TestLaunchWaitsForPausedRun).
func TestLaunchDispatchReplaysRecordedHistory(t *testing.T) {
	for _, h := range []string{"launch_dispatch", "launch_dispatch_paused"} {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(workflows.LaunchDispatch, workflow.RegisterOptions{Name: workflows.LaunchDispatchName})
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/"+h+".history.json"); err != nil {
			t.Fatalf("%s: %v", h, err)
		}
	}
}
