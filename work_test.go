package accountable_test

import (
	"testing"

	"github.com/accountablework/accountable"
)

// A task is completed from any status but an ended one (completed, cancelled); store's
// completing UPDATE lists the same statuses (TestCompletionFollowsCompletable in store).
func TestTaskStatusCompletable(t *testing.T) {
	want := map[accountable.TaskStatus]bool{accountable.TaskTodo: true, accountable.TaskInProgress: true, accountable.TaskBlocked: true,
		accountable.TaskCompleted: false, accountable.TaskCancelled: false}
	if len(want) != len(accountable.TaskStatuses) {
		t.Fatalf("%d statuses, the table has %d: decide the new ones", len(accountable.TaskStatuses), len(want))
	}
	for _, s := range accountable.TaskStatuses {
		if got, ok := want[s]; !ok || s.Completable() != got {
			t.Errorf("%s: completable %v, want %v", s, s.Completable(), got)
		}
	}
}
