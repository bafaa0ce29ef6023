package workflows

import (
	"encoding/json"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/activities"
)

// HandoffSLAName is the registered name of HandoffSLA.
const HandoffSLAName = "HandoffSLA"

// HandoffClosedSignal tells a handoff's SLA timer that the handoff ended (fulfilled or
// cancelled): nothing is left to escalate.
const HandoffClosedSignal = "handoff-closed"

// HandoffSLAID is the workflow id of a handoff's SLA timer.
func HandoffSLAID(workspaceID, handoffID string) string {
	return "handoff-sla/" + workspaceID + "/" + handoffID
}

// HandoffSLAInput is the input of HandoffSLA.
type HandoffSLAInput struct {
	WorkspaceID string    `json:"workspaceId"`
	HandoffID   string    `json:"handoffId"`
	DueAt       time.Time `json:"dueAt"`
}

// HandoffSLAStart is the outbox message that starts a handoff's SLA timer once the command
// that proposed the handoff has committed.
func HandoffSLAStart(h accountable.Handoff) (accountable.WorkflowMessage, error) {
	input, err := json.Marshal(HandoffSLAInput{WorkspaceID: h.WorkspaceID, HandoffID: h.ID, DueAt: h.DueAt.Time})
	return accountable.WorkflowMessage{WorkspaceID: h.WorkspaceID, Kind: accountable.StartWorkflow, WorkflowName: HandoffSLAName,
		WorkflowID: HandoffSLAID(h.WorkspaceID, h.ID), Input: input}, err
}

// HandoffClosed is the outbox message that tells a handoff's SLA timer the handoff ended.
func HandoffClosed(h accountable.Handoff) (accountable.WorkflowMessage, error) {
	input, err := json.Marshal(map[string]any{"status": h.Status})
	return accountable.WorkflowMessage{WorkspaceID: h.WorkspaceID, Kind: accountable.SignalWorkflow, WorkflowName: HandoffSLAName,
		WorkflowID: HandoffSLAID(h.WorkspaceID, h.ID), SignalName: HandoffClosedSignal, Input: input}, err
}

// HandoffSLA is a handoff's durable SLA timer: it waits until the handoff is due, or until
// it is told the handoff ended; when the handoff comes due first, it escalates it (the
// activity checks, under the handoff's lock, that it has not ended, so a fulfilment that
// commits as the timer fires wins or loses whole). It returns the handoff's status after.
func HandoffSLA(ctx workflow.Context, in HandoffSLAInput) (accountable.HandoffStatus, error) {
	closed := workflow.GetSignalChannel(ctx, HandoffClosedSignal)
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	due := false
	var ended struct {
		Status accountable.HandoffStatus `json:"status"`
	}
	if wait := in.DueAt.Sub(workflow.Now(ctx)); wait > 0 {
		timer := workflow.NewTimer(timerCtx, wait)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(timer, func(workflow.Future) { due = true })
		sel.AddReceive(closed, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &ended) })
		sel.Select(ctx)
	} else {
		due = true // started late (the outbox was behind, or the worker was down): due already
	}
	cancelTimer()
	if !due {
		return ended.Status, nil // ended before it was due (fulfilled or cancelled)
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		// Transient failures (the database restarting) are retried for a day: the escalation
		// must not be lost.
		ScheduleToCloseTimeout: 24 * time.Hour,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	var a *activities.Handoffs
	var status accountable.HandoffStatus
	err := workflow.ExecuteActivity(ctx, a.BreachHandoffSLA, activities.HandoffRef{WorkspaceID: in.WorkspaceID, HandoffID: in.HandoffID}).Get(ctx, &status)
	return status, err
}
