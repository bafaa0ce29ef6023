package accountable

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// TaskStatus is the state of a work item.
type TaskStatus string

// Task statuses. A task is created todo; completing it moves it to completed.
const (
	TaskTodo       TaskStatus = "todo"
	TaskInProgress TaskStatus = "in_progress"
	TaskBlocked    TaskStatus = "blocked"
	TaskCompleted  TaskStatus = "completed"
	TaskCancelled  TaskStatus = "cancelled"
)

// TaskStatuses lists every task status.
var TaskStatuses = []TaskStatus{TaskTodo, TaskInProgress, TaskBlocked, TaskCompleted, TaskCancelled}

// Enum lists the task statuses.
func (TaskStatus) Enum() []any { return EnumStrings(TaskStatuses...) }

// Completable reports whether a task in status s may be completed. It is the one
// definition: store's completing UPDATE lists the statuses it admits.
func (s TaskStatus) Completable() bool {
	return s == TaskTodo || s == TaskInProgress || s == TaskBlocked
}

// Priority of a work item.
type Priority string

// Priorities; medium is the default.
const (
	PriorityLow    Priority = "low"
	PriorityMedium Priority = "medium"
	PriorityHigh   Priority = "high"
	PriorityUrgent Priority = "urgent"
)

// Enum lists the priorities.
func (Priority) Enum() []any {
	return EnumStrings(PriorityLow, PriorityMedium, PriorityHigh, PriorityUrgent)
}

// Ledger vocabulary of the Work area.
const (
	AggregateTask      = "task"
	EventWorkCreated   = "work.created"
	EventWorkCompleted = "work.completed"
)

// ReceiptCompleted is the status of the receipt a completion creates.
const ReceiptCompleted = "completed"

// Bounds of the Work area (specification and contract). The same numbers appear in the
// tags of the command types below, from which the API description is generated; a test
// checks that they agree.
const (
	MaxTaskTitle             = 500
	MaxCompletionSummary     = 4000
	MaxMeasuredDurationHours = 100000
	MaxCompletionCostCents   = 100000000
)

// Task is a work item: the task record of the API (GET /work/{taskId}) and of the
// work.created ledger payload.
type Task struct {
	ID                 string          `json:"id" format:"uuid"`
	WorkspaceID        string          `json:"-"`
	Title              string          `json:"title" minLength:"1" maxLength:"500"`
	Description        *string         `json:"description"`
	Status             TaskStatus      `json:"status"`
	Priority           Priority        `json:"priority"`
	DueDate            *Time           `json:"due_date"`
	InitiativeID       *string         `json:"initiative_id" format:"uuid"`
	WorkstreamID       *string         `json:"workstream_id" format:"uuid"`
	MilestoneID        *string         `json:"milestone_id" format:"uuid"`
	Metadata           Object          `json:"metadata"`
	EstimatedCostCents *int64          `json:"estimated_cost_cents" minimum:"0"`
	CreatedAt          Time            `json:"created_at"`
	UpdatedAt          Time            `json:"updated_at"`
	AggregateVersion   int64           `json:"aggregate_version" minimum:"1"`
	Concurrency        TaskConcurrency `json:"concurrency,omitzero"`
}

// AppendJSON appends t as json.Marshal encodes it (jsonappend.go): GET /work/{taskId}
// answers it without encoding/json's reflective pass. The error is json.Marshal's, of
// metadata that is not JSON.
func (t Task) AppendJSON(buf []byte) ([]byte, error) {
	buf = append(buf, `{"id":`...)
	buf = AppendJSONString(buf, t.ID)
	buf = append(buf, `,"title":`...)
	buf = AppendJSONString(buf, t.Title)
	buf = append(buf, `,"description":`...)
	buf = appendJSONStringPtr(buf, t.Description)
	buf = append(buf, `,"status":`...)
	buf = AppendJSONString(buf, string(t.Status))
	buf = append(buf, `,"priority":`...)
	buf = AppendJSONString(buf, string(t.Priority))
	buf = append(buf, `,"due_date":`...)
	buf = appendJSONTimePtr(buf, t.DueDate)
	buf = append(buf, `,"initiative_id":`...)
	buf = appendJSONStringPtr(buf, t.InitiativeID)
	buf = append(buf, `,"workstream_id":`...)
	buf = appendJSONStringPtr(buf, t.WorkstreamID)
	buf = append(buf, `,"milestone_id":`...)
	buf = appendJSONStringPtr(buf, t.MilestoneID)
	buf = append(buf, `,"metadata":`...)
	buf, err := t.Metadata.appendJSON(buf)
	if err != nil {
		return buf, err
	}
	buf = append(buf, `,"estimated_cost_cents":`...)
	buf = appendJSONIntPtr(buf, t.EstimatedCostCents)
	buf = append(buf, `,"created_at":`...)
	buf = t.CreatedAt.appendJSON(buf)
	buf = append(buf, `,"updated_at":`...)
	buf = t.UpdatedAt.appendJSON(buf)
	buf = append(buf, `,"aggregate_version":`...)
	buf = strconv.AppendInt(buf, t.AggregateVersion, 10)
	if c := t.Concurrency; c != (TaskConcurrency{}) { // omitzero: the zero value, field by field
		buf = c.AppendJSON(append(buf, `,"concurrency":`...))
	}
	return append(buf, '}'), nil
}

// AppendJSON appends c as json.Marshal encodes it.
func (c TaskConcurrency) AppendJSON(buf []byte) []byte {
	buf = append(buf, `{"version_token":`...)
	buf = AppendJSONString(buf, c.VersionToken)
	buf = append(buf, `,"expected_updated_at":`...)
	buf = c.ExpectedUpdatedAt.appendJSON(buf)
	buf = append(buf, `,"expected_aggregate_version":`...)
	buf = strconv.AppendInt(buf, c.ExpectedAggregateVersion, 10)
	return append(buf, '}')
}

// TaskConcurrency is what a client copies from a read into a completion: the opaque
// version token, or the pair it encodes.
type TaskConcurrency struct {
	VersionToken             string `json:"version_token" minLength:"1"`
	ExpectedUpdatedAt        Time   `json:"expected_updated_at"`
	ExpectedAggregateVersion int64  `json:"expected_aggregate_version" minimum:"1"`
}

// WithConcurrency returns t with its concurrency inputs filled from its version (reads
// and command results carry them; ledger payloads do not).
func (t Task) WithConcurrency() Task {
	v := t.Version()
	t.Concurrency = TaskConcurrency{VersionToken: v.Token(), ExpectedUpdatedAt: TimeOf(v.UpdatedAt), ExpectedAggregateVersion: v.AggregateVersion}
	return t
}

// Version returns the task's current version.
func (t Task) Version() TaskVersion {
	return TaskVersion{AggregateVersion: t.AggregateVersion, UpdatedAt: t.UpdatedAt.Time}
}

// NoTaskVersion is the version a foreign version token names: no task has it.
var NoTaskVersion = TaskVersion{AggregateVersion: -1}

// TaskVersion identifies one version of a task for optimistic concurrency.
type TaskVersion struct {
	AggregateVersion int64
	UpdatedAt        time.Time
}

// Equal reports whether v and o describe the same version (instants compared exactly).
func (v TaskVersion) Equal(o TaskVersion) bool {
	return v.AggregateVersion == o.AggregateVersion && v.UpdatedAt.Equal(o.UpdatedAt)
}

// Token returns the opaque version token clients copy from a read into a completion.
func (v TaskVersion) Token() string {
	raw := "v1." + strconv.FormatInt(v.AggregateVersion, 10) + "." + strconv.FormatInt(v.UpdatedAt.UnixMicro(), 10)
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// ParseVersionToken decodes a token made by Token.
func ParseVersionToken(token string) (TaskVersion, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return TaskVersion{}, false
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 3 || parts[0] != "v1" {
		return TaskVersion{}, false
	}
	ver, err1 := strconv.ParseInt(parts[1], 10, 64)
	micros, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || ver < 0 {
		return TaskVersion{}, false
	}
	return TaskVersion{AggregateVersion: ver, UpdatedAt: time.UnixMicro(micros).UTC()}, true
}

// TaskVersionStale is the error for a completion whose version does not match.
func TaskVersionStale(current TaskVersion) *Error {
	return Errorf(ECodeTaskVersionStale, "The work task version is stale; read the task again and retry with its current version.").
		WithDetails(map[string]any{
			"current_updated_at":        FormatTime(current.UpdatedAt),
			"current_aggregate_version": current.AggregateVersion,
		})
}

// Causation links a command to the commands and conversations that led to it. Every
// command body may carry it.
type Causation struct {
	CommandID     *string `json:"command_id,omitzero" minLength:"1" maxLength:"200"`
	CausationID   *string `json:"causation_id,omitzero" minLength:"1" maxLength:"200"`
	CorrelationID *string `json:"correlation_id,omitzero" minLength:"1" maxLength:"200"`
}

// CreateWork is the command that creates a work item (POST /work).
type CreateWork struct {
	Title              string        `json:"title" minLength:"1" maxLength:"500"`
	Description        *string       `json:"description,omitzero"`
	Priority           *Priority     `json:"priority,omitzero"`
	DueDate            *CalendarTime `json:"due_date,omitzero"`
	Metadata           Object        `json:"metadata,omitzero"`
	EstimatedCostCents *int64        `json:"estimated_cost_cents,omitzero" minimum:"0"`
	InitiativeID       *string       `json:"initiative_id,omitzero" format:"uuid"`
	WorkstreamID       *string       `json:"workstream_id,omitzero" format:"uuid"`
	MilestoneID        *string       `json:"milestone_id,omitzero" format:"uuid"`
	Causation
}

// Validate checks the command's rules: the field bounds, and initiative_id, workstream_id
// and milestone_id given all together or not at all.
func (c CreateWork) Validate() error {
	is := CheckFields(c)
	if n := countSet(c.InitiativeID, c.WorkstreamID, c.MilestoneID); n != 0 && n != 3 {
		is.Add("/initiative_id", "initiative_id, workstream_id and milestone_id are given all together or not at all")
	}
	return is.Err()
}

func countSet[T any](ps ...*T) int {
	n := 0
	for _, p := range ps {
		if p != nil {
			n++
		}
	}
	return n
}

// CompleteWork is the command that completes a work item with evidence
// (POST /work/{taskId}/complete). The version it expects comes in one of two forms:
// version_token (preferred), or expected_updated_at with expected_aggregate_version; when
// both are given they must describe the same version.
type CompleteWork struct {
	TaskID                   string   `json:"-"`
	VersionToken             *string  `json:"version_token,omitzero" minLength:"1"`
	ExpectedUpdatedAt        *Time    `json:"expected_updated_at,omitzero"`
	ExpectedAggregateVersion *int64   `json:"expected_aggregate_version,omitzero" minimum:"0"`
	Summary                  *string  `json:"summary,omitzero" maxLength:"4000"`
	MeasuredDurationHours    *float64 `json:"measured_duration_hours,omitzero" minimum:"0" maximum:"100000"`
	CostCents                *int64   `json:"cost_cents,omitzero" minimum:"0" maximum:"100000000"`
	Evidence                 Object   `json:"evidence,omitzero"`
	Causation
}

// Validate checks the bounds and the concurrency forms.
func (c CompleteWork) Validate() error {
	is := CheckFields(c)
	_, versionIssues := c.expected()
	return append(is, versionIssues...).Err()
}

// Expected resolves the two concurrency forms to the one version the command expects.
func (c CompleteWork) Expected() (TaskVersion, error) {
	v, is := c.expected()
	return v, is.Err()
}

func (c CompleteWork) expected() (TaskVersion, Issues) {
	var is Issues
	var fromToken, fromFields *TaskVersion
	if c.VersionToken != nil {
		// The token is opaque to clients: one this service did not make names no version
		// of the task, so it is stale (409 task_version_stale with the current version),
		// as the specification's only rule for it (minLength 1) lets a client expect.
		v, ok := ParseVersionToken(*c.VersionToken)
		if !ok {
			v = NoTaskVersion
		}
		fromToken = &v
	}
	switch {
	case c.ExpectedUpdatedAt != nil && c.ExpectedAggregateVersion != nil:
		fromFields = &TaskVersion{AggregateVersion: *c.ExpectedAggregateVersion, UpdatedAt: c.ExpectedUpdatedAt.Time}
	case c.ExpectedUpdatedAt != nil:
		is.Add("/expected_aggregate_version", "is required with expected_updated_at")
	case c.ExpectedAggregateVersion != nil:
		is.Add("/expected_updated_at", "is required with expected_aggregate_version")
	}
	switch {
	case len(is) > 0:
		return TaskVersion{}, is
	case fromToken != nil && fromFields != nil && !fromToken.Equal(*fromFields):
		is.Add("/version_token", "describes a different version than expected_updated_at and expected_aggregate_version")
		return TaskVersion{}, is
	case fromToken != nil:
		return *fromToken, nil
	case fromFields != nil:
		return *fromFields, nil
	}
	is.Add("/version_token", "is required (or expected_updated_at with expected_aggregate_version)")
	return TaskVersion{}, is
}

// EventRef is the reference to a ledger event that commands return.
type EventRef struct {
	EventID          string `json:"eventId" format:"uuid"`
	AggregateVersion int64  `json:"aggregateVersion" minimum:"1"`
	EventHash        string `json:"eventHash" pattern:"^sha256:[a-f0-9]{64}$"`
	PayloadDigest    string `json:"-"`
}

// WorkCreated is the result of CreateWork: the completion-result shape without a receipt.
type WorkCreated struct {
	TaskID string `json:"taskId" format:"uuid"`
	EventRef
	Duplicate bool `json:"duplicate"`
	Task      Task `json:"task"`
	Encoded   `json:"-"`
}

// Receipt is the completion receipt of a work item.
type Receipt struct {
	ID                    string   `json:"id" format:"uuid"`
	TaskID                string   `json:"task_id" format:"uuid"`
	Status                string   `json:"status"`
	Summary               string   `json:"summary"`
	MeasuredDurationHours *float64 `json:"measured_duration_hours"`
	CostCents             *int64   `json:"cost_cents"`
	Evidence              Object   `json:"evidence"`
	CreatedAt             Time     `json:"created_at"`
}

// WorkReceipt is a completion receipt as GET /work/{taskId}/receipt answers it: the
// receipt, the work.completed event that recorded it (its id and hash, and its payload,
// whose canonical JSON's digest is the event's payloadDigest and which holds the receipt),
// and, once a signed checkpoint of the workspace's log holds the event, the proof of it,
// so that the holder can check the receipt offline, years later, with nothing but the
// log's public key.
type WorkReceipt struct {
	Receipt     Receipt               `json:"receipt"`
	EventID     string                `json:"event_id" format:"uuid"`
	EventHash   string                `json:"event_hash" pattern:"^sha256:[a-f0-9]{64}$"`
	Payload     Object                `json:"payload" description:"The work.completed event's payload, as the ledger holds it: the RFC 8785 canonical JSON of this object has the digest the event's entry names (payloadDigest)."`
	LedgerProof *LedgerInclusionProof `json:"ledger_proof" description:"The event's inclusion proof in the newest signed checkpoint of the workspace's log (as GET /events/{eventId}/proof answers it); null until a checkpoint holds the event (seconds after the completion)."`
}

// WorkCompletion is the result of CompleteWork (the specification's Work completion result).
type WorkCompletion struct {
	TaskID    string `json:"taskId" format:"uuid"`
	ReceiptID string `json:"receiptId" format:"uuid"`
	EventRef
	Duplicate bool    `json:"duplicate"`
	Task      Task    `json:"task"`
	Receipt   Receipt `json:"receipt"`
	Encoded   `json:"-"`
}

// WorkFilter selects work items for a list.
type WorkFilter struct {
	Status       *TaskStatus
	InitiativeID *string
	UpdatedSince *time.Time
	After        *WorkCursor
	Limit        int
}

// WorkCursor is a position in the work list (newest first); clients see it as an opaque
// cursor (package cursor).
type WorkCursor struct {
	CreatedAt time.Time
	ID        string
}

// Page limits of list reads.
const (
	DefaultPageLimit = 100
	MaxPageLimit     = 1000
)
