package api_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// holdTaskLock locks the head of a task's chain from another session, as a long command
// would, until the test releases it.
func holdTaskLock(t *testing.T, taskID string) (release func()) {
	t.Helper()
	return holdLock(t, `SELECT count(*) FROM (SELECT 1 FROM ledger_heads WHERE aggregate_type = 'task'
		AND aggregate_id = $1 FOR UPDATE) l`, taskID)
}

// holdTaskRowLock locks the task's row itself (not its head) from another session until
// the test releases it: the completion's UPDATE, which rides in its first round trip,
// waits for it.
func holdTaskRowLock(t *testing.T, taskID string) (release func()) {
	t.Helper()
	return holdLock(t, `SELECT count(*) FROM (SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE) l`, taskID)
}

// holdLock runs lockSQL (which must lock exactly one row and count it) in a transaction
// of another session, kept open until the release it returns is called.
func holdLock(t *testing.T, lockSQL, taskID string) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn := storetest.Conn(t)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow(ctx, lockSQL, taskID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("lock: %v (%d rows)", err, n)
	}
	released := false
	release = func() {
		if !released {
			released = true
			tx.Rollback(ctx) //nolint:errcheck // the transaction only held a lock
		}
	}
	t.Cleanup(release)
	return release
}

// lockWaiters counts the sessions of this database waiting for a lock.
func lockWaiters(t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// openDB opens the package database with cfg's timeouts.
func openDB(t *testing.T, cfg store.Config) *store.DB {
	t.Helper()
	cfg.URL = storetest.URL(t)
	db, err := store.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

func completeBody(t *testing.T, e *env, key, id string) map[string]any {
	return map[string]any{"version_token": getWork(t, e, key, id)["concurrency"].(map[string]any)["version_token"]}
}

// wantUntouched fails unless the task is still todo at version 1 and the workspace's
// ledger holds exactly want events.
func wantUntouched(t *testing.T, e *env, key, id string, want int) {
	t.Helper()
	w := getWork(t, e, key, id)
	if w["status"] != "todo" || w["aggregate_version"] != 1.0 {
		t.Fatalf("the refused completion changed the task: %v", w)
	}
	if n := eventCount(t, e, key); n != want {
		t.Fatalf("the ledger has %d events, want %d", n, want)
	}
}

// A command blocked on a row lock answers resource_busy once lock_timeout has passed,
// and leaves nothing behind.
func TestBlockedCommandAnswersResourceBusy(t *testing.T) {
	db := openDB(t, store.Config{LockTimeout: 300 * time.Millisecond})
	e := newEnv(t, db)
	tenant := storetest.NewTenant(t, db)
	id := createWork(t, e, tenant.Key, "locked")
	body := completeBody(t, e, tenant.Key, id)
	before := eventCount(t, e, tenant.Key)

	holdTaskLock(t, id)
	start := time.Now()
	r := e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id}, key: tenant.Key,
		headers: map[string]string{"Idempotency-Key": "busy-1"}, body: body})
	expect(t, r, http.StatusConflict, accountable.ECodeResourceBusy)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("answered after %s", took)
	}
	wantUntouched(t, e, tenant.Key, id, before)
}

// A completion whose UPDATE (sent in its first round trip) waits for the task's row
// answers resource_busy too, and leaves nothing behind.
func TestBlockedUpdateAnswersResourceBusy(t *testing.T) {
	db := openDB(t, store.Config{LockTimeout: 300 * time.Millisecond})
	e := newEnv(t, db)
	tenant := storetest.NewTenant(t, db)
	id := createWork(t, e, tenant.Key, "row locked")
	body := completeBody(t, e, tenant.Key, id)
	before := eventCount(t, e, tenant.Key)

	release := holdTaskRowLock(t, id)
	r := e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id}, key: tenant.Key,
		headers: map[string]string{"Idempotency-Key": "row-busy-1"}, body: body})
	expect(t, r, http.StatusConflict, accountable.ECodeResourceBusy)
	release()
	wantUntouched(t, e, tenant.Key, id, before)
	// The key was not used up.
	r = e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id}, key: tenant.Key,
		headers: map[string]string{"Idempotency-Key": "row-busy-1"}, body: body})
	expect(t, r, http.StatusOK, "")
}

// A request that outlives its operation class's deadline answers deadline_exceeded; its
// statements are cancelled and nothing is left half-done.
func TestRequestDeadlineCancelsTheCommand(t *testing.T) {
	db := openDB(t, store.Config{LockTimeout: time.Minute})
	e := newEnv(t, db, func(c *api.Config, _ *api.Deps) {
		c.Deadlines = map[api.DeadlineClass]time.Duration{api.DeadlineCommand: 400 * time.Millisecond}
	})
	tenant := storetest.NewTenant(t, db)
	id := createWork(t, e, tenant.Key, "deadline")
	body := completeBody(t, e, tenant.Key, id)
	before := eventCount(t, e, tenant.Key)

	release := holdTaskLock(t, id)
	start := time.Now()
	r := e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id}, key: tenant.Key,
		headers: map[string]string{"Idempotency-Key": "deadline-1"}, body: body})
	expect(t, r, http.StatusGatewayTimeout, accountable.ECodeDeadlineExceeded)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("answered after %s", took)
	}
	// The answer does not wait for PostgreSQL to act on the cancellation; the statement
	// must be gone soon after (it is cancelled, not left to wait for the lock).
	watch := storetest.Conn(t)
	storetest.WaitFor(t, 3*time.Second, "the timed-out statement is cancelled", func() bool { return lockWaiters(t, watch) == 0 })
	release()
	wantUntouched(t, e, tenant.Key, id, before)
	// The key was not used up: the same request now succeeds.
	r = e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id}, key: tenant.Key,
		headers: map[string]string{"Idempotency-Key": "deadline-1"}, body: body})
	expect(t, r, http.StatusOK, "")
}

// A client that goes away cancels its request: the statement waiting for a lock is
// cancelled long before any timeout, and nothing is written.
func TestClientGoingAwayCancelsTheCommand(t *testing.T) {
	db := openDB(t, store.Config{LockTimeout: time.Minute})
	e := newEnv(t, db, func(c *api.Config, _ *api.Deps) {
		c.Deadlines = map[api.DeadlineClass]time.Duration{api.DeadlineCommand: time.Minute}
	})
	tenant := storetest.NewTenant(t, db)
	id := createWork(t, e, tenant.Key, "abandoned")
	body := completeBody(t, e, tenant.Key, id)
	before := eventCount(t, e, tenant.Key)
	watch := storetest.Conn(t)

	release := holdTaskLock(t, id)
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	raw := toJSON(body)
	fmt.Fprintf(conn, "POST %s/work/%s/complete HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nIdempotency-Key: gone-1\r\nContent-Length: %d\r\n\r\n%s",
		api.V1Root, id, tenant.Key, len(raw), raw)
	storetest.WaitFor(t, 10*time.Second, "the completion waits for the lock", func() bool { return lockWaiters(t, watch) == 1 })
	conn.Close()
	start := time.Now()
	storetest.WaitFor(t, 10*time.Second, "the abandoned statement is cancelled", func() bool { return lockWaiters(t, watch) == 0 })
	t.Logf("cancelled %s after the client left", time.Since(start).Round(time.Millisecond))
	release()
	wantUntouched(t, e, tenant.Key, id, before)
}

// waitUntil is storetest.WaitFor. It stays only for the callers in files being reworked
// elsewhere (controllers_test.go, work_test.go); new code calls storetest.WaitFor.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	storetest.WaitFor(t, within, what, cond)
}
