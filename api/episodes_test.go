package api_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
)

// The isolation matrix's lines of the area (isolation_test.go).
func init() {
	isolationCovers(isolationLines{
		fixtures: map[string]func(o *owner) string{
			"episodeId": (*owner).episode,
		},
		listedBy: map[string]string{
			"listEpisodes": "episodeId",
		},
		queryProbes: map[string][]string{
			"listEpisodes": {"process_id={processId}"},
		},
		bodies: map[string]func(o *owner, ids map[string]string) map[string]any{
			"recordEpisode": func(o *owner, _ map[string]string) map[string]any {
				return map[string]any{"process_id": o.process(), "started_at": "2026-11-01T09:00:00Z", "ended_at": "2026-11-01T10:00:00Z",
					"stages": []any{map[string]any{"key": "a", "at": "2026-11-01T09:10:00Z"}}, "evidence": map[string]any{"note": "iso"}}
			},
		},
		ownBodies: map[string]func(e *env, key string) map[string]any{
			"recordEpisode": func(e *env, key string) map[string]any {
				r := e.do(request{method: "POST", path: "/operating-processes", key: key, headers: map[string]string{"Idempotency-Key": uniqueKey("b")},
					body: map[string]any{"name": "B's process", "purpose": "B's", "stages": []any{map[string]any{"key": "a", "name": "A"}}}})
				expect(e.t, r, http.StatusCreated, "")
				return map[string]any{"process_id": r.data()["process"].(map[string]any)["id"], "started_at": "2026-11-01T09:00:00Z"}
			},
		},
	})
}

func (o *owner) episode() string {
	o.t.Helper()
	r := o.e.do(request{method: "POST", path: "/episodes", key: o.tenant.Key, headers: map[string]string{"Idempotency-Key": uniqueKey("owner")},
		body: map[string]any{"process_id": o.process(), "case_id": "case-" + o.marker, "started_at": "2026-11-01T09:00:00Z",
			"stages": []any{map[string]any{"key": "a"}}}})
	expect(o.t, r, http.StatusCreated, "")
	return r.data()["id"].(string)
}

// Episodes are recorded against the workspace's processes, read back, mined by discovery,
// and counted on the operating map beside the handoff edges.
func TestEpisodesAndOperatingMap(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	r := e.do(request{method: "POST", path: "/operating-processes", key: key, headers: map[string]string{"Idempotency-Key": uniqueKey("p")},
		body: map[string]any{"name": "Onboarding", "purpose": "Bring a customer live.", "value_recipient_refs": []any{map[string]any{"id": "customers"}},
			"domain_ref": map[string]any{"id": "operations"}, "stages": []any{map[string]any{"key": "kickoff", "name": "Kickoff"},
				map[string]any{"key": "setup", "name": "Setup"}, map[string]any{"key": "live", "name": "Go live"}}}})
	expect(t, r, http.StatusCreated, "")
	proc := r.data()["process"].(map[string]any)["id"].(string)
	episode := func(caseID string, body map[string]any) response {
		b := map[string]any{"process_id": proc, "case_id": caseID, "started_at": "2026-11-01T09:00:00Z", "ended_at": "2026-11-03T09:00:00Z",
			"stages": []any{map[string]any{"key": "kickoff", "at": "2026-11-01T09:00:00Z"}, map[string]any{"key": "setup", "at": "2026-11-02T09:00:00Z"},
				map[string]any{"key": "live", "at": "2026-11-03T09:00:00Z"}}, "evidence": map[string]any{"ticket": caseID}}
		for k, v := range body {
			b[k] = v
		}
		return e.do(request{method: "POST", path: "/episodes", key: key, body: b})
	}
	r = episode("acme", nil)
	expect(t, r, http.StatusCreated, "")
	ep := r.data()
	if ep["outcome"] != "succeeded" || ep["caseId"] != "acme" || ep["processRef"].(map[string]any)["id"] != proc || len(ep["stages"].([]any)) != 3 {
		t.Fatalf("episode %s", r.raw)
	}
	expect(t, episode("globex", nil), http.StatusCreated, "")
	expect(t, episode("bad", map[string]any{"ended_at": "2026-10-01T09:00:00Z"}), http.StatusBadRequest, accountable.ECodeValidationFailed)
	expect(t, episode("bad", map[string]any{"ended_at": nil, "outcome": "failed"}), http.StatusBadRequest, accountable.ECodeValidationFailed)
	expect(t, episode("bad", map[string]any{"process_id": "0190c7a2-0000-7000-8000-000000000000"}), http.StatusNotFound, accountable.ECodeNotFound)
	got := e.do(request{method: "GET", path: "/episodes/{episodeId}", params: map[string]string{"episodeId": ep["id"].(string)}, key: key})
	expect(t, got, http.StatusOK, "")
	l := e.do(request{method: "GET", path: "/episodes", query: "process_id=" + proc, key: key})
	if eps := l.dataList(); len(eps) != 2 {
		t.Fatalf("list %s", l.raw)
	}

	// Discovery mines the episodes (ledger only).
	d := e.do(request{method: "POST", path: "/discovery-runs", key: key, body: map[string]any{"source_kinds": []any{"ledger"}}})
	expect(t, d, http.StatusCreated, "")
	cards := d.data()["processCards"].([]any)
	if len(cards) != 1 || !slices.Equal(stageKeys(cards[0].(map[string]any)), []string{"kickoff", "setup", "live"}) {
		t.Fatalf("discovery %s", d.raw)
	}

	// Handoffs between stages: two setup → live, one of them fulfilled.
	for i := range 2 {
		h := createHandoff(t, e, key, map[string]any{"from_stage_key": "setup", "to_stage_key": "live"})
		if i == 0 {
			expect(t, handoffAct(e, key, h["id"].(string), "claim", nil), http.StatusOK, "")
			expect(t, handoffAct(e, key, h["id"].(string), "fulfill", map[string]any{}), http.StatusOK, "")
		}
	}
	m := e.do(request{method: "GET", path: "/operating-map", key: key})
	expect(t, m, http.StatusOK, "")
	if m.meta()["projectionStatus"] != "derived_from_ledger" {
		t.Fatalf("meta %s", m.raw)
	}
	procs := m.data()["processes"].([]any)
	edges := m.data()["handoffEdges"].([]any)
	if len(procs) != 1 || procs[0].(map[string]any)["episodes"] != 2.0 || len(procs[0].(map[string]any)["stages"].([]any)) != 3 ||
		len(edges) != 1 || edges[0].(map[string]any)["handoffs"] != 2.0 || edges[0].(map[string]any)["open"] != 1.0 ||
		m.data()["valueRecipients"].([]any)[0].(map[string]any)["id"] != "customers" || m.data()["domains"].([]any)[0].(map[string]any)["id"] != "operations" {
		t.Fatalf("map %s", m.raw)
	}
	stranger := storetest.NewTenant(t, e.db)
	if sm := e.do(request{method: "GET", path: "/operating-map", key: stranger.Key}); len(sm.data()["processes"].([]any)) != 0 || len(sm.data()["handoffEdges"].([]any)) != 0 {
		t.Fatalf("the stranger's map %s", sm.raw)
	}
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}
}
