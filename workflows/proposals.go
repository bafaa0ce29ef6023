package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/activities"
)

// ProposalGenerationInput is the input of ProposalGeneration (the activities' request).
type ProposalGenerationInput = activities.ProposalRequest

// ProposalGenerationName is the registered name of ProposalGeneration.
const ProposalGenerationName = "ProposalGeneration"

// ProposalGenerationID is the workflow id of a workspace's proposal generation: one id per
// workspace, so Temporal runs one generation of a workspace at a time (the specification's
// "one concurrent generation per workspace", across every API replica).
func ProposalGenerationID(workspaceID string) string { return "proposal-generation/" + workspaceID }

// Proposal generation tuning: each planner attempt may take PlannerAttemptTimeout, and a
// model's bad answer is retried up to PlannerAttempts times in all.
const (
	PlannerAttempts        = 3
	PlannerAttemptTimeout  = 60 * time.Second
	ProposalGenerationTTL  = 10 * time.Minute // the run's own limit
	proposalStoreRetryTime = 5 * time.Minute
)

// localActivitiesVersion is the version of ProposalGeneration from which its activities
// are local activities. Each regular activity costs two trips through Temporal's matching
// (the activity task, then the workflow task its result schedules): on the dev server about
// 40 ms each, four fifths of a generation with a fast model. Local activities run inside
// the workflow task, so a generation is one workflow task like an empty workflow. They are
// as durable for this workflow: a result is recorded as a marker before the workflow goes
// on, a worker lost mid-activity times its workflow task out and another worker runs the
// activity again (the planner stores nothing, storing is idempotent), and a call longer
// than the workflow task timeout (a slow model) is covered by the SDK heartbeating the
// workflow task. Runs recorded before this version replay their regular activities.
const localActivitiesVersion = 1

// ProposalGeneration makes an initiative proposal: the planner's local activity (retried a
// bounded number of times when a model answers badly), then the local activity that stores the
// proposal with its ledger event and completes the request's idempotency record. When no
// proposal can be made it releases the request's pending record, so a retry starts afresh,
// and fails. The API handler that started it waits for its result.
func ProposalGeneration(ctx workflow.Context, in ProposalGenerationInput) (accountable.InitiativeProposal, error) {
	var a *activities.Proposals
	planRetry := &temporal.RetryPolicy{
		InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 5 * time.Second,
		MaximumAttempts: PlannerAttempts,
	}
	storeRetry := &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second}
	var planCtx, storeCtx workflow.Context
	execute := workflow.ExecuteActivity
	if workflow.GetVersion(ctx, "local-activities", workflow.DefaultVersion, localActivitiesVersion) == workflow.DefaultVersion {
		planCtx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: PlannerAttemptTimeout, RetryPolicy: planRetry})
		storeCtx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: 30 * time.Second, ScheduleToCloseTimeout: proposalStoreRetryTime, RetryPolicy: storeRetry})
	} else {
		planCtx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: PlannerAttemptTimeout, RetryPolicy: planRetry})
		storeCtx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: 30 * time.Second, ScheduleToCloseTimeout: proposalStoreRetryTime, RetryPolicy: storeRetry})
		execute = workflow.ExecuteLocalActivity
	}
	var proposal accountable.InitiativeProposal
	err := execute(planCtx, a.PlanProposal, in).Get(ctx, &proposal)
	if err == nil {
		err = execute(storeCtx, a.StoreProposal, activities.StoredProposal{Request: in, Proposal: proposal}).Get(ctx, &proposal)
	}
	if err == nil {
		return proposal, nil
	}
	if rerr := execute(storeCtx, a.ReleaseProposalGeneration, in).Get(ctx, nil); rerr != nil {
		return proposal, rerr
	}
	return proposal, err
}
