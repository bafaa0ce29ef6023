package api_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
)

// The isolation matrix's lines of the area (isolation_test.go).
func init() {
	isolationCovers(isolationLines{
		fixtures: map[string]func(o *owner) string{
			"verificationId": (*owner).verification,
		},
		unownedLists: map[string]string{
			"streamEvents": "the stream reads oldest first: a new event of the owner's is not on its first page (B's pages are still checked for A's)",
		},
		queryProbes: map[string][]string{
			"verifyLedger": {"aggregate_type=task&aggregate_id={taskId}",
				"aggregate_type=ledger_verification&aggregate_id={verificationId}"},
		},
	})
}

func (o *owner) verification() string {
	o.t.Helper()
	r := o.e.do(request{method: "POST", path: "/events/verifications", key: o.tenant.Key, body: map[string]any{},
		headers: map[string]string{"Idempotency-Key": uniqueKey("owner")}})
	expect(o.t, r, http.StatusAccepted, "")
	return r.data()["id"].(string)
}

func TestEventStreamPagesWithCursorAndFilters(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	var ids []string
	for i := range 5 {
		ids = append(ids, createWork(t, e, key, "task "+string(rune('a'+i))))
	}
	w := getWork(t, e, key, ids[0])
	expect(t, e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": ids[0]}, key: key,
		body: map[string]any{"version_token": w["concurrency"].(map[string]any)["version_token"]}}), http.StatusOK, "")
	// The tenant's set-up events (workspace, user, member, key) + 5 created + 1 completed.
	const total = storetest.TenantEvents + 6
	if n := len(e.streamEvents(key, "", total)); n != total {
		t.Fatalf("the stream serves %d events, want %d", n, total)
	}

	seen := map[string]bool{}
	cursor := ""
	pages := 0
	for {
		q := "limit=3"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		r := e.do(request{method: "GET", path: "/events/stream", key: key, query: q})
		expect(t, r, http.StatusOK, "")
		m := r.meta()
		if m["limit"] != 3.0 || m["nextCursor"] == nil {
			t.Fatalf("meta %v", m)
		}
		for _, ev := range r.dataList() {
			id := ev.(map[string]any)["id"].(string)
			if seen[id] {
				t.Fatalf("event %s repeated", id)
			}
			seen[id] = true
		}
		pages++
		if m["hasMore"] != true {
			// An empty page keeps the cursor where it was, so a consumer can keep polling.
			next := m["nextCursor"].(string)
			r = e.do(request{method: "GET", path: "/events/stream", key: key, query: "limit=3&cursor=" + url.QueryEscape(next)})
			if len(r.dataList()) != 0 || r.meta()["nextCursor"] != next || r.meta()["hasMore"] != false {
				t.Fatalf("tail page: %s", r.raw)
			}
			break
		}
		cursor = m["nextCursor"].(string)
	}
	if len(seen) != total || pages != 4 {
		t.Fatalf("read %d events in %d pages, want %d in 4", len(seen), pages, total)
	}

	r := e.do(request{method: "GET", path: "/events/stream", key: key, query: "event_type=work.created&event_type=work.completed"})
	if len(r.dataList()) != 6 {
		t.Fatalf("event_type filter: %d", len(r.dataList()))
	}
	r = e.do(request{method: "GET", path: "/events/stream", key: key, query: "aggregate_type=workspace,api_key"})
	if len(r.dataList()) != 3 { // workspace.created, workspace.member_added, api_key.created
		t.Fatalf("aggregate_type filter: %d", len(r.dataList()))
	}
	for _, q := range []string{"limit=0", "limit=1001", "limit=ten", "cursor=bogus"} {
		expect(t, e.do(request{method: "GET", path: "/events/stream", key: key, query: q}), http.StatusBadRequest, accountable.ECodeValidationFailed)
	}
}

func TestVerifyEndpointReportsTheFirstBrokenEvent(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	id := createWork(t, e, key, "to be tampered with")
	w := getWork(t, e, key, id)
	expect(t, e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id}, key: key,
		body: map[string]any{"version_token": w["concurrency"].(map[string]any)["version_token"], "summary": "honest"}}), http.StatusOK, "")

	r := e.do(request{method: "GET", path: "/events/verify", key: key})
	expect(t, r, http.StatusOK, "")
	if r.data()["verified"] != true || r.data()["eventCount"] != float64(storetest.TenantEvents+2) || r.data()["firstBrokenEventId"] != nil {
		t.Fatalf("verify: %s", r.raw)
	}
	r = e.do(request{method: "GET", path: "/events/verify", key: key, query: "aggregate_type=task&aggregate_id=" + id})
	if r.data()["eventCount"] != 2.0 || r.data()["verified"] != true {
		t.Fatalf("aggregate verify: %s", r.raw)
	}
	expect(t, e.do(request{method: "GET", path: "/events/verify", key: key, query: "aggregate_type=task"}), http.StatusBadRequest, accountable.ECodeValidationFailed)

	// Rewrite history behind the service's back.
	ctx := context.Background()
	conn := storetest.Conn(t)
	var eventID string
	err := conn.QueryRow(ctx, `SELECT id::text FROM ledger_events WHERE workspace_id = $1 AND event_type = 'work.completed'`,
		tenant.Principal.WorkspaceID).Scan(&eventID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE ledger_events SET payload = jsonb_set(payload, '{summary}', '"forged"') WHERE id = $1`, eventID); err != nil {
		t.Fatal(err)
	}
	r = e.do(request{method: "GET", path: "/events/verify", key: key})
	expect(t, r, http.StatusOK, "")
	if r.data()["verified"] != false || r.data()["firstBrokenEventId"] != eventID {
		t.Fatalf("tampered verify: %s", r.raw)
	}
}
