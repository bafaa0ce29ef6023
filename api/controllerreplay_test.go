package api_test

import (
	"maps"
	"net/http"
	"sync"
	"testing"

	"github.com/accountablework/accountable/store/storetest"
)

// The reconcile's replay is the run's own state (controller_runs, keyed by the run id the
// body's idempotency_key names), not the Idempotency-Key rail (docs/architecture.md,
// "Controllers' idempotency_key"). These tests hold what a client sees of it.

// reconcileWith sends a reconcile with the body key idem, the extra body members and the
// headers given.
func reconcileWith(e *env, key, domain, idem string, body map[string]any, headers map[string]string) response {
	b := map[string]any{"idempotency_key": idem, "mode": "shadow", "protocol_version": "svc.controller.v1"}
	for k, v := range body {
		b[k] = v
	}
	return e.do(request{method: "POST", path: "/controllers/{domain}/reconcile", params: map[string]string{"domain": domain},
		key: key, body: b, headers: headers})
}

// sameRunReplayed fails unless replay is 200 with first's data, duplicate true.
func sameRunReplayed(t *testing.T, first, replay response) {
	t.Helper()
	expect(t, replay, http.StatusOK, "")
	if first.data()["duplicate"] != false || replay.data()["duplicate"] != true {
		t.Fatalf("duplicate: first %s, replay %s", first.raw, replay.raw)
	}
	a, b := maps.Clone(first.data()), maps.Clone(replay.data())
	delete(a, "duplicate")
	delete(b, "duplicate")
	if toJSON(a) != toJSON(b) {
		t.Fatalf("the replay answers another run:\n%s\n%s", first.raw, replay.raw)
	}
	if _, ok := replay.meta()["duplicate"]; ok {
		t.Fatalf("meta.duplicate on a reconcile (data.duplicate says it): %s", replay.raw)
	}
}

// The same body key answers the same run with duplicate true, whatever else the body
// says (the key alone names the run: no request fingerprint, so no
// idempotency_key_reused) and whatever Idempotency-Key header comes with it (accepted,
// not used: not validated, not a key of its own). The key names a run of one domain, and
// the ledger events carry no idempotencyKey.
func TestControllerReplaysByBodyKey(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key, idem := tenant.Key, uniqueKey("rec")

	first := reconcileWith(e, key, "engineering", idem, map[string]any{"input_cursor": "c1"}, nil)
	checkReconcile(t, first, "engineering", "noop")
	if first.data()["source_health"].(map[string]any)["sourceCursor"] != "c1" {
		t.Fatalf("input_cursor not echoed: %s", first.raw)
	}
	sameRunReplayed(t, first, reconcileWith(e, key, "engineering", idem, map[string]any{"input_cursor": "c1"}, nil))

	// Another body under the same key: the first run, as it was answered.
	stale := "controller_spec_revision:0000000000000000000000000000000000000000000000000000000000000000"
	for name, body := range map[string]map[string]any{
		"without the optional members": nil,
		"another input_cursor":         {"input_cursor": "c2"},
		"a max_input_age_seconds":      {"input_cursor": "c1", "max_input_age_seconds": 1},
		"a stale spec_revision":        {"input_cursor": "c1", "spec_revision": stale},
	} {
		t.Run(name, func(t *testing.T) { sameRunReplayed(t, first, reconcileWith(e, key, "engineering", idem, body, nil)) })
	}

	// The header is neither the run's key nor checked.
	for name, h := range map[string]string{"the body key": idem, "another key": uniqueKey("hdr"), "an invalid key": "!not a key"} {
		t.Run("header "+name, func(t *testing.T) {
			sameRunReplayed(t, first, reconcileWith(e, key, "engineering", idem, map[string]any{"input_cursor": "c1"},
				map[string]string{"Idempotency-Key": h}))
		})
	}
	header := map[string]string{"Idempotency-Key": uniqueKey("hdr")}
	a := checkReconcile(t, reconcileWith(e, key, "engineering", uniqueKey("rec"), nil, header), "engineering", "noop")
	b := checkReconcile(t, reconcileWith(e, key, "engineering", uniqueKey("rec"), nil, header), "engineering", "noop")
	if a["duplicate"] != false || b["duplicate"] != false || a["run_id"] == b["run_id"] {
		t.Fatalf("one header, two body keys: %v\n%v", a, b)
	}

	// The same body key in another domain is another run.
	other := checkReconcile(t, reconcileWith(e, key, "sales", idem, nil, nil), "sales", "noop")
	if other["duplicate"] != false || other["run_id"] == first.data()["run_id"] {
		t.Fatalf("another domain: %v", other)
	}

	events := e.streamEvents(key, "event_type=controller.reconciled", 4)
	if len(events) != 4 {
		t.Fatalf("%d controller.reconciled events, want 4 (one per run)", len(events))
	}
	for _, ev := range events {
		if ev["idempotencyKey"] != nil {
			t.Fatalf("a controller.reconciled event carries idempotencyKey: %v", ev)
		}
	}
}

// Requests with one body key at once: one run, every other request its replay (200,
// duplicate true), none answered in progress: a request waits for the controller's head
// the run holds, then finds the run. Both on the workspace's first run (no head to wait
// for: the loser of the creation runs again) and on a controller that has run before.
func TestControllerConcurrentSameBodyKey(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	const racers = 10
	for round := range 2 {
		idem := uniqueKey("rec")
		answers := make([]response, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() { answers[i] = reconcileWith(e, tenant.Key, "operations", idem, nil, nil) })
		}
		wg.Wait()
		first := -1
		for i, r := range answers {
			checkReconcile(t, r, "operations", "noop")
			if r.data()["duplicate"] == false {
				if first >= 0 {
					t.Fatalf("round %d: two first answers:\n%s\n%s", round, answers[first].raw, r.raw)
				}
				first = i
			}
		}
		if first < 0 {
			t.Fatalf("round %d: no first answer", round)
		}
		for i, r := range answers {
			if i != first {
				sameRunReplayed(t, answers[first], r)
			}
		}
		if n := len(e.streamEvents(tenant.Key, "event_type=controller.reconciled", round+1)); n != round+1 {
			t.Fatalf("round %d: %d controller.reconciled events, want %d", round, n, round+1)
		}
	}
}

// The run is the replay's record and does not expire: with the workspace's idempotency
// records gone (as the janitor deletes them after IdempotencyRetention), the same body
// key still answers the same run.
func TestControllerReplayOutlivesIdempotencyRecords(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	idem := uniqueKey("rec")
	first := reconcileWith(e, tenant.Key, "design", idem, nil, nil)
	checkReconcile(t, first, "design", "noop")
	if _, err := storetest.Conn(t).Exec(t.Context(), `DELETE FROM idempotency_records WHERE workspace_id = $1`,
		tenant.Principal.WorkspaceID); err != nil {
		t.Fatal(err)
	}
	sameRunReplayed(t, first, reconcileWith(e, tenant.Key, "design", idem, nil, nil))
}
