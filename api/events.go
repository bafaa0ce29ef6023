package api

import (
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/workflows"
)

// eventOperations is the Events area.
func (s *Server) eventOperations() []operation {
	return []operation{
		op(Operation{ID: "streamEvents", Method: fiber.MethodGet, Path: "/events/stream", Area: "Events",
			Summary: "Read the workspace's ledger events in order (cursor pagination; meta.nextCursor is always present).",
			Description: "meta.nextCursor is the position after the last event returned (the request's own cursor when the page is empty), " +
				"so a consumer can tail the stream by polling with it; save it only after the page was processed. " +
				"meta.hasMore says whether more events were already available. An event that commits late is read on a later page, never skipped."},
			s.streamEvents),
		op(Operation{ID: "verifyLedger", Method: fiber.MethodGet, Path: "/events/verify", Area: "Events",
			Summary: "Recompute every digest and hash link of the workspace's ledger (or one aggregate's) and compare the chains with their anchored heads and the aggregates they describe."},
			s.verifyLedger),
		op(Operation{ID: "startLedgerVerification", Method: fiber.MethodPost, Path: "/events/verifications", Area: "Events",
			Status: fiber.StatusAccepted, Idempotency: OptionalIdempotency,
			Summary: "Start a background verification of the workspace's ledger (a Temporal workflow); its request and its result are ledger events."},
			s.startLedgerVerification),
		op(Operation{ID: "getLedgerVerification", Method: fiber.MethodGet, Path: "/events/verifications/{verificationId}", Area: "Events",
			Summary: "Read a background ledger verification: running, completed (with its result) or failed."},
			s.getLedgerVerification),
	}
}

type streamQuery struct {
	Limit          *int     `json:"-" query:"limit" minimum:"1" maximum:"1000" description:"Page size (default 100)."`
	Cursor         *string  `json:"-" query:"cursor" description:"meta.nextCursor of the previous page."`
	EventTypes     []string `json:"-" query:"event_type" description:"Only events of these types."`
	AggregateTypes []string `json:"-" query:"aggregate_type" description:"Only events of aggregates of these types."`
}

// streamEvents: GET /events/stream.
func (s *Server) streamEvents(c *call, in *streamQuery) ([]accountable.Event, error) {
	f := accountable.EventFilter{Limit: accountable.DefaultPageLimit, EventTypes: in.EventTypes, AggregateTypes: in.AggregateTypes}
	if in.Limit != nil {
		f.Limit = *in.Limit
	}
	if in.Cursor != nil {
		pos, ok := accountable.ParseStreamCursor(*in.Cursor)
		if !ok {
			return nil, accountable.ValidationError(accountable.Issue{Path: "cursor", Message: "is not a cursor this stream returned"})
		}
		f.After = pos
	}
	page, err := s.deps.Ledger.StreamEvents(c.ctx, c.principal.WorkspaceID, f)
	if err != nil {
		return nil, err
	}
	next, count := page.Next.Encode(), len(page.Events)
	c.meta.NextCursor, c.meta.HasMore, c.meta.Limit, c.meta.Count = &next, &page.HasMore, &f.Limit, &count
	if page.Events == nil {
		page.Events = []accountable.Event{}
	}
	return page.Events, nil
}

type verifyQuery struct {
	AggregateType *string `json:"-" query:"aggregate_type" description:"With aggregate_id: verify one aggregate's chain."`
	AggregateID   *string `json:"-" query:"aggregate_id"`
}

// verifyLedger: GET /events/verify.
func (s *Server) verifyLedger(c *call, in *verifyQuery) (accountable.LedgerVerification, error) {
	if (in.AggregateType == nil) != (in.AggregateID == nil) {
		return accountable.LedgerVerification{}, accountable.ValidationError(accountable.Issue{Path: "aggregate_id", Message: "aggregate_type and aggregate_id are given together"})
	}
	var scope accountable.LedgerScope
	if in.AggregateType != nil {
		scope = accountable.LedgerScope{AggregateType: *in.AggregateType, AggregateID: *in.AggregateID}
	}
	return s.deps.Ledger.VerifyLedger(c.ctx, c.principal.WorkspaceID, scope)
}

// startLedgerVerification: POST /events/verifications. The command records the request,
// its ledger event and the message that starts the workflow in one transaction; the relay
// starts the workflow after the commit (at once, or when Temporal is back).
func (s *Server) startLedgerVerification(c *call, in *accountable.StartLedgerVerification) (accountable.LedgerVerificationJob, error) {
	id := uuid.Must(uuid.NewV7()).String()
	start, err := workflows.LedgerVerificationStart(c.principal.WorkspaceID, id)
	if err != nil {
		return accountable.LedgerVerificationJob{}, err
	}
	job, dup, err := s.deps.Ledger.StartLedgerVerification(c.ctx, c.principal, c.idem, id, start)
	c.replayed(dup)
	return job, err
}

type verificationRef struct {
	VerificationID string `json:"-" path:"verificationId" format:"uuid"`
}

// getLedgerVerification: GET /events/verifications/{verificationId}.
func (s *Server) getLedgerVerification(c *call, in *verificationRef) (accountable.LedgerVerificationJob, error) {
	return s.deps.Ledger.GetLedgerVerification(c.ctx, c.principal.WorkspaceID, accountable.NormalizeUUID(in.VerificationID))
}
