package api_test

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
)

// The isolation matrix's lines of the area (isolation_test.go).
func init() {
	lines := isolationLines{
		fixtures: map[string]func(o *owner) string{
			"processId": (*owner).process,
		},
		listedBy: map[string]string{
			"listOperatingProcesses": "processId",
		},
		bodies: map[string]func(o *owner, ids map[string]string) map[string]any{
			"declareOperatingProcess": func(o *owner, _ map[string]string) map[string]any {
				return map[string]any{"name": "Owner's process", "purpose": "Isolation", "stages": []any{map[string]any{"key": "a", "name": "A"}},
					"value_recipient_refs": []any{map[string]any{"id": "customers"}}, "tags": []any{"iso"}}
			},
			"reviseOperatingProcess": func(o *owner, ids map[string]string) map[string]any {
				return map[string]any{"stages": []any{map[string]any{"key": "a", "name": "A"}, map[string]any{"key": "b", "name": "B"}},
					"expected_aggregate_version": o.processVersion(ids["processId"])}
			},
		},
		preparations: map[string]func(o *owner, ids map[string]string){
			"proposeOperatingProcess":   func(o *owner, ids map[string]string) { o.discovered(ids["processId"]) },
			"shadowOperatingProcess":    func(o *owner, ids map[string]string) { o.moveProcess(ids["processId"], "confirm") },
			"activateOperatingProcess":  func(o *owner, ids map[string]string) { o.moveProcess(ids["processId"], "confirm") },
			"changeOperatingProcess":    func(o *owner, ids map[string]string) { o.moveProcess(ids["processId"], "confirm", "activate") },
			"deprecateOperatingProcess": func(o *owner, ids map[string]string) { o.moveProcess(ids["processId"], "confirm", "activate") },
			"retireOperatingProcess": func(o *owner, ids map[string]string) {
				o.moveProcess(ids["processId"], "confirm", "activate", "deprecate")
			},
		},
	}
	// Every lifecycle action takes the process's version and a reason.
	for _, a := range accountable.ProcessActions {
		lines.bodies[string(a)+"OperatingProcess"] = func(o *owner, ids map[string]string) map[string]any {
			return map[string]any{"expected_aggregate_version": o.processVersion(ids["processId"]), "reason": "isolation"}
		}
	}
	isolationCovers(lines)
}

func (o *owner) process() string {
	o.t.Helper()
	r := o.e.do(request{method: "POST", path: "/operating-processes", key: o.tenant.Key, headers: map[string]string{"Idempotency-Key": uniqueKey("owner")},
		body: map[string]any{"name": "Owner's process " + o.marker, "purpose": "Isolation", "stages": []any{map[string]any{"key": "a", "name": "A"}}}})
	expect(o.t, r, http.StatusCreated, "")
	return r.data()["process"].(map[string]any)["id"].(string)
}

func (o *owner) processVersion(id string) float64 {
	o.t.Helper()
	r := o.e.do(request{method: "GET", path: "/operating-processes/{processId}", params: map[string]string{"processId": id}, key: o.tenant.Key})
	expect(o.t, r, http.StatusOK, "")
	return r.data()["aggregateVersion"].(float64)
}

func (o *owner) moveProcess(id string, actions ...string) {
	o.t.Helper()
	for _, a := range actions {
		expect(o.t, o.e.do(request{method: "POST", path: "/operating-processes/{processId}/" + a, params: map[string]string{"processId": id},
			key: o.tenant.Key, headers: map[string]string{"Idempotency-Key": uniqueKey("owner")},
			body: map[string]any{"expected_aggregate_version": o.processVersion(id)}}), http.StatusOK, "")
	}
}

// discovered puts the owner's process in the state discovery leaves processes in. Until
// discovery runs propose candidates (issue 7), SQL does what such a proposal would.
func (o *owner) discovered(id string) {
	o.t.Helper()
	if _, err := o.conn.Exec(context.Background(), `UPDATE operating_processes SET lifecycle_state = 'discovered',
		doc = jsonb_set(jsonb_set(doc, '{lifecycleState}', '"discovered"'), '{provenanceMode}', '"observed"'), provenance_mode = 'observed'
		WHERE workspace_id = $1 AND id = $2`, o.tenant.Principal.WorkspaceID, id); err != nil {
		o.t.Fatal(err)
	}
}

// The specification's field tables (no extra properties allowed in either).
var (
	operatingProcessFields = []string{"schemaVersion", "id", "workspaceId", "name", "purpose", "valueRecipientRefs", "domainRef",
		"lifecycleState", "currentRevisionRef", "accountableResponsibilityLinkRef", "provenanceMode", "confidence", "tags", "createdAt", "updatedAt"}
	revisionRequired = []string{"schemaVersion", "id", "processId", "workspaceId", "revisionNumber", "contentDigest", "authoredBy", "stages"}
	revisionOptional = []string{"ratifiedBy", "effectiveFrom", "effectiveTo", "triggerSpec", "intendedTransformation", "handoffs",
		"completionContract", "exceptionContracts", "systemRefs", "capabilityRefs", "skillRefs", "policyRefs", "authorizationRequirements",
		"budgetRef", "measurementPlan", "adoptionPlan", "migrationState", "provenance", "limitations"}
	ledgerResultFields = []string{"eventId", "aggregateVersion", "eventHash", "duplicate", "payloadDigest"}
)

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string { s = slices.Clone(s); sort.Strings(s); return s }

// checkProcessShapes holds a process, a revision and a ledger result to the specification's
// tables: exactly the process's fields, the revision's required ones and no others than its
// optional ones, the ledger result's fields, refs of {id, workspaceId}.
func checkProcessShapes(t *testing.T, ws string, proc, rev, ledger map[string]any) {
	t.Helper()
	if got := keysOf(proc); !slices.Equal(got, sorted(operatingProcessFields)) {
		t.Fatalf("process members %v, want %v", got, sorted(operatingProcessFields))
	}
	if proc["schemaVersion"] != "1.0.0" || proc["workspaceId"] != ws {
		t.Fatalf("process %v", proc)
	}
	if c := proc["confidence"].(float64); c < 0 || c > 1 {
		t.Fatalf("confidence %v", c)
	}
	for _, ref := range append(proc["valueRecipientRefs"].([]any), proc["currentRevisionRef"]) {
		if r := ref.(map[string]any); !slices.Equal(keysOf(r), []string{"id", "workspaceId"}) || r["workspaceId"] != ws {
			t.Fatalf("ref %v", r)
		}
	}
	for _, k := range revisionRequired {
		if _, ok := rev[k]; !ok {
			t.Fatalf("revision lacks %s: %v", k, rev)
		}
	}
	for k := range rev {
		if !slices.Contains(revisionRequired, k) && !slices.Contains(revisionOptional, k) {
			t.Fatalf("revision has %s, not in the specification", k)
		}
	}
	if a := rev["authoredBy"].(map[string]any); !slices.Equal(keysOf(a), []string{"id", "type"}) {
		t.Fatalf("authoredBy %v", a)
	}
	if ledger != nil && !slices.Equal(keysOf(ledger), sorted(ledgerResultFields)) {
		t.Fatalf("ledger result members %v", keysOf(ledger))
	}
}

// Declare a process, revise it, and take it through every transition of CONTRACT.md; every
// other transition is 409 invalid_state_transition, a stale expected version 409
// version_conflict, and each change is a ledger event.
func TestOperatingProcessLifecycle(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key, ws := tenant.Key, tenant.Principal.WorkspaceID
	post := func(path string, params map[string]string, body any) response {
		return e.do(request{method: "POST", path: path, params: params, key: key, body: body,
			headers: map[string]string{"Idempotency-Key": uniqueKey("proc")}})
	}
	stages := []any{map[string]any{"key": "intake", "name": "Intake", "owner": "support"}, map[string]any{"key": "triage", "name": "Triage"}}
	r := post("/operating-processes", nil, map[string]any{"name": "Customer escalations", "purpose": "Resolve escalated tickets within a day.",
		"value_recipient_refs": []any{map[string]any{"id": "customers"}}, "domain_ref": map[string]any{"id": "operations"},
		"tags": []any{"support"}, "stages": stages, "trigger_spec": map[string]any{"on": "ticket.escalated"}})
	expect(t, r, http.StatusCreated, "")
	proc, rev := r.data()["process"].(map[string]any), r.data()["revision"].(map[string]any)
	checkProcessShapes(t, ws, proc, rev, r.data()["ledger"].(map[string]any))
	if proc["lifecycleState"] != "proposed" || proc["provenanceMode"] != "declared" || rev["revisionNumber"] != 1.0 ||
		r.data()["aggregateVersion"] != 1.0 || rev["stages"].([]any)[0].(map[string]any)["owner"] != "support" {
		t.Fatalf("declared %s", r.raw)
	}
	digest := rev["contentDigest"].(string)
	id := proc["id"].(string)
	params := map[string]string{"processId": id}

	// Missing Idempotency-Key, missing stages, duplicate stage keys: 400.
	expect(t, e.do(request{method: "POST", path: "/operating-processes", key: key, body: map[string]any{"name": "x", "purpose": "y", "stages": stages}}),
		http.StatusBadRequest, accountable.ECodeIdempotencyKeyRequired)
	expect(t, post("/operating-processes", nil, map[string]any{"name": "x", "purpose": "y"}), http.StatusBadRequest, accountable.ECodeValidationFailed)
	expect(t, post("/operating-processes", nil, map[string]any{"name": "x", "purpose": "y", "stages": []any{map[string]any{"key": "a", "name": "A"},
		map[string]any{"key": "a", "name": "B"}}}), http.StatusBadRequest, accountable.ECodeValidationFailed)

	// A revision: number 2, the same content has the same digest, another content another.
	r = post("/operating-processes/{processId}/revisions", params, map[string]any{"stages": stages, "trigger_spec": map[string]any{"on": "ticket.escalated"},
		"expected_aggregate_version": 1})
	expect(t, r, http.StatusCreated, "")
	if rev2 := r.data()["revision"].(map[string]any); rev2["revisionNumber"] != 2.0 || rev2["contentDigest"] != digest ||
		r.data()["process"].(map[string]any)["currentRevisionRef"].(map[string]any)["id"] != rev2["id"] {
		t.Fatalf("revision 2 %s", r.raw)
	}
	r = post("/operating-processes/{processId}/revisions", params, map[string]any{"stages": stages[:1]})
	expect(t, r, http.StatusCreated, "")
	if rev3 := r.data()["revision"].(map[string]any); rev3["revisionNumber"] != 3.0 || rev3["contentDigest"] == digest {
		t.Fatalf("revision 3 %s", r.raw)
	}
	expect(t, post("/operating-processes/{processId}/revisions", params, map[string]any{"stages": stages, "expected_aggregate_version": 1}),
		http.StatusConflict, accountable.ECodeVersionConflict)

	act := func(action string, version float64) response {
		return post("/operating-processes/{processId}/"+action, params, map[string]any{"expected_aggregate_version": version})
	}
	version := 3.0
	// From proposed only confirm goes; the others are refused.
	for _, refused := range []string{"propose", "shadow", "activate", "change", "deprecate", "retire"} {
		expect(t, act(refused, version), http.StatusConflict, accountable.ECodeInvalidStateTransition)
	}
	expect(t, act("confirm", version-1), http.StatusConflict, accountable.ECodeVersionConflict)
	expect(t, post("/operating-processes/{processId}/confirm", params, map[string]any{}), http.StatusBadRequest, accountable.ECodeValidationFailed)
	for _, step := range []struct{ action, to string }{{"confirm", "confirmed"}, {"shadow", "shadowing"}, {"activate", "active"},
		{"change", "changing"}, {"activate", "active"}, {"deprecate", "deprecated"}, {"retire", "retired"}} {
		r = act(step.action, version)
		expect(t, r, http.StatusOK, "")
		version++
		if p := r.data()["process"].(map[string]any); p["lifecycleState"] != step.to || r.data()["aggregateVersion"] != version ||
			r.data()["ledger"].(map[string]any)["aggregateVersion"] != version {
			t.Fatalf("%s: %s", step.action, r.raw)
		}
		checkProcessShapes(t, ws, r.data()["process"].(map[string]any), r.data()["revision"].(map[string]any), r.data()["ledger"].(map[string]any))
	}
	for _, a := range accountable.ProcessActions {
		expect(t, act(string(a), version), http.StatusConflict, accountable.ECodeInvalidStateTransition)
	}
	expect(t, post("/operating-processes/{processId}/revisions", params, map[string]any{"stages": stages}), http.StatusConflict, accountable.ECodeInvalidStateTransition)

	// The read: the process, its three revisions, its version.
	g := e.do(request{method: "GET", path: "/operating-processes/{processId}", params: params, key: key})
	expect(t, g, http.StatusOK, "")
	revs := g.data()["revisions"].([]any)
	if g.data()["aggregateVersion"] != version || len(revs) != 3 || g.data()["process"].(map[string]any)["lifecycleState"] != "retired" {
		t.Fatalf("read %s", g.raw)
	}
	for _, rv := range revs {
		checkProcessShapes(t, ws, g.data()["process"].(map[string]any), rv.(map[string]any), nil)
	}
	l := e.do(request{method: "GET", path: "/operating-processes", query: "lifecycle_state=retired", key: key})
	if ps := l.dataList(); len(ps) != 1 || ps[0].(map[string]any)["id"] != id {
		t.Fatalf("list %s", l.raw)
	}
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true || v.data()["eventCount"].(float64) < version {
		t.Fatalf("ledger: %s", v.raw)
	}
	// Another workspace sees none of it.
	stranger := storetest.NewTenant(t, e.db)
	expect(t, e.do(request{method: "GET", path: "/operating-processes/{processId}", params: params, key: stranger.Key}), http.StatusNotFound, accountable.ECodeNotFound)
}

// A repeated command with its Idempotency-Key replays the first answer (200, meta.duplicate
// and ledger.duplicate true) and appends nothing.
func TestOperatingProcessReplay(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	req := request{method: "POST", path: "/operating-processes", key: tenant.Key, headers: map[string]string{"Idempotency-Key": uniqueKey("proc")},
		body: map[string]any{"name": "Month-end close", "purpose": "Close the books.", "stages": []any{map[string]any{"key": "reconcile", "name": "Reconcile"}}}}
	first := e.do(req)
	expect(t, first, http.StatusCreated, "")
	again := e.do(req)
	expect(t, again, http.StatusOK, "")
	if again.meta()["duplicate"] != true || again.data()["ledger"].(map[string]any)["duplicate"] != true ||
		again.data()["process"].(map[string]any)["id"] != first.data()["process"].(map[string]any)["id"] {
		t.Fatalf("replay %s", again.raw)
	}
	req.body = map[string]any{"name": "Another", "purpose": "x", "stages": []any{map[string]any{"key": "a", "name": "A"}}}
	expect(t, e.do(req), http.StatusConflict, accountable.ECodeIdempotencyKeyReused)
}
