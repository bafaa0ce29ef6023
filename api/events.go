package api

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/workflows"
)

type eventJSON struct {
	ID               string          `json:"id"`
	WorkspaceID      string          `json:"workspaceId"`
	AggregateType    string          `json:"aggregateType"`
	AggregateID      string          `json:"aggregateId"`
	AggregateVersion int64           `json:"aggregateVersion"`
	EventType        string          `json:"eventType"`
	SchemaVersion    string          `json:"schemaVersion"`
	ActorType        string          `json:"actorType"`
	ActorID          string          `json:"actorId"`
	Payload          json.RawMessage `json:"payload"`
	PayloadDigest    string          `json:"payloadDigest"`
	OccurredAt       string          `json:"occurredAt"`
	RecordedAt       string          `json:"recordedAt"`
	IdempotencyKey   *string         `json:"idempotencyKey"`
	CausationID      *string         `json:"causationId"`
	CorrelationID    *string         `json:"correlationId"`
	PreviousHash     *string         `json:"previousHash"`
	EventHash        string          `json:"eventHash"`
}

func toEventJSON(e accountable.Event) eventJSON {
	return eventJSON{
		ID: e.ID, WorkspaceID: e.WorkspaceID, AggregateType: e.AggregateType, AggregateID: e.AggregateID,
		AggregateVersion: e.AggregateVersion, EventType: e.EventType, SchemaVersion: e.SchemaVersion,
		ActorType: string(e.ActorType), ActorID: e.ActorID, Payload: e.Payload, PayloadDigest: e.PayloadDigest,
		OccurredAt: accountable.FormatTime(e.OccurredAt), RecordedAt: accountable.FormatTime(e.RecordedAt),
		IdempotencyKey: e.IdempotencyKey, CausationID: e.CausationID, CorrelationID: e.CorrelationID,
		PreviousHash: e.PreviousHash, EventHash: e.EventHash,
	}
}

// streamEvents: GET /events/stream.
func (s *Server) streamEvents(c *fiber.Ctx) error {
	limit, err := queryLimit(c)
	if err != nil {
		return err
	}
	f := accountable.EventFilter{Limit: limit, EventTypes: queryAll(c, "event_type"), AggregateTypes: queryAll(c, "aggregate_type")}
	if v := c.Query("cursor"); v != "" {
		pos, ok := accountable.ParseStreamCursor(v)
		if !ok {
			return accountable.ValidationError(accountable.Issue{Path: "cursor", Message: "is not a cursor this stream returned"})
		}
		f.After = pos
	}
	page, err := s.deps.Ledger.StreamEvents(c.UserContext(), principal(c).WorkspaceID, f)
	if err != nil {
		return err
	}
	out := make([]eventJSON, len(page.Events))
	for i, e := range page.Events {
		out[i] = toEventJSON(e)
	}
	m := newMeta(c)
	next, count := page.Next.Encode(), len(out)
	m.NextCursor, m.HasMore, m.Limit, m.Count = &next, &page.HasMore, &limit, &count
	return respond(c, fiber.StatusOK, out, m)
}

type verificationJSON struct {
	Verified           bool    `json:"verified"`
	EventCount         int64   `json:"eventCount"`
	HeadHash           *string `json:"headHash"`
	FirstBrokenEventID *string `json:"firstBrokenEventId"`
	FirstBrokenReason  *string `json:"firstBrokenReason"`
}

func toVerificationJSON(v accountable.LedgerVerification) verificationJSON {
	return verificationJSON{Verified: v.Verified, EventCount: v.EventCount, HeadHash: v.HeadHash,
		FirstBrokenEventID: v.FirstBrokenEventID, FirstBrokenReason: v.FirstBrokenReason}
}

// verifyLedger: GET /events/verify.
func (s *Server) verifyLedger(c *fiber.Ctx) error {
	scope := accountable.LedgerScope{AggregateType: c.Query("aggregate_type"), AggregateID: c.Query("aggregate_id")}
	if (scope.AggregateType == "") != (scope.AggregateID == "") {
		return accountable.ValidationError(accountable.Issue{Path: "aggregate_id", Message: "aggregate_type and aggregate_id are given together"})
	}
	res, err := s.deps.Ledger.VerifyLedger(c.UserContext(), principal(c).WorkspaceID, scope)
	if err != nil {
		return err
	}
	return respond(c, fiber.StatusOK, toVerificationJSON(res), newMeta(c))
}

type verificationJobJSON struct {
	ID          string            `json:"id"`
	Status      string            `json:"status"`
	WorkflowID  string            `json:"workflowId"`
	RequestedAt string            `json:"requestedAt"`
	CompletedAt *string           `json:"completedAt"`
	Result      *verificationJSON `json:"result"`
}

func toVerificationJobJSON(j accountable.LedgerVerificationJob) verificationJobJSON {
	out := verificationJobJSON{ID: j.ID, Status: j.Status, WorkflowID: workflows.LedgerVerificationID(j.WorkspaceID, j.ID),
		RequestedAt: accountable.FormatTime(j.RequestedAt), CompletedAt: formatTimePtr(j.CompletedAt)}
	if j.Result != nil {
		r := toVerificationJSON(*j.Result)
		out.Result = &r
	}
	return out
}

// startLedgerVerification: POST /events/verifications. The request is recorded first, then
// the workflow is started under an id derived from it, so a retry (with the same
// Idempotency-Key) after the workflow engine was unreachable starts it exactly once.
func (s *Server) startLedgerVerification(c *fiber.Ctx) error {
	var body struct{}
	if err := s.decodeBody(c, "StartLedgerVerificationRequest", &body); err != nil {
		return err
	}
	idem, err := idempotency(c, "events.verifications.start", false)
	if err != nil {
		return err
	}
	p := principal(c)
	job, dup, err := s.deps.Ledger.RequestLedgerVerification(c.UserContext(), p, idem)
	if err != nil {
		return err
	}
	if job.Status == accountable.VerificationRunning {
		if err := s.startWorkflow(c.UserContext(), workflows.LedgerVerificationID(p.WorkspaceID, job.ID),
			workflows.LedgerVerificationName, workflows.LedgerVerificationInput{WorkspaceID: p.WorkspaceID, VerificationID: job.ID}); err != nil {
			return err
		}
	}
	return respondCommand(c, fiber.StatusAccepted, toVerificationJobJSON(job), dup)
}

// getLedgerVerification: GET /events/verifications/{verificationId}.
func (s *Server) getLedgerVerification(c *fiber.Ctx) error {
	id, err := pathUUID(c, "verificationId")
	if err != nil {
		return err
	}
	job, err := s.deps.Ledger.GetLedgerVerification(c.UserContext(), principal(c).WorkspaceID, id)
	if err != nil {
		return err
	}
	return respond(c, fiber.StatusOK, toVerificationJobJSON(job), newMeta(c))
}

// startWorkflow starts a workflow once per id: an already running or finished execution
// of the id counts as started.
func (s *Server) startWorkflow(ctx context.Context, id, name string, input any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := s.deps.Workflows.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                s.cfg.TaskQueue,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, name, input)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err == nil || errors.As(err, &started) {
		return nil
	}
	s.log.Warn("starting workflow", "workflow_id", id, "err", err)
	return accountable.ErrWorkflowUnavailable
}
