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

// Delivery timing.
const (
	// WebhookIdlePoll is how long an endpoint with nothing due waits before it reads again.
	WebhookIdlePoll = 2 * time.Second
	// webhookRoundsPerRun bounds a run's history: then it continues as new.
	webhookRoundsPerRun = 500
)

// WebhookRetryPolicy is the backoff of an attempt the receiver did not accept: 1 s, 2 s,
// 4 s, … up to 10 minutes between attempts, for as long as it takes (nothing is dropped
// while a receiver is down; deleting the endpoint stops it).
var WebhookRetryPolicy = temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Minute}

// WebhookDelivery delivers an endpoint's events in stream order, one at a time, each until
// the receiver accepts it, for as long as the endpoint exists. Its place in the stream is
// the endpoint's row (moved by each accepted attempt), so a worker that dies loses
// nothing and redelivers at most the event in flight, with the same delivery id.
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
