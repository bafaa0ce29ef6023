package workflows

import (
	"encoding/json"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/activities"
)

// DiscoveryRunName is the registered name of DiscoveryRun.
const DiscoveryRunName = "DiscoveryRun"

// DiscoveryRunID is the workflow id of a discovery run.
func DiscoveryRunID(workspaceID, runID string) string {
	return "discovery-run/" + workspaceID + "/" + runID
}

// DiscoveryRunInput is the input of DiscoveryRun.
type DiscoveryRunInput = activities.DiscoveryRef

// DiscoveryRunStart is the outbox message that starts a run once the command that recorded
// it has committed.
func DiscoveryRunStart(workspaceID, runID string) (accountable.WorkflowMessage, error) {
	input, err := json.Marshal(DiscoveryRunInput{WorkspaceID: workspaceID, RunID: runID})
	return accountable.WorkflowMessage{WorkspaceID: workspaceID, Kind: accountable.StartWorkflow, WorkflowName: DiscoveryRunName,
		WorkflowID: DiscoveryRunID(workspaceID, runID), Input: input}, err
}

// DiscoveryRun mines a run's sources into candidate processes. The mining activity
// heartbeats; a worker that dies mid-run is noticed within the heartbeat timeout and the
// activity runs again elsewhere (mining is deterministic, so the result is the same).
// When mining fails for good, the run is recorded as failed.
func DiscoveryRun(ctx workflow.Context, in DiscoveryRunInput) (accountable.DiscoveryStatus, error) {
	mineCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    30 * time.Minute,
		HeartbeatTimeout:       10 * time.Second,
		ScheduleToCloseTimeout: 2 * time.Hour,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	var a *activities.Discovery
	var status accountable.DiscoveryStatus
	err := workflow.ExecuteActivity(mineCtx, a.MineDiscoveryRun, in).Get(ctx, &status)
	if err == nil {
		return status, nil
	}
	failCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second, ScheduleToCloseTimeout: time.Hour,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	if ferr := workflow.ExecuteActivity(failCtx, a.FailDiscoveryRun, in, err.Error()).Get(ctx, nil); ferr != nil {
		return "", ferr
	}
	return accountable.DiscoveryFailed, nil
}
