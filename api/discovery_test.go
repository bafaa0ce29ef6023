package api_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// The isolation matrix's lines of the area (isolation_test.go).
func init() {
	isolationCovers(isolationLines{
		keyOnlyOperations: map[string]string{
			"getCredential": "it describes the request's API key",
		},
		publicOperations: map[string]string{
			"getApiIndex":  "account-free API discovery: the same index for everyone",
			"getOpenAPI":   "account-free API discovery: the same document for everyone",
			"listErrors":   "account-free API discovery: the same catalogue for everyone",
			"getHealth":    "process probe: no account, no workspace",
			"getReadiness": "process probe: no account, no workspace",
		},
	})
}

func TestDiscoveryIsAccountFree(t *testing.T) {
	e := newEnv(t, nil)

	r := e.do(request{method: "GET", path: "/"})
	expect(t, r, http.StatusOK, "")
	areas := map[string]map[string]any{}
	for _, a := range r.data()["areas"].([]any) {
		m := a.(map[string]any)
		areas[m["name"].(string)] = m
	}
	if len(areas) != 22 || areas["Work"]["status"] != "available" || areas["Handoffs"]["status"] != "available" || areas["Controllers"]["status"] != "available" || areas["Projections"]["status"] != "available" ||
		areas["Initiatives"]["status"] != "available" ||
		len(areas["Work"]["operations"].([]any)) != 5 {
		t.Fatalf("index areas: %s", r.raw)
	}

	r = e.do(request{method: "GET", path: "/openapi.json"})
	expect(t, r, http.StatusOK, "")
	if r.body["openapi"] != "3.1.0" {
		t.Fatalf("openapi: %v", r.body["openapi"])
	}

	r = e.do(request{method: "GET", path: "/errors"})
	expect(t, r, http.StatusOK, "")
	byCode := map[string]float64{}
	for _, s := range r.dataList() {
		m := s.(map[string]any)
		byCode[m["code"].(string)] = m["status"].(float64)
	}
	if byCode[accountable.ECodeTaskVersionStale] != 409 || byCode[accountable.ECodeLedgerUnavailable] != 503 ||
		byCode[accountable.ECodeValidationFailed] != 400 || r.meta()["count"] != float64(len(byCode)) {
		t.Fatalf("catalogue: %s", r.raw)
	}

	expect(t, e.do(request{method: "GET", path: "/healthz", root: "/"}), http.StatusOK, "")
	r = e.do(request{method: "GET", path: "/readyz", root: "/"})
	expect(t, r, http.StatusOK, "")
	if r.body["checks"].(map[string]any)["temporal"] != "ok" {
		t.Fatalf("readyz: %s", r.raw)
	}
}

func TestClientMountServesTheSameOperations(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	id := createWork(t, e, tenant.Key, "both mounts")

	v1 := e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": id}, key: tenant.Key})
	client := e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": id}, key: tenant.Key, root: api.ClientRoot})
	expect(t, client, http.StatusOK, "")
	if toJSON(v1.body) != toJSON(client.body) {
		t.Fatalf("mounts differ:\n%s\n%s", v1.raw, client.raw)
	}

	r := e.do(request{method: "GET", path: "/bootstrap", key: tenant.Key, root: api.ClientRoot})
	expect(t, r, http.StatusOK, "")
	if r.data()["key_prefix"] != tenant.Principal.KeyPrefix || r.data()["workspace"].(map[string]any)["id"] != tenant.Principal.WorkspaceID {
		t.Fatalf("bootstrap: %s", r.raw)
	}
	expect(t, e.do(request{method: "GET", path: "/bootstrap", root: api.ClientRoot}), http.StatusUnauthorized, "")

	r = e.do(request{method: "GET", path: "/credential", key: tenant.Key})
	expect(t, r, http.StatusOK, "")
	d := r.data()
	if d["key_prefix"] != tenant.Principal.KeyPrefix || d["user"].(map[string]any)["email"] != tenant.Principal.UserEmail ||
		d["last_used_at"] == nil || d["name"] != "test" {
		t.Fatalf("credential: %s", r.raw)
	}
}

// The per-workspace limit spans the workspace's keys; another workspace is not charged.
func TestWorkspaceRateLimitSpansItsKeys(t *testing.T) {
	e := newEnv(t, nil, func(c *api.Config, _ *api.Deps) { c.WorkspaceRateLimit, c.WorkspaceRateBurst = 0.5, 3 })
	tenant := storetest.NewTenant(t, e.db)
	second, err := e.db.CreateKey(t.Context(), store.CreateKeyRequest{Name: "second", UserEmail: tenant.Principal.UserEmail,
		WorkspaceID: tenant.Principal.WorkspaceID})
	if err != nil {
		t.Fatal(err)
	}
	storetest.NoteSecrets(second.Key)
	for _, key := range []string{tenant.Key, second.Key, tenant.Key} {
		expect(t, e.do(request{method: "GET", path: "/work", key: key}), http.StatusOK, "")
	}
	for _, key := range []string{second.Key, tenant.Key} {
		r := e.do(request{method: "GET", path: "/work", key: key})
		expect(t, r, http.StatusTooManyRequests, accountable.ECodeRateLimited)
		if after, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || after < 1 || after > 2 ||
			!strings.Contains(r.errorObj()["message"].(string), "workspace") {
			t.Fatalf("Retry-After %q, body %s", r.header.Get("Retry-After"), r.raw)
		}
	}
	other := storetest.NewTenant(t, e.db)
	for range 3 {
		expect(t, e.do(request{method: "GET", path: "/work", key: other.Key}), http.StatusOK, "")
	}
}

// With one write in flight per workspace, concurrent writes of a workspace all succeed
// (each waits its turn), and an MCP write, whose /mcp request holds the slot while its
// dispatched REST request runs, does not wait for itself.
func TestWorkspaceWritesInFlightTakeTurns(t *testing.T) {
	e := newEnv(t, nil, withSiteURLOfListener, func(c *api.Config, _ *api.Deps) { c.WorkspaceMaxInFlight = 1 })
	tenant := storetest.NewTenant(t, e.db)
	const writers = 16
	statuses := make(chan int, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			r := e.do(request{method: "POST", path: "/work", key: tenant.Key, headers: map[string]string{"Idempotency-Key": fmt.Sprintf("turn-%d", i)},
				body: map[string]any{"title": fmt.Sprintf("Turn %d", i)}})
			statuses <- r.status
		})
	}
	wg.Wait()
	close(statuses)
	for status := range statuses {
		if status != http.StatusCreated {
			t.Fatalf("a write waiting its turn answered %d", status)
		}
	}
	if n := len(e.do(request{method: "GET", path: "/work", query: "limit=100", key: tenant.Key}).dataList()); n != writers {
		t.Fatalf("%d tasks after %d writes", n, writers)
	}
	session := mcpSession(t, e, tenant.Key, "")
	res := mcpCall(t, session, "create_work", map[string]any{"title": "Over MCP, one slot", "idempotency_key": "turn-mcp"})
	if res.IsError {
		t.Fatalf("create_work under a bound of one write: %s", mcpText(t, res))
	}
}

func TestRateLimitAnswers429WithRetryAfter(t *testing.T) {
	e := newEnv(t, nil, func(c *api.Config, _ *api.Deps) { c.RateLimit, c.RateBurst = 0.5, 2 })
	tenant := storetest.NewTenant(t, e.db)
	expect(t, e.do(request{method: "GET", path: "/work", key: tenant.Key}), http.StatusOK, "")
	expect(t, e.do(request{method: "GET", path: "/work", key: tenant.Key}), http.StatusOK, "")
	r := e.do(request{method: "GET", path: "/work", key: tenant.Key})
	expect(t, r, http.StatusTooManyRequests, accountable.ECodeRateLimited)
	after, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || after < 1 || after > 2 || r.errorObj()["retryAfter"] != float64(after) {
		t.Fatalf("Retry-After %q, body %s", r.header.Get("Retry-After"), r.raw)
	}
	// Limits are per key.
	other := storetest.NewTenant(t, e.db)
	expect(t, e.do(request{method: "GET", path: "/work", key: other.Key}), http.StatusOK, "")
	// The passage of time is the subject: after Retry-After the key's bucket has refilled.
	time.Sleep(time.Duration(after) * time.Second)
	expect(t, e.do(request{method: "GET", path: "/work", key: tenant.Key}), http.StatusOK, "")
}

// A key that keeps resending after its refusals has them held: as many prompt refusals
// as the key is allowed requests, then each refusal waits RateLimitHold. Another key is
// neither refused nor held meanwhile.
func TestRefusalsOfAKeyThatKeepsResendingAreHeld(t *testing.T) {
	const hold = 400 * time.Millisecond
	e := newEnv(t, nil, func(c *api.Config, _ *api.Deps) { c.RateLimit, c.RateBurst, c.RateLimitHold = 0.5, 2, hold })
	tenant, other := storetest.NewTenant(t, e.db), storetest.NewTenant(t, e.db)
	timed := func(key string) (response, time.Duration) {
		start := time.Now()
		r := e.do(request{method: "GET", path: "/work", key: key})
		return r, time.Since(start)
	}
	for range 2 {
		expect(t, e.do(request{method: "GET", path: "/work", key: tenant.Key}), http.StatusOK, "")
	}
	for i := range 2 {
		r, took := timed(tenant.Key)
		expect(t, r, http.StatusTooManyRequests, accountable.ECodeRateLimited)
		if took >= hold {
			t.Fatalf("prompt refusal %d took %s", i+1, took)
		}
	}
	r, took := timed(tenant.Key)
	expect(t, r, http.StatusTooManyRequests, accountable.ECodeRateLimited)
	if took < hold {
		t.Fatalf("a refusal past the prompt ones took %s, not held %s", took, hold)
	}
	if after, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || after < 1 {
		t.Fatalf("held refusal's Retry-After %q", r.header.Get("Retry-After"))
	}
	r, took = timed(other.Key)
	expect(t, r, http.StatusOK, "")
	if took >= hold {
		t.Fatalf("another key's request took %s", took)
	}
}
