package api_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
	"github.com/google/uuid"
)

// The isolation matrix's lines of the area (isolation_test.go).
func init() {
	isolationCovers(isolationLines{
		fixtures: map[string]func(o *owner) string{
			"taskId": (*owner).task,
		},
		listedBy: map[string]string{
			"listWork": "taskId",
		},
		queryProbes: map[string][]string{
			"listWork": {"initiative_id={initiativeId}"},
		},
		preparations: map[string]func(o *owner, ids map[string]string){
			// A receipt is read once the owner's task is completed.
			"getWorkReceipt": func(o *owner, ids map[string]string) {
				o.t.Helper()
				expect(o.t, o.e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": ids["taskId"]},
					key: o.tenant.Key, body: map[string]any{"version_token": o.versionToken(ids["taskId"]), "summary": "Shipped"}}), http.StatusOK, "")
			},
		},
		bodies: map[string]func(o *owner, ids map[string]string) map[string]any{
			"createWork": func(o *owner, _ map[string]string) map[string]any {
				return map[string]any{"title": "Quarterly report", "description": "with figures", "priority": "high",
					"due_date": "2026-12-01", "metadata": map[string]any{"source": "isolation"}, "estimated_cost_cents": 1200,
					"initiative_id": uuid.NewString(), "workstream_id": uuid.NewString(), "milestone_id": uuid.NewString(),
					"command_id": "cmd-1", "correlation_id": "conv-1"}
			},
			"completeWork": func(o *owner, ids map[string]string) map[string]any {
				return map[string]any{"version_token": o.versionToken(ids["taskId"]), "summary": "Shipped",
					"measured_duration_hours": 1.5, "cost_cents": 300, "evidence": map[string]any{"links": []any{"https://example.com/pr/1"}}}
			},
		},
	})
}

func (o *owner) task() string {
	o.t.Helper()
	r := o.e.do(request{method: "POST", path: "/work", key: o.tenant.Key, headers: map[string]string{"Idempotency-Key": uniqueKey("owner")},
		body: map[string]any{"title": "Owner's task " + o.marker, "metadata": map[string]any{"owner": o.marker}}})
	expect(o.t, r, http.StatusCreated, "")
	return r.data()["taskId"].(string)
}

func (o *owner) versionToken(taskID string) string {
	o.t.Helper()
	return getWork(o.t, o.e, o.tenant.Key, taskID)["concurrency"].(map[string]any)["version_token"].(string)
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

var keyCounter struct {
	sync.Mutex
	n int
}

func uniqueKey(prefix string) string {
	keyCounter.Lock()
	defer keyCounter.Unlock()
	keyCounter.n++
	return fmt.Sprintf("%s-%d", prefix, keyCounter.n)
}

// sameButDuplicate fails unless replay carries the original's data and meta with
// duplicate set (in data and meta) and nothing else changed.
func sameButDuplicate(t *testing.T, original, replay response) {
	t.Helper()
	if original.data()["duplicate"] != false || original.meta()["duplicate"] != false {
		t.Fatalf("original already a duplicate: %s", original.raw)
	}
	if replay.data()["duplicate"] != true || replay.meta()["duplicate"] != true {
		t.Fatalf("replay not marked duplicate: %s", replay.raw)
	}
	// Everything but the duplicate flags must be identical.
	withoutDuplicate := func(m map[string]any) string {
		c := maps.Clone(m)
		delete(c, "duplicate")
		return toJSON(c)
	}
	if withoutDuplicate(original.data()) != withoutDuplicate(replay.data()) ||
		withoutDuplicate(original.meta()) != withoutDuplicate(replay.meta()) {
		t.Fatalf("replay differs from the original:\n%s\n%s", original.raw, replay.raw)
	}
}

// createWork creates a task through the API and returns its id.
func createWork(t *testing.T, e *env, key, title string) string {
	t.Helper()
	r := e.do(request{method: "POST", path: "/work", key: key, headers: map[string]string{"Idempotency-Key": uniqueKey("create")},
		body: map[string]any{"title": title}})
	expect(t, r, http.StatusCreated, "")
	return r.data()["taskId"].(string)
}

func getWork(t *testing.T, e *env, key, id string) map[string]any {
	t.Helper()
	r := e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": id}, key: key})
	expect(t, r, http.StatusOK, "")
	return r.data()
}

// eventCount counts the workspace's committed events (verification reads them all; the
// stream would serve only those below its horizon).
func eventCount(t *testing.T, e *env, key string) int {
	t.Helper()
	r := e.do(request{method: "GET", path: "/events/verify", key: key})
	expect(t, r, http.StatusOK, "")
	return int(r.data()["eventCount"].(float64))
}

func TestCreateReadAndCompleteWork(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key

	create := request{method: "POST", path: "/work", key: key, headers: map[string]string{"Idempotency-Key": "create-report"},
		body: map[string]any{"title": "Write the report", "description": nil, "priority": "high", "due_date": "2026-12-01",
			"metadata": map[string]any{"source": "test"}, "estimated_cost_cents": 1200, "correlation_id": "conv-1"}}
	r := e.do(create)
	expect(t, r, http.StatusCreated, "")
	created := r.data()
	if r.meta()["duplicate"] != false || created["duplicate"] != false || r.meta()["workspaceId"] != tenant.Principal.WorkspaceID {
		t.Fatalf("create: %s", r.raw)
	}
	task := created["task"].(map[string]any)
	if task["status"] != "todo" || task["priority"] != "high" || task["due_date"] != "2026-12-01T00:00:00.000000Z" ||
		created["aggregateVersion"] != 1.0 || task["aggregate_version"] != 1.0 {
		t.Fatalf("created task: %s", r.raw)
	}
	id := created["taskId"].(string)

	// Replay: same key and body -> the original result, 200, duplicate.
	first := r
	r = e.do(create)
	expect(t, r, http.StatusOK, "")
	sameButDuplicate(t, first, r)
	// The same request with other key order and whitespace is the same request.
	same := create
	same.body = `{ "correlation_id":"conv-1", "estimated_cost_cents":1200, "metadata":{"source":"test"}, "due_date":"2026-12-01",
		"priority":"high", "description":null, "title":"Write the report" }`
	expect(t, e.do(same), http.StatusOK, "")
	// null and an absent member fingerprint alike (CONTRACT): without "description" it is
	// still the same request.
	absent := create
	absent.body = map[string]any{"title": "Write the report", "priority": "high", "due_date": "2026-12-01",
		"metadata": map[string]any{"source": "test"}, "estimated_cost_cents": 1200, "correlation_id": "conv-1"}
	sameButDuplicate(t, first, e.do(absent))
	// Same key, another body -> 409.
	other := create
	other.body = map[string]any{"title": "Something else"}
	expect(t, e.do(other), http.StatusConflict, accountable.ECodeIdempotencyKeyReused)

	read := getWork(t, e, key, id)
	conc := read["concurrency"].(map[string]any)
	if read["updated_at"] != task["updated_at"] || conc["expected_updated_at"] != read["updated_at"] ||
		conc["expected_aggregate_version"] != 1.0 || conc["version_token"] == "" {
		t.Fatalf("read: %v", read)
	}

	complete := request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id}, key: key,
		headers: map[string]string{"Idempotency-Key": "complete-report"},
		body: map[string]any{"version_token": conc["version_token"], "summary": "Shipped", "measured_duration_hours": 0,
			"cost_cents": 250, "evidence": map[string]any{"links": []string{"https://example.test/pr/1"}}}}
	r = e.do(complete)
	expect(t, r, http.StatusOK, "")
	done := r.data()
	receipt := done["receipt"].(map[string]any)
	if done["taskId"] != id || done["aggregateVersion"] != 2.0 || done["duplicate"] != false || r.meta()["duplicate"] != false ||
		done["task"].(map[string]any)["status"] != "completed" || receipt["status"] != "completed" ||
		receipt["summary"] != "Shipped" || receipt["measured_duration_hours"] != 0.0 || done["receiptId"] != receipt["id"] {
		t.Fatalf("completion: %s", r.raw)
	}
	// The event reference is the ledger event.
	var completedEvent map[string]any
	for _, ev := range e.streamEvents(key, "event_type=work.completed", 1) {
		completedEvent = ev
	}
	if completedEvent["id"] != done["eventId"] || completedEvent["eventHash"] != done["eventHash"] ||
		completedEvent["previousHash"] != created["eventHash"] || completedEvent["idempotencyKey"] != "complete-report" {
		t.Fatalf("completion event %v vs result %v", completedEvent, done)
	}

	// Replay of the completion.
	firstDone := r
	r = e.do(complete)
	expect(t, r, http.StatusOK, "")
	sameButDuplicate(t, firstDone, r)
	// The old version again, without the key: stale, with the current version in details.
	stale := complete
	stale.headers = nil
	r = e.do(stale)
	expect(t, r, http.StatusConflict, accountable.ECodeTaskVersionStale)
	details := r.errorObj()["details"].(map[string]any)
	now := getWork(t, e, key, id)
	if details["current_aggregate_version"] != 2.0 || details["current_updated_at"] != now["updated_at"] {
		t.Fatalf("stale details %v, task %v", details, now)
	}
	// The current version of a completed task: invalid_state_transition.
	again := stale
	again.body = map[string]any{"version_token": now["concurrency"].(map[string]any)["version_token"]}
	expect(t, e.do(again), http.StatusConflict, accountable.ECodeInvalidStateTransition)

	// The compatibility form, and both forms together.
	id2 := createWork(t, e, key, "second")
	w2 := getWork(t, e, key, id2)
	c2 := w2["concurrency"].(map[string]any)
	mismatch := request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id2}, key: key,
		body: map[string]any{"version_token": c2["version_token"], "expected_updated_at": c2["expected_updated_at"], "expected_aggregate_version": 7}}
	expect(t, e.do(mismatch), http.StatusBadRequest, accountable.ECodeValidationFailed)
	both := mismatch
	both.body = map[string]any{"version_token": c2["version_token"], "expected_updated_at": c2["expected_updated_at"], "expected_aggregate_version": 1}
	expect(t, e.do(both), http.StatusOK, "")

	id3 := createWork(t, e, key, "third")
	w3 := getWork(t, e, key, id3)
	pair := request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id3}, key: key,
		body: map[string]any{"version_token": nil, "expected_updated_at": w3["updated_at"], "expected_aggregate_version": 1, "measured_duration_hours": nil}}
	r = e.do(pair)
	expect(t, r, http.StatusOK, "")
	if r.data()["receipt"].(map[string]any)["measured_duration_hours"] != nil {
		t.Fatalf("null duration: %s", r.raw)
	}

	// The list, newest first, with a cursor.
	r = e.do(request{method: "GET", path: "/work", key: key, query: "limit=2"})
	expect(t, r, http.StatusOK, "")
	if len(r.dataList()) != 2 || r.meta()["hasMore"] != true || r.dataList()[0].(map[string]any)["id"] != id3 {
		t.Fatalf("page 1: %s", r.raw)
	}
	r = e.do(request{method: "GET", path: "/work", key: key, query: "limit=2&cursor=" + r.meta()["nextCursor"].(string)})
	if len(r.dataList()) != 1 || r.meta()["hasMore"] != false || r.dataList()[0].(map[string]any)["id"] != id {
		t.Fatalf("page 2: %s", r.raw)
	}
	r = e.do(request{method: "GET", path: "/work", key: key, query: "status=todo"})
	if len(r.dataList()) != 0 {
		t.Fatalf("status filter: %s", r.raw)
	}
}

func TestConcurrentCompletionsOverHTTPHaveOneWinner(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	id := createWork(t, e, tenant.Key, "contended")
	token := getWork(t, e, tenant.Key, id)["concurrency"].(map[string]any)["version_token"]

	const n = 24
	statuses := make([]response, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			statuses[i] = e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id},
				key: tenant.Key, body: map[string]any{"version_token": token, "summary": fmt.Sprint("racer ", i)}})
		}()
	}
	close(start)
	wg.Wait()
	wins := 0
	for _, r := range statuses {
		switch {
		case r.status == http.StatusOK:
			wins++
		case r.status == http.StatusConflict && r.errorCode() == accountable.ECodeTaskVersionStale:
		default:
			t.Fatalf("unexpected %d: %s", r.status, r.raw)
		}
	}
	if wins != 1 {
		t.Fatalf("%d winners, want 1", wins)
	}
	// One receipt: exactly one work.completed event.
	// (Counted by verification, which reads every committed event: the stream could hold
	// a second completion back behind its horizon.)
	if n := eventCount(t, e, tenant.Key); n != storetest.TenantEvents+2 {
		t.Fatalf("%d events, want the tenant's, work.created and one work.completed", n)
	}
	if completed := e.streamEvents(tenant.Key, "event_type=work.completed", 1); len(completed) != 1 {
		t.Fatalf("%d completion events", len(completed))
	}
}

func TestBadInputIsRefusedAndWritesNothing(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	id := createWork(t, e, key, "target")
	token := getWork(t, e, key, id)["concurrency"].(map[string]any)["version_token"].(string)
	before := eventCount(t, e, key)

	post := func(path string, params map[string]string, idem string, body any, headers ...string) request {
		h := map[string]string{}
		if idem != "" {
			h["Idempotency-Key"] = idem
		}
		for i := 0; i+1 < len(headers); i += 2 {
			h[headers[i]] = headers[i+1]
		}
		return request{method: "POST", path: path, params: params, key: key, body: body, headers: h}
	}
	complete := func(body any, headers ...string) request {
		return post("/work/{taskId}/complete", map[string]string{"taskId": id}, "", body, headers...)
	}
	withToken := func(extra map[string]any) map[string]any {
		m := map[string]any{"version_token": token}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		name   string
		req    request
		status int
		code   string
		path   string // expected issue path, when validation_failed
	}{
		{"malformed json", post("/work", nil, "k1", `{"title": `), 400, accountable.ECodeInvalidJSON, ""},
		{"trailing garbage", post("/work", nil, "k1", `{"title": "x"} {}`), 400, accountable.ECodeInvalidJSON, ""},
		{"array body", post("/work", nil, "k1", `[{"title": "x"}]`), 400, accountable.ECodeInvalidJSON, ""},
		{"missing title", post("/work", nil, "k1", map[string]any{}), 400, accountable.ECodeValidationFailed, ""},
		{"null title", post("/work", nil, "k1", map[string]any{"title": nil}), 400, accountable.ECodeValidationFailed, "/title"},
		{"title wrong type", post("/work", nil, "k1", map[string]any{"title": 5}), 400, accountable.ECodeValidationFailed, "/title"},
		{"title too long", post("/work", nil, "k1", map[string]any{"title": strings.Repeat("x", 501)}), 400, accountable.ECodeValidationFailed, "/title"},
		{"bad priority", post("/work", nil, "k1", map[string]any{"title": "x", "priority": "asap"}), 400, accountable.ECodeValidationFailed, "/priority"},
		{"negative estimate", post("/work", nil, "k1", map[string]any{"title": "x", "estimated_cost_cents": -1}), 400, accountable.ECodeValidationFailed, "/estimated_cost_cents"},
		{"partial initiative trio", post("/work", nil, "k1", map[string]any{"title": "x", "initiative_id": id}), 400, accountable.ECodeValidationFailed, "/initiative_id"},
		{"bad due date", post("/work", nil, "k1", map[string]any{"title": "x", "due_date": "tomorrow"}), 400, accountable.ECodeValidationFailed, "/due_date"},
		{"duplicate member names", post("/work", nil, "k1", `{"title":"x","metadata":{"a":1,"a":2}}`), 400, accountable.ECodeInvalidJSON, ""},
		{"number beyond double range", post("/work", nil, "k1", `{"title":"x","metadata":{"n":1e400}}`), 400, accountable.ECodeInvalidJSON, ""},
		{"metadata nested too deep", post("/work", nil, "k1", `{"title":"x","metadata":`+strings.Repeat(`{"a":`, accountable.MaxFreeFormDepth+1)+`1`+strings.Repeat(`}`, accountable.MaxFreeFormDepth+1)+`}`), 400, accountable.ECodeValidationFailed, "/metadata"},
		{"evidence nested too deep", complete(`{"version_token":"` + token + `","evidence":` + strings.Repeat(`{"a":`, 1000) + `[]` + strings.Repeat(`}`, 1000) + `}`), 400, accountable.ECodeValidationFailed, "/evidence"},
		{"lone surrogate", complete(`{"version_token":"` + token + `","evidence":{"s":"\ud800"}}`), 400, accountable.ECodeInvalidJSON, ""},
		{"NUL in title", post("/work", nil, "k1", `{"title": "a\u0000b"}`), 400, accountable.ECodeValidationFailed, ""},
		{"no idempotency key", post("/work", nil, "", map[string]any{"title": "x"}), 400, accountable.ECodeIdempotencyKeyRequired, ""},
		{"bad idempotency key", post("/work", nil, "-starts-with-dash", map[string]any{"title": "x"}), 400, accountable.ECodeIdempotencyKeyInvalid, ""},
		{"long idempotency key", post("/work", nil, strings.Repeat("k", 201), map[string]any{"title": "x"}), 400, accountable.ECodeIdempotencyKeyInvalid, ""},
		{"text/plain", post("/work", nil, "k1", `{"title":"x"}`, "Content-Type", "text/plain"), 415, accountable.ECodeUnsupportedMediaType, ""},
		{"no concurrency input", complete(map[string]any{"summary": "x"}), 400, accountable.ECodeValidationFailed, "/version_token"},
		{"empty body", complete(""), 400, accountable.ECodeValidationFailed, "/version_token"},
		{"empty token", complete(map[string]any{"version_token": ""}), 400, accountable.ECodeValidationFailed, "/version_token"},
		{"forged token", complete(map[string]any{"version_token": "bm90LWEtdG9rZW4"}), 409, accountable.ECodeTaskVersionStale, ""},
		{"foreign token", complete(map[string]any{"version_token": "stale"}), 409, accountable.ECodeTaskVersionStale, ""},
		{"foreign token beside a pair", complete(map[string]any{"version_token": "stale", "expected_updated_at": "2026-01-01T00:00:00Z", "expected_aggregate_version": 1}), 400, accountable.ECodeValidationFailed, "/version_token"},
		{"fractional estimate", post("/work", nil, "k1", `{"title":"x","estimated_cost_cents":12.5}`), 400, accountable.ECodeValidationFailed, "/estimated_cost_cents"},
		{"estimate beyond exact integers", post("/work", nil, "k1", `{"title":"x","estimated_cost_cents":1e300}`), 400, accountable.ECodeValidationFailed, "/estimated_cost_cents"},
		{"half of the pair", complete(map[string]any{"expected_aggregate_version": 1}), 400, accountable.ECodeValidationFailed, "/expected_updated_at"},
		{"negative version", complete(map[string]any{"expected_updated_at": "2026-01-01T00:00:00Z", "expected_aggregate_version": -1}), 400, accountable.ECodeValidationFailed, "/expected_aggregate_version"},
		{"bad updated_at", complete(map[string]any{"expected_updated_at": "yesterday", "expected_aggregate_version": 1}), 400, accountable.ECodeValidationFailed, "/expected_updated_at"},
		{"summary too long", complete(withToken(map[string]any{"summary": strings.Repeat("s", 4001)})), 400, accountable.ECodeValidationFailed, "/summary"},
		{"negative duration", complete(withToken(map[string]any{"measured_duration_hours": -0.5})), 400, accountable.ECodeValidationFailed, "/measured_duration_hours"},
		{"duration too large", complete(withToken(map[string]any{"measured_duration_hours": 100000.5})), 400, accountable.ECodeValidationFailed, "/measured_duration_hours"},
		{"duration as string", complete(withToken(map[string]any{"measured_duration_hours": "2"})), 400, accountable.ECodeValidationFailed, "/measured_duration_hours"},
		{"cost too large", complete(withToken(map[string]any{"cost_cents": 100000001})), 400, accountable.ECodeValidationFailed, "/cost_cents"},
		{"fractional cost", complete(withToken(map[string]any{"cost_cents": 1.5})), 400, accountable.ECodeValidationFailed, "/cost_cents"},
		{"evidence not an object", complete(withToken(map[string]any{"evidence": []int{1}})), 400, accountable.ECodeValidationFailed, "/evidence"},
		{"bad task id", post("/work/{taskId}/complete", map[string]string{"taskId": "12345"}, "", withToken(nil)), 400, accountable.ECodeValidationFailed, "taskId"},
		{"bad completion key", complete(withToken(nil), "Idempotency-Key", "has space"), 400, accountable.ECodeIdempotencyKeyInvalid, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.as(t).do(c.req)
			expect(t, r, c.status, c.code)
			if c.path != "" {
				found := false
				for _, is := range r.errorObj()["details"].(map[string]any)["issues"].([]any) {
					if is.(map[string]any)["path"] == c.path {
						found = true
					}
				}
				if !found {
					t.Fatalf("no issue at %s: %s", c.path, r.raw)
				}
			}
		})
	}
	// An oversize body is refused from its Content-Length, before it is read.
	r := e.rawRequest("POST", "/api/v1/work", key, 2<<20)
	expect(t, r, http.StatusRequestEntityTooLarge, accountable.ECodePayloadTooLarge)
	e.oas.check(t, "POST", "/work", r.status, r.rawBody)

	if after := eventCount(t, e, key); after != before {
		t.Fatalf("bad input wrote %d events", after-before)
	}
	if w := getWork(t, e, key, id); w["status"] != "todo" || w["aggregate_version"] != 1.0 {
		t.Fatalf("bad input changed the task: %v", w)
	}
	// Boundaries that are valid: zero duration, maximum cost, a 4000-character summary.
	r = e.do(complete(withToken(map[string]any{"measured_duration_hours": 100000, "cost_cents": 100000000, "summary": strings.Repeat("s", 4000)})))
	expect(t, r, http.StatusOK, "")
}

// Two real requests race with one Idempotency-Key: while the first is still running (its
// command waits for a lock another session holds), the second gets
// idempotency_request_in_progress; once the first has finished, the same request replays
// its answer.
func TestIdempotencyKeyInProgressAnswers409(t *testing.T) {
	db := openDB(t, store.Config{LockTimeout: time.Minute})
	e := newEnv(t, db)
	tenant := storetest.NewTenant(t, db)
	id := createWork(t, e, tenant.Key, "raced")
	req := request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id}, key: tenant.Key,
		headers: map[string]string{"Idempotency-Key": "raced-key"}, body: completeBody(t, e, tenant.Key, id)}
	watch := storetest.Conn(t)

	release := holdTaskLock(t, id)
	first := make(chan response, 1)
	go func() { first <- e.do(req) }()
	// The first request holds the key and waits for the task's lock.
	waitUntil(t, 10*time.Second, "the first request waits for the task's lock", func() bool { return lockWaiters(t, watch) == 1 })
	expect(t, e.do(req), http.StatusConflict, accountable.ECodeIdempotencyInProgress)
	release()
	r1 := <-first
	expect(t, r1, http.StatusOK, "")
	r2 := e.do(req)
	expect(t, r2, http.StatusOK, "")
	if r2.meta()["duplicate"] != true || r2.data()["receipt"].(map[string]any)["id"] != r1.data()["receipt"].(map[string]any)["id"] {
		t.Fatalf("the retry after the first finished is not its replay: %s vs %s", r2.raw, r1.raw)
	}
}

// The same race while the first request waits for the task's row in its UPDATE (which
// rides in its first round trip): the second request's UPDATE is gated by the key, so it
// answers in-progress at once instead of waiting for that row too.
func TestIdempotencyKeyInProgressWhileTheFirstWaitsForTheRow(t *testing.T) {
	db := openDB(t, store.Config{LockTimeout: time.Minute})
	e := newEnv(t, db, func(c *api.Config, _ *api.Deps) {
		c.Deadlines = map[api.DeadlineClass]time.Duration{api.DeadlineCommand: 20 * time.Second}
	})
	tenant := storetest.NewTenant(t, db)
	id := createWork(t, e, tenant.Key, "row raced")
	req := request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id}, key: tenant.Key,
		headers: map[string]string{"Idempotency-Key": "row-raced-key"}, body: completeBody(t, e, tenant.Key, id)}
	watch := storetest.Conn(t)

	release := holdTaskRowLock(t, id)
	first := make(chan response, 1)
	go func() { first <- e.do(req) }()
	waitUntil(t, 10*time.Second, "the first request waits for the task's row", func() bool { return lockWaiters(t, watch) == 1 })
	start := time.Now()
	expect(t, e.do(req), http.StatusConflict, accountable.ECodeIdempotencyInProgress)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the second request answered after %s", took)
	}
	release()
	expect(t, <-first, http.StatusOK, "")
	r := e.do(req)
	expect(t, r, http.StatusOK, "")
	if r.meta()["duplicate"] != true {
		t.Fatalf("not a replay: %s", r.raw)
	}
}

// Members a body does not know are ignored (the specification: "A caller-supplied user_id
// is never used; the authenticated identity is used"); integer members take integral
// numbers written as doubles; an agent's key records its commands as the agent's.
func TestBodiesIgnoreUnknownMembersAndActorsAreTheKeys(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	other := "0190c0de-0000-7000-8000-00000000beef"

	r := e.do(request{method: "POST", path: "/work", key: tenant.Key, headers: map[string]string{"Idempotency-Key": uniqueKey("unknown")},
		body: `{"title":"Ignore what is not ours","user_id":"` + other + `","assignee":{"name":"bob"},"estimated_cost_cents":1500.0}`})
	expect(t, r, http.StatusCreated, "")
	task := r.data()["task"].(map[string]any)
	if task["estimated_cost_cents"] != 1500.0 {
		t.Fatalf("estimated_cost_cents 1500.0 became %v", task["estimated_cost_cents"])
	}
	if _, ok := task["assignee"]; ok {
		t.Fatalf("an unknown member was kept: %s", r.raw)
	}
	id := r.data()["taskId"].(string)
	token := getWork(t, e, tenant.Key, id)["concurrency"].(map[string]any)["version_token"]
	r = e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id}, key: tenant.Key,
		headers: map[string]string{"Idempotency-Key": uniqueKey("unknown")},
		body:    map[string]any{"version_token": token, "user_id": other, "status": "cancelled", "cost_cents": 2.5e2}})
	expect(t, r, http.StatusOK, "")
	if r.data()["receipt"].(map[string]any)["cost_cents"] != 250.0 || r.data()["task"].(map[string]any)["status"] != "completed" {
		t.Fatalf("completion: %s", r.raw)
	}

	// An agent's key of the same user and workspace.
	agent, err := e.db.CreateKey(t.Context(), store.CreateKeyRequest{Name: "bot", UserEmail: tenant.Principal.UserEmail,
		WorkspaceID: tenant.Principal.WorkspaceID, AgentName: "release-bot"})
	if err != nil {
		t.Fatal(err)
	}
	agentTask := createWork(t, e, agent.Key, "Made by an agent")

	events := e.streamEvents(tenant.Key, "aggregate_type=task", 3)
	if len(events) != 3 {
		t.Fatalf("%d task events, want 3", len(events))
	}
	for _, ev := range events {
		wantType, wantID := "human", tenant.Principal.UserID
		if ev["aggregateId"] == agentTask {
			wantType, wantID = "agent", "release-bot"
		}
		if ev["actorType"] != wantType || ev["actorId"] != wantID {
			t.Errorf("%s of %s recorded as %v %v, want %s %s", ev["eventType"], ev["aggregateId"], ev["actorType"], ev["actorId"], wantType, wantID)
		}
	}
}
