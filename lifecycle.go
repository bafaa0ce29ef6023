package accountable

// Lifecycle actions pause, resume, retry and cancel work at any level: an initiative, a
// workstream or a milestone (through their tasks), a task, or a run. An action that can
// change nothing is blocked, with the reasons.

// LifecycleLevel is what a lifecycle action applies to.
type LifecycleLevel string

// Lifecycle levels.
const (
	LevelInitiative LifecycleLevel = "initiative"
	LevelWorkstream LifecycleLevel = "workstream"
	LevelMilestone  LifecycleLevel = "milestone"
	LevelTask       LifecycleLevel = "task"
	LevelRun        LifecycleLevel = "run"
)

// Enum lists the levels.
func (LifecycleLevel) Enum() []any {
	return EnumStrings(LevelInitiative, LevelWorkstream, LevelMilestone, LevelTask, LevelRun)
}

// LifecycleAction is a lifecycle action.
type LifecycleAction string

// Lifecycle actions.
const (
	LifecyclePause  LifecycleAction = "pause"
	LifecycleResume LifecycleAction = "resume"
	LifecycleRetry  LifecycleAction = "retry"
	LifecycleCancel LifecycleAction = "cancel"
)

// Enum lists the actions.
func (LifecycleAction) Enum() []any {
	return EnumStrings(LifecyclePause, LifecycleResume, LifecycleRetry, LifecycleCancel)
}

// EventTaskStatusChanged is the event of a task moved by a lifecycle action;
// EventInitiativeStatusChanged that of an initiative.
const (
	EventTaskStatusChanged       = "work.status_changed"
	EventInitiativeStatusChanged = "initiative.status_changed"
)

// ApplyLifecycle is the command of POST /lifecycle.
type ApplyLifecycle struct {
	Level  LifecycleLevel  `json:"level"`
	ID     string          `json:"id" format:"uuid"`
	Action LifecycleAction `json:"action"`
	Reason *string         `json:"reason,omitzero" maxLength:"4000"`
	Causation
}

// Validate checks the fields.
func (c ApplyLifecycle) Validate() error { return CheckFields(c).Err() }

// LifecycleAffected counts what an action changed.
type LifecycleAffected struct {
	Initiatives int `json:"initiatives" minimum:"0"`
	Tasks       int `json:"tasks" minimum:"0"`
	Runs        int `json:"runs" minimum:"0"`
}

// LifecycleResult is the answer of POST /lifecycle; ok is false when the action was
// blocked (422), with blockReasons.
type LifecycleResult struct {
	OK           bool              `json:"ok"`
	Action       LifecycleAction   `json:"action"`
	Level        LifecycleLevel    `json:"level"`
	ID           string            `json:"id" format:"uuid"`
	Affected     LifecycleAffected `json:"affected"`
	BlockReasons []string          `json:"blockReasons"`
	Encoded      `json:"-"`
}

// TaskLifecycle returns the status a task in status s moves to under action, or false when
// the action does not apply to it.
func TaskLifecycle(s TaskStatus, action LifecycleAction) (TaskStatus, bool) {
	switch {
	case action == LifecyclePause && (s == TaskTodo || s == TaskInProgress):
		return TaskBlocked, true
	case action == LifecycleResume && s == TaskBlocked:
		return TaskTodo, true
	case action == LifecycleCancel && s != TaskCompleted && s != TaskCancelled:
		return TaskCancelled, true
	case action == LifecycleRetry && s == TaskCancelled:
		return TaskTodo, true
	}
	return s, false
}

// InitiativeLifecycle returns the status an initiative in status s moves to under action,
// or false when the action does not apply to it.
func InitiativeLifecycle(s InitiativeStatus, action LifecycleAction) (InitiativeStatus, bool) {
	switch {
	case action == LifecyclePause && s == InitiativeActive:
		return InitiativePaused, true
	case action == LifecycleResume && s == InitiativePaused:
		return InitiativeActive, true
	case action == LifecycleCancel && (s == InitiativeActive || s == InitiativePaused):
		return InitiativeCancelled, true
	case action == LifecycleRetry && s == InitiativeCancelled:
		return InitiativeActive, true
	}
	return s, false
}
