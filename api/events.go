package api

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/cursors"
)

// LedgerStore is what the Events area needs.
type LedgerStore interface {
	StreamEvents(ctx context.Context, workspaceID string, f accountable.EventFilter) (accountable.EventPage, error)
	VerifyLedger(ctx context.Context, workspaceID string, scope accountable.LedgerScope) (accountable.LedgerVerification, error)
	StartLedgerVerification(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, id string) (accountable.LedgerVerificationJob, bool, error)
	GetLedgerVerification(ctx context.Context, workspaceID, id string) (accountable.LedgerVerificationJob, error)
}

// ledgerStore is the store of the Events area.
var ledgerStore = needsStore[LedgerStore]()

func init() { servesOperations(170, (*Server).eventOperations) }

// eventOperations is the Events area.
func (s *Server) eventOperations() []operation {
	return []operation{
		op(Operation{ID: "streamEvents", Method: fiber.MethodGet, Path: "/events/stream", Area: "Events", EventStream: true,
			Summary: "Read the workspace's ledger events in order (cursor pagination; meta.nextCursor is always present), " +
				"or follow them live (transport=sse: a lease of Server-Sent Events).",
			Description: "meta.nextCursor is the position after the last event returned (the request's own cursor when the page is empty), " +
				"so a consumer can tail the stream by polling with it; save it only after the page was processed. " +
				"meta.hasMore says whether more events were already available. An event that commits late is read on a later page, never skipped. " +
				"With transport=sse (and Accept: text/event-stream) the answer is one lease of Server-Sent Events: `ledger_event` frames " +
				"(id: the cursor after the event, to resume with after= or Last-Event-ID; data: the event), new events as they commit, " +
				"`:` heartbeat comments every 5 s, and an `error` frame {code, message} if the stream cannot be read; the lease ends after " +
				"stream_ms (default 25000, at most 60000) or limit events (default 1000)."},
			s.streamEvents),
		op(Operation{ID: "verifyLedger", Method: fiber.MethodGet, Path: "/events/verify", Area: "Events",
			Summary: "Recompute every digest and hash link of the workspace's ledger (or one aggregate's) and compare the chains with their anchored heads and the aggregates they describe.",
			Description: "Always a recomputation, never a remembered result. A workspace's verifications (and projections) run one at a time " +
				"on connections of their own: a verification waits for the one running to end, and verifications of the same scope that waited " +
				"together share one run, started after each of them was asked for. One whose turn does not come within the server's wait " +
				"(DATABASE_LONG_READ_WAIT, 5 s by default) is answered 429 rate_limited with retryAfter."},
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
	Limit          *int     `json:"-" query:"limit" minimum:"1" maximum:"1000" description:"Page size (default 100); with transport=sse, the most events of the lease (default 1000)."`
	Cursor         *string  `json:"-" query:"cursor" description:"meta.nextCursor of the previous page."`
	EventTypes     []string `json:"-" query:"event_type" description:"Only events of these types."`
	AggregateTypes []string `json:"-" query:"aggregate_type" description:"Only events of aggregates of these types."`
	// The live stream (Server-Sent Events; see sse.go).
	Transport *accountable.StreamTransport `json:"-" query:"transport" description:"sse: answer one lease of Server-Sent Events (send Accept: text/event-stream) instead of a page."`
	After     *string                      `json:"-" query:"after" description:"The cursor to read after: an id of a ledger_event frame or a meta.nextCursor (the same as cursor). With transport=sse and neither, the Last-Event-ID header."`
	StreamMS  *int                         `json:"-" query:"stream_ms" minimum:"1000" maximum:"60000" description:"With transport=sse: how long the lease lasts in milliseconds (default 25000)."`
	PollMS    *int                         `json:"-" query:"poll_ms" minimum:"100" maximum:"10000" description:"With transport=sse: how often the stream reads while live notifications are unavailable, in milliseconds (default 1000)."`
}

// streamEvents: GET /events/stream (a page; with transport=sse, a live lease).
func (s *Server) streamEvents(c *call, in *streamQuery) ([]accountable.Event, error) {
	f := accountable.EventFilter{Limit: accountable.DefaultPageLimit, EventTypes: in.EventTypes, AggregateTypes: in.AggregateTypes}
	if in.Limit != nil {
		f.Limit = *in.Limit
	}
	if in.Cursor != nil && in.After != nil && *in.Cursor != *in.After {
		return nil, accountable.ValidationError(accountable.Issue{Path: "after", Message: "differs from cursor (send one of them)"})
	}
	name, cursor := "cursor", in.Cursor
	if cursor == nil {
		name, cursor = "after", in.After
	}
	if cursor != nil {
		pos, ok := cursors.ParseStream(*cursor)
		if !ok {
			return nil, accountable.ValidationError(accountable.Issue{Path: name, Message: "is not a cursor this stream returned"})
		}
		f.After = pos
	}
	// A HEAD request is answered as a page would be (it has no body to stream).
	if in.Transport != nil && *in.Transport == accountable.StreamTransportSSE && c.fiber.Method() != fiber.MethodHead {
		return nil, s.startEventStream(c, in, f)
	}
	page, err := ledgerStore.of(s).StreamEvents(c.ctx, c.principal.WorkspaceID, f)
	if err != nil {
		return nil, err
	}
	next, count := cursors.EncodeStream(page.Next), len(page.Events)
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
	return ledgerStore.of(s).VerifyLedger(c.ctx, c.principal.WorkspaceID, scope)
}

// startLedgerVerification: POST /events/verifications. The command records the request,
// its ledger event and the message that starts the workflow in one transaction; the relay
// starts the workflow after the commit (at once, or when Temporal is back).
func (s *Server) startLedgerVerification(c *call, in *accountable.StartLedgerVerification) (accountable.LedgerVerificationJob, error) {
	id := uuid.Must(uuid.NewV7()).String()
	job, dup, err := ledgerStore.of(s).StartLedgerVerification(c.ctx, c.principal, c.idem, id)
	c.replayed(dup)
	return job, err
}

type verificationRef struct {
	VerificationID string `json:"-" path:"verificationId" format:"uuid"`
}

// getLedgerVerification: GET /events/verifications/{verificationId}.
func (s *Server) getLedgerVerification(c *call, in *verificationRef) (accountable.LedgerVerificationJob, error) {
	return ledgerStore.of(s).GetLedgerVerification(c.ctx, c.principal.WorkspaceID, accountable.NormalizeUUID(in.VerificationID))
}
