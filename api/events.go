package api

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
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

// verificationKeys derives the id of a verification from its Idempotency-Key, so a retried
// request names the same workflow.
var verificationKeys = uuid.MustParse("6f1c2a9e-3b7d-4c55-9a41-2d8e0f7b6c13")

// startLedgerVerification: POST /events/verifications. The handler only starts the
// workflow, which records the request and its result: a request the workflow engine did not
// accept leaves nothing behind. The Idempotency-Key makes the workflow id, so a replay finds
// the workflow already started (200, meta.duplicate) instead of starting another.
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
	id := uuid.Must(uuid.NewV7()).String()
	if idem != nil {
		id = uuid.NewSHA1(verificationKeys, []byte(p.WorkspaceID+"/"+idem.Key)).String()
	}
	req := accountable.LedgerVerificationRequest{WorkspaceID: p.WorkspaceID, VerificationID: id, RequestedBy: p.Actor(),
		RequestedAt: accountable.Now()}
	existed, err := s.startWorkflow(c.UserContext(), workflows.LedgerVerificationID(p.WorkspaceID, id), workflows.LedgerVerificationName, req)
	if err != nil {
		return err
	}
	job := accountable.LedgerVerificationJob{ID: id, WorkspaceID: p.WorkspaceID, Status: accountable.VerificationRunning, RequestedAt: req.RequestedAt}
	if existed {
		if job, err = s.ledgerVerification(c.UserContext(), p.WorkspaceID, id); err != nil {
			return err
		}
	}
	return respondCommand(c, fiber.StatusAccepted, toVerificationJobJSON(job), existed)
}

// getLedgerVerification: GET /events/verifications/{verificationId}.
func (s *Server) getLedgerVerification(c *fiber.Ctx) error {
	id, err := pathUUID(c, "verificationId")
	if err != nil {
		return err
	}
	job, err := s.ledgerVerification(c.UserContext(), principal(c).WorkspaceID, id)
	if err != nil {
		return err
	}
	return respond(c, fiber.StatusOK, toVerificationJobJSON(job), newMeta(c))
}

// ledgerVerification reads a verification: its recorded state, completed by what the
// workflow engine says while no result is recorded (not yet recorded: running; the
// workflow ended without a result: failed).
func (s *Server) ledgerVerification(ctx context.Context, workspaceID, id string) (accountable.LedgerVerificationJob, error) {
	job, err := s.deps.Ledger.GetLedgerVerification(ctx, workspaceID, id)
	recorded := err == nil
	if err != nil && accountable.ErrorCode(err) != accountable.ECodeNotFound {
		return job, err
	}
	if recorded && job.Status == accountable.VerificationCompleted {
		return job, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	desc, err := s.deps.Workflows.DescribeWorkflowExecution(ctx, workflows.LedgerVerificationID(workspaceID, id), "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound) && !recorded:
		return job, accountable.NotFound("ledger verification")
	case errors.As(err, &notFound):
		return job, nil // the engine no longer keeps it: what was recorded is all there is
	case err != nil && recorded:
		return job, nil
	case err != nil:
		s.log.Warn("describing workflow", "verification_id", id, "err", err)
		return job, accountable.ErrWorkflowUnavailable
	}
	info := desc.GetWorkflowExecutionInfo()
	if !recorded {
		job = accountable.LedgerVerificationJob{ID: id, WorkspaceID: workspaceID, Status: accountable.VerificationRunning,
			RequestedAt: info.GetStartTime().AsTime().UTC().Truncate(time.Microsecond)}
	}
	switch info.GetStatus() {
	case enums.WORKFLOW_EXECUTION_STATUS_RUNNING, enums.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		// Completed but not yet visible as completed here: the next read shows the result.
	default:
		job.Status = accountable.VerificationFailed
	}
	return job, nil
}

// startWorkflow starts a workflow under id unless one with that id was already started
// (running or finished): then it reports existed.
func (s *Server) startWorkflow(ctx context.Context, id, name string, input any) (existed bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = s.deps.Workflows.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                s.cfg.TaskQueue,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// Otherwise the SDK hands back the running execution as if it had just started it.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, name, input)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case err == nil:
		return false, nil
	case errors.As(err, &started):
		return true, nil
	}
	s.log.Warn("starting workflow", "workflow_id", id, "err", err)
	return false, accountable.ErrWorkflowUnavailable
}
