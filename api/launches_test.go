package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
)

// The isolation matrix's lines of the area (isolation_test.go).
func init() {
	isolationCovers(isolationLines{
		fixtures: map[string]func(o *owner) string{
			"launchId": (*owner).launch,
			"runId":    (*owner).run,
		},
		listedBy: map[string]string{
			"listRuns": "runId",
		},
		queryProbes: map[string][]string{
			"listRuns": {"launch_id={launchId}"},
		},
		bodies: map[string]func(o *owner, ids map[string]string) map[string]any{
			"launchInitiative": func(o *owner, _ map[string]string) map[string]any {
				return map[string]any{"model_tier": "standard", "autonomy": "manual", "cost_ceiling_cents": 100000}
			},
			"finalizeRun": func(o *owner, _ map[string]string) map[string]any {
				return map[string]any{"status": "succeeded", "outcome_kind": "shipped", "cost_cents": 10, "summary": "done"}
			},
		},
		preparations: map[string]func(o *owner, ids map[string]string){
			"resumeRun": func(o *owner, ids map[string]string) {
				o.t.Helper()
				expect(o.t, o.e.do(request{method: "POST", path: "/runs/{runId}/actions/pause", params: map[string]string{"runId": ids["runId"]},
					key: o.tenant.Key, body: map[string]any{}}), http.StatusOK, "")
			},
			"rollbackRun": func(o *owner, ids map[string]string) {
				o.t.Helper()
				expect(o.t, o.e.do(request{method: "POST", path: "/runs/{runId}/finalize", params: map[string]string{"runId": ids["runId"]},
					key: o.tenant.Key, body: map[string]any{"status": "succeeded", "outcome_kind": "shipped", "cost_cents": 1}}), http.StatusOK, "")
			},
		},
	})
}

// launch launches a committed proposal's initiative of one workstream and waits for its run.
func (o *owner) launch() string {
	o.t.Helper()
	id, _ := o.launchWithRun()
	return id
}

func (o *owner) run() string {
	o.t.Helper()
	_, run := o.launchWithRun()
	return run
}

func (o *owner) launchWithRun() (string, string) {
	o.t.Helper()
	r := o.e.do(request{method: "POST", path: "/initiatives/proposals", key: o.tenant.Key,
		body: map[string]any{"title": "Owner's launch " + o.marker, "depth": "workstreams", "generation": map[string]any{"max_workstreams": 1},
			"workstreams": []any{map[string]any{"name": "Lane " + o.marker, "expected_budget_usd": 1}}}})
	expect(o.t, r, http.StatusCreated, "")
	c := o.e.do(request{method: "POST", path: "/initiatives", key: o.tenant.Key,
		body: map[string]any{"proposal_id": r.data()["proposal_id"], "proposal_digest": r.data()["proposal_digest"]}})
	expect(o.t, c, http.StatusCreated, "")
	l := o.e.do(request{method: "POST", path: "/initiatives/{initiativeId}/launch", key: o.tenant.Key,
		params: map[string]string{"initiativeId": c.data()["initiative"].(map[string]any)["id"].(string)},
		body:   map[string]any{"cost_ceiling_cents": 100000}})
	expect(o.t, l, http.StatusAccepted, "")
	id := l.data()["launch_id"].(string)
	// The matrix runs without a relay (nothing moves in the background): the launch's job
	// is reserved and dispatched here by the commands its workflow's activities run.
	ctx, ws := context.Background(), l.meta()["workspaceId"].(string)
	jobs, err := o.e.db.LaunchJobIDs(ctx, ws, id)
	if err != nil || len(jobs) != 1 {
		o.t.Fatalf("the owner's launch has jobs %v: %v", jobs, err)
	}
	if res, err := o.e.db.ReserveJob(ctx, ws, id, jobs[0], false); err != nil || !res.Reserved {
		o.t.Fatalf("reserving the owner's job: %+v %v", res, err)
	}
	run, err := o.e.db.DispatchJob(ctx, ws, id, jobs[0])
	if err != nil {
		o.t.Fatal(err)
	}
	return id, run
}

// launchable commits an initiative of two workstreams estimated at 1000 and 500 cents.
func launchable(t *testing.T, e *env, key string) string {
	t.Helper()
	r := propose(e, key, "", map[string]any{"title": "Two lanes", "depth": "workstreams",
		"generation": map[string]any{"max_workstreams": 2},
		"workstreams": []any{map[string]any{"name": "Alpha", "expected_budget_usd": 10},
			map[string]any{"name": "Beta", "expected_budget_usd": 5}}})
	expect(t, r, http.StatusCreated, "")
	c := e.do(request{method: "POST", path: "/initiatives", key: key,
		body: map[string]any{"proposal_id": r.data()["proposal_id"], "proposal_digest": r.data()["proposal_digest"]}})
	expect(t, c, http.StatusCreated, "")
	return c.data()["initiative"].(map[string]any)["id"].(string)
}

func launchIt(t *testing.T, e *env, key, initiative string, ceiling int) map[string]any {
	t.Helper()
	r := e.do(request{method: "POST", path: "/initiatives/{initiativeId}/launch", params: map[string]string{"initiativeId": initiative},
		key: key, headers: map[string]string{"Idempotency-Key": uniqueKey("launch")},
		body: map[string]any{"model_tier": "balanced", "autonomy": "gated", "cost_ceiling_cents": ceiling}})
	expect(t, r, http.StatusAccepted, "")
	return r.data()
}

// waitLaunch reads the launch until cond holds (the workflow moves it), or fails.
func waitLaunch(t *testing.T, e *env, key, id, what string, cond func(l map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := e.do(request{method: "GET", path: "/launches/{launchId}", params: map[string]string{"launchId": id}, key: key})
		expect(t, r, http.StatusOK, "")
		if cond(r.data()) {
			if r.meta()["projectionStatus"] != "current" {
				t.Fatalf("meta %s", r.raw)
			}
			return r.data()
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s: %s", what, r.raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func runsOf(l map[string]any) []any { return l["runs"].([]any) }

func finalize(e *env, key, run string, body map[string]any) response {
	return e.do(request{method: "POST", path: "/runs/{runId}/finalize", params: map[string]string{"runId": run}, key: key, body: body})
}

func cost(l map[string]any, k string) float64 { return l["cost"].(map[string]any)[k].(float64) }

func statuses(list []any, k string) map[string]int {
	out := map[string]int{}
	for _, x := range list {
		out[x.(map[string]any)[k].(string)]++
	}
	return out
}

// Propose, commit, launch, finalize the runs: every reservation settles once, the totals
// are exact, and the ledger verifies.
func TestLaunchSettles(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	initiative := launchable(t, e, key)
	l := launchIt(t, e, key, initiative, 2000)
	if l["state"] != "pending" || len(l["jobs"].([]any)) != 2 || cost(l, "server_estimate_cents") != 1500 ||
		l["effective_autonomy"] != "gated" || l["model_tier"] != "balanced" || l["blocking_decision"] != nil {
		t.Fatalf("launch %v", l)
	}
	id := l["launch_id"].(string)
	l = waitLaunch(t, e, key, id, "two runs", func(l map[string]any) bool { return len(runsOf(l)) == 2 && l["state"] == "running" })
	if cost(l, "reserved_cents") != 1500 || statuses(l["receipts"].([]any), "settlement_status")["reserved"] != 2 {
		t.Fatalf("reserved %v", l)
	}
	runs := e.do(request{method: "GET", path: "/runs", key: key, query: "launch_id=" + id})
	if len(runs.dataList()) != 2 {
		t.Fatalf("runs %s", runs.raw)
	}
	alpha, beta := runsOf(l)[0].(map[string]any)["id"].(string), runsOf(l)[1].(map[string]any)["id"].(string)
	r := finalize(e, key, alpha, map[string]any{"status": "succeeded", "outcome_kind": "shipped", "cost_cents": 800, "summary": "done"})
	expect(t, r, http.StatusOK, "")
	if r.data()["status"] != "succeeded" || r.data()["cost_cents"] != 800.0 {
		t.Fatalf("finalized %s", r.raw)
	}
	expect(t, finalize(e, key, alpha, map[string]any{"status": "failed"}), http.StatusConflict, accountable.ECodeInvalidStateTransition)
	expect(t, finalize(e, key, beta, map[string]any{"status": "running"}), http.StatusBadRequest, accountable.ECodeValidationFailed)
	expect(t, finalize(e, key, beta, map[string]any{"status": "failed", "outcome_kind": "blocked", "cost_cents": 700}), http.StatusOK, "")

	l = waitLaunch(t, e, key, id, "the launch to end", func(l map[string]any) bool { return l["state"] == "completed" })
	receipts := statuses(l["receipts"].([]any), "settlement_status")
	jobs := statuses(l["jobs"].([]any), "status")
	if cost(l, "reserved_cents") != 1500 || cost(l, "settled_cents") != 1500 || receipts["settled"] != 1 || receipts["overrun"] != 1 ||
		jobs["succeeded"] != 1 || jobs["failed"] != 1 {
		t.Fatalf("settled %v", l)
	}
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}
	// Another workspace sees none of it.
	stranger := storetest.NewTenant(t, e.db)
	expect(t, e.do(request{method: "GET", path: "/launches/{launchId}", params: map[string]string{"launchId": id}, key: stranger.Key}),
		http.StatusNotFound, accountable.ECodeNotFound)
}

// A job that would pass the ceiling waits for its budget decision: approved, it is
// reserved and runs; declined, it is cancelled.
func TestLaunchBlockedOnBudget(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	initiative := launchable(t, e, key)

	id := launchIt(t, e, key, initiative, 1200)["launch_id"].(string)
	l := waitLaunch(t, e, key, id, "the blocked job", func(l map[string]any) bool { return l["state"] == "blocked" })
	d := l["blocking_decision"].(map[string]any)
	if d["shape"] != "budget_approval" || d["status"] != "pending" || d["launch_id"] != id || statuses(l["jobs"].([]any), "status")["blocked"] != 1 {
		t.Fatalf("blocked %v", l)
	}
	for _, j := range l["jobs"].([]any) {
		if j.(map[string]any)["status"] == "blocked" && j.(map[string]any)["block_code"] != "budget_ceiling_exceeded" {
			t.Fatalf("block code %v", j)
		}
	}
	expect(t, e.do(request{method: "POST", path: "/decisions/{decisionId}/approve", params: map[string]string{"decisionId": d["id"].(string)},
		key: key, body: map[string]any{"note": "go"}}), http.StatusOK, "")
	l = waitLaunch(t, e, key, id, "both runs", func(l map[string]any) bool { return len(runsOf(l)) == 2 })
	if l["blocking_decision"] != nil || cost(l, "reserved_cents") != 1500 {
		t.Fatalf("approved %v", l)
	}
	for _, run := range runsOf(l) {
		expect(t, finalize(e, key, run.(map[string]any)["id"].(string), map[string]any{"status": "succeeded", "cost_cents": 100}), http.StatusOK, "")
	}
	l = waitLaunch(t, e, key, id, "the end", func(l map[string]any) bool { return l["state"] == "completed" })
	if cost(l, "settled_cents") != 200 || statuses(l["receipts"].([]any), "settlement_status")["settled"] != 2 {
		t.Fatalf("settled %v", l)
	}

	// Declined: the job is cancelled; the other still runs.
	id = launchIt(t, e, key, initiative, 600)["launch_id"].(string)
	l = waitLaunch(t, e, key, id, "the blocked job", func(l map[string]any) bool { return l["state"] == "blocked" })
	d = l["blocking_decision"].(map[string]any)
	expect(t, e.do(request{method: "POST", path: "/decisions/{decisionId}/decline", params: map[string]string{"decisionId": d["id"].(string)},
		key: key, body: map[string]any{}}), http.StatusOK, "")
	l = waitLaunch(t, e, key, id, "the other run", func(l map[string]any) bool { return len(runsOf(l)) == 1 })
	expect(t, finalize(e, key, runsOf(l)[0].(map[string]any)["id"].(string), map[string]any{"status": "succeeded", "cost_cents": 400}), http.StatusOK, "")
	l = waitLaunch(t, e, key, id, "the end", func(l map[string]any) bool { return l["state"] == "completed" })
	if jobs := statuses(l["jobs"].([]any), "status"); jobs["cancelled"] != 1 || jobs["succeeded"] != 1 || cost(l, "reserved_cents") != 500 ||
		cost(l, "settled_cents") != 400 {
		t.Fatalf("declined %v", l)
	}
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}
}

// Runs not finalised in time fail (abandoned) and their reservations are released.
func TestLaunchRunsTimeOut(t *testing.T) {
	db := storetest.Open(t)
	e := newEnv(t, db, withRunTimeout(db, time.Second))
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	id := launchIt(t, e, key, launchable(t, e, key), 5000)["launch_id"].(string)
	l := waitLaunch(t, e, key, id, "the end", func(l map[string]any) bool { return l["state"] == "failed" })
	receipts := statuses(l["receipts"].([]any), "settlement_status")
	if receipts["released"] != 2 || cost(l, "settled_cents") != 0 || statuses(runsOf(l), "status")["failed"] != 2 {
		t.Fatalf("timed out %v", l)
	}
	for _, run := range runsOf(l) {
		if run.(map[string]any)["outcome_kind"] != "abandoned" {
			t.Fatalf("run %v", run)
		}
	}
}

// A paused run is not timed out: its launch (told by signal, or finding it paused) waits
// for it while the other run times out; resumed and finalised, it settles.
func TestLaunchWaitsForPausedRun(t *testing.T) {
	db := storetest.Open(t)
	e := newEnv(t, db, withRunTimeout(db, 3*time.Second))
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	id := launchIt(t, e, key, launchable(t, e, key), 5000)["launch_id"].(string)
	l := waitLaunch(t, e, key, id, "two runs", func(l map[string]any) bool { return len(runsOf(l)) == 2 })
	alpha, beta := runsOf(l)[0].(map[string]any)["id"].(string), runsOf(l)[1].(map[string]any)["id"].(string)
	act := func(run, action string) response {
		return e.do(request{method: "POST", path: "/runs/{runId}/actions/" + action, params: map[string]string{"runId": run}, key: key})
	}
	expect(t, act(alpha, "pause"), http.StatusOK, "")
	runStatus := func(l map[string]any, id string) string {
		for _, r := range runsOf(l) {
			if r.(map[string]any)["id"] == id {
				return r.(map[string]any)["status"].(string)
			}
		}
		return ""
	}
	l = waitLaunch(t, e, key, id, "beta to time out", func(l map[string]any) bool { return runStatus(l, beta) == "failed" })
	time.Sleep(500 * time.Millisecond) // the launch has moved on from the timeout
	l = waitLaunch(t, e, key, id, "the launch", func(map[string]any) bool { return true })
	if runStatus(l, alpha) != "paused" || l["state"] == "completed" || l["state"] == "failed" || l["state"] == "cancelled" {
		t.Fatalf("the paused run was not waited for: %v", l)
	}
	expect(t, act(alpha, "resume"), http.StatusOK, "")
	expect(t, finalize(e, key, alpha, map[string]any{"status": "succeeded", "outcome_kind": "shipped", "cost_cents": 900}), http.StatusOK, "")
	l = waitLaunch(t, e, key, id, "the end", func(l map[string]any) bool {
		return statuses(l["receipts"].([]any), "settlement_status")["reserved"] == 0
	})
	receipts := statuses(l["receipts"].([]any), "settlement_status")
	if receipts["settled"] != 1 || receipts["released"] != 1 || cost(l, "settled_cents") != 900 || runStatus(l, alpha) != "succeeded" {
		t.Fatalf("after the resumption %v", l)
	}
}

// Run actions: pause and resume a running run, cancel one (its launch releases the
// reservation), roll back one that ended; anything else is 409.
func TestRunActions(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	id := launchIt(t, e, key, launchable(t, e, key), 5000)["launch_id"].(string)
	l := waitLaunch(t, e, key, id, "two runs", func(l map[string]any) bool { return len(runsOf(l)) == 2 })
	alpha, beta := runsOf(l)[0].(map[string]any)["id"].(string), runsOf(l)[1].(map[string]any)["id"].(string)
	act := func(run, action string) response {
		return e.do(request{method: "POST", path: "/runs/{runId}/actions/" + action, params: map[string]string{"runId": run}, key: key,
			body: map[string]any{"reason": "testing"}})
	}
	expect(t, act(alpha, "resume"), http.StatusConflict, accountable.ECodeInvalidStateTransition)
	expect(t, act(alpha, "rollback"), http.StatusConflict, accountable.ECodeInvalidStateTransition)
	r := act(alpha, "pause")
	expect(t, r, http.StatusOK, "")
	if r.data()["status"] != "paused" {
		t.Fatalf("paused %s", r.raw)
	}
	expect(t, act(alpha, "pause"), http.StatusConflict, accountable.ECodeInvalidStateTransition)
	expect(t, act(alpha, "resume"), http.StatusOK, "")
	expect(t, act(beta, "cancel"), http.StatusOK, "")
	expect(t, act(beta, "cancel"), http.StatusConflict, accountable.ECodeInvalidStateTransition)
	expect(t, finalize(e, key, alpha, map[string]any{"status": "succeeded", "outcome_kind": "shipped", "cost_cents": 10}), http.StatusOK, "")
	l = waitLaunch(t, e, key, id, "the end", func(l map[string]any) bool { return l["state"] == "completed" })
	receipts := statuses(l["receipts"].([]any), "settlement_status")
	if receipts["settled"] != 1 || receipts["released"] != 1 || cost(l, "settled_cents") != 10 {
		t.Fatalf("after a cancel %v", l)
	}
	r = act(alpha, "rollback")
	expect(t, r, http.StatusOK, "")
	if r.data()["outcome_kind"] != "abandoned" || r.data()["status"] != "succeeded" {
		t.Fatalf("rolled back %s", r.raw)
	}
	expect(t, act(alpha, "rollback"), http.StatusConflict, accountable.ECodeInvalidStateTransition)
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}
}

// A launch scoped to one workstream has that workstream's job alone; one scoped to a task
// has its workstream's job for that task, estimated at the task's share; an unknown scope
// is a 404, and both scopes at once a 400.
func TestLaunchScopes(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	r := propose(e, key, "", map[string]any{"title": "Scoped", "depth": "full", "generation": map[string]any{"max_workstreams": 1},
		"workstreams": []any{map[string]any{"name": "Only", "expected_budget_usd": 6,
			"milestones": []any{map[string]any{"title": "M", "tasks": []any{"one", "two", "three"}}}}}})
	expect(t, r, http.StatusCreated, "")
	c := e.do(request{method: "POST", path: "/initiatives", key: key,
		body: map[string]any{"proposal_id": r.data()["proposal_id"], "proposal_digest": r.data()["proposal_digest"]}})
	initiative := c.data()["initiative"].(map[string]any)["id"].(string)
	tree := e.do(request{method: "GET", path: "/initiatives/{initiativeId}", params: map[string]string{"initiativeId": initiative}, key: key, query: "include=tree"})
	ws := tree.data()["tree"].(map[string]any)["workstreams"].([]any)[0].(map[string]any)
	task := ws["milestones"].([]any)[0].(map[string]any)["tasks"].([]any)[0].(map[string]any)["id"].(string)
	launch := func(body map[string]any) response {
		return e.do(request{method: "POST", path: "/initiatives/{initiativeId}/launch", params: map[string]string{"initiativeId": initiative}, key: key, body: body})
	}
	r = launch(map[string]any{"workstream_id": ws["id"], "cost_ceiling_cents": 10000})
	expect(t, r, http.StatusAccepted, "")
	if jobs := r.data()["jobs"].([]any); len(jobs) != 1 || cost(r.data(), "server_estimate_cents") != 600 ||
		r.data()["scope"].(map[string]any)["workstream_id"] != ws["id"] {
		t.Fatalf("workstream launch %s", r.raw)
	}
	r = launch(map[string]any{"task_id": task, "cost_ceiling_cents": 10000})
	expect(t, r, http.StatusAccepted, "")
	if cost(r.data(), "server_estimate_cents") != 200 || r.data()["scope"].(map[string]any)["task_id"] != task {
		t.Fatalf("task launch %s", r.raw)
	}
	unknown := "0190c0de-0000-7000-8000-000000000000"
	expect(t, launch(map[string]any{"workstream_id": unknown, "cost_ceiling_cents": 1}), http.StatusNotFound, accountable.ECodeNotFound)
	expect(t, launch(map[string]any{"task_id": unknown, "cost_ceiling_cents": 1}), http.StatusNotFound, accountable.ECodeNotFound)
	expect(t, launch(map[string]any{"task_id": task, "workstream_id": ws["id"], "cost_ceiling_cents": 1}), http.StatusBadRequest, accountable.ECodeValidationFailed)
	expect(t, launch(map[string]any{"cost_ceiling_cents": -1}), http.StatusBadRequest, accountable.ECodeValidationFailed)
	expect(t, e.do(request{method: "POST", path: "/initiatives/{initiativeId}/launch", params: map[string]string{"initiativeId": unknown}, key: key,
		body: map[string]any{"cost_ceiling_cents": 1}}), http.StatusNotFound, accountable.ECodeNotFound)
}
