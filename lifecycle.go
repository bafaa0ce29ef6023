package accountable

import "fmt"

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

// Result is the result of the action before it is applied: ok, nothing affected yet.
func (c ApplyLifecycle) Result() LifecycleResult {
	return LifecycleResult{OK: true, Action: c.Action, Level: c.Level, ID: c.ID, BlockReasons: []string{}}
}

// Blocked is r refused: not ok, nothing affected, with the reasons given after those it has.
func (r LifecycleResult) Blocked(reasons ...string) LifecycleResult {
	r.OK = false
	r.BlockReasons = append(r.BlockReasons, reasons...)
	r.Affected = LifecycleAffected{}
	return r
}

// OnRun is the run action a lifecycle action on a run is, or, when there is none, the
// reason the action is blocked.
func (a LifecycleAction) OnRun() (RunAction, string) {
	switch a {
	case LifecyclePause:
		return RunPause, ""
	case LifecycleResume:
		return RunResume, ""
	case LifecycleCancel:
		return RunCancel, ""
	}
	return "", "a run is not retried: launch its workstream again"
}

// pastTense is how a block reason says the action was done.
func (a LifecycleAction) pastTense() string {
	return map[LifecycleAction]string{LifecyclePause: "paused", LifecycleResume: "resumed", LifecycleRetry: "retried",
		LifecycleCancel: "cancelled"}[a]
}

// TaskState is a task in a lifecycle action's scope, as read (locked) in its transaction.
type TaskState struct {
	ID     string
	Status TaskStatus
}

// TaskChange is a task a lifecycle action moves.
type TaskChange struct {
	ID       string
	From, To TaskStatus
}

// LifecyclePlan is what a lifecycle action on an initiative, a workstream, a milestone or
// a task changes, and its result.
type LifecyclePlan struct {
	Initiative *InitiativeStatus // the initiative's new status; nil: unchanged
	Tasks      []TaskChange
	Result     LifecycleResult
}

// Plan propagates the action to what is in its scope: the initiative (initiative, its
// status when the level is initiative; nil otherwise) and each of its tasks, in the order
// given. An action that changes nothing is blocked, with the reasons: the initiative's
// status, the tasks it cannot move, or a scope without tasks.
func (c ApplyLifecycle) Plan(initiative *InitiativeStatus, tasks []TaskState) LifecyclePlan {
	p := LifecyclePlan{Result: c.Result()}
	if initiative != nil {
		if to, ok := InitiativeLifecycle(*initiative, c.Action); ok {
			p.Initiative = &to
			p.Result.Affected.Initiatives = 1
		} else {
			p.Result.BlockReasons = append(p.Result.BlockReasons, fmt.Sprintf("the initiative is %s", *initiative))
		}
	}
	unchanged := 0
	for _, t := range tasks {
		to, ok := TaskLifecycle(t.Status, c.Action)
		if !ok {
			unchanged++
			continue
		}
		p.Tasks = append(p.Tasks, TaskChange{ID: t.ID, From: t.Status, To: to})
		p.Result.Affected.Tasks++
	}
	if unchanged > 0 {
		p.Result.BlockReasons = append(p.Result.BlockReasons, fmt.Sprintf("%d task(s) cannot be %s in their status", unchanged, c.Action.pastTense()))
	}
	if p.Result.Affected.Tasks == 0 && p.Result.Affected.Initiatives == 0 {
		if len(tasks) == 0 && c.Level != LevelInitiative {
			p.Result.BlockReasons = append(p.Result.BlockReasons, fmt.Sprintf("the %s has no tasks", c.Level))
		}
		return LifecyclePlan{Result: p.Result.Blocked()}
	}
	p.Result.BlockReasons = []string{}
	return p
}
