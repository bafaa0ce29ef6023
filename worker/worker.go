// Package worker runs the Temporal worker: it registers the workflows and activities on the
// task queue and starts and stops polling.
package worker

import (
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/accountablework/accountable/activities"
	"github.com/accountablework/accountable/workflows"
)

// Activities are the activity structs the worker registers.
type Activities struct {
	Ledger    *activities.Ledger
	Proposals *activities.Proposals
	Launches  *activities.Launches
	Handoffs  *activities.Handoffs
	Discovery *activities.Discovery
	Webhooks  *activities.Webhooks
}

// Worker polls one task queue.
type Worker struct {
	w sdkworker.Worker
}

// New registers every workflow and activity on taskQueue; interceptors observe them
// (metrics).
func New(c client.Client, taskQueue string, acts Activities, interceptors ...interceptor.WorkerInterceptor) *Worker {
	w := sdkworker.New(c, taskQueue, sdkworker.Options{Interceptors: interceptors})
	w.RegisterWorkflowWithOptions(workflows.LedgerVerification, workflow.RegisterOptions{Name: workflows.LedgerVerificationName})
	w.RegisterActivity(acts.Ledger)
	w.RegisterWorkflowWithOptions(workflows.ProposalGeneration, workflow.RegisterOptions{Name: workflows.ProposalGenerationName})
	w.RegisterActivity(acts.Proposals)
	w.RegisterWorkflowWithOptions(workflows.LaunchDispatch, workflow.RegisterOptions{Name: workflows.LaunchDispatchName})
	w.RegisterActivity(acts.Launches)
	w.RegisterWorkflowWithOptions(workflows.HandoffSLA, workflow.RegisterOptions{Name: workflows.HandoffSLAName})
	w.RegisterActivity(acts.Handoffs)
	w.RegisterWorkflowWithOptions(workflows.DiscoveryRun, workflow.RegisterOptions{Name: workflows.DiscoveryRunName})
	w.RegisterActivity(acts.Discovery)
	w.RegisterWorkflowWithOptions(workflows.WebhookDelivery, workflow.RegisterOptions{Name: workflows.WebhookDeliveryName})
	w.RegisterActivity(acts.Webhooks)
	return &Worker{w: w}
}

// Start begins polling without blocking.
func (w *Worker) Start() error { return w.w.Start() }

// Stop stops polling and waits for running activities to finish.
func (w *Worker) Stop() { w.w.Stop() }
