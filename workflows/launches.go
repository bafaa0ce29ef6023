package workflows

import (
	"encoding/json"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/activities"
)

// LaunchDispatchName is the registered name of LaunchDispatch.
const LaunchDispatchName = "LaunchDispatch"

// Signals of LaunchDispatch.
const (
	RunFinalizedSignal    = "run-finalized"
	RunActionedSignal     = "run-actioned" // a run paused or resumed
	DecisionDecidedSignal = "decision-decided"
)

// DefaultRunTimeout is how long a launch waits for its runs to be finalised.
const DefaultRunTimeout = 24 * time.Hour

// LaunchDispatchID is the workflow id of a launch.
func LaunchDispatchID(workspaceID, launchID string) string {
	return "launch-dispatch/" + workspaceID + "/" + launchID
}

// LaunchDispatchInput is the input of LaunchDispatch.
type LaunchDispatchInput struct {
	WorkspaceID       string `json:"workspaceId"`
	LaunchID          string `json:"launchId"`
	RunTimeoutSeconds int64  `json:"runTimeoutSeconds"`
}

// LaunchDispatchStart is the outbox message that starts a launch's workflow once the
// command that recorded the launch has committed.
func LaunchDispatchStart(workspaceID, launchID string, runTimeout time.Duration) (accountable.WorkflowMessage, error) {
	if runTimeout <= 0 {
		runTimeout = DefaultRunTimeout
	}
	input, err := json.Marshal(LaunchDispatchInput{WorkspaceID: workspaceID, LaunchID: launchID, RunTimeoutSeconds: int64(runTimeout / time.Second)})
	return accountable.WorkflowMessage{WorkspaceID: workspaceID, Kind: accountable.StartWorkflow, WorkflowName: LaunchDispatchName,
		WorkflowID: LaunchDispatchID(workspaceID, launchID), Input: input}, err
}

// LaunchSignal is the outbox message that signals a launch's workflow.
func LaunchSignal(workspaceID, launchID, name string, arg any) (accountable.WorkflowMessage, error) {
	input, err := json.Marshal(arg)
	return accountable.WorkflowMessage{WorkspaceID: workspaceID, Kind: accountable.SignalWorkflow, WorkflowName: LaunchDispatchName,
		WorkflowID: LaunchDispatchID(workspaceID, launchID), SignalName: name, Input: input}, err
}

// RunChangedSignal is the outbox message that tells a run's launch of its new status:
// run-finalized when it ended, run-actioned when it was paused or resumed.
func RunChangedSignal(workspaceID, launchID string, f accountable.RunChanged) (accountable.WorkflowMessage, error) {
	name := RunActionedSignal
	if f.Status.Final() {
		name = RunFinalizedSignal
	}
	return LaunchSignal(workspaceID, launchID, name, f)
}

// running is a dispatched job and its run.
type running struct{ job, run string }

// pausedRunsVersion is the version of LaunchDispatch from which a paused run is not timed
// out: launches started before it replay as they ran.
const pausedRunsVersion = 1

// LaunchDispatch runs a launch: each job in turn reserves its estimate against the
// ceiling (a job that would pass it waits for its budget decision: approved, it reserves
// anyway; declined, it is cancelled) and dispatches its run; then the launch waits for
// each run's finalisation (a signal) or the run timeout, settles each reservation against
// the reported cost, and ends. A run paused when the run timeout passes is not timed out:
// the launch waits for it, and a run still unfinalised a run timeout after that is timed
// out then (when it is not paused again). Activities are idempotent commands, and a run already
// settled ignores a repeated signal, so retries, worker restarts and duplicate signals
// keep the totals exact.
func LaunchDispatch(ctx workflow.Context, in LaunchDispatchInput) (accountable.LaunchState, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    30 * time.Second,
		ScheduleToCloseTimeout: time.Hour,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
	})
	var a *activities.Launches
	launch := activities.LaunchRef{WorkspaceID: in.WorkspaceID, LaunchID: in.LaunchID}
	var jobs []string
	if err := workflow.ExecuteActivity(ctx, a.LaunchJobs, launch).Get(ctx, &jobs); err != nil {
		return "", err
	}
	decided := workflow.GetSignalChannel(ctx, DecisionDecidedSignal)
	finalized := workflow.GetSignalChannel(ctx, RunFinalizedSignal)

	var runs []running
	for _, jobID := range jobs {
		job := activities.JobRef{WorkspaceID: in.WorkspaceID, LaunchID: in.LaunchID, JobID: jobID}
		var res accountable.JobReservation
		if err := workflow.ExecuteActivity(ctx, a.ReserveJob, job).Get(ctx, &res); err != nil {
			return "", err
		}
		for !res.Reserved {
			var d accountable.DecisionDecided
			decided.Receive(ctx, &d)
			if d.JobID != jobID || d.DecisionID != res.DecisionID {
				continue // a decision of another job (decided twice, or late): not this one's
			}
			if d.Status != accountable.DecisionApproved {
				if err := workflow.ExecuteActivity(ctx, a.CancelJob, job).Get(ctx, nil); err != nil {
					return "", err
				}
				break
			}
			job.Approved = true
			if err := workflow.ExecuteActivity(ctx, a.ReserveJob, job).Get(ctx, &res); err != nil {
				return "", err
			}
		}
		if !res.Reserved {
			continue
		}
		var runID string
		if err := workflow.ExecuteActivity(ctx, a.DispatchJob, job).Get(ctx, &runID); err != nil {
			return "", err
		}
		runs = append(runs, running{job: jobID, run: runID})
	}

	settled := map[string]bool{}
	settle := func(jobID string, status accountable.RunStatus, cost int64) error {
		settled[jobID] = true
		return workflow.ExecuteActivity(ctx, a.SettleJob, activities.Settlement{
			Job:    activities.JobRef{WorkspaceID: in.WorkspaceID, LaunchID: in.LaunchID, JobID: jobID},
			Status: status, CostCents: cost,
		}).Get(ctx, nil)
	}
	timeout := time.Duration(in.RunTimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = DefaultRunTimeout
	}
	await := awaitRuns
	if workflow.GetVersion(ctx, "paused-runs", workflow.DefaultVersion, pausedRunsVersion) == workflow.DefaultVersion {
		await = awaitRunsV0
	}
	if err := await(ctx, in, runs, settled, settle, timeout, finalized); err != nil {
		return "", err
	}
	var state accountable.LaunchState
	err := workflow.ExecuteActivity(ctx, a.EndLaunch, launch).Get(ctx, &state)
	return state, err
}

// awaitRuns waits for the runs' finalisations, settling each job as its run is
// finalised. Paused runs (as the last signal or timeout told) are waited for: when the run
// timeout passes, the others are timed out and another run timeout starts.
func awaitRuns(ctx workflow.Context, in LaunchDispatchInput, runs []running, settled map[string]bool,
	settle func(string, accountable.RunStatus, int64) error, timeout time.Duration, finalized workflow.ReceiveChannel) error {
	var a *activities.Launches
	actioned := workflow.GetSignalChannel(ctx, RunActionedSignal)
	paused := map[string]bool{}
	for len(settled) < len(runs) {
		timerCtx, cancelTimer := workflow.WithCancel(ctx)
		timer := workflow.NewTimer(timerCtx, timeout)
		timedOut := false
		for len(settled) < len(runs) && !timedOut {
			var err error
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(finalized, func(c workflow.ReceiveChannel, _ bool) { err = settleFinalized(ctx, c, runs, settled, settle) })
			sel.AddReceive(actioned, func(c workflow.ReceiveChannel, _ bool) {
				var f accountable.RunChanged
				c.Receive(ctx, &f)
				paused[f.RunID] = f.Status == accountable.RunPaused
			})
			sel.AddFuture(timer, func(workflow.Future) { timedOut = true })
			sel.Select(ctx)
			if err != nil {
				return err
			}
		}
		cancelTimer()
		if !timedOut {
			return nil
		}
		for _, r := range runs { // the runs not finalised in time, unless paused
			if settled[r.job] || paused[r.run] {
				continue
			}
			var run accountable.Run
			if err := workflow.ExecuteActivity(ctx, a.TimeOutRun, activities.RunRef{WorkspaceID: in.WorkspaceID, RunID: r.run, SparePaused: true}).Get(ctx, &run); err != nil {
				return err
			}
			if run.Status == accountable.RunPaused {
				paused[r.run] = true // paused before its signal came: waited for like the others
				continue
			}
			if err := settle(r.job, run.Status, run.CostCents); err != nil {
				return err
			}
		}
	}
	return nil
}

// settleFinalized receives a run-finalized signal and settles its run's job, once: a
// repeated signal, or one naming a run of no job here, changes nothing.
func settleFinalized(ctx workflow.Context, c workflow.ReceiveChannel, runs []running, settled map[string]bool,
	settle func(string, accountable.RunStatus, int64) error) error {
	var f accountable.RunChanged
	c.Receive(ctx, &f)
	for _, r := range runs {
		if r.run == f.RunID && !settled[r.job] {
			return settle(r.job, f.Status, f.CostCents)
		}
	}
	return nil
}

// awaitRunsV0 is how launches before pausedRunsVersion waited for their runs: one run
// timeout for them all, after which every unfinalised run is timed out.
func awaitRunsV0(ctx workflow.Context, in LaunchDispatchInput, runs []running, settled map[string]bool,
	settle func(string, accountable.RunStatus, int64) error, timeout time.Duration, finalized workflow.ReceiveChannel) error {
	var a *activities.Launches
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	timer := workflow.NewTimer(timerCtx, timeout)
	timedOut := false
	for len(settled) < len(runs) && !timedOut {
		var err error
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(finalized, func(c workflow.ReceiveChannel, _ bool) { err = settleFinalized(ctx, c, runs, settled, settle) })
		sel.AddFuture(timer, func(workflow.Future) { timedOut = true })
		sel.Select(ctx)
		if err != nil {
			return err
		}
	}
	cancelTimer()
	for _, r := range runs { // the runs not finalised in time
		if settled[r.job] {
			continue
		}
		var run accountable.Run
		if err := workflow.ExecuteActivity(ctx, a.TimeOutRun, activities.RunRef{WorkspaceID: in.WorkspaceID, RunID: r.run}).Get(ctx, &run); err != nil {
			return err
		}
		if err := settle(r.job, run.Status, run.CostCents); err != nil {
			return err
		}
	}
	return nil
}
