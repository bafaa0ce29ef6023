package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
)

// HandoffStore is what the Handoffs area needs.
type HandoffStore interface {
	CreateHandoff(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.CreateHandoff) (accountable.Handoff, bool, error)
	ActOnHandoff(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.ActOnHandoff) (accountable.Handoff, bool, error)
	GetHandoff(ctx context.Context, workspaceID, id string) (accountable.Handoff, error)
	ListHandoffs(ctx context.Context, workspaceID string, f accountable.HandoffFilter) ([]accountable.Handoff, *accountable.WorkCursor, error)
}

var handoffActionSummaries = map[accountable.HandoffAction]string{
	accountable.HandoffClaim: "Claim a handoff (proposed, returned or escalated → claimed); the caller becomes its currentActor.",
	accountable.HandoffFulfill: "Fulfil a claimed handoff with its result (an empty object is accepted): every required proof kind must be among " +
		"result.proofs (and proofs), else 409 invalid_state_transition with details.missing_proof_kinds; a handoff that is not claimed is 409 invalid_state_transition.",
	accountable.HandoffReturn:   "Return a claimed handoff to its sender (claimed → returned).",
	accountable.HandoffEscalate: "Escalate a handoff (proposed, claimed or returned → escalated).",
	accountable.HandoffCancel:   "Cancel a handoff that has not ended (→ cancelled); its SLA timer stops.",
}

// handoffStore is the store of the Handoffs area.
var handoffStore = needsStore[HandoffStore]()

func init() { servesOperations(100, (*Server).handoffOperations) }

// handoffOperations is the Handoffs area.
func (s *Server) handoffOperations() []operation {
	ops := []operation{
		op(Operation{ID: "createHandoff", Method: fiber.MethodPost, Path: "/handoffs", Area: "Handoffs",
			Status: fiber.StatusCreated, Idempotency: OptionalIdempotency,
			Summary: "Propose a handoff between two stages (status proposed); with sla_minutes or due_at its SLA timer (the HandoffSLA workflow) escalates it when it comes due unfulfilled (handoff.sla_breached, status escalated, an escalation decision)."},
			s.createHandoff),
		op(Operation{ID: "listHandoffs", Method: fiber.MethodGet, Path: "/handoffs", Area: "Handoffs",
			Summary: "List the workspace's handoffs, newest first; data is the array (cursor pagination: meta.nextCursor, meta.hasMore)."},
			s.listHandoffs),
		op(Operation{ID: "getHandoff", Method: fiber.MethodGet, Path: "/handoffs/{handoffId}", Area: "Handoffs",
			Summary: "Read a handoff."}, s.getHandoff),
	}
	for _, a := range accountable.HandoffActions {
		action := a
		ops = append(ops, op(Operation{ID: string(action) + "Handoff", Method: fiber.MethodPost, Path: "/handoffs/{handoffId}/" + string(action),
			Area: "Handoffs", Idempotency: OptionalIdempotency, Errors: []string{accountable.ECodeVersionConflict, accountable.ECodeInvalidStateTransition},
			Summary: handoffActionSummaries[action] + " At expected_aggregate_version when given (else 409 version_conflict)."},
			func(c *call, in *handoffActionRequest) (accountable.Handoff, error) {
				return s.actOnHandoff(c, in, action)
			}))
	}
	return ops
}

// createHandoff: POST /handoffs.
func (s *Server) createHandoff(c *call, in *accountable.CreateHandoff) (accountable.Handoff, error) {
	res, dup, err := handoffStore.of(s).CreateHandoff(c.ctx, c.principal, c.idem, *in)
	c.replayed(dup)
	return res, err
}

type handoffRef struct {
	HandoffID string `json:"-" path:"handoffId" format:"uuid" description:"The handoff."`
}

type handoffActionRequest struct {
	handoffRef
	accountable.ActOnHandoff
}

// actOnHandoff: POST /handoffs/{handoffId}/{claim|fulfill|return|escalate|cancel}.
func (s *Server) actOnHandoff(c *call, in *handoffActionRequest, action accountable.HandoffAction) (accountable.Handoff, error) {
	cmd := in.ActOnHandoff
	cmd.HandoffID, cmd.Action = accountable.NormalizeUUID(in.handoffRef.HandoffID), action
	res, dup, err := handoffStore.of(s).ActOnHandoff(c.ctx, c.principal, c.idem, cmd)
	c.replayed(dup)
	return res, err
}

// getHandoff: GET /handoffs/{handoffId}.
func (s *Server) getHandoff(c *call, in *handoffRef) (accountable.Handoff, error) {
	return handoffStore.of(s).GetHandoff(c.ctx, c.principal.WorkspaceID, accountable.NormalizeUUID(in.HandoffID))
}

type listHandoffsQuery struct {
	Limit  *int                       `json:"-" query:"limit" minimum:"1" maximum:"1000" description:"Page size (default 100)."`
	Cursor *string                    `json:"-" query:"cursor" description:"meta.nextCursor of the previous page."`
	Status *accountable.HandoffStatus `json:"-" query:"status"`
}

// listHandoffs: GET /handoffs. data is the array (the public clients read it so), paging
// in meta.
func (s *Server) listHandoffs(c *call, in *listHandoffsQuery) ([]accountable.Handoff, error) {
	return newestFirst(c, in.Limit, in.Cursor, func(limit int, after *accountable.WorkCursor) ([]accountable.Handoff, *accountable.WorkCursor, error) {
		return handoffStore.of(s).ListHandoffs(c.ctx, c.principal.WorkspaceID, accountable.HandoffFilter{Limit: limit, After: after, Status: in.Status})
	})
}
