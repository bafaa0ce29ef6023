package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/pictures"
)

// LaunchStore is what the Launches and Runs areas need.
type LaunchStore interface {
	LaunchInitiative(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.LaunchInitiative) (accountable.Launch, bool, error)
	GetLaunch(ctx context.Context, workspaceID, id string) (accountable.Launch, error)
	FinalizeRun(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.FinalizeRun) (accountable.Run, bool, error)
	GetRun(ctx context.Context, workspaceID, id string) (accountable.Run, error)
	ListRuns(ctx context.Context, workspaceID string, launchID *string, limit int, after *accountable.WorkCursor) ([]accountable.Run, *accountable.WorkCursor, error)
	ActOnRun(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, runID string, action accountable.RunAction,
		in accountable.RunActionRequest) (accountable.Run, bool, error)
}

// launchStore is the store of the Launches and Runs areas.
var launchStore = needsStore[LaunchStore]()

func init() { servesOperations(50, (*Server).launchOperations) }

// launchOperations is the Launches and Runs areas.
func (s *Server) launchOperations() []operation {
	return []operation{
		op(Operation{ID: "launchInitiative", Method: fiber.MethodPost, Path: "/initiatives/{initiativeId}/launch", Area: "Launches",
			Status: fiber.StatusAccepted, Idempotency: OptionalIdempotency,
			Summary: "Launch an initiative (or one workstream or task): one job per workstream reserves its estimate against cost_ceiling_cents, dispatches a run and settles when the run is finalised; answers the Launch (202) while the LaunchDispatch workflow runs it.",
			Description: "A job whose reservation would pass the ceiling is blocked (block_code budget_ceiling_exceeded) on a pending budget_approval " +
				"decision, shown as blocking_decision; approving it reserves the job anyway, declining it cancels the job."},
			s.launchInitiative),
		op(Operation{ID: "getLaunch", Method: fiber.MethodGet, Path: "/launches/{launchId}", Area: "Launches",
			Summary:     "Read a launch: jobs, runs, reservation receipts, reserved and settled spend, and the decision blocking it (meta.projectionStatus).",
			Description: "With Accept: image/svg+xml preferred to application/json (as a browser's <img> sends it), the answer is the launch drawn as an SVG timeline instead.",
			Alternates: []Alternate{alternate(pictures.MediaType,
				"The launch as a timeline: a row per job with its reservation, dispatch, run and settlement on one time axis from the launch's creation, "+
					"the reserved and settled cost as text, and the blocking decision marked on its job's row with a sign and words. The same launch gives the same bytes.",
				func(_ context.Context, l accountable.Launch) ([]byte, error) { return pictures.LaunchTimeline(l) })}},
			s.getLaunch),
		op(Operation{ID: "listRuns", Method: fiber.MethodGet, Path: "/runs", Area: "Runs",
			Summary: "List runs, newest first; data is the array (cursor pagination: meta.nextCursor, meta.hasMore)."}, s.listRuns),
		op(Operation{ID: "getRun", Method: fiber.MethodGet, Path: "/runs/{runId}", Area: "Runs",
			Summary: "Read a run."}, s.getRun),
		op(Operation{ID: "finalizeRun", Method: fiber.MethodPost, Path: "/runs/{runId}/finalize", Area: "Runs",
			Idempotency: OptionalIdempotency, Errors: []string{accountable.ECodeInvalidStateTransition},
			Summary: "Report the end of a run (status succeeded, failed or cancelled; outcome_kind; cost_cents; summary; evidence); its launch settles the run's reservation. A run that has ended is 409 invalid_state_transition."},
			s.finalizeRun),
		s.runActionOperation("pauseRun", accountable.RunPause, "Pause a running run."),
		s.runActionOperation("resumeRun", accountable.RunResume, "Resume a paused run."),
		s.runActionOperation("cancelRun", accountable.RunCancel, "Cancel a run that has not ended; its launch settles it (no cost: released)."),
		s.runActionOperation("rollbackRun", accountable.RunRollback, "Roll back a run that has ended: its outcome becomes abandoned."),
	}
}

// runActionOperation declares POST /runs/{runId}/actions/{action}.
func (s *Server) runActionOperation(id string, action accountable.RunAction, summary string) operation {
	return op(Operation{ID: id, Method: fiber.MethodPost, Path: "/runs/{runId}/actions/" + string(action), Area: "Runs",
		Idempotency: OptionalIdempotency, Errors: []string{accountable.ECodeInvalidStateTransition},
		Summary: summary + " Any other status is 409 invalid_state_transition."},
		func(c *call, in *runActionCall) (accountable.Run, error) { return s.actOnRun(c, in, action) })
}

type runActionCall struct {
	runRef
	accountable.RunActionRequest
}

// actOnRun: POST /runs/{runId}/actions/{pause|resume|cancel|rollback}.
func (s *Server) actOnRun(c *call, in *runActionCall, action accountable.RunAction) (accountable.Run, error) {
	res, dup, err := launchStore.of(s).ActOnRun(c.ctx, c.principal, c.idem, accountable.NormalizeUUID(in.runRef.RunID), action, in.RunActionRequest)
	c.replayed(dup)
	return res, err
}

type launchRequest struct {
	InitiativeID string `json:"-" path:"initiativeId" format:"uuid" description:"The initiative."`
	accountable.LaunchInitiative
}

// launchInitiative: POST /initiatives/{initiativeId}/launch.
func (s *Server) launchInitiative(c *call, in *launchRequest) (accountable.Launch, error) {
	cmd := in.LaunchInitiative
	cmd.InitiativeID = accountable.NormalizeUUID(in.InitiativeID)
	res, dup, err := launchStore.of(s).LaunchInitiative(c.ctx, c.principal, c.idem, cmd)
	c.replayed(dup)
	return res, err
}

type launchRef struct {
	LaunchID string `json:"-" path:"launchId" format:"uuid" description:"The launch."`
}

// projectionCurrent says a read was made from the committed state itself.
const projectionCurrent = "current"

// getLaunch: GET /launches/{launchId}.
func (s *Server) getLaunch(c *call, in *launchRef) (accountable.Launch, error) {
	status := projectionCurrent
	c.meta.ProjectionStatus = &status
	return launchStore.of(s).GetLaunch(c.ctx, c.principal.WorkspaceID, accountable.NormalizeUUID(in.LaunchID))
}

type runRef struct {
	RunID string `json:"-" path:"runId" format:"uuid" description:"The run."`
}

type finalizeRequest struct {
	runRef
	accountable.FinalizeRun
}

// finalizeRun: POST /runs/{runId}/finalize.
func (s *Server) finalizeRun(c *call, in *finalizeRequest) (accountable.Run, error) {
	cmd := in.FinalizeRun
	cmd.RunID = accountable.NormalizeUUID(in.runRef.RunID)
	res, dup, err := launchStore.of(s).FinalizeRun(c.ctx, c.principal, c.idem, cmd)
	c.replayed(dup)
	return res, err
}

// getRun: GET /runs/{runId}.
func (s *Server) getRun(c *call, in *runRef) (accountable.Run, error) {
	return launchStore.of(s).GetRun(c.ctx, c.principal.WorkspaceID, accountable.NormalizeUUID(in.RunID))
}

type listRunsQuery struct {
	Limit    *int    `json:"-" query:"limit" minimum:"1" maximum:"1000" description:"Page size (default 100)."`
	Cursor   *string `json:"-" query:"cursor" description:"meta.nextCursor of the previous page."`
	LaunchID *string `json:"-" query:"launch_id" format:"uuid" description:"Only the runs of this launch."`
}

// listRuns: GET /runs. data is the array, paging in meta, as every list's whose shape
// neither the specification nor a public client sets otherwise.
func (s *Server) listRuns(c *call, in *listRunsQuery) ([]accountable.Run, error) {
	var launch *string
	if in.LaunchID != nil {
		id := accountable.NormalizeUUID(*in.LaunchID)
		launch = &id
	}
	return newestFirst(c, in.Limit, in.Cursor, func(limit int, after *accountable.WorkCursor) ([]accountable.Run, *accountable.WorkCursor, error) {
		return launchStore.of(s).ListRuns(c.ctx, c.principal.WorkspaceID, launch, limit, after)
	})
}
