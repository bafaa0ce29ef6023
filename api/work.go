package api

import (
	"encoding/json"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
)

type concurrencyJSON struct {
	VersionToken             string `json:"version_token"`
	ExpectedUpdatedAt        string `json:"expected_updated_at"`
	ExpectedAggregateVersion int64  `json:"expected_aggregate_version"`
}

type taskJSON struct {
	ID                 string          `json:"id"`
	Title              string          `json:"title"`
	Description        *string         `json:"description"`
	Status             string          `json:"status"`
	Priority           string          `json:"priority"`
	DueDate            *string         `json:"due_date"`
	InitiativeID       *string         `json:"initiative_id"`
	WorkstreamID       *string         `json:"workstream_id"`
	MilestoneID        *string         `json:"milestone_id"`
	Metadata           json.RawMessage `json:"metadata"`
	EstimatedCostCents *int64          `json:"estimated_cost_cents"`
	CreatedAt          string          `json:"created_at"`
	UpdatedAt          string          `json:"updated_at"`
	AggregateVersion   int64           `json:"aggregate_version"`
	Concurrency        concurrencyJSON `json:"concurrency"`
}

func formatTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := accountable.FormatTime(*t)
	return &s
}

func toTaskJSON(t accountable.Task) taskJSON {
	v := t.Version()
	return taskJSON{
		ID: t.ID, Title: t.Title, Description: t.Description, Status: string(t.Status), Priority: string(t.Priority),
		DueDate: formatTimePtr(t.DueDate), InitiativeID: t.InitiativeID, WorkstreamID: t.WorkstreamID,
		MilestoneID: t.MilestoneID, Metadata: t.Metadata, EstimatedCostCents: t.EstimatedCostCents,
		CreatedAt: accountable.FormatTime(t.CreatedAt), UpdatedAt: accountable.FormatTime(t.UpdatedAt),
		AggregateVersion: t.AggregateVersion,
		Concurrency: concurrencyJSON{VersionToken: v.Token(), ExpectedUpdatedAt: accountable.FormatTime(v.UpdatedAt),
			ExpectedAggregateVersion: v.AggregateVersion},
	}
}

type workCreatedJSON struct {
	TaskID           string   `json:"taskId"`
	EventID          string   `json:"eventId"`
	AggregateVersion int64    `json:"aggregateVersion"`
	EventHash        string   `json:"eventHash"`
	Duplicate        bool     `json:"duplicate"`
	Task             taskJSON `json:"task"`
}

type receiptJSON struct {
	ID                    string          `json:"id"`
	TaskID                string          `json:"task_id"`
	Status                string          `json:"status"`
	Summary               string          `json:"summary"`
	MeasuredDurationHours *float64        `json:"measured_duration_hours"`
	CostCents             *int64          `json:"cost_cents"`
	Evidence              json.RawMessage `json:"evidence"`
	CreatedAt             string          `json:"created_at"`
}

type workCompletionJSON struct {
	TaskID           string      `json:"taskId"`
	ReceiptID        string      `json:"receiptId"`
	EventID          string      `json:"eventId"`
	AggregateVersion int64       `json:"aggregateVersion"`
	EventHash        string      `json:"eventHash"`
	Duplicate        bool        `json:"duplicate"`
	Task             taskJSON    `json:"task"`
	Receipt          receiptJSON `json:"receipt"`
}

type createWorkRequest struct {
	Title              string          `json:"title"`
	Description        *string         `json:"description"`
	Priority           *string         `json:"priority"`
	DueDate            *string         `json:"due_date"`
	Metadata           json.RawMessage `json:"metadata"`
	EstimatedCostCents *int64          `json:"estimated_cost_cents"`
	InitiativeID       *string         `json:"initiative_id"`
	WorkstreamID       *string         `json:"workstream_id"`
	MilestoneID        *string         `json:"milestone_id"`
	causationFields
}

// causationFields are the causation links every command body may carry.
type causationFields struct {
	CommandID     *string `json:"command_id"`
	CausationID   *string `json:"causation_id"`
	CorrelationID *string `json:"correlation_id"`
}

func (f causationFields) causation() accountable.Causation {
	return accountable.Causation{CommandID: f.CommandID, CausationID: f.CausationID, CorrelationID: f.CorrelationID}
}

// command turns the validated request into the domain command (rules the schema cannot say).
func (r createWorkRequest) command() (accountable.CreateWork, error) {
	cmd := accountable.CreateWork{
		Title: r.Title, Description: r.Description, Priority: accountable.PriorityMedium,
		EstimatedCostCents: r.EstimatedCostCents, InitiativeID: normalizeUUIDPtr(r.InitiativeID),
		WorkstreamID: normalizeUUIDPtr(r.WorkstreamID), MilestoneID: normalizeUUIDPtr(r.MilestoneID),
		Causation: r.causation(),
	}
	if r.Priority != nil {
		cmd.Priority = accountable.Priority(*r.Priority)
	}
	if len(r.Metadata) > 0 && string(r.Metadata) != "null" {
		cmd.Metadata = r.Metadata
	}
	var issues accountable.Issues
	if r.DueDate != nil {
		t, err := accountable.ParseTime(*r.DueDate)
		if err != nil {
			// A calendar date is taken as midnight UTC.
			if t, err = time.Parse(time.DateOnly, *r.DueDate); err != nil {
				issues.Add("/due_date", "must be an RFC 3339 date-time or a YYYY-MM-DD date")
			}
		}
		t = t.Truncate(time.Microsecond)
		cmd.DueDate = &t
	}
	set := 0
	for _, p := range []*string{r.InitiativeID, r.WorkstreamID, r.MilestoneID} {
		if p != nil {
			set++
		}
	}
	if set != 0 && set != 3 {
		issues.Add("/initiative_id", "initiative_id, workstream_id and milestone_id are given all together or not at all")
	}
	return cmd, issues.Err()
}

func normalizeUUIDPtr(p *string) *string {
	if p == nil {
		return nil
	}
	v := accountable.NormalizeUUID(*p)
	return &v
}

// createWork: POST /work.
func (s *Server) createWork(c *fiber.Ctx) error {
	var req createWorkRequest
	if err := s.decodeBody(c, "CreateWorkRequest", &req); err != nil {
		return err
	}
	cmd, err := req.command()
	if err != nil {
		return err
	}
	idem, err := idempotency(c, "work.create", true)
	if err != nil {
		return err
	}
	res, dup, err := s.deps.Work.CreateWork(c.UserContext(), principal(c), idem, cmd)
	if err != nil {
		return err
	}
	return respondCommand(c, fiber.StatusCreated, workCreatedJSON{
		TaskID: res.Task.ID, EventID: res.Event.EventID, AggregateVersion: res.Event.AggregateVersion,
		EventHash: res.Event.EventHash, Duplicate: dup, Task: toTaskJSON(res.Task),
	}, dup)
}

// getWork: GET /work/{taskId}.
func (s *Server) getWork(c *fiber.Ctx) error {
	id, err := pathUUID(c, "taskId")
	if err != nil {
		return err
	}
	t, err := s.deps.Work.GetWork(c.UserContext(), principal(c).WorkspaceID, id)
	if err != nil {
		return err
	}
	return respond(c, fiber.StatusOK, toTaskJSON(t), newMeta(c))
}

// listWork: GET /work.
func (s *Server) listWork(c *fiber.Ctx) error {
	limit, err := queryLimit(c)
	if err != nil {
		return err
	}
	f := accountable.WorkFilter{Limit: limit}
	var issues accountable.Issues
	if v := c.Query("cursor"); v != "" {
		cur, ok := accountable.ParseWorkCursor(v)
		if !ok {
			issues.Add("cursor", "is not a cursor this list returned")
		}
		f.After = &cur
	}
	if v := c.Query("status"); v != "" {
		st := accountable.TaskStatus(v)
		if !validTaskStatus(st) {
			issues.Add("status", "must be one of todo, in_progress, blocked, completed, cancelled")
		}
		f.Status = &st
	}
	if v := c.Query("initiative_id"); v != "" {
		if !accountable.ValidUUID(v) {
			issues.Add("initiative_id", "must be a UUID")
		}
		v = accountable.NormalizeUUID(v)
		f.InitiativeID = &v
	}
	if v := c.Query("updated_since"); v != "" {
		t, err := accountable.ParseTime(v)
		if err != nil {
			issues.Add("updated_since", "must be an RFC 3339 date-time")
		}
		f.UpdatedSince = &t
	}
	if err := issues.Err(); err != nil {
		return err
	}
	tasks, next, err := s.deps.Work.ListWork(c.UserContext(), principal(c).WorkspaceID, f)
	if err != nil {
		return err
	}
	out := make([]taskJSON, len(tasks))
	for i, t := range tasks {
		out[i] = toTaskJSON(t)
	}
	m := newMeta(c)
	count, hasMore := len(out), next != nil
	m.Count, m.HasMore, m.Limit = &count, &hasMore, &limit
	if next != nil {
		cur := next.Encode()
		m.NextCursor = &cur
	}
	return respond(c, fiber.StatusOK, out, m)
}

func validTaskStatus(s accountable.TaskStatus) bool {
	for _, v := range accountable.TaskStatuses {
		if v == s {
			return true
		}
	}
	return false
}

type completeWorkRequest struct {
	VersionToken             *string         `json:"version_token"`
	ExpectedUpdatedAt        *string         `json:"expected_updated_at"`
	ExpectedAggregateVersion *int64          `json:"expected_aggregate_version"`
	Summary                  *string         `json:"summary"`
	MeasuredDurationHours    *float64        `json:"measured_duration_hours"`
	CostCents                *int64          `json:"cost_cents"`
	Evidence                 json.RawMessage `json:"evidence"`
	causationFields
}

// command resolves the two concurrency forms to one expected version.
func (r completeWorkRequest) command(taskID string) (accountable.CompleteWork, error) {
	cmd := accountable.CompleteWork{
		TaskID: taskID, MeasuredDurationHours: r.MeasuredDurationHours, CostCents: r.CostCents,
		Causation: r.causation(),
	}
	if r.Summary != nil {
		cmd.Summary = *r.Summary
	}
	if len(r.Evidence) > 0 && string(r.Evidence) != "null" {
		cmd.Evidence = r.Evidence
	}
	var issues accountable.Issues
	var fromToken, fromFields *accountable.TaskVersion
	if r.VersionToken != nil {
		v, ok := accountable.ParseVersionToken(*r.VersionToken)
		if !ok {
			issues.Add("/version_token", "is not a version token; copy data.concurrency.version_token of GET /work/{taskId} unchanged")
		} else {
			fromToken = &v
		}
	}
	switch {
	case r.ExpectedUpdatedAt != nil && r.ExpectedAggregateVersion != nil:
		t, err := accountable.ParseTime(*r.ExpectedUpdatedAt)
		if err != nil {
			issues.Add("/expected_updated_at", "must be an RFC 3339 date-time")
		} else {
			fromFields = &accountable.TaskVersion{AggregateVersion: *r.ExpectedAggregateVersion, UpdatedAt: t}
		}
	case r.ExpectedUpdatedAt != nil:
		issues.Add("/expected_aggregate_version", "is required with expected_updated_at")
	case r.ExpectedAggregateVersion != nil:
		issues.Add("/expected_updated_at", "is required with expected_aggregate_version")
	}
	switch {
	case len(issues) > 0:
	case fromToken != nil && fromFields != nil && !fromToken.Equal(*fromFields):
		issues.Add("/version_token", "describes a different version than expected_updated_at and expected_aggregate_version")
	case fromToken != nil:
		cmd.Expected = *fromToken
	case fromFields != nil:
		cmd.Expected = *fromFields
	default:
		issues.Add("/version_token", "is required (or expected_updated_at with expected_aggregate_version)")
	}
	return cmd, issues.Err()
}

// completeWork: POST /work/{taskId}/complete.
func (s *Server) completeWork(c *fiber.Ctx) error {
	id, err := pathUUID(c, "taskId")
	if err != nil {
		return err
	}
	var req completeWorkRequest
	if err := s.decodeBody(c, "CompleteWorkRequest", &req); err != nil {
		return err
	}
	cmd, err := req.command(id)
	if err != nil {
		return err
	}
	idem, err := idempotency(c, "work.complete", false, id)
	if err != nil {
		return err
	}
	res, dup, err := s.deps.Work.CompleteWork(c.UserContext(), principal(c), idem, cmd)
	if err != nil {
		return err
	}
	r := res.Receipt
	return respondCommand(c, fiber.StatusOK, workCompletionJSON{
		TaskID: res.Task.ID, ReceiptID: r.ID, EventID: res.Event.EventID, AggregateVersion: res.Event.AggregateVersion,
		EventHash: res.Event.EventHash, Duplicate: dup, Task: toTaskJSON(res.Task),
		Receipt: receiptJSON{ID: r.ID, TaskID: r.TaskID, Status: r.Status, Summary: r.Summary,
			MeasuredDurationHours: r.MeasuredDurationHours, CostCents: r.CostCents, Evidence: r.Evidence,
			CreatedAt: accountable.FormatTime(r.CreatedAt)},
	}, dup)
}
