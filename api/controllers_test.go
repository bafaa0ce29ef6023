package api_test

import (
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
)

// The isolation matrix's lines of the area (isolation_test.go).
func init() {
	isolationCovers(isolationLines{
		pathValues: map[string]string{
			"domain": "engineering",
		},
		bodies: map[string]func(o *owner, ids map[string]string) map[string]any{
			"reconcileController": func(o *owner, _ map[string]string) map[string]any {
				return map[string]any{"idempotency_key": uniqueKey("reconcile"), "mode": "shadow", "protocol_version": "svc.controller.v1"}
			},
		},
	})
}

var (
	specRevisionForm = regexp.MustCompile(`^controller_spec_revision:[a-f0-9]{64}$`)
	runIDForm        = regexp.MustCompile(`^controller_run:[a-f0-9]{64}$`)
)

func reconcile(e *env, key, domain string, body map[string]any) response {
	b := map[string]any{"idempotency_key": uniqueKey("rec"), "mode": "shadow", "protocol_version": "svc.controller.v1"}
	for k, v := range body {
		b[k] = v
	}
	return e.do(request{method: "POST", path: "/controllers/{domain}/reconcile", params: map[string]string{"domain": domain}, key: key, body: b})
}

// checkReconcile holds a result to the specification: the forms of its ids, and a
// proposal with its decision and receipt, or a no-op with its reason and null decision
// and receipt fields.
func checkReconcile(t *testing.T, r response, domain, result string) map[string]any {
	t.Helper()
	expect(t, r, http.StatusOK, "")
	d := r.data()
	if d["controller_id"] != "domain."+domain || d["domain"] != domain || !specRevisionForm.MatchString(d["spec_revision"].(string)) ||
		!runIDForm.MatchString(d["run_id"].(string)) || !runIDForm.MatchString(d["last_run_id"].(string)) || d["mode"] != "shadow" ||
		d["protocol_version"] != "svc.controller.v1" || d["result"] != result || d["source_health"] == nil {
		t.Fatalf("%s: %s", domain, r.raw)
	}
	if result == "proposal" {
		if d["decision_id"] == nil || d["decision_event_id"] == nil || d["receipt_id"] == nil || d["proposal"] == nil || len(d["event_ids"].([]any)) != 2 {
			t.Fatalf("%s proposal: %s", domain, r.raw)
		}
	} else if d["decision_id"] != nil || d["decision_event_id"] != nil || d["receipt_id"] != nil || d["proposal"] != nil || d["noop_reason"] == "" {
		t.Fatalf("%s no-op: %s", domain, r.raw)
	}
	return d
}

// A workspace's first runs of a controller, at once: the controller's aggregate id is its
// domain, so none finds a head to lock; every run still answers (the loser of the first
// append runs again on the winner's head), each its own event at its own version.
func TestControllerFirstRunsRace(t *testing.T) {
	e := newEnv(t, nil)
	for range 3 {
		tenant := storetest.NewTenant(t, e.db)
		const racers = 10
		answers := make([]response, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() { answers[i] = reconcile(e, tenant.Key, "engineering", nil) })
		}
		wg.Wait()
		for _, r := range answers {
			checkReconcile(t, r, "engineering", "noop")
		}
		events := e.streamEvents(tenant.Key, "event_type=controller.reconciled", racers)
		versions := map[float64]bool{}
		for _, ev := range events {
			versions[ev["aggregateVersion"].(float64)] = true
		}
		if len(events) != racers || len(versions) != racers {
			t.Fatalf("%d controller.reconciled events at %d versions", len(events), len(versions))
		}
		if v := e.do(request{method: "GET", path: "/events/verify", key: tenant.Key}); v.data()["verified"] != true {
			t.Fatalf("verify %s", v.raw)
		}
	}
}

// Each domain: a no-op below its threshold, then, with its signal in the ledger, a
// proposal admitted as a pending decision; the same key replays it; a second run with the
// signal unchanged is in cooldown.
func TestControllersReconcile(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	signals := map[string]func(){
		"engineering": func() {
			createWork(t, e, key, "due yesterday") // no due date: not overdue
			r := e.do(request{method: "POST", path: "/work", key: key, headers: map[string]string{"Idempotency-Key": uniqueKey("w")},
				body: map[string]any{"title": "overdue", "due_date": time.Now().Add(-48 * time.Hour).Format("2006-01-02")}})
			expect(t, r, http.StatusCreated, "")
		},
		"operations": func() {
			h := createHandoff(t, e, key, map[string]any{"due_at": time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)})
			waitUntil(t, 30*time.Second, "the handoff's SLA breach", func() bool {
				r := e.do(request{method: "GET", path: "/handoffs/{handoffId}", params: map[string]string{"handoffId": h["id"].(string)}, key: key})
				return r.data()["status"] == "escalated"
			})
		},
		"product": func() {
			r := propose(e, key, "", map[string]any{"title": "Expires soon"})
			expect(t, r, http.StatusCreated, "")
			if _, err := storetest.Conn(t).Exec(t.Context(), `UPDATE initiative_proposals SET expires_at = now() + interval '1 hour' WHERE id = $1`,
				r.data()["proposal_id"]); err != nil {
				t.Fatal(err)
			}
		},
		"growth": func() {
			l := launchIt(t, e, key, launchable(t, e, key), 100) // a ceiling below the first job's 1000 cents
			waitLaunch(t, e, key, l["launch_id"].(string), "a blocked job", func(l map[string]any) bool { return l["blocking_decision"] != nil })
		},
		"sales": func() {
			expect(t, e.do(request{method: "POST", path: "/decisions", key: key, body: map[string]any{"title": "Sign the order",
				"due_at": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}}), http.StatusCreated, "")
		},
		"design": func() {
			seedProcessLedger(t, e, key)
			d := e.do(request{method: "POST", path: "/discovery-runs", key: key, body: map[string]any{}})
			expect(t, d, http.StatusCreated, "")
			card := d.data()["processCards"].([]any)[0].(map[string]any)["id"]
			expect(t, e.do(request{method: "POST", path: "/discovery-runs/{runId}/propose", params: map[string]string{"runId": d.data()["run"].(map[string]any)["id"].(string)},
				key: key, headers: map[string]string{"Idempotency-Key": uniqueKey("p")},
				body: map[string]any{"workspace_id": tenant.Principal.WorkspaceID, "process_candidate_id": card}}), http.StatusCreated, "")
		},
	}
	for _, domain := range []string{"engineering", "operations", "product", "growth", "sales", "design"} {
		g := e.do(request{method: "GET", path: "/controllers/{domain}", params: map[string]string{"domain": domain}, key: key})
		expect(t, g, http.StatusOK, "")
		if g.data()["status"] != "never_run" || !specRevisionForm.MatchString(g.data()["spec_revision"].(string)) {
			t.Fatalf("%s before: %s", domain, g.raw)
		}
		noop := checkReconcile(t, reconcile(e, key, domain, nil), domain, "noop")
		if noop["noop_reason"] != "below_threshold" {
			t.Fatalf("%s: %v", domain, noop)
		}
		signals[domain]()
		idem := uniqueKey("rec")
		r := reconcile(e, key, domain, map[string]any{"idempotency_key": idem, "spec_revision": g.data()["spec_revision"]})
		d := checkReconcile(t, r, domain, "proposal")
		if d["duplicate"] != false || d["proposal"].(map[string]any)["record_count"] != 1.0 {
			t.Fatalf("%s proposal %s", domain, r.raw)
		}
		dec := e.do(request{method: "GET", path: "/decisions/{decisionId}", params: map[string]string{"decisionId": d["decision_id"].(string)}, key: key})
		if dd := dec.data()["decision"].(map[string]any); dd["status"] != "pending" || dd["requested_by"].(map[string]any)["id"] != "domain."+domain {
			t.Fatalf("%s decision %s", domain, dec.raw)
		}
		again := reconcile(e, key, domain, map[string]any{"idempotency_key": idem})
		expect(t, again, http.StatusOK, "")
		if again.data()["duplicate"] != true || again.data()["receipt_id"] != d["receipt_id"] || again.data()["run_id"] != d["run_id"] {
			t.Fatalf("%s replay %s", domain, again.raw)
		}
		if cool := checkReconcile(t, reconcile(e, key, domain, nil), domain, "noop"); cool["noop_reason"] != "cooldown_active" {
			t.Fatalf("%s: %v", domain, cool)
		}
		g = e.do(request{method: "GET", path: "/controllers/{domain}", params: map[string]string{"domain": domain}, key: key})
		if g.data()["status"] != "healthy" || g.data()["last_result"] != "noop" || g.data()["last_receipt_id"] != d["receipt_id"] {
			t.Fatalf("%s after: %s", domain, g.raw)
		}
	}
	// Bad bodies: another mode or protocol, a malformed or stale spec_revision, an unknown domain.
	expect(t, reconcile(e, key, "sales", map[string]any{"mode": "live"}), http.StatusBadRequest, accountable.ECodeValidationFailed)
	expect(t, reconcile(e, key, "sales", map[string]any{"protocol_version": "v2"}), http.StatusBadRequest, accountable.ECodeValidationFailed)
	expect(t, reconcile(e, key, "sales", map[string]any{"spec_revision": "abc"}), http.StatusBadRequest, accountable.ECodeValidationFailed)
	expect(t, reconcile(e, key, "sales", map[string]any{"max_input_age_seconds": 0}), http.StatusBadRequest, accountable.ECodeValidationFailed)
	expect(t, reconcile(e, key, "sales", map[string]any{"spec_revision": "controller_spec_revision:" + string(make([]byte, 0)) +
		"0000000000000000000000000000000000000000000000000000000000000000"}), http.StatusConflict, accountable.ECodeVersionConflict)
	expect(t, reconcile(e, key, "finance", nil), http.StatusBadRequest, accountable.ECodeValidationFailed)
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}
}

// Input older than max_input_age_seconds is stale: a no-op, the controller degraded.
func TestControllerStaleInput(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	createWork(t, e, tenant.Key, "the newest event")
	time.Sleep(1100 * time.Millisecond)
	d := checkReconcile(t, reconcile(e, tenant.Key, "engineering", map[string]any{"max_input_age_seconds": 1}), "engineering", "noop")
	if d["noop_reason"] != "stale_input" || d["status"] != "degraded" || d["source_health"].(map[string]any)["state"] != "stale" {
		t.Fatalf("stale %v", d)
	}
}
