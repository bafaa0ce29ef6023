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

// ActivityStores is every store the activities use: *store.DB, in the service and in the
// API tests alike.
type ActivityStores interface {
	activities.LedgerStore
	activities.ProposalStore
	activities.LaunchStore
	activities.HandoffStore
	activities.DiscoveryStore
	activities.WebhookStore
}

// NewActivities binds every activity struct to db, the planner proposals are made with
// and the webhooks' delivery settings (their Store is set here). It is the one place the
// activities are bound, for the service (cmd/accountable) and the API tests' harness, so a
// new activity struct is added to both by adding it here.
func NewActivities(db ActivityStores, planner activities.Planner, hooks activities.Webhooks) Activities {
	hooks.Store = db
	return Activities{
		Ledger:    &activities.Ledger{Store: db},
		Proposals: &activities.Proposals{Planner: planner, Store: db},
		Launches:  &activities.Launches{Store: db},
		Handoffs:  &activities.Handoffs{Store: db},
		Discovery: &activities.Discovery{Store: db},
		Webhooks:  &hooks,
	}
}

// Worker polls one task queue.
type Worker struct {
	w sdkworker.Worker
}

// Workflow is a workflow function the worker registers, under its registered name (the
// name workflow messages and histories carry).
type Workflow struct {
	Name string
	Func any
}

// Workflows is every workflow the worker registers. New registers exactly these, and the
// replay test (replay_test.go) requires a recorded history of each in workflows/testdata:
// the one list means a workflow added to the worker without a history fails a test.
func Workflows() []Workflow {
	return []Workflow{
		{Name: workflows.LedgerVerificationName, Func: workflows.LedgerVerification},
		{Name: workflows.ProposalGenerationName, Func: workflows.ProposalGeneration},
		{Name: workflows.LaunchDispatchName, Func: workflows.LaunchDispatch},
		{Name: workflows.HandoffSLAName, Func: workflows.HandoffSLA},
		{Name: workflows.DiscoveryRunName, Func: workflows.DiscoveryRun},
		{Name: workflows.WebhookDeliveryName, Func: workflows.WebhookDelivery},
	}
}

// New registers every workflow (Workflows) and activity on taskQueue; interceptors observe
// them (metrics).
func New(c client.Client, taskQueue string, acts Activities, interceptors ...interceptor.WorkerInterceptor) *Worker {
	w := sdkworker.New(c, taskQueue, sdkworker.Options{Interceptors: interceptors})
	for _, wf := range Workflows() {
		w.RegisterWorkflowWithOptions(wf.Func, workflow.RegisterOptions{Name: wf.Name})
	}
	w.RegisterActivity(acts.Ledger)
	w.RegisterActivity(acts.Proposals)
	w.RegisterActivity(acts.Launches)
	w.RegisterActivity(acts.Handoffs)
	w.RegisterActivity(acts.Discovery)
	w.RegisterActivity(acts.Webhooks)
	return &Worker{w: w}
}

// Start begins polling without blocking.
func (w *Worker) Start() error { return w.w.Start() }

// Stop stops polling and waits for running activities to finish.
func (w *Worker) Stop() { w.w.Stop() }
