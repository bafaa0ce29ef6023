package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
)

// The load of one kill cycle: killWorkers clients, each creating a task and then completing
// it, over and over, each request with its own Idempotency-Key; at most killBudget requests
// or killLoadLimit. The process is killed once killAfter requests have been started (a
// random point in [killAfterMin, killAfterMin+killAfterSpread)) or killLoadMax has passed,
// whichever comes first, so the clients are busy when it dies however fast the machine is.
const (
	killWorkers      = 8
	killBudget       = 400
	killLoadLimit    = 6 * time.Second
	killLoadMax      = 2 * time.Second
	killAfterMin     = 100
	killAfterSpread  = 140
	killCycles       = 2 // a cycle whose kill hit nothing in flight is run once more
	killResendWithin = 30 * time.Second
)

// An API process killed (SIGKILL) in the middle of requests, under load from a bounded
// generator of creates and completions: every acknowledged write is in the ledger and
// reads back as its answer said; every unacknowledged write is all or nothing (its event,
// its row or state change and its idempotency record together, or none of them), and the
// same request sent again with its key answers 2xx: 201/200 for a first effect, 200 with
// meta.duplicate true where the killed process had committed it; afterwards every key has
// exactly one event, the whole workspace is consistent, the stream serves every event and
// the chain verifies.
func TestAPIProcessKilledMidRequests(t *testing.T) {
	bin := buildBinary(t)
	queue := fmt.Sprintf("e2e-apikill-%d", time.Now().UnixNano())
	tenant := storetest.NewTenant(t, storetest.Open(t))
	conn := storetest.Conn(t)
	// The backends connected before any API process: the killed processes' are the others.
	ours := backendPIDs(t, conn)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2 * killWorkers, DisableCompression: true}}
	defer hc.CloseIdleConnections()

	var all []*killRequest
	inFlight := 0
	for cycle := 1; cycle <= killCycles && inFlight == 0; cycle++ {
		p := startServeProcess(t, bin, queue)
		records, stats := runKillCycle(t, p, hc, tenant.Key, cycle)
		all = append(all, records...)
		inFlight = stats.inFlight
		t.Logf("cycle %d: SIGKILL after %s of load (%d requests started, %d in flight at the client); %d requests sent: %d acknowledged, %d unacknowledged (%d cut mid-request, %d refused: sent after the process died)",
			cycle, stats.killedAt.Round(time.Millisecond), stats.startedAtKill, stats.inFlightAtKill, len(records),
			stats.acked, len(records)-stats.acked, stats.inFlight, stats.refused)
	}
	if inFlight == 0 {
		t.Fatalf("in %d cycles the kill cut no request in flight: the test proved nothing", killCycles)
	}

	// Refusals (a non-2xx answer read in full) are not expected under this load; they must
	// have changed nothing (checked below with the unacknowledged requests).
	for _, r := range all {
		if r.err == nil && !r.acked() {
			t.Errorf("%s %s: refused before the kill: %d %v", r.kind, r.key, r.status, r.answer)
		}
	}

	// The state the killed processes left, straight from PostgreSQL, once their backends
	// have exited: a backend that had a whole command (up to its COMMIT or its pipeline's
	// Sync) commits it after its client died; one that had not rolls back when it reads the
	// end of the connection. A backend exits only after it has read everything its client
	// sent, so none can still commit once all are gone (with no transaction open, one may
	// still hold a whole command unread in its socket).
	storetest.WaitFor(t, 30*time.Second, "the killed processes' backends to exit", func() bool {
		for _, pid := range backendPIDs(t, conn) {
			if !slices.Contains(ours, pid) {
				return false
			}
		}
		return true
	})
	before := loadKillState(t, conn, tenant.Principal.WorkspaceID)
	for _, problem := range before.consistency() {
		t.Errorf("after the kill: %s", problem)
	}
	committed := map[*killRequest]bool{}
	var ackedN, committedN, notCommittedN int
	for _, r := range all {
		evs := before.events[r.key]
		if r.acked() {
			ackedN++
			checkAcknowledged(t, before, r)
			continue
		}
		committed[r] = len(evs) > 0
		if committed[r] {
			committedN++
		} else {
			notCommittedN++
		}
		checkAllOrNothing(t, before, r)
	}
	t.Logf("%d requests sent: %d acknowledged, %d unacknowledged but committed, %d unacknowledged and not committed",
		len(all), ackedN, committedN, notCommittedN)
	if t.Failed() {
		t.FailNow()
	}

	// A new process on the same database; every unacknowledged request sent again.
	p := startServeProcess(t, bin, queue)
	c := apiClient{t: t, base: p.base, key: tenant.Key}
	for _, r := range all {
		if r.acked() || r.err == nil { // answered (refusals were reported above)
			continue
		}
		status, body := resend(t, hc, p.base, tenant.Key, r)
		dup := false
		if m, ok := body["meta"].(map[string]any); ok {
			dup = m["duplicate"] == true
		}
		data, _ := body["data"].(map[string]any)
		first := http.StatusCreated
		if r.kind == "complete" {
			first = http.StatusOK
		}
		switch {
		case committed[r]:
			if status != http.StatusOK || !dup || data["eventId"] != before.events[r.key][0].id {
				t.Errorf("%s %s: committed by the killed process, sent again: %d %v, want 200, meta.duplicate true and event %s",
					r.kind, r.key, status, body, before.events[r.key][0].id)
			}
		case status != first || dup:
			t.Errorf("%s %s: not committed by the killed process, sent again: %d %v, want %d and a first effect", r.kind, r.key, status, body, first)
		}
		if r.kind == "create" && data != nil {
			r.taskID, _ = data["taskId"].(string)
		}
	}

	// Now every request has had its effect, exactly once.
	after := loadKillState(t, conn, tenant.Principal.WorkspaceID)
	for _, problem := range after.consistency() {
		t.Errorf("after the requests were sent again: %s", problem)
	}
	creates, completes := 0, 0
	completedTasks := map[string]bool{}
	for _, r := range all {
		if r.err == nil && !r.acked() {
			continue // refused
		}
		want := accountable.EventWorkCreated
		if r.kind == "complete" {
			want = accountable.EventWorkCompleted
			completes++
			completedTasks[r.taskID] = true
		} else {
			creates++
		}
		if evs := after.events[r.key]; len(evs) != 1 || evs[0].eventType != want || (r.taskID != "" && evs[0].taskID != r.taskID) {
			t.Errorf("%s %s (task %s): %d events after the resend, want one %s of the task: %v", r.kind, r.key, r.taskID, len(evs), want, evs)
		}
	}
	if n := len(after.ofType(accountable.EventWorkCreated)); n != creates {
		t.Errorf("%d work.created events, want %d (one per create request)", n, creates)
	}
	if n := len(after.ofType(accountable.EventWorkCompleted)); n != completes {
		t.Errorf("%d work.completed events, want %d (one per complete request)", n, completes)
	}
	var dupKeys int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM (SELECT idempotency_key FROM ledger_events
		WHERE workspace_id = $1 AND idempotency_key IS NOT NULL GROUP BY idempotency_key HAVING count(*) > 1) d`,
		tenant.Principal.WorkspaceID).Scan(&dupKeys); err != nil {
		t.Fatal(err)
	}
	if dupKeys != 0 {
		t.Errorf("%d idempotency keys have more than one event", dupKeys)
	}

	// The new process reads every task as the answers said.
	tasks := listAllWork(t, c)
	if len(tasks) != creates {
		t.Errorf("GET /work lists %d tasks, want %d", len(tasks), creates)
	}
	for _, r := range all {
		if !r.acked() {
			continue
		}
		task, _ := r.data["task"].(map[string]any)
		got, ok := tasks[r.taskID]
		if !ok || task == nil {
			t.Errorf("%s %s: task %s is not listed (answer %v)", r.kind, r.key, r.taskID, r.data)
			continue
		}
		wantStatus, wantVersion := "todo", 1.0
		if completedTasks[r.taskID] {
			wantStatus, wantVersion = "completed", 2.0
		}
		switch {
		case got["id"] != task["id"] || got["title"] != task["title"] || got["created_at"] != task["created_at"]:
			t.Errorf("%s %s: reads %v, the answer said %v", r.kind, r.key, got, task)
		case got["status"] != wantStatus || got["aggregate_version"] != wantVersion:
			t.Errorf("%s %s: task %s is %v at version %v, want %s at %v", r.kind, r.key, r.taskID, got["status"], got["aggregate_version"], wantStatus, wantVersion)
		case r.kind == "complete" && (got["updated_at"] != task["updated_at"] || task["status"] != "completed"):
			t.Errorf("%s %s: reads %v, the completion answered %v", r.kind, r.key, got, task)
		case r.kind == "create" && !completedTasks[r.taskID] && got["updated_at"] != task["updated_at"]:
			t.Errorf("%s %s: reads %v, the answer said %v", r.kind, r.key, got, task)
		}
	}

	// The stream serves every task event once the killed transactions are gone, and the
	// whole workspace's chain verifies.
	taskEvents := map[string]bool{}
	for _, evs := range after.byTask {
		for _, e := range evs {
			taskEvents[e.id] = true
		}
	}
	var streamed map[string]bool
	storetest.WaitFor(t, 20*time.Second, "the stream serves every task event", func() bool {
		streamed = streamIDs(t, c, "aggregate_type=task")
		return len(streamed) >= len(taskEvents)
	})
	for id := range taskEvents {
		if !streamed[id] {
			t.Errorf("event %s is not in the stream", id)
		}
	}
	if len(streamed) != len(taskEvents) {
		t.Errorf("the stream serves %d task events, the ledger has %d", len(streamed), len(taskEvents))
	}
	status, body := c.call("GET", "/events/verify", "", nil)
	data, _ := body["data"].(map[string]any)
	if status != http.StatusOK || data["verified"] != true || data["eventCount"] != float64(after.total) {
		t.Fatalf("verify: %d %v (the workspace has %d events)", status, body, after.total)
	}
}

// killRequest is one request of the generator and what became of it.
type killRequest struct {
	kind   string // create | complete
	key    string
	path   string
	body   []byte
	title  string // of the task a create makes
	taskID string // the completed task; a create's from its answer
	status int
	answer map[string]any // the whole answer, when one was read
	data   map[string]any // its data
	err    error          // no answer read in full: unacknowledged
}

// acked reports whether a 2xx answer was read in full.
func (r *killRequest) acked() bool { return r.err == nil && r.status >= 200 && r.status < 300 }

// serveProcess is `accountable serve` running as its own process.
type serveProcess struct {
	*process
	base string
}

// startServeProcess runs `accountable serve` (API and relay) as its own process on this
// package's database and queue, and waits until it answers GET /healthz.
func startServeProcess(t *testing.T, bin, queue string) *serveProcess {
	t.Helper()
	addr := freeAddr(t)
	p := &serveProcess{process: startProcess(t, bin, "serve", "DATABASE_URL="+storetest.URL(t), "MIGRATION_DATABASE_URL="+storetest.OwnerURL(t),
		"TEMPORAL_TASK_QUEUE="+queue, "HTTP_ADDR="+addr, "SITE_URL=http://"+addr, "LOG_LEVEL=info"), base: "http://" + addr}
	storetest.WaitFor(t, 60*time.Second, "accountable serve on "+addr+" to answer 200 from /healthz", func() bool {
		select {
		case <-p.exited:
			t.Fatalf("accountable serve ended before answering /healthz: %v", p.cmd.ProcessState)
		default:
		}
		res, err := http.Get(p.base + "/healthz")
		if err != nil {
			return false
		}
		io.Copy(io.Discard, res.Body) //nolint:errcheck // only the status matters
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return p
}

type killStats struct {
	killedAt       time.Duration // how long after the load began the signal was sent
	startedAtKill  int           // requests started (sent or about to be) then
	inFlightAtKill int           // requests between send and answer then
	acked          int
	inFlight       int // unacknowledged requests whose connection was cut (reset, EOF)
	refused        int // unacknowledged requests that found no process (connection refused)
}

// runKillCycle loads p with the generator and kills it (SIGKILL) in the middle; it returns
// every request sent, with what became of it.
func runKillCycle(t *testing.T, p *serveProcess, hc *http.Client, apiKey string, cycle int) ([]*killRequest, killStats) {
	t.Helper()
	var (
		mu       sync.Mutex
		records  []*killRequest
		started  atomic.Int64
		inflight atomic.Int64
		killed   atomic.Bool
		wg       sync.WaitGroup
	)
	var stats killStats
	killAfter := int64(killAfterMin + rand.IntN(killAfterSpread))
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for w := range killWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var next *killRequest // the completion of the task this client created last
			for n := 0; ; n++ {
				if killed.Load() || time.Since(start) > killLoadLimit || started.Add(1) > killBudget {
					return
				}
				r := next
				next = nil
				if r == nil {
					key := fmt.Sprintf("apikill-%d-w%d-%d-create", cycle, w, n)
					r = &killRequest{kind: "create", key: key, path: "/work", title: "kill " + key}
					r.body, _ = json.Marshal(map[string]any{"title": r.title, "priority": "high", "description": nil,
						"metadata": map[string]any{"cycle": cycle, "client": w}, "estimated_cost_cents": 100 + n})
				}
				mu.Lock()
				records = append(records, r)
				mu.Unlock()
				inflight.Add(1)
				r.status, r.answer, r.err = sendKill(ctx, hc, p.base, apiKey, r)
				inflight.Add(-1)
				if !r.acked() {
					return // the process is gone (or refused: reported by the test)
				}
				r.data, _ = r.answer["data"].(map[string]any)
				if r.kind != "create" {
					continue
				}
				r.taskID, _ = r.data["taskId"].(string)
				task, _ := r.data["task"].(map[string]any)
				conc, _ := task["concurrency"].(map[string]any)
				key := fmt.Sprintf("apikill-%d-w%d-%d-complete", cycle, w, n)
				next = &killRequest{kind: "complete", key: key, path: "/work/" + r.taskID + "/complete", taskID: r.taskID}
				next.body, _ = json.Marshal(map[string]any{"version_token": conc["version_token"], "summary": "done " + key,
					"cost_cents": 10 + n, "evidence": map[string]any{"key": key}})
			}
		}()
	}
	// Kill once the clients are well under way, while requests are in flight. These polls
	// choose the moment of the kill, and the kill comes at their bounds whatever happened:
	// they assert nothing, so they are not storetest.WaitFor.
	for started.Load() < killAfter && time.Since(start) < killLoadMax {
		time.Sleep(2 * time.Millisecond)
	}
	for deadline := time.Now().Add(5 * time.Second); inflight.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	stats.killedAt, stats.inFlightAtKill, stats.startedAtKill = time.Since(start), int(inflight.Load()), int(min(started.Load(), killBudget))
	killed.Store(true) // no request starts after the kill; those in flight are cut
	p.kill()
	wg.Wait()
	for _, r := range records {
		switch {
		case r.acked():
			stats.acked++
		case r.err == nil: // refused by the service
		case errors.Is(r.err, syscall.ECONNREFUSED):
			stats.refused++
		default:
			stats.inFlight++
		}
	}
	return records, stats
}

// sendKill sends r once and reads its answer in full.
func sendKill(ctx context.Context, hc *http.Client, base, apiKey string, r *killRequest) (int, map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1"+r.path, bytes.NewReader(r.body))
	if err != nil {
		return 0, nil, err
	}
	// No transparent retry: net/http resends a request carrying an Idempotency-Key whose
	// reused connection broke, which would blur what the kill cut. One send, one outcome.
	req.GetBody = nil
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", r.key)
	res, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return res.StatusCode, nil, fmt.Errorf("answer %d %q: %w", res.StatusCode, raw, err)
	}
	return res.StatusCode, out, nil
}

// resend sends r again with its key and body to the new process, waiting out
// idempotency_request_in_progress (a transaction of the killed process that PostgreSQL
// has not ended yet).
func resend(t *testing.T, hc *http.Client, base, apiKey string, r *killRequest) (int, map[string]any) {
	t.Helper()
	deadline := time.Now().Add(killResendWithin)
	for {
		status, body, err := sendKill(context.Background(), hc, base, apiKey, r)
		if err != nil {
			t.Fatalf("%s %s sent again: %v", r.kind, r.key, err)
		}
		e, _ := body["error"].(map[string]any)
		if status != http.StatusConflict || e == nil || e["code"] != accountable.ECodeIdempotencyInProgress || time.Now().After(deadline) {
			return status, body
		}
		time.Sleep(100 * time.Millisecond) // a client's pause before it retries, as it is told to; the answer is the test's
	}
}

// checkAcknowledged: an acknowledged write is in the ledger as its answer said.
func checkAcknowledged(t *testing.T, st *killState, r *killRequest) {
	t.Helper()
	evs := st.events[r.key]
	want := accountable.EventWorkCreated
	if r.kind == "complete" {
		want = accountable.EventWorkCompleted
	}
	if len(evs) != 1 || evs[0].eventType != want || evs[0].id != r.data["eventId"] || evs[0].taskID != r.taskID || r.taskID == "" {
		t.Errorf("acknowledged %s %s (answer %v): events %v, want one %s %v of task %s", r.kind, r.key, r.data, evs, want, r.data["eventId"], r.taskID)
		return
	}
	task, ok := st.tasks[r.taskID]
	switch {
	case !ok:
		t.Errorf("acknowledged %s %s: no task row %s", r.kind, r.key, r.taskID)
	case r.kind == "create" && task.title != r.title:
		t.Errorf("acknowledged create %s: task %s has title %q, want %q", r.key, r.taskID, task.title, r.title)
	case r.kind == "complete" && (task.status != "completed" || task.version != 2 || !st.hasReceipt(r.taskID, evs[0].id)):
		t.Errorf("acknowledged complete %s: task %+v, receipts %v, want completed at version 2 with the event's receipt", r.key, task, st.receipts[r.taskID])
	}
	if st.records[r.key] != "completed" {
		t.Errorf("acknowledged %s %s: idempotency record %q", r.kind, r.key, st.records[r.key])
	}
}

// checkAllOrNothing: an unacknowledged (or refused) write left its event, its row or state
// change and its idempotency record together, or none of them.
func checkAllOrNothing(t *testing.T, st *killState, r *killRequest) {
	t.Helper()
	evs := st.events[r.key]
	record := st.records[r.key]
	switch r.kind {
	case "create":
		rows := st.byTitle[r.title]
		if len(evs) == 0 {
			if len(rows) != 0 || record != "" {
				t.Errorf("unacknowledged create %s: no event, but task rows %v and idempotency record %q", r.key, rows, record)
			}
			return
		}
		if len(evs) != 1 || evs[0].eventType != accountable.EventWorkCreated || len(rows) != 1 || rows[0].id != evs[0].taskID || record != "completed" {
			t.Errorf("unacknowledged create %s: half done: events %v, task rows %v, idempotency record %q", r.key, evs, rows, record)
		}
	case "complete":
		task := st.tasks[r.taskID]
		receipts := st.receipts[r.taskID]
		if len(evs) == 0 {
			if task.status != "todo" || task.version != 1 || len(receipts) != 0 || record != "" {
				t.Errorf("unacknowledged complete %s: no event, but task %+v, receipts %v, idempotency record %q", r.key, task, receipts, record)
			}
			return
		}
		if len(evs) != 1 || evs[0].eventType != accountable.EventWorkCompleted || evs[0].taskID != r.taskID ||
			task.status != "completed" || task.version != 2 || !st.hasReceipt(r.taskID, evs[0].id) || len(receipts) != 1 || record != "completed" {
			t.Errorf("unacknowledged complete %s: half done: events %v, task %+v, receipts %v, idempotency record %q", r.key, evs, task, receipts, record)
		}
	}
}

type killEvent struct {
	id, eventType, taskID, key string
}

type killTask struct {
	id, title, status string
	version           int64
}

// killState is the workspace's task events, tasks, receipts and idempotency records, read
// from PostgreSQL.
type killState struct {
	total    int                    // all the workspace's events
	events   map[string][]killEvent // task events by idempotency key
	byTask   map[string][]killEvent
	tasks    map[string]killTask
	byTitle  map[string][]killTask
	receipts map[string][]string // task -> event ids of its receipts
	records  map[string]string   // idempotency key -> record status
}

// backendPIDs lists the client backends connected to this package's database.
func backendPIDs(t *testing.T, conn *pgx.Conn) []int32 {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND backend_type = 'client backend' ORDER BY pid`)
	if err != nil {
		t.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// loadKillState reads the workspace's state in one snapshot.
func loadKillState(t *testing.T, conn *pgx.Conn, workspaceID string) *killState {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read only
	st := &killState{events: map[string][]killEvent{}, byTask: map[string][]killEvent{}, tasks: map[string]killTask{},
		byTitle: map[string][]killTask{}, receipts: map[string][]string{}, records: map[string]string{}}
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM ledger_events WHERE workspace_id = $1`, workspaceID).Scan(&st.total); err != nil {
		t.Fatal(err)
	}
	rows, _ := tx.Query(ctx, `SELECT id::text, event_type, aggregate_id, COALESCE(idempotency_key, '') FROM ledger_events
		WHERE workspace_id = $1 AND aggregate_type = $2 ORDER BY seq`, workspaceID, accountable.AggregateTask)
	var e killEvent
	if _, err := pgx.ForEachRow(rows, []any{&e.id, &e.eventType, &e.taskID, &e.key}, func() error {
		st.byTask[e.taskID] = append(st.byTask[e.taskID], e)
		if e.key != "" {
			st.events[e.key] = append(st.events[e.key], e)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rows, _ = tx.Query(ctx, `SELECT id::text, title, status, aggregate_version FROM tasks WHERE workspace_id = $1`, workspaceID)
	var k killTask
	if _, err := pgx.ForEachRow(rows, []any{&k.id, &k.title, &k.status, &k.version}, func() error {
		st.tasks[k.id] = k
		st.byTitle[k.title] = append(st.byTitle[k.title], k)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rows, _ = tx.Query(ctx, `SELECT task_id::text, event_id::text FROM receipts WHERE workspace_id = $1`, workspaceID)
	var task, event string
	if _, err := pgx.ForEachRow(rows, []any{&task, &event}, func() error {
		st.receipts[task] = append(st.receipts[task], event)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rows, _ = tx.Query(ctx, `SELECT key, status FROM idempotency_records WHERE workspace_id = $1`, workspaceID)
	var key, status string
	if _, err := pgx.ForEachRow(rows, []any{&key, &status}, func() error {
		st.records[key] = status
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return st
}

func (st *killState) hasReceipt(taskID, eventID string) bool {
	for _, e := range st.receipts[taskID] {
		if e == eventID {
			return true
		}
	}
	return false
}

func (st *killState) ofType(eventType string) []killEvent {
	var out []killEvent
	for _, evs := range st.byTask {
		for _, e := range evs {
			if e.eventType == eventType {
				out = append(out, e)
			}
		}
	}
	return out
}

// consistency lists what is half done anywhere in the workspace: a task without its
// work.created event or the reverse, a completed task without its work.completed event and
// receipt or the reverse, an event without its idempotency record, a key with two events.
func (st *killState) consistency() []string {
	var problems []string
	for id, evs := range st.byTask {
		task, ok := st.tasks[id]
		created, completed := 0, 0
		for _, e := range evs {
			switch e.eventType {
			case accountable.EventWorkCreated:
				created++
			case accountable.EventWorkCompleted:
				completed++
				if !st.hasReceipt(id, e.id) {
					problems = append(problems, fmt.Sprintf("event %s (%s) has no receipt", e.id, e.key))
				}
			}
		}
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("events %v have no task row", evs))
		case created != 1 || completed > 1 || task.version != int64(len(evs)) || (task.status == "completed") != (completed == 1):
			problems = append(problems, fmt.Sprintf("task %+v has events %v", task, evs))
		}
	}
	for id, task := range st.tasks {
		if len(st.byTask[id]) == 0 {
			problems = append(problems, fmt.Sprintf("task %+v has no event", task))
		}
	}
	for id, receipts := range st.receipts {
		if len(receipts) != 1 {
			problems = append(problems, fmt.Sprintf("task %s has %d receipts", id, len(receipts)))
		}
	}
	for key, evs := range st.events {
		if len(evs) != 1 {
			problems = append(problems, fmt.Sprintf("key %s has %d events: %v", key, len(evs), evs))
		}
		if st.records[key] != "completed" {
			problems = append(problems, fmt.Sprintf("key %s has events but idempotency record %q", key, st.records[key]))
		}
	}
	for key := range st.records {
		if _, ok := st.events[key]; !ok {
			problems = append(problems, fmt.Sprintf("key %s has an idempotency record but no event", key))
		}
	}
	sort.Strings(problems)
	return problems
}

// listAllWork reads every task of the workspace through GET /work, by id.
func listAllWork(t *testing.T, c apiClient) map[string]map[string]any {
	t.Helper()
	tasks := map[string]map[string]any{}
	path := "/work?limit=1000"
	for {
		status, body := c.call("GET", path, "", nil)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, status, body)
		}
		for _, item := range body["data"].([]any) {
			task := item.(map[string]any)
			tasks[task["id"].(string)] = task
		}
		meta := body["meta"].(map[string]any)
		next, _ := meta["nextCursor"].(string)
		if meta["hasMore"] != true || next == "" {
			return tasks
		}
		path = "/work?limit=1000&cursor=" + url.QueryEscape(next)
	}
}

// streamIDs reads the ids of every event GET /events/stream serves with filter.
func streamIDs(t *testing.T, c apiClient, filter string) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	path := "/events/stream?limit=1000&" + filter
	for {
		status, body := c.call("GET", path, "", nil)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, status, body)
		}
		for _, item := range body["data"].([]any) {
			ids[item.(map[string]any)["id"].(string)] = true
		}
		meta := body["meta"].(map[string]any)
		next, _ := meta["nextCursor"].(string)
		if meta["hasMore"] != true || next == "" {
			return ids
		}
		path = "/events/stream?limit=1000&" + filter + "&cursor=" + url.QueryEscape(next)
	}
}
