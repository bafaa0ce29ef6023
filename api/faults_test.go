package api_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

func TestDatabaseOutageAnswers503AndRecovers(t *testing.T) {
	direct := storetest.Open(t)
	tenant := storetest.NewTenant(t, direct)

	u, err := url.Parse(storetest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := storetest.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	db, err := store.Open(context.Background(), store.Config{URL: u.String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	e := newEnv(t, db)

	id := createWork(t, e, tenant.Key, "before the outage")
	proxy.Down()

	r := e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": id}, key: tenant.Key})
	expect(t, r, http.StatusServiceUnavailable, accountable.ECodeLedgerUnavailable)
	r = e.do(request{method: "POST", path: "/work", key: tenant.Key, headers: map[string]string{"Idempotency-Key": "during-outage"},
		body: map[string]any{"title": "during the outage"}})
	expect(t, r, http.StatusServiceUnavailable, accountable.ECodeLedgerUnavailable)
	r = e.do(request{method: "GET", path: "/readyz", root: "/"})
	if r.status != http.StatusServiceUnavailable || r.body["checks"].(map[string]any)["postgres"] != "unavailable" {
		t.Fatalf("readyz during outage: %d %s", r.status, r.raw)
	}

	proxy.Up(t)
	storetest.WaitFor(t, 15*time.Second, "reads to be served again after the outage", func() bool {
		r = e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": id}, key: tenant.Key})
		if r.status != http.StatusOK && r.status != http.StatusServiceUnavailable {
			t.Fatalf("after the outage: %d %s", r.status, r.raw)
		}
		return r.status == http.StatusOK
	})
	// Nothing was half-written during the outage, and the retried create succeeds.
	r = e.do(request{method: "POST", path: "/work", key: tenant.Key, headers: map[string]string{"Idempotency-Key": "during-outage"},
		body: map[string]any{"title": "during the outage"}})
	expect(t, r, http.StatusCreated, "")
	expect(t, e.do(request{method: "GET", path: "/readyz", root: "/"}), http.StatusOK, "")
}

// Transport-level refusals get their own 4xx codes, never a 500.
func TestOversizeHeadersAnswer431(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	r := e.do(request{method: "GET", path: "/work", key: tenant.Key, noCheck: true,
		headers: map[string]string{"X-Padding": strings.Repeat("p", 9000)}})
	expect(t, r, http.StatusRequestHeaderFieldsTooLarge, accountable.ECodeHeadersTooLarge)
	if r.errorObj()["requestId"] == "" {
		t.Fatalf("no request id: %s", r.raw)
	}
}
