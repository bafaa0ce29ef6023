package accountable

import (
	"encoding/base64"
	"encoding/json"
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

// Completable reports whether a task in status s may be completed.
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

// Ledger vocabulary of the Work area.
const (
	AggregateTask      = "task"
	EventWorkCreated   = "work.created"
	EventWorkCompleted = "work.completed"
)

// ReceiptCompleted is the status of the receipt a completion creates.
const ReceiptCompleted = "completed"

// Bounds of the Work area (specification and contract).
const (
	MaxTaskTitle             = 500
	MaxCompletionSummary     = 4000
	MaxMeasuredDurationHours = 100000
	MaxCompletionCostCents   = 100000000
)

// Task is a work item.
type Task struct {
	ID                 string
	WorkspaceID        string
	Title              string
	Description        *string
	Status             TaskStatus
	Priority           Priority
	DueDate            *time.Time
	InitiativeID       *string
	WorkstreamID       *string
	MilestoneID        *string
	Metadata           json.RawMessage
	EstimatedCostCents *int64
	CreatedAt          time.Time
	UpdatedAt          time.Time
	AggregateVersion   int64
}

// TaskVersion identifies one version of a task for optimistic concurrency.
type TaskVersion struct {
	AggregateVersion int64
	UpdatedAt        time.Time
}

// Version returns the task's current version.
func (t Task) Version() TaskVersion {
	return TaskVersion{AggregateVersion: t.AggregateVersion, UpdatedAt: t.UpdatedAt}
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

// CreateWork is the command that creates a work item.
type CreateWork struct {
	Title              string
	Description        *string
	Priority           Priority
	DueDate            *time.Time
	Metadata           json.RawMessage
	EstimatedCostCents *int64
	InitiativeID       *string
	WorkstreamID       *string
	MilestoneID        *string
	Causation          Causation
}

// Causation links a command to the commands and conversations that led to it.
type Causation struct {
	CommandID     *string
	CausationID   *string
	CorrelationID *string
}

// CompleteWork is the command that completes a work item with evidence.
type CompleteWork struct {
	TaskID                string
	Expected              TaskVersion
	Summary               string
	MeasuredDurationHours *float64
	CostCents             *int64
	Evidence              json.RawMessage
	Causation             Causation
}

// EventRef is the reference to a ledger event that commands return.
type EventRef struct {
	EventID          string
	AggregateVersion int64
	EventHash        string
	PayloadDigest    string
}

// WorkCreated is the result of CreateWork.
type WorkCreated struct {
	Task  Task
	Event EventRef
}

// Receipt is the completion receipt of a work item.
type Receipt struct {
	ID                    string
	TaskID                string
	Status                string
	Summary               string
	MeasuredDurationHours *float64
	CostCents             *int64
	Evidence              json.RawMessage
	CreatedAt             time.Time
}

// WorkCompletion is the result of CompleteWork.
type WorkCompletion struct {
	Task    Task
	Receipt Receipt
	Event   EventRef
}

// WorkFilter selects work items for a list.
type WorkFilter struct {
	Status       *TaskStatus
	InitiativeID *string
	UpdatedSince *time.Time
	After        *WorkCursor
	Limit        int
}

// WorkCursor is a position in the work list (newest first).
type WorkCursor struct {
	CreatedAt time.Time
	ID        string
}

// Encode returns the opaque cursor string.
func (c WorkCursor) Encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.CreatedAt.UnixMicro(), 10) + "." + c.ID))
}

// ParseWorkCursor decodes a cursor made by Encode.
func ParseWorkCursor(s string) (WorkCursor, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return WorkCursor{}, false
	}
	micros, id, ok := strings.Cut(string(raw), ".")
	if !ok || !ValidUUID(id) {
		return WorkCursor{}, false
	}
	us, err := strconv.ParseInt(micros, 10, 64)
	if err != nil {
		return WorkCursor{}, false
	}
	return WorkCursor{CreatedAt: time.UnixMicro(us).UTC(), ID: id}, true
}

// Page limits of list reads.
const (
	DefaultPageLimit = 100
	MaxPageLimit     = 1000
)
