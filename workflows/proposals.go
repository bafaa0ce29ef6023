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

// ProposalGeneration makes an initiative proposal: the planner's activity (retried a
// bounded number of times when a model answers badly), then the activity that stores the
// proposal with its ledger event and completes the request's idempotency record. When no
// proposal can be made it releases the request's pending record, so a retry starts afresh,
// and fails. The API handler that started it waits for its result.
func ProposalGeneration(ctx workflow.Context, in ProposalGenerationInput) (accountable.InitiativeProposal, error) {
	var a *activities.Proposals
	planCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: PlannerAttemptTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 5 * time.Second,
			MaximumAttempts: PlannerAttempts,
		},
	})
	storeCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    30 * time.Second,
		ScheduleToCloseTimeout: proposalStoreRetryTime,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second},
	})
	var proposal accountable.InitiativeProposal
	err := workflow.ExecuteActivity(planCtx, a.PlanProposal, in).Get(ctx, &proposal)
	if err == nil {
		err = workflow.ExecuteActivity(storeCtx, a.StoreProposal, activities.StoredProposal{Request: in, Proposal: proposal}).Get(ctx, &proposal)
	}
	if err == nil {
		return proposal, nil
	}
	if rerr := workflow.ExecuteActivity(storeCtx, a.ReleaseProposalGeneration, in).Get(ctx, nil); rerr != nil {
		return proposal, rerr
	}
	return proposal, err
}
