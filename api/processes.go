package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
)

// ProcessStore is what the Operating processes area needs.
type ProcessStore interface {
	DeclareProcess(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.DeclareProcess) (accountable.ProcessChanged, bool, error)
	ReviseProcess(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.ReviseProcess) (accountable.ProcessChanged, bool, error)
	TransitionProcess(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.TransitionProcess) (accountable.ProcessChanged, bool, error)
	GetProcess(ctx context.Context, workspaceID, id string) (accountable.ProcessDetail, error)
	ListProcesses(ctx context.Context, workspaceID string, f accountable.ProcessFilter) ([]accountable.OperatingProcess, *accountable.WorkCursor, error)
}

// processStore is the store of the Operating processes area.
var processStore = needsStore[ProcessStore]()

func init() { servesOperations(70, (*Server).processOperations) }

// processOperations is the Operating processes area.
func (s *Server) processOperations() []operation {
	ops := []operation{
		op(Operation{ID: "declareOperatingProcess", Method: fiber.MethodPost, Path: "/operating-processes", Area: "Operating processes",
			Status: fiber.StatusCreated, Idempotency: RequiredIdempotency,
			Summary: "Declare an operating process (lifecycleState proposed, provenanceMode declared) with its first revision; data is {process, revision, aggregateVersion, ledger}."},
			s.declareProcess),
		op(Operation{ID: "listOperatingProcesses", Method: fiber.MethodGet, Path: "/operating-processes", Area: "Operating processes",
			Summary: "List the workspace's operating processes, newest first; data is the array (cursor pagination: meta.nextCursor, meta.hasMore)."},
			s.listProcesses),
		op(Operation{ID: "getOperatingProcess", Method: fiber.MethodGet, Path: "/operating-processes/{processId}", Area: "Operating processes",
			Summary: "Read an operating process with every revision (oldest first) and its aggregateVersion; data is {process, revisions, aggregateVersion}."},
			s.getProcess),
		op(Operation{ID: "reviseOperatingProcess", Method: fiber.MethodPost, Path: "/operating-processes/{processId}/revisions", Area: "Operating processes",
			Status: fiber.StatusCreated, Idempotency: RequiredIdempotency, Errors: []string{accountable.ECodeVersionConflict, accountable.ECodeInvalidStateTransition},
			Summary: "Add the next revision of a process (revisionNumber + 1, contentDigest of its canonical content), which becomes its current one; a retired process takes none (409 invalid_state_transition)."},
			s.reviseProcess),
	}
	for _, a := range accountable.ProcessActions {
		action := a
		ops = append(ops, op(Operation{ID: string(action) + "OperatingProcess", Method: fiber.MethodPost,
			Path: "/operating-processes/{processId}/" + string(action), Area: "Operating processes",
			Idempotency: RequiredIdempotency, Errors: []string{accountable.ECodeVersionConflict, accountable.ECodeInvalidStateTransition},
			Summary: "Move a process from " + statesList(action.From()) + " to " + string(mustApply(action)) +
				" at expected_aggregate_version (else 409 version_conflict); from any other state 409 invalid_state_transition."},
			func(c *call, in *transitionRequest) (accountable.ProcessChanged, error) {
				return s.transitionProcess(c, in, action)
			}))
	}
	return ops
}

func statesList(states []accountable.ProcessState) string {
	out := ""
	for i, st := range states {
		if i > 0 {
			out += " or "
		}
		out += string(st)
	}
	return out
}

func mustApply(a accountable.ProcessAction) accountable.ProcessState {
	to, _ := a.Apply(a.From()[0])
	return to
}

// declareProcess: POST /operating-processes.
func (s *Server) declareProcess(c *call, in *accountable.DeclareProcess) (accountable.ProcessChanged, error) {
	res, dup, err := processStore.of(s).DeclareProcess(c.ctx, c.principal, c.idem, *in)
	return replayedChange(c, res, dup), err
}

// replayedChange marks a replayed process change as a duplicate, in meta and in its ledger result.
func replayedChange(c *call, res accountable.ProcessChanged, dup bool) accountable.ProcessChanged {
	c.replayed(dup)
	if dup {
		res.Ledger.Duplicate = true
		res.Forget()
	}
	return res
}

type processRef struct {
	ProcessID string `json:"-" path:"processId" format:"uuid" description:"The operating process."`
}

type reviseRequest struct {
	processRef
	accountable.ReviseProcess
}

// reviseProcess: POST /operating-processes/{processId}/revisions.
func (s *Server) reviseProcess(c *call, in *reviseRequest) (accountable.ProcessChanged, error) {
	cmd := in.ReviseProcess
	cmd.ProcessID = accountable.NormalizeUUID(in.processRef.ProcessID)
	res, dup, err := processStore.of(s).ReviseProcess(c.ctx, c.principal, c.idem, cmd)
	return replayedChange(c, res, dup), err
}

type transitionRequest struct {
	processRef
	accountable.TransitionProcess
}

// transitionProcess: POST /operating-processes/{processId}/{action}.
func (s *Server) transitionProcess(c *call, in *transitionRequest, action accountable.ProcessAction) (accountable.ProcessChanged, error) {
	cmd := in.TransitionProcess
	cmd.ProcessID, cmd.Action = accountable.NormalizeUUID(in.processRef.ProcessID), action
	res, dup, err := processStore.of(s).TransitionProcess(c.ctx, c.principal, c.idem, cmd)
	return replayedChange(c, res, dup), err
}

// getProcess: GET /operating-processes/{processId}.
func (s *Server) getProcess(c *call, in *processRef) (accountable.ProcessDetail, error) {
	return processStore.of(s).GetProcess(c.ctx, c.principal.WorkspaceID, accountable.NormalizeUUID(in.ProcessID))
}

type listProcessesQuery struct {
	Limit          *int                        `json:"-" query:"limit" minimum:"1" maximum:"1000" description:"Page size (default 100)."`
	Cursor         *string                     `json:"-" query:"cursor" description:"meta.nextCursor of the previous page."`
	LifecycleState *accountable.ProcessState   `json:"-" query:"lifecycle_state"`
	ProvenanceMode *accountable.ProvenanceMode `json:"-" query:"provenance_mode"`
}

// listProcesses: GET /operating-processes. data is the array (the public clients read it
// so), paging in meta.
func (s *Server) listProcesses(c *call, in *listProcessesQuery) ([]accountable.OperatingProcess, error) {
	return newestFirst(c, in.Limit, in.Cursor, func(limit int, after *accountable.WorkCursor) ([]accountable.OperatingProcess, *accountable.WorkCursor, error) {
		return processStore.of(s).ListProcesses(c.ctx, c.principal.WorkspaceID, accountable.ProcessFilter{Limit: limit, After: after,
			LifecycleState: in.LifecycleState, ProvenanceMode: in.ProvenanceMode})
	})
}
