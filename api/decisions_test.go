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
		fixtures: map[string]func(o *owner) string{
			"decisionId": (*owner).decision,
		},
		queryProbes: map[string][]string{
			"listDecisions": {"initiative_id={initiativeId}"},
		},
		bodies: map[string]func(o *owner, ids map[string]string) map[string]any{
			"createDecision": func(o *owner, _ map[string]string) map[string]any {
				return map[string]any{"title": "Approve the budget", "shape": "budget_approval", "urgency": "urgent",
					"context": map[string]any{"cents": 1200}}
			},
		},
	})
}

func (o *owner) decision() string {
	o.t.Helper()
	r := o.e.do(request{method: "POST", path: "/decisions", key: o.tenant.Key, body: map[string]any{"title": "Owner's question " + o.marker},
		headers: map[string]string{"Idempotency-Key": uniqueKey("owner")}})
	expect(o.t, r, http.StatusCreated, "")
	return r.data()["decision"].(map[string]any)["id"].(string)
}

// A decision is asked for (pending), decided once (approved, with its option for an
// option_select decision, or declined), and every step is a ledger event.
func TestDecisions(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	create := func(body map[string]any) response {
		return e.do(request{method: "POST", path: "/decisions", key: key, body: body})
	}
	decide := func(id, action string, body map[string]any) response {
		return e.do(request{method: "POST", path: "/decisions/{decisionId}/" + action, params: map[string]string{"decisionId": id}, key: key, body: body})
	}
	r := create(map[string]any{"title": "Raise the ceiling", "shape": "budget_approval", "urgency": "urgent", "context": map[string]any{"cents": 5000}})
	expect(t, r, http.StatusCreated, "")
	d := r.data()["decision"].(map[string]any)
	if d["status"] != "pending" || d["shape"] != "budget_approval" || d["urgency"] != "urgent" || d["aggregate_version"] != 1.0 ||
		d["requested_by"].(map[string]any)["id"] != tenant.Principal.UserID || d["decided_by"] != nil {
		t.Fatalf("created %s", r.raw)
	}
	id := d["id"].(string)
	expect(t, decide(id, "approve", map[string]any{"expected_aggregate_version": 7}), http.StatusConflict, accountable.ECodeVersionConflict)
	expect(t, decide(id, "approve", map[string]any{"option_id": "a"}), http.StatusBadRequest, accountable.ECodeValidationFailed)
	r = decide(id, "approve", map[string]any{"note": "worth it", "expected_aggregate_version": 1})
	expect(t, r, http.StatusOK, "")
	d = r.data()["decision"].(map[string]any)
	if d["status"] != "approved" || d["note"] != "worth it" || d["decided_at"] == nil || d["aggregate_version"] != 2.0 {
		t.Fatalf("approved %s", r.raw)
	}
	expect(t, decide(id, "decline", map[string]any{}), http.StatusConflict, accountable.ECodeInvalidStateTransition)
	expect(t, decide(id, "approve", map[string]any{}), http.StatusConflict, accountable.ECodeInvalidStateTransition)

	// option_select: two options at least, approved with one of them.
	expect(t, create(map[string]any{"title": "Pick", "shape": "option_select", "options": []any{map[string]any{"id": "a", "label": "A"}}}),
		http.StatusBadRequest, accountable.ECodeValidationFailed)
	expect(t, create(map[string]any{"title": "Pick", "options": []any{map[string]any{"id": "a", "label": "A"}}}),
		http.StatusBadRequest, accountable.ECodeValidationFailed)
	r = create(map[string]any{"title": "Pick", "shape": "option_select",
		"options": []any{map[string]any{"id": "a", "label": "A"}, map[string]any{"id": "b", "label": "B"}}})
	expect(t, r, http.StatusCreated, "")
	pick := r.data()["decision"].(map[string]any)["id"].(string)
	expect(t, decide(pick, "approve", map[string]any{}), http.StatusBadRequest, accountable.ECodeValidationFailed)
	expect(t, decide(pick, "approve", map[string]any{"option_id": "c"}), http.StatusBadRequest, accountable.ECodeValidationFailed)
	r = decide(pick, "approve", map[string]any{"option_id": "b"})
	expect(t, r, http.StatusOK, "")
	if r.data()["decision"].(map[string]any)["selected_option"] != "b" {
		t.Fatalf("selected %s", r.raw)
	}
	r = create(map[string]any{"title": "Say no"})
	no := r.data()["decision"].(map[string]any)["id"].(string)
	expect(t, decide(no, "decline", map[string]any{"note": "not now"}), http.StatusOK, "")

	// Reads: one, and the list newest first with its filters and pages.
	got := e.do(request{method: "GET", path: "/decisions/{decisionId}", params: map[string]string{"decisionId": no}, key: key})
	if got.data()["decision"].(map[string]any)["status"] != "declined" {
		t.Fatalf("read %s", got.raw)
	}
	list := e.do(request{method: "GET", path: "/decisions", key: key, query: "limit=2"})
	items := list.data()["decisions"].([]any)
	if len(items) != 2 || items[0].(map[string]any)["id"] != no || list.meta()["hasMore"] != true {
		t.Fatalf("list %s", list.raw)
	}
	list = e.do(request{method: "GET", path: "/decisions", key: key, query: "limit=2&cursor=" + list.meta()["nextCursor"].(string)})
	if items := list.data()["decisions"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != id {
		t.Fatalf("page 2 %s", list.raw)
	}
	list = e.do(request{method: "GET", path: "/decisions", key: key, query: "status=approved"})
	if items := list.data()["decisions"].([]any); len(items) != 2 {
		t.Fatalf("approved %s", list.raw)
	}
	events := e.streamEvents(key, "aggregate_type=decision", 6)
	if len(events) != 6 {
		t.Fatalf("%d decision events, want 6", len(events))
	}
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}
}
