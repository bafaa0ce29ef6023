package api_test

import (
	"net/http"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
)

// The isolation matrix's lines of the area (isolation_test.go).
func init() {
	isolationCovers(isolationLines{
		bodies: map[string]func(o *owner, ids map[string]string) map[string]any{
			"applyLifecycle": func(o *owner, _ map[string]string) map[string]any {
				return map[string]any{"level": "task", "id": o.task(), "action": "cancel", "reason": "isolation"}
			},
		},
		ownBodies: map[string]func(e *env, key string) map[string]any{
			"applyLifecycle": func(e *env, key string) map[string]any {
				return map[string]any{"level": "task", "id": createWork(e.t, e, key, "B's task"), "action": "cancel"}
			},
		},
	})
}

func TestLifecycle(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	r := propose(e, key, "", statusPageRequest)
	c := e.do(request{method: "POST", path: "/initiatives", key: key,
		body: map[string]any{"proposal_id": r.data()["proposal_id"], "proposal_digest": r.data()["proposal_digest"]}})
	expect(t, c, http.StatusCreated, "")
	initiative := c.data()["initiative"].(map[string]any)["id"].(string)
	tasks := int(c.data()["created"].(map[string]any)["tasks"].(float64))
	apply := func(level, id, action string) response {
		return e.do(request{method: "POST", path: "/lifecycle", key: key, body: map[string]any{"level": level, "id": id, "action": action}})
	}
	affected := func(r response, k string) float64 { return r.data()["affected"].(map[string]any)[k].(float64) }

	r = apply("initiative", initiative, "pause")
	expect(t, r, http.StatusOK, "")
	if r.data()["ok"] != true || affected(r, "initiatives") != 1 || affected(r, "tasks") != float64(tasks) || len(r.data()["blockReasons"].([]any)) != 0 {
		t.Fatalf("pause %s", r.raw)
	}
	read := e.do(request{method: "GET", path: "/initiatives/{initiativeId}", params: map[string]string{"initiativeId": initiative}, key: key, query: "include=tree"})
	if read.data()["status"] != "paused" {
		t.Fatalf("initiative %s", read.raw)
	}
	// Nothing left to pause: blocked, 422, ok false, nothing written.
	before := eventCount(t, e, key)
	r = apply("initiative", initiative, "pause")
	expect(t, r, http.StatusUnprocessableEntity, "")
	if r.data()["ok"] != false || len(r.data()["blockReasons"].([]any)) == 0 || affected(r, "tasks") != 0 {
		t.Fatalf("blocked %s", r.raw)
	}
	if after := eventCount(t, e, key); after != before {
		t.Fatalf("a blocked action wrote %d events", after-before)
	}
	expect(t, apply("initiative", initiative, "resume"), http.StatusOK, "")

	// One task: cancel, then retry; a milestone's tasks pause together.
	ws := read.data()["tree"].(map[string]any)["workstreams"].([]any)[1].(map[string]any)
	ms := ws["milestones"].([]any)[0].(map[string]any)
	task := ms["tasks"].([]any)[0].(map[string]any)["id"].(string)
	expect(t, apply("task", task, "cancel"), http.StatusOK, "")
	if got := getWork(t, e, key, task); got["status"] != "cancelled" {
		t.Fatalf("task %v", got)
	}
	expect(t, apply("task", task, "cancel"), http.StatusUnprocessableEntity, "")
	expect(t, apply("task", task, "retry"), http.StatusOK, "")
	r = apply("milestone", ms["id"].(string), "pause")
	expect(t, r, http.StatusOK, "")
	if affected(r, "tasks") != float64(len(ms["tasks"].([]any))) {
		t.Fatalf("milestone %s", r.raw)
	}
	expect(t, apply("workstream", ws["id"].(string), "resume"), http.StatusOK, "")

	// Runs: as their actions; a run is not retried.
	id := launchIt(t, e, key, launchable(t, e, key), 5000)["launch_id"].(string)
	l := waitLaunch(t, e, key, id, "two runs", func(l map[string]any) bool { return len(runsOf(l)) == 2 })
	run := runsOf(l)[0].(map[string]any)["id"].(string)
	r = apply("run", run, "pause")
	expect(t, r, http.StatusOK, "")
	if affected(r, "runs") != 1 {
		t.Fatalf("run %s", r.raw)
	}
	expect(t, apply("run", run, "retry"), http.StatusUnprocessableEntity, "")

	// Unknown ids and values.
	expect(t, apply("task", "0190c0de-0000-7000-8000-000000000000", "pause"), http.StatusNotFound, accountable.ECodeNotFound)
	expect(t, apply("run", "0190c0de-0000-7000-8000-000000000000", "pause"), http.StatusNotFound, accountable.ECodeNotFound)
	expect(t, apply("launch", initiative, "pause"), http.StatusBadRequest, accountable.ECodeValidationFailed)
	expect(t, apply("task", task, "archive"), http.StatusBadRequest, accountable.ECodeValidationFailed)
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}
}
