package api_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/workflows"
)

// The isolation matrix's lines of the area (isolation_test.go).
func init() {
	isolationCovers(isolationLines{
		fixtures: map[string]func(o *owner) string{
			"handoffId": (*owner).handoff,
		},
		listedBy: map[string]string{
			"listHandoffs": "handoffId",
		},
		bodies: map[string]func(o *owner, ids map[string]string) map[string]any{
			"createHandoff": func(o *owner, _ map[string]string) map[string]any {
				return map[string]any{"handoff_key": "iso", "from_stage_key": "a", "to_stage_key": "b", "title": "Owner's handoff",
					"sla_minutes": 60, "proof_requirements": []any{map[string]any{"kind": "note", "required": false}}}
			},
		},
		preparations: map[string]func(o *owner, ids map[string]string){
			"fulfillHandoff": func(o *owner, ids map[string]string) { o.moveHandoff(ids["handoffId"], "claim") },
			"returnHandoff":  func(o *owner, ids map[string]string) { o.moveHandoff(ids["handoffId"], "claim") },
		},
	})
}

func (o *owner) handoff() string {
	o.t.Helper()
	r := o.e.do(request{method: "POST", path: "/handoffs", key: o.tenant.Key, headers: map[string]string{"Idempotency-Key": uniqueKey("owner")},
		body: map[string]any{"handoff_key": "owner", "from_stage_key": "a", "to_stage_key": "b", "title": "Owner's handoff " + o.marker}})
	expect(o.t, r, http.StatusCreated, "")
	return r.data()["id"].(string)
}

func (o *owner) moveHandoff(id string, actions ...string) {
	o.t.Helper()
	for _, a := range actions {
		expect(o.t, o.e.do(request{method: "POST", path: "/handoffs/{handoffId}/" + a, params: map[string]string{"handoffId": id},
			key: o.tenant.Key, body: map[string]any{}}), http.StatusOK, "")
	}
}

var handoffFields = []string{"schemaVersion", "id", "workspaceId", "handoffKey", "fromStageKey", "toStageKey", "sourceProcessRef",
	"sourceRevisionRef", "title", "summary", "priority", "slaMinutes", "dueAt", "currentActor", "proofRequirements", "result", "status",
	"createdAt", "updatedAt", "aggregateVersion"}

func createHandoff(t *testing.T, e *env, key string, body map[string]any) map[string]any {
	t.Helper()
	base := map[string]any{"handoff_key": uniqueKey("ho"), "from_stage_key": "build", "to_stage_key": "review", "title": "Review the change"}
	for k, v := range body {
		base[k] = v
	}
	r := e.do(request{method: "POST", path: "/handoffs", key: key, body: base})
	expect(t, r, http.StatusCreated, "")
	h := r.data()
	for k := range h {
		if !slices.Contains(handoffFields, k) {
			t.Fatalf("handoff member %s is not the specification's", k)
		}
	}
	return h
}

func handoffAct(e *env, key, id, action string, body any) response {
	return e.do(request{method: "POST", path: "/handoffs/{handoffId}/" + action, params: map[string]string{"handoffId": id}, key: key, body: body})
}

// Every transition of a handoff, allowed and refused; a fulfilment needs a claimed handoff
// and its required proof kinds; an empty object is a fulfilment body.
func TestHandoffTransitions(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	h := createHandoff(t, e, key, map[string]any{"priority": "high", "summary": "PR 12",
		"proof_requirements": []any{map[string]any{"kind": "link", "required": true}, map[string]any{"kind": "note", "required": false}}})
	if h["status"] != "proposed" || h["priority"] != "high" || h["aggregateVersion"] != 1.0 || h["schemaVersion"] != "1.0.0" ||
		h["currentActor"].(map[string]any)["id"] != tenant.Principal.UserID || h["slaMinutes"] != nil || h["dueAt"] != nil {
		t.Fatalf("created %v", h)
	}
	id := h["id"].(string)
	// From proposed: fulfil and return are refused.
	expect(t, handoffAct(e, key, id, "fulfill", map[string]any{}), http.StatusConflict, accountable.ECodeInvalidStateTransition)
	expect(t, handoffAct(e, key, id, "return", nil), http.StatusConflict, accountable.ECodeInvalidStateTransition)
	expect(t, handoffAct(e, key, id, "claim", map[string]any{"expected_aggregate_version": 5}), http.StatusConflict, accountable.ECodeVersionConflict)
	r := handoffAct(e, key, id, "claim", map[string]any{"expected_aggregate_version": 1})
	expect(t, r, http.StatusOK, "")
	if r.data()["status"] != "claimed" || r.data()["aggregateVersion"] != 2.0 {
		t.Fatalf("claimed %s", r.raw)
	}
	expect(t, handoffAct(e, key, id, "claim", nil), http.StatusConflict, accountable.ECodeInvalidStateTransition)
	// The required link is missing: 409 naming it; a bad proof kind is 400.
	r = handoffAct(e, key, id, "fulfill", map[string]any{})
	expect(t, r, http.StatusConflict, accountable.ECodeInvalidStateTransition)
	if d := r.body["error"].(map[string]any)["details"].(map[string]any); !slices.Equal(d["missing_proof_kinds"].([]any), []any{"link"}) {
		t.Fatalf("missing %s", r.raw)
	}
	expect(t, handoffAct(e, key, id, "fulfill", map[string]any{"result": map[string]any{"proofs": []any{map[string]any{"kind": "video"}}}}),
		http.StatusBadRequest, accountable.ECodeValidationFailed)
	r = handoffAct(e, key, id, "fulfill", map[string]any{"result": map[string]any{"summary": "merged",
		"proofs": []any{map[string]any{"kind": "link", "url": "https://example.com/pr/12"}}}})
	expect(t, r, http.StatusOK, "")
	if res := r.data()["result"].(map[string]any); r.data()["status"] != "fulfilled" || res["summary"] != "merged" || len(res["proofs"].([]any)) != 1 {
		t.Fatalf("fulfilled %s", r.raw)
	}
	for _, a := range accountable.HandoffActions {
		expect(t, handoffAct(e, key, id, string(a), nil), http.StatusConflict, accountable.ECodeInvalidStateTransition)
	}

	// return, claim again, escalate, claim, fulfil with an empty object (no requirements); cancel.
	h2 := createHandoff(t, e, key, nil)["id"].(string)
	for _, step := range []struct{ action, to string }{{"claim", "claimed"}, {"return", "returned"}, {"escalate", "escalated"},
		{"claim", "claimed"}, {"fulfill", "fulfilled"}} {
		r := handoffAct(e, key, h2, step.action, map[string]any{})
		expect(t, r, http.StatusOK, "")
		if r.data()["status"] != step.to {
			t.Fatalf("%s: %s", step.action, r.raw)
		}
	}
	h3 := createHandoff(t, e, key, nil)["id"].(string)
	expect(t, handoffAct(e, key, h3, "cancel", map[string]any{"reason": "not needed"}), http.StatusOK, "")
	expect(t, handoffAct(e, key, h3, "claim", nil), http.StatusConflict, accountable.ECodeInvalidStateTransition)

	l := e.do(request{method: "GET", path: "/handoffs", query: "status=fulfilled", key: key})
	if hs := l.dataList(); len(hs) != 2 {
		t.Fatalf("list %s", l.raw)
	}
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}
	stranger := storetest.NewTenant(t, e.db)
	expect(t, handoffAct(e, stranger.Key, id, "claim", nil), http.StatusNotFound, accountable.ECodeNotFound)
}

func eventsOfType(t *testing.T, e *env, key, eventType string) []any {
	t.Helper()
	r := e.do(request{method: "GET", path: "/events/stream", query: "event_type=" + eventType, key: key})
	expect(t, r, http.StatusOK, "")
	return r.body["data"].([]any)
}

// On the real Temporal server: a handoff due in two seconds that nobody fulfils is
// escalated by its SLA timer (handoff.sla_breached, an escalation decision), once; one
// fulfilled before it is due is never escalated.
func TestHandoffSLA(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	due := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	late := createHandoff(t, e, key, map[string]any{"due_at": due})["id"].(string)
	onTime := createHandoff(t, e, key, map[string]any{"due_at": due})
	if onTime["dueAt"] == nil || onTime["slaMinutes"] != 1.0 {
		t.Fatalf("sla %v", onTime)
	}
	expect(t, handoffAct(e, key, onTime["id"].(string), "claim", nil), http.StatusOK, "")
	expect(t, handoffAct(e, key, onTime["id"].(string), "fulfill", map[string]any{}), http.StatusOK, "")

	storetest.WaitFor(t, 30*time.Second, "the late handoff to be escalated", func() bool {
		r := e.do(request{method: "GET", path: "/handoffs/{handoffId}", params: map[string]string{"handoffId": late}, key: key})
		return r.data()["status"] == "escalated"
	})
	// The on-time handoff's timer has ended (told that the handoff was fulfilled, or due and
	// finding it fulfilled): it breaches nothing after this.
	waitWorkflowCompleted(t, workflows.HandoffSLAID(tenant.Principal.WorkspaceID, onTime["id"].(string)), 30*time.Second)
	breaches := eventsOfType(t, e, key, "handoff.sla_breached")
	if len(breaches) != 1 || breaches[0].(map[string]any)["aggregateId"] != late {
		t.Fatalf("breaches %v", breaches)
	}
	decisionID := breaches[0].(map[string]any)["payload"].(map[string]any)["decision_id"].(string)
	d := e.do(request{method: "GET", path: "/decisions/{decisionId}", params: map[string]string{"decisionId": decisionID}, key: key})
	if dd := d.data()["decision"].(map[string]any); dd["shape"] != "escalation" || dd["status"] != "pending" ||
		dd["context"].(map[string]any)["handoff_id"] != late {
		t.Fatalf("decision %s", d.raw)
	}
	r := e.do(request{method: "GET", path: "/handoffs/{handoffId}", params: map[string]string{"handoffId": onTime["id"].(string)}, key: key})
	if r.data()["status"] != "fulfilled" {
		t.Fatalf("the fulfilled handoff %s", r.raw)
	}
	// The escalated handoff can still be claimed and fulfilled.
	expect(t, handoffAct(e, key, late, "claim", nil), http.StatusOK, "")
	expect(t, handoffAct(e, key, late, "fulfill", map[string]any{}), http.StatusOK, "")
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}
}
