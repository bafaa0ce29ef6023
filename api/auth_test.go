package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/tokens"
)

func TestAuthenticationFailuresUseTheSimpleBody(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	revoked := storetest.NewTenant(t, e.db)
	if _, err := e.db.RevokeKey(context.Background(), revoked.Principal.KeyPrefix); err != nil {
		t.Fatal(err)
	}
	unknown, _ := tokens.NewAPIKey()
	// Same prefix as a real key, wrong secret.
	wrongSecret := tenant.Key[:12] + strings.Repeat("0", 48-8)

	cases := []struct {
		name, auth string
	}{
		{"missing", ""},
		{"not bearer", "Basic " + tenant.Key},
		{"bearer without key", "Bearer"},
		{"malformed", "Bearer svk_short"},
		{"wrong prefix", "Bearer sk_" + strings.Repeat("a", 48)},
		{"unknown", "Bearer " + unknown},
		{"wrong secret", "Bearer " + wrongSecret},
		{"revoked", "Bearer " + revoked.Key},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(request{method: "GET", path: "/work", headers: map[string]string{"Authorization": c.auth}})
			expect(t, r, http.StatusUnauthorized, "")
			if r.body["error"] != "Unauthorized" || r.body["message"] == "" || len(r.body) != 2 {
				t.Fatalf("401 body %s", r.raw)
			}
			if strings.Contains(string(r.raw), tenant.Key) || strings.Contains(string(r.raw), revoked.Key) {
				t.Fatal("401 body echoes the key")
			}
		})
	}
	expect(t, e.do(request{method: "GET", path: "/work", key: tenant.Key}), http.StatusOK, "")

	// Keys never reach the logs.
	e.logsMu.Lock()
	logs := e.logs.String()
	e.logsMu.Unlock()
	if strings.Contains(logs, tenant.Key) || strings.Contains(logs, revoked.Key) || strings.Contains(logs, "Bearer") {
		t.Fatalf("logs contain a credential: %s", logs)
	}
}

func TestRequestIDAndContractVersionHeaders(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)

	r := e.do(request{method: "GET", path: "/work", key: tenant.Key, headers: map[string]string{"X-Request-Id": "client-req-42"}})
	expect(t, r, http.StatusOK, "")
	if r.header.Get("X-Request-Id") != "client-req-42" {
		t.Fatalf("request id not echoed: %q", r.header.Get("X-Request-Id"))
	}
	if r.header.Get("Svc-Version") != accountable.ContractDates[0] {
		t.Fatalf("Svc-Version %q", r.header.Get("Svc-Version"))
	}

	// An error's requestId equals the header, generated when the client sent none (or a bad one).
	for _, sent := range []string{"", "has spaces in it"} {
		r = e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": "not-a-uuid"}, key: tenant.Key,
			headers: map[string]string{"X-Request-Id": sent}})
		expect(t, r, http.StatusBadRequest, accountable.ECodeValidationFailed)
		id := r.header.Get("X-Request-Id")
		if id == "" || id == sent || r.errorObj()["requestId"] != id {
			t.Fatalf("header %q, error.requestId %v", id, r.errorObj()["requestId"])
		}
		if r.errorObj()["docsUrl"] != "http://api.test/api/v1/errors#validation_failed" {
			t.Fatalf("docsUrl %v", r.errorObj()["docsUrl"])
		}
	}

	r = e.do(request{method: "GET", path: "/work", key: tenant.Key, headers: map[string]string{"Svc-Version": accountable.ContractDates[0]}})
	expect(t, r, http.StatusOK, "")
	r = e.do(request{method: "GET", path: "/work", key: tenant.Key, headers: map[string]string{"Svc-Version": "1999-01-01"}})
	expect(t, r, http.StatusBadRequest, accountable.ECodeUnsupportedAPIVersion)
}

func TestWorkspaceScoping(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	a := storetest.NewTenant(t, e.db)
	b := storetest.NewTenant(t, e.db)
	task := createWork(t, e, a.Key, "a's task")

	get := func(key, id string, query string) response {
		return e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": id}, key: key, query: query})
	}
	otherWs := get(b.Key, task, "")
	neverIssued := get(b.Key, "0190c0de-0000-7000-8000-000000000000", "")
	expect(t, otherWs, http.StatusNotFound, accountable.ECodeNotFound)
	expect(t, neverIssued, http.StatusNotFound, accountable.ECodeNotFound)
	if sameErrorBody(otherWs, neverIssued) != "" {
		t.Fatalf("another workspace's task differs from an unknown one: %s", sameErrorBody(otherWs, neverIssued))
	}
	completeOther := e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": task}, key: b.Key,
		body: map[string]any{"expected_updated_at": "2026-01-01T00:00:00Z", "expected_aggregate_version": 1}})
	completeUnknown := e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": "0190c0de-0000-7000-8000-000000000000"}, key: b.Key,
		body: map[string]any{"expected_updated_at": "2026-01-01T00:00:00Z", "expected_aggregate_version": 1}})
	expect(t, completeOther, http.StatusNotFound, accountable.ECodeNotFound)
	if d := sameErrorBody(completeOther, completeUnknown); d != "" {
		t.Fatal(d)
	}
	// b's list and stream hold nothing of a.
	list := e.do(request{method: "GET", path: "/work", key: b.Key})
	if len(list.dataList()) != 0 {
		t.Fatalf("b sees %d tasks", len(list.dataList()))
	}
	for _, ev := range e.streamEvents(b.Key, "", storetest.TenantEvents) {
		if ev["workspaceId"] != b.Principal.WorkspaceID {
			t.Fatalf("b's stream holds %v", ev)
		}
	}

	// b's verification covers b's own events only.
	v := e.do(request{method: "GET", path: "/events/verify", key: b.Key})
	if v.data()["eventCount"] != float64(storetest.TenantEvents) || v.data()["verified"] != true {
		t.Fatalf("b's verification: %s", v.raw)
	}
	if v := e.do(request{method: "GET", path: "/events/verify", key: b.Key, query: "aggregate_type=task&aggregate_id=" + task}); v.data()["eventCount"] != 0.0 {
		t.Fatalf("b verifies a's task: %s", v.raw)
	}

	// workspace_id selects another workspace of the same user; one it cannot access is a 404.
	second, err := e.db.CreateKey(ctx, store.CreateKeyRequest{Name: "second", UserEmail: a.Principal.UserEmail, NewWorkspace: "a's second"})
	if err != nil {
		t.Fatal(err)
	}
	r := e.do(request{method: "GET", path: "/work", key: a.Key, query: "workspace_id=" + second.WorkspaceID})
	expect(t, r, http.StatusOK, "")
	if r.meta()["workspaceId"] != second.WorkspaceID || len(r.dataList()) != 0 {
		t.Fatalf("selected workspace: %s", r.raw)
	}
	r = e.do(request{method: "POST", path: "/work", key: a.Key, headers: map[string]string{"Idempotency-Key": "in-second"},
		body: map[string]any{"title": "in the second workspace", "workspace_id": second.WorkspaceID}})
	expect(t, r, http.StatusCreated, "")
	if r.meta()["workspaceId"] != second.WorkspaceID {
		t.Fatalf("body workspace_id ignored: %s", r.raw)
	}
	expect(t, get(second.Key, r.data()["taskId"].(string), ""), http.StatusOK, "")
	// An explicit null is the same as leaving the field out.
	r = e.do(request{method: "POST", path: "/work", key: a.Key, headers: map[string]string{"Idempotency-Key": "null-ws"},
		body: map[string]any{"title": "in the key's workspace", "workspace_id": nil}})
	expect(t, r, http.StatusCreated, "")
	if r.meta()["workspaceId"] != a.Principal.WorkspaceID {
		t.Fatalf("null workspace_id: %s", r.raw)
	}
	expect(t, get(a.Key, task, "workspace_id="+b.Principal.WorkspaceID), http.StatusNotFound, accountable.ECodeNotFound)
	r = e.do(request{method: "POST", path: "/work", key: a.Key, query: "workspace_id=" + a.Principal.WorkspaceID,
		headers: map[string]string{"Idempotency-Key": "two-workspaces"},
		body:    map[string]any{"title": "which workspace?", "workspace_id": second.WorkspaceID}})
	expect(t, r, http.StatusBadRequest, accountable.ECodeValidationFailed)
	expect(t, get(a.Key, task, "workspace_id=nope"), http.StatusBadRequest, accountable.ECodeValidationFailed)
}

// sameErrorBody returns "" when two error responses are identical bar requestId/timestamp.
func sameErrorBody(a, b response) string {
	strip := func(r response) map[string]any {
		e := map[string]any{}
		for k, v := range r.errorObj() {
			if k != "requestId" && k != "timestamp" {
				e[k] = v
			}
		}
		return e
	}
	ea, eb := strip(a), strip(b)
	if len(ea) != len(eb) || a.status != b.status {
		return "different error bodies: " + string(a.raw) + " vs " + string(b.raw)
	}
	for k, v := range ea {
		if eb[k] == nil || toJSON(eb[k]) != toJSON(v) {
			return "different " + k + ": " + string(a.raw) + " vs " + string(b.raw)
		}
	}
	return ""
}

// Through the in-memory key cache, as `serve` runs: interleaved keys stay apart and a
// revocation takes effect at once.
func TestRevokedKeyIsRefusedThroughTheKeyCache(t *testing.T) {
	db := storetest.Open(t)
	kc := store.NewKeyCache(db, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	kc.Start()
	t.Cleanup(kc.Stop)
	e := newEnv(t, db, func(_ *api.Config, d *api.Deps) { d.Keys = kc })
	a := storetest.NewTenant(t, db)
	b := storetest.NewTenant(t, db)
	// Until the cache's listener is up and both keys are held in memory.
	storetest.WaitFor(t, 10*time.Second, "the key cache holds both keys", func() bool {
		expect(t, e.do(request{method: "GET", path: "/credential", key: a.Key}), http.StatusOK, "")
		expect(t, e.do(request{method: "GET", path: "/credential", key: b.Key}), http.StatusOK, "")
		_, haveA := kc.KnownKeyHash(a.Principal.KeyPrefix)
		_, haveB := kc.KnownKeyHash(b.Principal.KeyPrefix)
		return haveA && haveB
	})
	if _, err := db.RevokeKey(context.Background(), a.Principal.KeyPrefix); err != nil {
		t.Fatal(err)
	}
	storetest.WaitFor(t, 5*time.Second, "the revoked key to be refused", func() bool {
		if e.do(request{method: "GET", path: "/credential", key: a.Key}).status == http.StatusUnauthorized {
			return true
		}
		expect(t, e.do(request{method: "GET", path: "/credential", key: b.Key}), http.StatusOK, "")
		return false
	})
	for range 3 {
		r := e.do(request{method: "GET", path: "/credential", key: b.Key})
		expect(t, r, http.StatusOK, "")
		if r.data()["key_prefix"] != b.Principal.KeyPrefix {
			t.Fatalf("b answered as %v", r.data()["key_prefix"])
		}
		expect(t, e.do(request{method: "GET", path: "/credential", key: a.Key}), http.StatusUnauthorized, "")
	}
}
