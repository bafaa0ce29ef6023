package api

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/workflows"
)

// ProposalStore is what proposal generation needs of the store.
type ProposalStore interface {
	ClaimProposalGeneration(ctx context.Context, workspaceID string, idem *accountable.Idempotency, workflowID string, perMinute int) (accountable.ProposalClaim, error)
	SetWorkflowRun(ctx context.Context, workspaceID string, idem *accountable.Idempotency, runID string) error
	ReleaseProposalGeneration(ctx context.Context, workspaceID string, idem *accountable.Idempotency, runID, slot string) error
	PendingWorkflowRun(ctx context.Context, workspaceID string, idem *accountable.Idempotency) (accountable.WorkflowRun, bool, error)
	GetProposal(ctx context.Context, workspaceID, id string) (accountable.InitiativeProposal, error)
}

// InitiativeStore is what committing and reading initiatives needs.
type InitiativeStore interface {
	CommitInitiative(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.CommitInitiative) (accountable.InitiativeCommitted, bool, error)
	GetInitiative(ctx context.Context, workspaceID, id string, tree bool) (accountable.Initiative, error)
	ListInitiatives(ctx context.Context, workspaceID string, limit, offset int) ([]accountable.Initiative, bool, error)
}

// WorkflowRunner starts workflows and waits for their results (the Temporal client).
type WorkflowRunner interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
	GetWorkflow(ctx context.Context, workflowID, runID string) client.WorkflowRun
}

// proposalStore is the store of the Initiatives area's proposals.
var proposalStore = needsStore[ProposalStore]()

// initiativeStore is the store of the Initiatives area's initiatives.
var initiativeStore = needsStore[InitiativeStore]()

func init() { servesOperations(30, (*Server).initiativeOperations) }

// initiativeOperations is the Initiatives area.
func (s *Server) initiativeOperations() []operation {
	return []operation{
		op(Operation{ID: "proposeInitiative", Method: fiber.MethodPost, Path: "/initiatives/proposals", Area: "Initiatives",
			Status: fiber.StatusCreated, Idempotency: OptionalIdempotency, Deadline: DeadlineLong,
			Errors: []string{accountable.ECodeRateLimited, accountable.ECodeGenerationInProgress, accountable.ECodeGenerationTimeout,
				accountable.ECodeGenerationFailed, accountable.ECodeWorkflowUnavailable},
			Summary: "Plan an initiative: run the planner (the ProposalGeneration workflow) and store an immutable, digest-addressed proposal.",
			Description: "Synchronous: the answer is the stored proposal. It writes no workstream, milestone or task (committing the proposal does). " +
				"One generation per workspace at a time (429 generation_in_progress) and 6 a minute (429 rate_limited). " +
				"Retrying with the same Idempotency-Key returns the stored proposal without generating again (meta.duplicate true); " +
				"a retry while the first generation runs waits for it. A generation that outlives the request's deadline answers 504 " +
				"generation_timeout and goes on: retry with the same key to receive its proposal."},
			s.proposeInitiative),
		op(Operation{ID: "getInitiativeProposal", Method: fiber.MethodGet, Path: "/initiatives/proposals/{proposalId}", Area: "Initiatives",
			Summary: "Read a proposal; one past its expires_at (7 days) without being committed reads as expired."},
			s.getInitiativeProposal),
		op(Operation{ID: "commitInitiative", Method: fiber.MethodPost, Path: "/initiatives", Area: "Initiatives",
			Status: fiber.StatusCreated, Idempotency: OptionalIdempotency,
			Errors:  []string{accountable.ECodeProposalDigestMismatch, accountable.ECodeProposalExpired, accountable.ECodeProposalCommitted},
			Summary: "Create an initiative: commit a proposal (proposal_id with proposal_digest) with every workstream, milestone and task of its plan, or start one from a title.",
			Description: "One transaction: the initiative, its workstreams, milestones and tasks (ordinary work items), each with its ledger event, " +
				"and the proposal marked instantiated. A digest that does not match is 409 proposal_digest_mismatch; an expired proposal " +
				"409 proposal_expired; a committed one 409 proposal_already_committed."},
			s.commitInitiative),
		op(Operation{ID: "getInitiative", Method: fiber.MethodGet, Path: "/initiatives/{initiativeId}", Area: "Initiatives",
			Summary: "Read an initiative; include=tree adds its workstreams, milestones and tasks, include=launches its launches."},
			s.getInitiative),
		op(Operation{ID: "listLiveInitiatives", Method: fiber.MethodGet, Path: "/live/initiatives", Root: ClientRoot, Area: "Initiatives",
			Summary: "List the workspace's initiatives, newest first (offset pagination: data.pagination{limit, offset, has_more}; no total)."},
			s.listLiveInitiatives),
	}
}

// commitInitiative: POST /initiatives.
func (s *Server) commitInitiative(c *call, in *accountable.CommitInitiative) (accountable.InitiativeCommitted, error) {
	res, dup, err := initiativeStore.of(s).CommitInitiative(c.ctx, c.principal, c.idem, *in)
	c.replayed(dup)
	return res, err
}

type initiativeQuery struct {
	InitiativeID string              `json:"-" path:"initiativeId" format:"uuid" description:"The initiative."`
	Include      []initiativeInclude `json:"-" query:"include" description:"tree (workstreams, milestones and tasks) and/or launches."`
}

// initiativeInclude names a part of an initiative a read may add.
type initiativeInclude string

// Enum lists the parts.
func (initiativeInclude) Enum() []any { return []any{"tree", "launches"} }

// getInitiative: GET /initiatives/{initiativeId}.
func (s *Server) getInitiative(c *call, in *initiativeQuery) (accountable.Initiative, error) {
	tree, launches := slices.Contains(in.Include, "tree"), slices.Contains(in.Include, "launches")
	out, err := initiativeStore.of(s).GetInitiative(c.ctx, c.principal.WorkspaceID, accountable.NormalizeUUID(in.InitiativeID), tree)
	if err == nil && launches {
		out.Launches = []any{} // launches arrive with the Launches area
	}
	return out, err
}

type offsetQuery struct {
	Limit  *int `json:"-" query:"limit" minimum:"1" maximum:"100" description:"Page size (default 20)."`
	Offset *int `json:"-" query:"offset" minimum:"0" description:"Items to skip (default 0); the next page starts at offset + limit."`
}

// Pagination is the page of an offset list.
type Pagination struct {
	Limit   int  `json:"limit" minimum:"1"`
	Offset  int  `json:"offset" minimum:"0"`
	HasMore bool `json:"has_more"`
}

// LiveInitiatives is the offset list of initiatives.
type LiveInitiatives struct {
	Initiatives []accountable.Initiative `json:"initiatives"`
	Pagination  Pagination               `json:"pagination"`
}

// listLiveInitiatives: GET {site_url}/api/client/live/initiatives.
func (s *Server) listLiveInitiatives(c *call, in *offsetQuery) (LiveInitiatives, error) {
	page := Pagination{Limit: 20}
	if in.Limit != nil {
		page.Limit = *in.Limit
	}
	if in.Offset != nil {
		page.Offset = *in.Offset
	}
	list, more, err := initiativeStore.of(s).ListInitiatives(c.ctx, c.principal.WorkspaceID, page.Limit, page.Offset)
	if err != nil {
		return LiveInitiatives{}, err
	}
	page.HasMore = more
	if list == nil {
		list = []accountable.Initiative{}
	}
	return LiveInitiatives{Initiatives: list, Pagination: page}, nil
}

// DefaultProposalsPerMinute is the specification's limit of proposal generations per
// workspace and minute.
const DefaultProposalsPerMinute = 6

// How long the handler waits for Temporal to accept a start; a generation already running
// for the workspace is retried after generationRetryAfter.
const (
	workflowStartTimeout = 5 * time.Second
	generationRetryAfter = 5 * time.Second
)

// proposeInitiative: POST /initiatives/proposals.
func (s *Server) proposeInitiative(c *call, in *accountable.ProposeInitiative) (accountable.InitiativeProposal, error) {
	var zero accountable.InitiativeProposal
	ws := c.principal.WorkspaceID
	wfID := workflows.ProposalGenerationID(ws)
	perMinute := s.cfg.ProposalsPerMinute
	if perMinute <= 0 {
		perMinute = DefaultProposalsPerMinute
	}
	claim, err := proposalStore.of(s).ClaimProposalGeneration(c.ctx, ws, c.idem, wfID, perMinute)
	switch {
	case err != nil:
		return zero, err
	case claim.Replay != nil:
		c.replayed(true)
		return *claim.Replay, nil
	case claim.Attach != nil:
		return s.attachGeneration(c, *claim.Attach)
	}
	req := workflows.ProposalGenerationInput{WorkspaceID: ws, ProposalID: uuid.Must(uuid.NewV7()).String(), Actor: c.principal.Actor(),
		Idempotency: c.idem, Causation: in.Causation, Request: *in}
	startCtx, cancel := context.WithTimeout(c.ctx, workflowStartTimeout)
	defer cancel()
	policy := workflows.StartPolicyOf(workflows.ProposalGenerationName)
	run, err := s.deps.Runner.ExecuteWorkflow(startCtx, client.StartWorkflowOptions{
		ID: wfID, TaskQueue: s.cfg.TaskQueue,
		WorkflowIDReusePolicy: policy.IDReuse, WorkflowIDConflictPolicy: policy.IDConflict,
		WorkflowExecutionErrorWhenAlreadyStarted: policy.ErrorWhenStarted, WorkflowExecutionTimeout: policy.ExecutionTimeout,
		TypedSearchAttributes: workflows.SearchAttributes(ws),
	}, workflows.ProposalGenerationName, req)
	if err != nil {
		// The start failed: the claim is given back (no record, no spent rate slot). A start
		// Temporal took as startCtx ran out may have begun a run all the same; without the
		// claim it stores nothing (store's errClaimReleased), as this answer says.
		if rerr := proposalStore.of(s).ReleaseProposalGeneration(context.WithoutCancel(c.ctx), ws, c.idem, "", claim.Slot); rerr != nil {
			s.log.Warn("releasing a proposal generation that did not start", "err", rerr)
		}
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			return zero, RateLimited(accountable.ECodeGenerationInProgress,
				"A proposal generation is already running for this workspace; retry after error.retryAfter seconds.", generationRetryAfter)
		}
		s.log.Warn("starting a proposal generation failed", "err", err)
		return zero, accountable.Errorf(accountable.ECodeWorkflowUnavailable, "The workflow engine could not start the generation; nothing was stored; retry later.")
	}
	if err := proposalStore.of(s).SetWorkflowRun(c.ctx, ws, c.idem, run.GetRunID()); err != nil {
		s.log.Warn("recording the run of a proposal generation", "err", err)
	}
	var p accountable.InitiativeProposal
	if err := run.Get(c.ctx, &p); err != nil {
		return zero, s.generationError(c, run.GetRunID(), err)
	}
	c.replayed(false)
	return p, nil
}

// attachGeneration waits for the run a retry of the same request found pending, and
// answers its proposal as a replay.
func (s *Server) attachGeneration(c *call, run accountable.WorkflowRun) (accountable.InitiativeProposal, error) {
	var zero accountable.InitiativeProposal
	if run.RunID == "" { // the first request is starting it right now
		return zero, accountable.Errorf(accountable.ECodeIdempotencyInProgress,
			"A request with Idempotency-Key %q is starting its generation; retry in a moment.", c.idem.Key)
	}
	var p accountable.InitiativeProposal
	if err := s.deps.Runner.GetWorkflow(c.ctx, run.WorkflowID, run.RunID).Get(c.ctx, &p); err != nil {
		return zero, s.generationError(c, run.RunID, err)
	}
	c.replayed(true)
	return p, nil
}

// generationError answers a wait that ended without a proposal: the request's deadline
// (the generation goes on; its record stays pending for a retry) or a failed run (whose
// pending record is released, so that a retry starts afresh), the run runID's.
func (s *Server) generationError(c *call, runID string, err error) error {
	if c.ctx.Err() != nil {
		if errors.Is(c.ctx.Err(), context.DeadlineExceeded) {
			return accountable.Errorf(accountable.ECodeGenerationTimeout,
				"The generation did not finish within the request's deadline; it goes on: retry with the same Idempotency-Key to receive its proposal.")
		}
		return c.ctx.Err()
	}
	ws := c.principal.WorkspaceID
	if rerr := proposalStore.of(s).ReleaseProposalGeneration(context.WithoutCancel(c.ctx), ws, c.idem, runID, ""); rerr != nil {
		s.log.Warn("releasing a failed proposal generation", "err", rerr)
	}
	s.log.Warn("a proposal generation failed", "err", err)
	return accountable.Errorf(accountable.ECodeGenerationFailed,
		"The planner could not make a valid plan within its retries; nothing was stored; retry the request.")
}

type proposalRef struct {
	ProposalID string `json:"-" path:"proposalId" format:"uuid" description:"The proposal."`
}

// getInitiativeProposal: GET /initiatives/proposals/{proposalId}.
func (s *Server) getInitiativeProposal(c *call, in *proposalRef) (accountable.InitiativeProposal, error) {
	return proposalStore.of(s).GetProposal(c.ctx, c.principal.WorkspaceID, accountable.NormalizeUUID(in.ProposalID))
}
