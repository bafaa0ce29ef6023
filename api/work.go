package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/cursors"
)

// WorkStore is what the Work area needs.
type WorkStore interface {
	CreateWork(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.CreateWork) (accountable.WorkCreated, bool, error)
	GetWork(ctx context.Context, workspaceID, taskID string) (accountable.Task, error)
	ListWork(ctx context.Context, workspaceID string, f accountable.WorkFilter) ([]accountable.Task, *accountable.WorkCursor, error)
	CompleteWork(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.CompleteWork) (accountable.WorkCompletion, bool, error)
	WorkReceipt(ctx context.Context, workspaceID, taskID string) (accountable.WorkReceipt, error)
}

// workStore is the store of the Work area.
var workStore = needsStore[WorkStore]()

func init() { servesOperations(20, (*Server).workOperations) }

// workOperations is the Work area.
func (s *Server) workOperations() []operation {
	return []operation{
		op(Operation{ID: "createWork", Method: fiber.MethodPost, Path: "/work", Area: "Work", Status: fiber.StatusCreated,
			Summary:     "Create a work item.",
			Description: "Creates a task in status todo with its work.created ledger event. Replaying the Idempotency-Key returns the original result (200, meta.duplicate true).",
			Idempotency: RequiredIdempotency}, s.createWork),
		op(Operation{ID: "listWork", Method: fiber.MethodGet, Path: "/work", Area: "Work",
			Summary: "List work items, newest first (cursor pagination: meta.nextCursor, meta.hasMore)."}, s.listWork),
		op(Operation{ID: "getWork", Method: fiber.MethodGet, Path: "/work/{taskId}", Area: "Work",
			Summary: "Read a work item with the concurrency inputs a completion needs."}, s.getWork),
		op(Operation{ID: "completeWork", Method: fiber.MethodPost, Path: "/work/{taskId}/complete", Area: "Work",
			Summary:     "Complete a work item with evidence and return its completion receipt.",
			Description: "Concurrency input: version_token (preferred), or expected_updated_at with expected_aggregate_version; when both forms are present they must describe the same version. A stale version is 409 task_version_stale with details.current_updated_at and details.current_aggregate_version.",
			Idempotency: OptionalIdempotency,
			Errors:      []string{accountable.ECodeTaskVersionStale, accountable.ECodeInvalidStateTransition}}, s.completeWork),
		op(Operation{ID: "getWorkReceipt", Method: fiber.MethodGet, Path: "/work/{taskId}/receipt", Area: "Work",
			Summary: "Read a completed work item's receipt with the ledger event that recorded it and, once a signed checkpoint " +
				"holds that event, its inclusion proof in the workspace's transparency log (verifiable offline with the log's public key).",
			Description: "ledger_proof is null for the seconds between the completion and the first checkpoint that holds its event; " +
				"read again. To check a receipt offline: the RFC 8785 canonical JSON of payload has the digest ledger_proof.entry " +
				"names (payloadDigest) and payload.receipt is the receipt; the SHA-256 of the entry is event_hash; the inclusion " +
				"proof holds the entry in the checkpoint, which the log's key signed (accountable ledger audit --receipt does all of it)."},
			s.getWorkReceipt),
	}
}

// createWork: POST /work.
func (s *Server) createWork(c *call, in *accountable.CreateWork) (accountable.WorkCreated, error) {
	res, dup, err := workStore.of(s).CreateWork(c.ctx, c.principal, c.idem, *in)
	res.Duplicate = dup
	c.replayed(dup)
	return res, err
}

type workRef struct {
	TaskID string `json:"-" path:"taskId" format:"uuid" description:"The work item."`
}

// getWorkReceipt: GET /work/{taskId}/receipt.
func (s *Server) getWorkReceipt(c *call, in *workRef) (accountable.WorkReceipt, error) {
	r, err := workStore.of(s).WorkReceipt(c.ctx, c.principal.WorkspaceID, accountable.NormalizeUUID(in.TaskID))
	if err != nil {
		return r, err
	}
	r.LedgerProof, err = s.newestProof(c, r.EventID)
	return r, err
}

// getWork: GET /work/{taskId}.
func (s *Server) getWork(c *call, in *workRef) (accountable.Task, error) {
	return workStore.of(s).GetWork(c.ctx, c.principal.WorkspaceID, accountable.NormalizeUUID(in.TaskID))
}

type listWorkQuery struct {
	Limit        *int                    `json:"-" query:"limit" minimum:"1" maximum:"1000" description:"Page size (default 100)."`
	Cursor       *string                 `json:"-" query:"cursor" description:"meta.nextCursor of the previous page."`
	Status       *accountable.TaskStatus `json:"-" query:"status"`
	InitiativeID *string                 `json:"-" query:"initiative_id" format:"uuid"`
	UpdatedSince *accountable.Time       `json:"-" query:"updated_since" description:"Only items updated at or after this instant."`
}

// listWork: GET /work.
func (s *Server) listWork(c *call, in *listWorkQuery) ([]accountable.Task, error) {
	return newestFirst(c, in.Limit, in.Cursor, func(limit int, after *accountable.WorkCursor) ([]accountable.Task, *accountable.WorkCursor, error) {
		f := accountable.WorkFilter{Limit: limit, After: after, Status: in.Status}
		if in.InitiativeID != nil {
			id := accountable.NormalizeUUID(*in.InitiativeID)
			f.InitiativeID = &id
		}
		if in.UpdatedSince != nil {
			f.UpdatedSince = &in.UpdatedSince.Time
		}
		return workStore.of(s).ListWork(c.ctx, c.principal.WorkspaceID, f)
	})
}

type completeWorkRequest struct {
	workRef
	accountable.CompleteWork
}

// fingerprintBody is the command: the request's JSON is the command's (the task id is
// the path's, json:"-"). TestCompleteWorkFingerprintIsTheRequests holds the two equal.
func (r *completeWorkRequest) fingerprintBody() any { return r.CompleteWork }

// completeWork: POST /work/{taskId}/complete.
func (s *Server) completeWork(c *call, in *completeWorkRequest) (accountable.WorkCompletion, error) {
	cmd := in.CompleteWork
	cmd.TaskID = accountable.NormalizeUUID(in.workRef.TaskID)
	res, dup, err := workStore.of(s).CompleteWork(c.ctx, c.principal, c.idem, cmd)
	res.Duplicate = dup
	c.replayed(dup)
	return res, err
}

// listCursor decodes the cursor of a newest-first list (nil for its first page).
func listCursor(cursor *string) (*accountable.WorkCursor, error) {
	if cursor == nil {
		return nil, nil
	}
	cur, ok := cursors.ParseWork(*cursor)
	if !ok {
		return nil, accountable.ValidationError(accountable.Issue{Path: "cursor", Message: "is not a cursor this list returned"})
	}
	return &cur, nil
}

// newestFirst reads one page of a newest-first list: the page size (default 100) and
// cursor of the request, read by the store's list, the page's meta filled, never nil.
func newestFirst[T any](c *call, limit *int, cursor *string, list func(limit int, after *accountable.WorkCursor) ([]T, *accountable.WorkCursor, error)) ([]T, error) {
	n := accountable.DefaultPageLimit
	if limit != nil {
		n = *limit
	}
	after, err := listCursor(cursor)
	if err != nil {
		return nil, err
	}
	out, next, err := list(n, after)
	if err != nil {
		return nil, err
	}
	c.listPage(len(out), n, next)
	if out == nil {
		out = []T{}
	}
	return out, nil
}

// listPage fills the meta of a page of a newest-first list.
func (c *call) listPage(count, limit int, next *accountable.WorkCursor) {
	hasMore := next != nil
	c.meta.Count, c.meta.HasMore, c.meta.Limit = &count, &hasMore, &limit
	if next != nil {
		cur := cursors.EncodeWork(*next)
		c.meta.NextCursor = &cur
	}
}
