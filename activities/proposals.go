package activities

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/projection"
)

// Planner makes the plan of a proposal request (planner.Model or planner.Baseline).
type Planner interface {
	Plan(ctx context.Context, in accountable.ProposeInitiative) (accountable.GeneratedPlan, error)
}

// ProposalStore is what the proposal activities need.
type ProposalStore interface {
	StoreProposal(ctx context.Context, workspaceID string, actor accountable.Actor, idem *accountable.Idempotency,
		causation accountable.Causation, p accountable.InitiativeProposal, title string) (accountable.InitiativeProposal, error)
	ReleaseProposalGeneration(ctx context.Context, workspaceID string, idem *accountable.Idempotency, runID, slot string) error
}

// Proposals holds the proposal activities.
type Proposals struct {
	Planner Planner
	Store   ProposalStore
}

// ProposalRequest is a proposal generation as the workflow carries it: who asked, under
// which idempotency key, and what.
type ProposalRequest struct {
	WorkspaceID string                        `json:"workspaceId"`
	ProposalID  string                        `json:"proposalId"`
	Actor       accountable.Actor             `json:"actor"`
	Idempotency *accountable.Idempotency      `json:"idempotency"`
	Causation   accountable.Causation         `json:"causation"`
	Request     accountable.ProposeInitiative `json:"request"`
}

// PlanProposal runs the planner and makes the proposal of its plan: economics, the
// generation receipt, the expiry and the digest of the content. It stores nothing, so a
// retry (a model answering badly) costs nothing but the model call.
func (a *Proposals) PlanProposal(ctx context.Context, in ProposalRequest) (accountable.InitiativeProposal, error) {
	res, err := a.Planner.Plan(ctx, in.Request)
	if err != nil {
		return accountable.InitiativeProposal{}, err
	}
	if err := res.Plan.Validate(in.Request.DepthOr()); err != nil {
		// A planner's bug, not the model's mood: retrying would make the same plan.
		return accountable.InitiativeProposal{}, temporal.NewNonRetryableApplicationError(err.Error(), "invalid_plan", err)
	}
	receipt := res.Receipt
	receipt.ReceiptID = uuid.Must(uuid.NewV7()).String()
	p := accountable.InitiativeProposal{
		ProposalID: in.ProposalID, Status: accountable.ProposalProposed,
		ExpiresAt: accountable.TimeOf(time.Now().Add(accountable.ProposalLifetime)),
		Plan:      res.Plan, AssignmentSource: res.Source, Economics: projection.EconomicsOf(res.Plan), GenerationReceipt: receipt,
	}
	if p.ProposalDigest, err = canonical.DigestOf(p.ProposalContent()); err != nil {
		return p, temporal.NewNonRetryableApplicationError(err.Error(), "invalid_plan", err)
	}
	return p, nil
}

// StoreProposal stores the proposal with its ledger event and completes the request's
// idempotency record, once: a retry after success returns the stored proposal.
func (a *Proposals) StoreProposal(ctx context.Context, in StoredProposal) (accountable.InitiativeProposal, error) {
	p, err := a.Store.StoreProposal(ctx, in.Request.WorkspaceID, in.Request.Actor, in.Request.Idempotency,
		in.Request.Causation, in.Proposal, in.Request.Request.Title)
	if accountable.ErrorCode(err) == accountable.ECodeIdempotencyInProgress {
		// A retry of the request holds the key for a moment (attaching to this run): try again.
		return p, err
	}
	return p, retryable(err)
}

// StoredProposal is a made proposal with its request.
type StoredProposal struct {
	Request  ProposalRequest                `json:"request"`
	Proposal accountable.InitiativeProposal `json:"proposal"`
}

// ReleaseProposalGeneration removes the request's pending idempotency record after a
// generation that made no proposal, so that a retry of the request starts afresh. The rate
// slot stays spent: the generation ran. Only the record naming this activity's run is
// removed: a retry may have claimed the key afresh since.
func (a *Proposals) ReleaseProposalGeneration(ctx context.Context, in ProposalRequest) error {
	run := activity.GetInfo(ctx).WorkflowExecution.RunID
	return retryable(a.Store.ReleaseProposalGeneration(ctx, in.WorkspaceID, in.Idempotency, run, ""))
}
