package api

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"go.temporal.io/sdk/client"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/workflows"
)

// DiscoveryStore is what the Discovery runs area needs.
type DiscoveryStore interface {
	StartDiscoveryRun(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, id string, in accountable.StartDiscoveryRun) (accountable.DiscoveryRun, bool, error)
	GetDiscoveryRun(ctx context.Context, workspaceID, id string) (accountable.DiscoveryResult, error)
	ListDiscoveryRuns(ctx context.Context, workspaceID string, limit int, after *accountable.WorkCursor) ([]accountable.DiscoveryResult, *accountable.WorkCursor, error)
	ProposeDiscoveredProcess(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency,
		in accountable.ProposeDiscoveredProcess) (accountable.DiscoveredProcessProposal, bool, error)
}

// discoveryStore is the store of the Discovery runs area.
var discoveryStore = needsStore[DiscoveryStore]()

func init() { servesOperations(80, (*Server).discoveryRunOperations) }

// discoveryOperations is the Discovery runs area.
func (s *Server) discoveryRunOperations() []operation {
	return []operation{
		op(Operation{ID: "startDiscoveryRun", Method: fiber.MethodPost, Path: "/discovery-runs", Area: "Discovery runs",
			Status: fiber.StatusCreated, Idempotency: OptionalIdempotency, Deadline: DeadlineLong,
			EnvelopeStatuses: map[int]string{fiber.StatusAccepted: "Accepted: a deep_search or reconcile run (and a bounded_sync run not finished within the request's deadline) goes on; read it with GET /discovery-runs/{runId}."},
			Summary: "Start a discovery run over the workspace's ledger (completed work tagged with process_stage and case_id, handoffs between stages, " +
				"and ordinary completed work grouped into cases by what links it: correlation and causation ids, identifiers shared by titles or metadata, " +
				"milestone, workstream or initiative; each candidate's grouping says why) and supplied observations; " +
				"bounded_sync answers 201 with the finished result {run, observations, processCards, confirmedProcessRefs}, the other modes 202 with the run at once."},
			s.startDiscoveryRun),
		op(Operation{ID: "listDiscoveryRuns", Method: fiber.MethodGet, Path: "/discovery-runs", Area: "Discovery runs",
			Summary: "List the workspace's discovery runs, newest first; data is the array, each item a run with its result as GET /discovery-runs/{runId} answers it, {run, observations, processCards, confirmedProcessRefs} (cursor pagination: meta.nextCursor, meta.hasMore)."},
			s.listDiscoveryRuns),
		op(Operation{ID: "getDiscoveryRun", Method: fiber.MethodGet, Path: "/discovery-runs/{runId}", Area: "Discovery runs",
			Summary: "Read a discovery run: its status, counts and the candidates found so far."}, s.getDiscoveryRun),
		op(Operation{ID: "proposeDiscoveredProcess", Method: fiber.MethodPost, Path: "/discovery-runs/{runId}/propose", Area: "Discovery runs",
			Status: fiber.StatusCreated, Idempotency: RequiredIdempotency, ClosedBody: true, BodyWorkspaceRequired: true,
			Errors:  []string{accountable.ECodeInvalidStateTransition},
			Summary: "Turn one discovered process candidate into a proposal for workspace review: the process (lifecycleState discovered, provenanceMode observed), its revision 1, the ledger result; meta.requiresConfirmation is true."},
			s.proposeDiscoveredProcess),
	}
}

// startDiscoveryRun: POST /discovery-runs. The command records the run and the message
// that starts its workflow (so a run is never without it). A bounded_sync request then
// starts that workflow itself (or joins it, when the relay was first) and waits for it
// within its deadline, less a margin to answer; when the run has not finished by then, or
// Temporal cannot be reached, it answers 202 and the run goes on.
func (s *Server) startDiscoveryRun(c *call, in *accountable.StartDiscoveryRun) (accountable.DiscoveryResult, error) {
	ws := c.principal.WorkspaceID
	id := uuid.Must(uuid.NewV7()).String()
	run, dup, err := discoveryStore.of(s).StartDiscoveryRun(c.ctx, c.principal, c.idem, id, *in)
	if err != nil {
		return accountable.DiscoveryResult{}, err
	}
	c.replayed(dup)
	if run.Mode == accountable.DiscoveryBoundedSync && !run.Status.Finished() {
		s.awaitDiscoveryRun(c, ws, run.ID)
	}
	res, err := discoveryStore.of(s).GetDiscoveryRun(c.ctx, ws, run.ID)
	if err == nil && !res.Run.Status.Finished() && !dup {
		c.status = fiber.StatusAccepted
	}
	return res, err
}

// awaitDiscoveryRun starts (or joins) a run's workflow and waits for it, within the
// request's deadline less a second.
func (s *Server) awaitDiscoveryRun(c *call, workspaceID, runID string) {
	wait, cancel := context.WithCancel(c.ctx)
	if dl, ok := c.ctx.Deadline(); ok {
		wait, cancel = context.WithDeadline(c.ctx, dl.Add(-time.Second))
	}
	defer cancel()
	startCtx, cancelStart := context.WithTimeout(wait, workflowStartTimeout)
	defer cancelStart()
	p := workflows.StartPolicyOf(workflows.DiscoveryRunName)
	wfRun, err := s.deps.Runner.ExecuteWorkflow(startCtx, client.StartWorkflowOptions{
		ID: workflows.DiscoveryRunID(workspaceID, runID), TaskQueue: s.cfg.TaskQueue,
		WorkflowIDReusePolicy: p.IDReuse, WorkflowIDConflictPolicy: p.IDConflict,
		WorkflowExecutionErrorWhenAlreadyStarted: p.ErrorWhenStarted, WorkflowExecutionTimeout: p.ExecutionTimeout,
		TypedSearchAttributes: workflows.SearchAttributes(workspaceID),
	}, workflows.DiscoveryRunName, workflows.DiscoveryRunInput{WorkspaceID: workspaceID, RunID: runID})
	if err != nil {
		// Ended already (the relay started it and it finished), or Temporal is away: the
		// run's row says where it is; the outbox starts it when Temporal is back.
		return
	}
	var status accountable.DiscoveryStatus
	_ = wfRun.Get(wait, &status) // the run's row is read next, whatever the wait came to
}

type discoveryRunRef struct {
	RunID string `json:"-" path:"runId" format:"uuid" description:"The discovery run."`
}

// getDiscoveryRun: GET /discovery-runs/{runId}.
func (s *Server) getDiscoveryRun(c *call, in *discoveryRunRef) (accountable.DiscoveryResult, error) {
	return discoveryStore.of(s).GetDiscoveryRun(c.ctx, c.principal.WorkspaceID, accountable.NormalizeUUID(in.RunID))
}

// discoveryRunsPage is the default page of GET /discovery-runs: an item carries its run's
// observations and candidates, so its pages are smaller by default than other lists' (the
// public clients ask for 20); the maximum is theirs, so no client's page size is refused.
const discoveryRunsPage = 20

type listDiscoveryRunsQuery struct {
	Limit  *int    `json:"-" query:"limit" minimum:"1" maximum:"1000" description:"Page size (default 20; each item carries its run's observations and candidates)."`
	Cursor *string `json:"-" query:"cursor" description:"meta.nextCursor of the previous page."`
}

// listDiscoveryRuns: GET /discovery-runs. data is the array of results (the public
// clients read it so, each item typed as the result of a run), paging in meta.
func (s *Server) listDiscoveryRuns(c *call, in *listDiscoveryRunsQuery) ([]accountable.DiscoveryResult, error) {
	limit := in.Limit
	if limit == nil {
		limit = ptrTo(discoveryRunsPage)
	}
	return newestFirst(c, limit, in.Cursor, func(limit int, after *accountable.WorkCursor) ([]accountable.DiscoveryResult, *accountable.WorkCursor, error) {
		return discoveryStore.of(s).ListDiscoveryRuns(c.ctx, c.principal.WorkspaceID, limit, after)
	})
}

type proposeDiscoveredRequest struct {
	discoveryRunRef
	accountable.ProposeDiscoveredProcess
}

// proposeDiscoveredProcess: POST /discovery-runs/{runId}/propose.
func (s *Server) proposeDiscoveredProcess(c *call, in *proposeDiscoveredRequest) (accountable.DiscoveredProcessProposal, error) {
	cmd := in.ProposeDiscoveredProcess
	cmd.RunID = accountable.NormalizeUUID(in.discoveryRunRef.RunID)
	cmd.ProcessCandidateID = accountable.NormalizeUUID(cmd.ProcessCandidateID)
	res, dup, err := discoveryStore.of(s).ProposeDiscoveredProcess(c.ctx, c.principal, c.idem, cmd)
	c.replayed(dup)
	confirm := true
	c.meta.RequiresConfirmation = &confirm
	if dup {
		res.Ledger.Duplicate = true
		res.Forget()
	}
	return res, err
}
