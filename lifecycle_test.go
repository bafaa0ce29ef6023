package accountable_test

import (
	"reflect"
	"testing"

	"github.com/accountablework/accountable"
)

// How a lifecycle action propagates to an initiative and its tasks: what it changes, and
// why it is blocked when it changes nothing.
func TestLifecyclePlan(t *testing.T) {
	status := func(s accountable.InitiativeStatus) *accountable.InitiativeStatus { return &s }
	task := func(id string, s accountable.TaskStatus) accountable.TaskState {
		return accountable.TaskState{ID: id, Status: s}
	}
	for _, c := range []struct {
		name       string
		level      accountable.LifecycleLevel
		action     accountable.LifecycleAction
		initiative *accountable.InitiativeStatus
		tasks      []accountable.TaskState
		want       accountable.LifecyclePlan // Result's Action, Level and ID are filled in below
	}{
		{name: "pause a task", level: accountable.LevelTask, action: accountable.LifecyclePause,
			tasks: []accountable.TaskState{task("a", accountable.TaskInProgress)},
			want: accountable.LifecyclePlan{Tasks: []accountable.TaskChange{{ID: "a", From: accountable.TaskInProgress, To: accountable.TaskBlocked}},
				Result: accountable.LifecycleResult{OK: true, Affected: accountable.LifecycleAffected{Tasks: 1}, BlockReasons: []string{}}}},
		{name: "some tasks of a milestone move: ok, the others' reasons dropped", level: accountable.LevelMilestone, action: accountable.LifecycleCancel,
			tasks: []accountable.TaskState{task("a", accountable.TaskCompleted), task("b", accountable.TaskTodo), task("c", accountable.TaskBlocked)},
			want: accountable.LifecyclePlan{Tasks: []accountable.TaskChange{{ID: "b", From: accountable.TaskTodo, To: accountable.TaskCancelled},
				{ID: "c", From: accountable.TaskBlocked, To: accountable.TaskCancelled}},
				Result: accountable.LifecycleResult{OK: true, Affected: accountable.LifecycleAffected{Tasks: 2}, BlockReasons: []string{}}}},
		{name: "no task of a workstream can move", level: accountable.LevelWorkstream, action: accountable.LifecycleResume,
			tasks: []accountable.TaskState{task("a", accountable.TaskTodo), task("b", accountable.TaskCompleted)},
			want:  accountable.LifecyclePlan{Result: accountable.LifecycleResult{BlockReasons: []string{"2 task(s) cannot be resumed in their status"}}}},
		{name: "a milestone without tasks", level: accountable.LevelMilestone, action: accountable.LifecyclePause,
			want: accountable.LifecyclePlan{Result: accountable.LifecycleResult{BlockReasons: []string{"the milestone has no tasks"}}}},
		{name: "an initiative and its tasks", level: accountable.LevelInitiative, action: accountable.LifecyclePause,
			initiative: status(accountable.InitiativeActive), tasks: []accountable.TaskState{task("a", accountable.TaskTodo), task("b", accountable.TaskCancelled)},
			want: accountable.LifecyclePlan{Initiative: status(accountable.InitiativePaused),
				Tasks:  []accountable.TaskChange{{ID: "a", From: accountable.TaskTodo, To: accountable.TaskBlocked}},
				Result: accountable.LifecycleResult{OK: true, Affected: accountable.LifecycleAffected{Initiatives: 1, Tasks: 1}, BlockReasons: []string{}}}},
		{name: "an initiative without tasks moves alone", level: accountable.LevelInitiative, action: accountable.LifecycleRetry,
			initiative: status(accountable.InitiativeCancelled),
			want: accountable.LifecyclePlan{Initiative: status(accountable.InitiativeActive),
				Result: accountable.LifecycleResult{OK: true, Affected: accountable.LifecycleAffected{Initiatives: 1}, BlockReasons: []string{}}}},
		{name: "an initiative that cannot move, its tasks can", level: accountable.LevelInitiative, action: accountable.LifecycleCancel,
			initiative: status(accountable.InitiativeCancelled), tasks: []accountable.TaskState{task("a", accountable.TaskTodo)},
			want: accountable.LifecyclePlan{Tasks: []accountable.TaskChange{{ID: "a", From: accountable.TaskTodo, To: accountable.TaskCancelled}},
				Result: accountable.LifecycleResult{OK: true, Affected: accountable.LifecycleAffected{Tasks: 1}, BlockReasons: []string{}}}},
		{name: "nothing of an initiative moves", level: accountable.LevelInitiative, action: accountable.LifecycleResume,
			initiative: status(accountable.InitiativeActive), tasks: []accountable.TaskState{task("a", accountable.TaskTodo)},
			want: accountable.LifecyclePlan{Result: accountable.LifecycleResult{BlockReasons: []string{"the initiative is active",
				"1 task(s) cannot be resumed in their status"}}}},
		{name: "an initiative without tasks that cannot move: no word about tasks", level: accountable.LevelInitiative, action: accountable.LifecyclePause,
			initiative: status(accountable.InitiativePaused),
			want:       accountable.LifecyclePlan{Result: accountable.LifecycleResult{BlockReasons: []string{"the initiative is paused"}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := accountable.ApplyLifecycle{Level: c.level, ID: "target", Action: c.action}
			c.want.Result.Level, c.want.Result.ID, c.want.Result.Action = c.level, "target", c.action
			if got := in.Plan(c.initiative, c.tasks); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// A lifecycle action on a run is the run's action of the same name; a run is not retried.
func TestLifecycleOnRun(t *testing.T) {
	for action, want := range map[accountable.LifecycleAction]accountable.RunAction{accountable.LifecyclePause: accountable.RunPause,
		accountable.LifecycleResume: accountable.RunResume, accountable.LifecycleCancel: accountable.RunCancel, accountable.LifecycleRetry: ""} {
		got, refusal := action.OnRun()
		if got != want || (refusal == "") != (want != "") {
			t.Errorf("%s: %q %q", action, got, refusal)
		}
	}
	r := accountable.ApplyLifecycle{Level: accountable.LevelRun, ID: "r", Action: accountable.LifecycleRetry}.Result()
	r.Affected.Runs = 1
	if b := r.Blocked("why"); b.OK || b.Affected != (accountable.LifecycleAffected{}) || !reflect.DeepEqual(b.BlockReasons, []string{"why"}) {
		t.Errorf("blocked: %+v", b)
	}
}
