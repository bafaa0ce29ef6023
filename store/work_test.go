package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func ptr[T any](v T) *T { return &v }

func createTask(t *testing.T, db *store.DB, p accountable.Principal, title string) accountable.Task {
	t.Helper()
	res, dup, err := db.CreateWork(context.Background(), p, nil, accountable.CreateWork{Title: title})
	if err != nil || dup {
		t.Fatalf("CreateWork: %v dup=%v", err, dup)
	}
	return res.Task
}

func TestCompleteWorkChainsLedgerAndRefusesStaleVersions(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	tenant := storetest.NewTenant(t, db)
	p := tenant.Principal

	task := createTask(t, db, p, "write the report")
	got, err := db.GetWork(ctx, p.WorkspaceID, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.UpdatedAt.Equal(task.UpdatedAt.Time) || got.AggregateVersion != 1 || got.Status != accountable.TaskTodo {
		t.Fatalf("read back %+v, created %+v", got, task)
	}

	hours := 1.5
	done, dup, err := db.CompleteWork(ctx, p, nil, accountable.CompleteWork{
		TaskID: task.ID, VersionToken: ptr(got.Version().Token()), Summary: ptr("done"), MeasuredDurationHours: &hours,
		Evidence: accountable.Object(`{"links":["https://example.test/pr/1"]}`),
	})
	if err != nil || dup {
		t.Fatalf("CompleteWork: %v dup=%v", err, dup)
	}
	if done.Task.Status != accountable.TaskCompleted || done.Task.AggregateVersion != 2 || done.AggregateVersion != 2 {
		t.Fatalf("completion %+v", done)
	}

	// The old version is now stale, and the error carries the current one.
	_, _, err = db.CompleteWork(ctx, p, nil, accountable.CompleteWork{TaskID: task.ID, VersionToken: ptr(got.Version().Token())})
	var ae *accountable.Error
	if !errors.As(err, &ae) || ae.Code != accountable.ECodeTaskVersionStale {
		t.Fatalf("second completion: %v", err)
	}
	if ae.Details["current_aggregate_version"] != int64(2) || ae.Details["current_updated_at"] != done.Task.UpdatedAt.String() {
		t.Fatalf("stale details %v", ae.Details)
	}
	// The current version of a completed task: invalid_state_transition.
	_, _, err = db.CompleteWork(ctx, p, nil, accountable.CompleteWork{TaskID: task.ID, VersionToken: ptr(done.Task.Version().Token())})
	if accountable.ErrorCode(err) != accountable.ECodeInvalidStateTransition {
		t.Fatalf("completing a completed task: %v", err)
	}

	// Another workspace cannot see or complete the task.
	other := storetest.NewTenant(t, db).Principal
	if _, err := db.GetWork(ctx, other.WorkspaceID, task.ID); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("other workspace read: %v", err)
	}
	if _, _, err := db.CompleteWork(ctx, other, nil, accountable.CompleteWork{TaskID: task.ID, VersionToken: ptr(done.Task.Version().Token())}); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("other workspace complete: %v", err)
	}

	v, err := db.VerifyLedger(ctx, p.WorkspaceID, accountable.LedgerScope{})
	if err != nil || !v.Verified || v.EventCount != storetest.TenantEvents+2 { // the tenant, work.created, work.completed
		t.Fatalf("verify: %+v %v", v, err)
	}
}

func TestConcurrentCompletionsOfOneVersionHaveOneWinner(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	p := storetest.NewTenant(t, db).Principal
	task := createTask(t, db, p, "race")

	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, _, errs[i] = db.CompleteWork(ctx, p, nil, accountable.CompleteWork{TaskID: task.ID, VersionToken: ptr(task.Version().Token()), Summary: ptr("racer")})
		}()
	}
	close(start)
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case accountable.ErrorCode(err) != accountable.ECodeTaskVersionStale:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d completions won, want exactly 1", wins)
	}
}

func TestIdempotentCommandReplaysAndRefusesReuse(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	p := storetest.NewTenant(t, db).Principal
	idem := &accountable.Idempotency{Key: "create-1", Operation: "work.create", RequestDigest: "sha256:aa"}

	first, dup, err := db.CreateWork(ctx, p, idem, accountable.CreateWork{Title: "once"})
	if err != nil || dup {
		t.Fatalf("first: %v %v", err, dup)
	}
	again, dup, err := db.CreateWork(ctx, p, idem, accountable.CreateWork{Title: "once"})
	if err != nil || !dup || again.Task.ID != first.Task.ID || again.EventRef.EventID != first.EventRef.EventID {
		t.Fatalf("replay: %+v dup=%v err=%v", again, dup, err)
	}
	other := *idem
	other.RequestDigest = "sha256:bb"
	if _, _, err := db.CreateWork(ctx, p, &other, accountable.CreateWork{Title: "twice"}); accountable.ErrorCode(err) != accountable.ECodeIdempotencyKeyReused {
		t.Fatalf("reuse: %v", err)
	}
	// Keys are per workspace: another workspace may use the same key.
	p2 := storetest.NewTenant(t, db).Principal
	if _, dup, err := db.CreateWork(ctx, p2, idem, accountable.CreateWork{Title: "once"}); err != nil || dup {
		t.Fatalf("other workspace: %v %v", err, dup)
	}
}

func TestExpiredIdempotencyRecordsAreIgnoredAndPurged(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	p := storetest.NewTenant(t, db).Principal
	idem := &accountable.Idempotency{Key: "old-key", Operation: "work.create", RequestDigest: "sha256:aa"}
	first, _, err := db.CreateWork(ctx, p, idem, accountable.CreateWork{Title: "first"})
	if err != nil {
		t.Fatal(err)
	}
	conn := storetest.Conn(t)
	if _, err := conn.Exec(ctx, `UPDATE idempotency_records SET expires_at = now() - interval '1 second'
		WHERE workspace_id = $1 AND key = $2`, p.WorkspaceID, idem.Key); err != nil {
		t.Fatal(err)
	}
	// Past its retention the key no longer replays: the command runs again and the record is replaced.
	again, dup, err := db.CreateWork(ctx, p, idem, accountable.CreateWork{Title: "first"})
	if err != nil || dup || again.Task.ID == first.Task.ID {
		t.Fatalf("expired key replayed: dup=%v err=%v", dup, err)
	}
	if replay, dup, err := db.CreateWork(ctx, p, idem, accountable.CreateWork{Title: "first"}); err != nil || !dup || replay.Task.ID != again.Task.ID {
		t.Fatalf("renewed key does not replay: dup=%v err=%v", dup, err)
	}
	if _, err := conn.Exec(ctx, `UPDATE idempotency_records SET expires_at = now() - interval '1 second'
		WHERE workspace_id = $1`, p.WorkspaceID); err != nil {
		t.Fatal(err)
	}
	// One replica purges at a time: while another holds the janitor's lock, this one
	// deletes nothing.
	holder := storetest.Conn(t)
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, store.JanitorLock); err != nil {
		t.Fatal(err)
	}
	if n, err := db.PurgeExpiredIdempotency(ctx, 1); err != nil || n != 0 {
		t.Fatalf("purged %d beside another janitor: %v", n, err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, store.JanitorLock); err != nil {
		t.Fatal(err)
	}
	n, err := db.PurgeExpiredIdempotency(ctx, 1)
	if err != nil || n < 1 {
		t.Fatalf("purged %d: %v", n, err)
	}
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM idempotency_records WHERE workspace_id = $1`, p.WorkspaceID).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d records left: %v", left, err)
	}
}

// Creating work is a blind command (one round trip behind an idempotency gate): while
// another request holds the key it answers in-progress and writes nothing; once the key
// has a record it replays it; a refused request leaves the key free.
func TestBlindCommandsAreGatedByTheirKey(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	p := storetest.NewTenant(t, db).Principal
	idem := &accountable.Idempotency{Key: "gated", Operation: "createWork", RequestDigest: "sha256:aa"}
	conn := storetest.Conn(t)
	countTasks := func() int {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE workspace_id = $1`, p.WorkspaceID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	holder, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1::text || '/' || $2::text, 0))`, p.WorkspaceID, idem.Key); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.CreateWork(ctx, p, idem, accountable.CreateWork{Title: "while held"}); accountable.ErrorCode(err) != accountable.ECodeIdempotencyInProgress {
		t.Fatalf("while another request holds the key: %v", err)
	}
	if n := countTasks(); n != 0 {
		t.Fatalf("%d tasks written while the key was held", n)
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	first, dup, err := db.CreateWork(ctx, p, idem, accountable.CreateWork{Title: "once"})
	if err != nil || dup {
		t.Fatalf("first: %v %v", err, dup)
	}
	again, dup, err := db.CreateWork(ctx, p, idem, accountable.CreateWork{Title: "once"})
	if err != nil || !dup || again.Task.ID != first.Task.ID {
		t.Fatalf("replay: %+v dup=%v err=%v", again, dup, err)
	}
	if n := countTasks(); n != 1 {
		t.Fatalf("%d tasks, want 1", n)
	}
	// Without a key the gate is not needed: one round trip, one task each time.
	for range 2 {
		if _, _, err := db.CreateWork(ctx, p, nil, accountable.CreateWork{Title: "keyless"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := countTasks(); n != 3 {
		t.Fatalf("%d tasks, want 3", n)
	}
}

// A blind command's round trip is one implicit transaction: when a statement fails after
// the writes before it ran, none of them is kept (no task, no event, no head, no record).
func TestBlindCommandsAreAllOrNothing(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	p := storetest.NewTenant(t, db).Principal
	conn := storetest.Conn(t)
	for _, idem := range []*accountable.Idempotency{nil, {Key: "doomed", Operation: "test", RequestDigest: "sha256:aa"}} {
		id, err := store.BlindCreateThenFail(ctx, db, p, idem)
		if err == nil {
			t.Fatal("the failing statement did not fail the command")
		}
		var rows int
		if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM tasks WHERE id = $1)
			+ (SELECT count(*) FROM ledger_events WHERE aggregate_id = $1::text)
			+ (SELECT count(*) FROM ledger_heads WHERE aggregate_id = $1::text)
			+ (SELECT count(*) FROM idempotency_records WHERE workspace_id = $2 AND key = 'doomed')`, id, p.WorkspaceID).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows != 0 {
			t.Fatalf("a failed blind command left %d rows (key %v)", rows, idem)
		}
	}
}

// The completing UPDATE checks the status in SQL (atomic with the version, no round trip):
// it completes a task in exactly the statuses accountable.TaskStatus.Completable admits,
// and refuses the others with invalid_state_transition.
func TestCompletionFollowsCompletable(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	conn := storetest.Conn(t)
	p := storetest.NewTenant(t, db).Principal
	for _, status := range accountable.TaskStatuses {
		task := createTask(t, db, p, "a task "+string(status))
		// Only the status moves: the version the completion names stays current.
		if _, err := conn.Exec(ctx, `UPDATE tasks SET status = $3 WHERE workspace_id = $1 AND id = $2`, p.WorkspaceID, task.ID, string(status)); err != nil {
			t.Fatal(err)
		}
		_, _, err := db.CompleteWork(ctx, p, nil, accountable.CompleteWork{TaskID: task.ID, VersionToken: ptr(task.Version().Token())})
		switch {
		case status.Completable() && err != nil:
			t.Errorf("completing a %s task: %v, want it completed", status, err)
		case !status.Completable() && accountable.ErrorCode(err) != accountable.ECodeInvalidStateTransition:
			t.Errorf("completing a %s task: %v, want invalid_state_transition", status, err)
		}
	}
}
