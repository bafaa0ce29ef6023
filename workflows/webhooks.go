package workflows

import (
	"encoding/json"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/activities"
)

// WebhookDeliveryName is the registered name of WebhookDelivery.
const WebhookDeliveryName = "WebhookDelivery"

// WebhookDeliveryID is the workflow id of an endpoint's deliveries.
func WebhookDeliveryID(workspaceID, webhookID string) string {
	return "webhook-delivery/" + workspaceID + "/" + webhookID
}

// WebhookDeliveryStart is the outbox message that starts an endpoint's deliveries once
// the command that registered it has committed.
func WebhookDeliveryStart(workspaceID, webhookID string) (accountable.WorkflowMessage, error) {
	input, err := json.Marshal(activities.WebhookRef{WorkspaceID: workspaceID, WebhookID: webhookID})
	return accountable.WorkflowMessage{WorkspaceID: workspaceID, Kind: accountable.StartWorkflow, WorkflowName: WebhookDeliveryName,
		WorkflowID: WebhookDeliveryID(workspaceID, webhookID), Input: input}, err
}

// WebhookWakeSignal tells an endpoint's deliveries that its workspace has new events
// (sent by worker.WebhookWaker when the ledger feed announces a commit; no payload).
const WebhookWakeSignal = "webhook-wake"

// Delivery timing.
const (
	// WebhookIdleFallback is how long an idle endpoint waits for a wake before it reads
	// anyway. Wakes come from the worker that parked the endpoint (its read's process);
	// one can be missed only when that worker dies or the ledger feed's connection is
	// down. A worker that starts wakes every endpoint, and a feed that reconnects wakes
	// the endpoints parked on it, so this bounds the delay only when a worker dies and
	// none starts after it; an idle endpoint costs one workflow task and one read per
	// period instead of one every 2 s.
	WebhookIdleFallback = 5 * time.Minute
	// WebhookIdlePoll is how long an endpoint with nothing due waits before it reads again
	// when its read was not parked (a worker without a waker), and how every endpoint
	// waited before webhookWakeVersion.
	WebhookIdlePoll = 2 * time.Second
	// Events held behind an older transaction still running are read again after
	// webhookHeldPoll, doubling up to WebhookIdlePoll while they stay held (that
	// transaction's end need not announce anything).
	webhookHeldPoll = 100 * time.Millisecond
	// webhookHistoryEvents bounds a run's history (Temporal refuses a run past 51,200
	// events, and replays long ones slowly): then it continues as new. A round is about 10
	// events, a delivery 6.
	webhookHistoryEvents = 10_000
	// webhookRoundsPerRun bounded a run before webhookWakeVersion.
	webhookRoundsPerRun = 500
)

// webhookWakeVersion is the version of WebhookDelivery from which an idle endpoint waits
// for a wake (or WebhookIdleFallback) instead of reading every WebhookIdlePoll, and a
// run continues as new by its history's length instead of by rounds. Runs started before
// replay as they ran (webhookDeliveryV0) until they continue as new, within 500 rounds.
const webhookWakeVersion = 1

// WebhookRetryPolicy is the backoff of an attempt the receiver did not accept: 1 s, 2 s,
// 4 s, … up to 10 minutes between attempts, for as long as it takes (nothing is dropped
// while a receiver is down; deleting the endpoint stops it).
var WebhookRetryPolicy = temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Minute}

// WebhookDelivery delivers an endpoint's events in stream order, one at a time, each until
// the receiver accepts it, for as long as the endpoint exists. Its place in the stream is
// the endpoint's row (moved by each accepted attempt), so a worker that dies loses
// nothing and redelivers at most the event in flight, with the same delivery id.
//
// An endpoint with nothing due costs nothing: its read parked it with the worker's waker,
// and it waits for the wake signal that the next commit of its workspace's events brings
// (WebhookWakeSignal), or WebhookIdleFallback. Wakes that came before a read are answered
// by it; those that come during a read or the deliveries after it make the next wait end
// at once.
func WebhookDelivery(ctx workflow.Context, in activities.WebhookRef) error {
	readCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	deliverCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute, // an attempt's own timeout (WEBHOOK_TIMEOUT) is shorter
		HeartbeatTimeout:    5 * time.Second,
		RetryPolicy:         &WebhookRetryPolicy,
	})
	if workflow.GetVersion(ctx, "wake-on-feed", workflow.DefaultVersion, webhookWakeVersion) == workflow.DefaultVersion {
		return webhookDeliveryV0(ctx, readCtx, deliverCtx, in)
	}
	wake := workflow.GetSignalChannel(ctx, WebhookWakeSignal)
	var a *activities.Webhooks
	var heldWait time.Duration
	for {
		if info := workflow.GetInfo(ctx); info.GetCurrentHistoryLength() > webhookHistoryEvents || info.GetContinueAsNewSuggested() {
			// Wakes not taken are not carried over: the new run reads first.
			return workflow.NewContinueAsNewError(ctx, WebhookDeliveryName, in)
		}
		for wake.ReceiveAsync(nil) { // this read answers them
		}
		var batch activities.WebhookBatch
		if err := workflow.ExecuteActivity(readCtx, a.NextWebhookDeliveries, in).Get(ctx, &batch); err != nil {
			return err
		}
		if batch.Ended {
			return nil
		}
		for _, d := range batch.Deliveries {
			if err := workflow.ExecuteActivity(deliverCtx, a.DeliverWebhook, d).Get(ctx, nil); err != nil {
				return err
			}
		}
		if !batch.Held {
			heldWait = 0
		}
		switch {
		case len(batch.Deliveries) >= activities.WebhookBatchSize: // more may be due now
		case batch.Held:
			heldWait = min(max(2*heldWait, webhookHeldPoll), WebhookIdlePoll)
			if err := workflow.Sleep(ctx, heldWait); err != nil {
				return err
			}
		case !batch.Parked:
			if err := workflow.Sleep(ctx, WebhookIdlePoll); err != nil {
				return err
			}
		default:
			if err := awaitWake(ctx, wake); err != nil {
				return err
			}
		}
	}
}

// awaitWake waits for a wake signal, or WebhookIdleFallback: no timer when a wake came
// already (during the read or the deliveries), and the timer is cancelled when the wake
// comes first, so no stale timer fires later.
func awaitWake(ctx workflow.Context, wake workflow.ReceiveChannel) error {
	if wake.ReceiveAsync(nil) {
		return nil
	}
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimer(timerCtx, WebhookIdleFallback)
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
	sel.AddFuture(timer, func(workflow.Future) {})
	sel.Select(ctx)
	return ctx.Err()
}

// webhookDeliveryV0 is WebhookDelivery before webhookWakeVersion: an endpoint with
// nothing due read again every WebhookIdlePoll, and a run continued as new after
// webhookRoundsPerRun rounds.
func webhookDeliveryV0(ctx, readCtx, deliverCtx workflow.Context, in activities.WebhookRef) error {
	var a *activities.Webhooks
	for round := 0; round < webhookRoundsPerRun; round++ {
		var batch activities.WebhookBatch
		if err := workflow.ExecuteActivity(readCtx, a.NextWebhookDeliveries, in).Get(ctx, &batch); err != nil {
			return err
		}
		if batch.Ended {
			return nil
		}
		for _, d := range batch.Deliveries {
			if err := workflow.ExecuteActivity(deliverCtx, a.DeliverWebhook, d).Get(ctx, nil); err != nil {
				return err
			}
		}
		if len(batch.Deliveries) < activities.WebhookBatchSize {
			if err := workflow.Sleep(ctx, WebhookIdlePoll); err != nil {
				return err
			}
		}
	}
	return workflow.NewContinueAsNewError(ctx, WebhookDeliveryName, in)
}
