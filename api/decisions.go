package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
)

// DecisionStore is what the Decisions area needs.
type DecisionStore interface {
	CreateDecision(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.CreateDecision) (accountable.DecisionEnvelope, bool, error)
	DecideDecision(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.DecideDecision, to accountable.DecisionStatus) (accountable.DecisionEnvelope, bool, error)
	GetDecision(ctx context.Context, workspaceID, id string) (accountable.Decision, error)
	ListDecisions(ctx context.Context, workspaceID string, f accountable.DecisionFilter) ([]accountable.Decision, *accountable.WorkCursor, error)
}

// decisionStore is the store of the Decisions area.
var decisionStore = needsStore[DecisionStore]()

func init() { servesOperations(40, (*Server).decisionOperations) }

// decisionOperations is the Decisions area.
func (s *Server) decisionOperations() []operation {
	return []operation{
		op(Operation{ID: "createDecision", Method: fiber.MethodPost, Path: "/decisions", Area: "Decisions",
			Status: fiber.StatusCreated, Idempotency: OptionalIdempotency,
			Summary: "Ask for a decision (pending until approved or declined); data is {decision}."}, s.createDecision),
		op(Operation{ID: "listDecisions", Method: fiber.MethodGet, Path: "/decisions", Area: "Decisions",
			Summary: "List decisions, newest first; data is {decisions} (cursor pagination: meta.nextCursor, meta.hasMore)."}, s.listDecisions),
		op(Operation{ID: "getDecision", Method: fiber.MethodGet, Path: "/decisions/{decisionId}", Area: "Decisions",
			Summary: "Read a decision; data is {decision}."}, s.getDecision),
		op(Operation{ID: "approveDecision", Method: fiber.MethodPost, Path: "/decisions/{decisionId}/approve", Area: "Decisions",
			Idempotency: OptionalIdempotency, Errors: []string{accountable.ECodeInvalidStateTransition, accountable.ECodeVersionConflict},
			Summary: "Approve a pending decision (an option_select decision with option_id); anything but pending is 409 invalid_state_transition."},
			s.approveDecision),
		op(Operation{ID: "declineDecision", Method: fiber.MethodPost, Path: "/decisions/{decisionId}/decline", Area: "Decisions",
			Idempotency: OptionalIdempotency, Errors: []string{accountable.ECodeInvalidStateTransition, accountable.ECodeVersionConflict},
			Summary: "Decline a pending decision; anything but pending is 409 invalid_state_transition."},
			s.declineDecision),
	}
}

// createDecision: POST /decisions.
func (s *Server) createDecision(c *call, in *accountable.CreateDecision) (accountable.DecisionEnvelope, error) {
	res, dup, err := decisionStore.of(s).CreateDecision(c.ctx, c.principal, c.idem, *in)
	c.replayed(dup)
	return res, err
}

type decisionRef struct {
	DecisionID string `json:"-" path:"decisionId" format:"uuid" description:"The decision."`
}

type decideRequest struct {
	decisionRef
	accountable.DecideDecision
}

// approveDecision: POST /decisions/{decisionId}/approve.
func (s *Server) approveDecision(c *call, in *decideRequest) (accountable.DecisionEnvelope, error) {
	return s.decide(c, in, accountable.DecisionApproved)
}

// declineDecision: POST /decisions/{decisionId}/decline.
func (s *Server) declineDecision(c *call, in *decideRequest) (accountable.DecisionEnvelope, error) {
	return s.decide(c, in, accountable.DecisionDeclined)
}

func (s *Server) decide(c *call, in *decideRequest, to accountable.DecisionStatus) (accountable.DecisionEnvelope, error) {
	cmd := in.DecideDecision
	cmd.DecisionID = accountable.NormalizeUUID(in.decisionRef.DecisionID)
	res, dup, err := decisionStore.of(s).DecideDecision(c.ctx, c.principal, c.idem, cmd, to)
	c.replayed(dup)
	return res, err
}

// getDecision: GET /decisions/{decisionId}.
func (s *Server) getDecision(c *call, in *decisionRef) (accountable.DecisionEnvelope, error) {
	d, err := decisionStore.of(s).GetDecision(c.ctx, c.principal.WorkspaceID, accountable.NormalizeUUID(in.DecisionID))
	return accountable.DecisionEnvelope{Decision: d}, err
}

type listDecisionsQuery struct {
	Limit        *int                        `json:"-" query:"limit" minimum:"1" maximum:"1000" description:"Page size (default 100)."`
	Cursor       *string                     `json:"-" query:"cursor" description:"meta.nextCursor of the previous page."`
	Status       *accountable.DecisionStatus `json:"-" query:"status"`
	InitiativeID *string                     `json:"-" query:"initiative_id" format:"uuid"`
}

// DecisionList is the list of the Decisions area: {decisions}.
type DecisionList struct {
	Decisions []accountable.Decision `json:"decisions"`
}

// listDecisions: GET /decisions.
func (s *Server) listDecisions(c *call, in *listDecisionsQuery) (DecisionList, error) {
	list, err := newestFirst(c, in.Limit, in.Cursor, func(limit int, after *accountable.WorkCursor) ([]accountable.Decision, *accountable.WorkCursor, error) {
		f := accountable.DecisionFilter{Limit: limit, After: after, Status: in.Status}
		if in.InitiativeID != nil {
			id := accountable.NormalizeUUID(*in.InitiativeID)
			f.InitiativeID = &id
		}
		return decisionStore.of(s).ListDecisions(c.ctx, c.principal.WorkspaceID, f)
	})
	return DecisionList{Decisions: list}, err
}
