package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/webhook"
	"github.com/accountablework/accountable/workflows"
)

// The isolation matrix's lines of the area (isolation_test.go).
func init() {
	isolationCovers(isolationLines{
		fixtures: map[string]func(o *owner) string{
			"webhookId": (*owner).webhook,
		},
		listedBy: map[string]string{
			"listWebhooks": "webhookId",
		},
	})
}

// webhook registers an endpoint (the matrix's envs are quiet: nothing is delivered).
func (o *owner) webhook() string {
	o.t.Helper()
	r := o.e.do(request{method: "POST", path: "/webhooks", key: o.tenant.Key,
		body: map[string]any{"url": "https://hooks.example.com/" + o.marker, "event_types": []string{"work.created"}}})
	expect(o.t, r, http.StatusCreated, "")
	return r.data()["id"].(string)
}

// receiver is a webhook receiver as docs/events.md shows one: it verifies the signature over
// the raw body and refuses a stale timestamp; failNext makes it answer 500 that many times.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	skew   time.Duration // added to the receiver's clock
	fail   int
	got    []received
}

type received struct {
	status    int
	delivery  string
	signature string
	body      []byte
	parsed    accountable.WebhookBody
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := received{delivery: req.Header.Get("X-Svc-Delivery-Id"), signature: req.Header.Get(accountable.WebhookSignatureHeader), body: body}
	err := webhook.VerifySignature(r.secret, rec.signature, body, time.Now().Add(r.skew), accountable.WebhookSignatureTolerance)
	switch {
	case err != nil:
		rec.status = http.StatusBadRequest
	case r.fail > 0:
		r.fail--
		rec.status = http.StatusInternalServerError
	default:
		rec.status = http.StatusOK
	}
	json.Unmarshal(body, &rec.parsed) //nolint:errcheck // checked by the test
	r.got = append(r.got, rec)
	w.WriteHeader(rec.status)
}

// accepted waits until n deliveries were accepted and returns every request received.
func (r *receiver) accepted(n int, within time.Duration) []received {
	r.t.Helper()
	var got []received
	storetest.WaitFor(r.t, within, fmt.Sprintf("%d deliveries accepted", n), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		ok := 0
		for _, g := range r.got {
			if g.status == http.StatusOK {
				ok++
			}
		}
		got = append([]received(nil), r.got...)
		return ok >= n
	})
	return got
}

// An endpoint receives the events of its types committed after it was registered, signed;
// a 500 is retried with the same delivery id and every attempt is recorded; a stale
// signature is refused by the receiver; a deleted endpoint receives nothing more.
func TestWebhookDeliveries(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	createWork(t, e, key, "before the endpoint")
	rcv := newReceiver(t)
	r := e.do(request{method: "POST", path: "/webhooks", key: key, headers: map[string]string{"Idempotency-Key": "hook-1"},
		body: map[string]any{"url": rcv.srv.URL + "/in", "event_types": []string{"work.created"}}})
	expect(t, r, http.StatusCreated, "")
	hook := r.data()
	secret, _ := hook["secret"].(string)
	if !strings.HasPrefix(secret, "whsec_") || hook["status"] != "active" {
		t.Fatalf("registration %s", r.raw)
	}
	rcv.mu.Lock()
	rcv.secret, rcv.fail = secret, 1
	rcv.mu.Unlock()
	id := hook["id"].(string)

	// The same key again: the endpoint, without its secret.
	again := e.do(request{method: "POST", path: "/webhooks", key: key, headers: map[string]string{"Idempotency-Key": "hook-1"},
		body: map[string]any{"url": rcv.srv.URL + "/in", "event_types": []string{"work.created"}}})
	expect(t, again, http.StatusOK, "")
	if again.data()["id"] != id || again.data()["secret"] != nil || again.meta()["duplicate"] != true {
		t.Fatalf("replay %s", again.raw)
	}

	// The endpoint's workflow reads once when it starts and then waits, idle, until a
	// commit wakes it. (The relay that starts it may first deliver what other tests' quiet
	// envs left in the package's shared outbox, so its start is waited for apart.)
	awaitFirstRead(t, workflows.WebhookDeliveryID(tenant.Principal.WorkspaceID, id), time.Minute)
	task := createWork(t, e, key, "after the endpoint")
	got := rcv.accepted(1, 20*time.Second)
	if len(got) != 2 || got[0].status != http.StatusInternalServerError || got[1].delivery != got[0].delivery ||
		got[1].parsed.ID != got[0].delivery || got[1].parsed.Type != "work.created" || got[1].parsed.Event.AggregateID != task ||
		got[1].parsed.WebhookID != id {
		t.Fatalf("deliveries %+v", got)
	}
	// The attempt is recorded once the receiver has answered: it may come a moment after.
	var attempts response
	var list []any
	storetest.WaitFor(t, 10*time.Second, "both attempts recorded", func() bool {
		attempts = e.do(request{method: "GET", path: "/webhooks/{webhookId}/deliveries", params: map[string]string{"webhookId": id}, key: key})
		expect(t, attempts, http.StatusOK, "")
		list = attempts.dataList()
		return len(list) >= 2
	})
	if len(list) != 2 {
		t.Fatalf("attempts %s", attempts.raw)
	}
	first, second := list[1].(map[string]any), list[0].(map[string]any)
	if first["attempt"] != 1.0 || first["succeeded"] != false || first["status_code"] != 500.0 || first["error"] == nil ||
		second["attempt"] != 2.0 || second["succeeded"] != true || second["status_code"] != 200.0 || second["error"] != nil ||
		first["delivery_id"] != got[0].delivery || second["delivery_id"] != got[0].delivery || second["event_id"] != got[1].parsed.Event.ID {
		t.Fatalf("attempts %s", attempts.raw)
	}

	// A delivery replayed after the tolerance is refused by the receiver.
	rcv.mu.Lock()
	rcv.skew = accountable.WebhookSignatureTolerance + time.Minute
	rcv.mu.Unlock()
	req, _ := http.NewRequest(http.MethodPost, rcv.srv.URL+"/in", bytes.NewReader(got[1].body))
	req.Header.Set(accountable.WebhookSignatureHeader, got[1].signature)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("a stale delivery answered %d", res.StatusCode)
	}
	rcv.mu.Lock()
	rcv.skew, rcv.got = 0, nil
	rcv.mu.Unlock()

	// Only the endpoint's event types; then, deleted, nothing more.
	r = e.do(request{method: "POST", path: "/decisions", key: key, body: map[string]any{"title": "Not delivered", "shape": "budget_approval", "urgency": "standard"}})
	expect(t, r, http.StatusCreated, "")
	second2 := createWork(t, e, key, "second")
	got = rcv.accepted(1, 20*time.Second)
	if len(got) != 1 || got[0].parsed.Event.AggregateID != second2 {
		t.Fatalf("deliveries %+v", got)
	}
	list2 := e.do(request{method: "GET", path: "/webhooks", key: key})
	expect(t, list2, http.StatusOK, "")
	if hooks := list2.dataList(); len(hooks) != 1 || strings.Contains(string(list2.raw), secret) {
		t.Fatalf("list %s", list2.raw)
	}
	del := e.do(request{method: "DELETE", path: "/webhooks/{webhookId}", params: map[string]string{"webhookId": id}, key: key})
	expect(t, del, http.StatusOK, "")
	if del.data()["status"] != "deleted" || del.data()["deleted_at"] == nil {
		t.Fatalf("delete %s", del.raw)
	}
	expect(t, e.do(request{method: "DELETE", path: "/webhooks/{webhookId}", params: map[string]string{"webhookId": id}, key: key}), http.StatusOK, "")
	createWork(t, e, key, "after the delete")
	// The endpoint's workflow reads that it was deleted and completes; whatever it delivered
	// before, the receiver has answered by then, and it delivers nothing after.
	waitWorkflowCompleted(t, workflows.WebhookDeliveryID(tenant.Principal.WorkspaceID, id), 30*time.Second)
	rcv.mu.Lock()
	n := len(rcv.got)
	rcv.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d requests after the delete, want the 1 before it", n)
	}
	if list3 := e.do(request{method: "GET", path: "/webhooks", key: key}); len(list3.dataList()) != 0 {
		t.Fatalf("list after delete %s", list3.raw)
	}
}

// awaitFirstRead waits until the delivery workflow id has read what is due once.
func awaitFirstRead(t *testing.T, id string, within time.Duration) {
	t.Helper()
	tc := temporalClient(t)
	storetest.WaitFor(t, within, "workflow "+id+" to read", func() bool {
		it := tc.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return false // not started yet
			}
			if ev.EventType == enums.EVENT_TYPE_ACTIVITY_TASK_COMPLETED {
				return true
			}
		}
		return false
	})
}

func TestWebhookRefusals(t *testing.T) {
	e := newEnv(t, nil)
	key := storetest.NewTenant(t, e.db).Key
	other := storetest.NewTenant(t, e.db).Key
	for _, body := range []map[string]any{
		{"url": "ftp://example.com/", "event_types": []string{"*"}},
		{"url": "https://example.com/", "event_types": []string{}},
		{"url": "https://example.com/", "event_types": []string{"*"}, "secret": "short"},
	} {
		expect(t, e.do(request{method: "POST", path: "/webhooks", key: key, body: body}), http.StatusBadRequest, accountable.ECodeValidationFailed)
	}
	r := e.do(request{method: "POST", path: "/webhooks", key: key, body: map[string]any{"url": "https://example.com/hook", "event_types": []string{"work.completed"},
		"secret": "0123456789abcdef-given"}})
	expect(t, r, http.StatusCreated, "")
	if r.data()["secret"] != "0123456789abcdef-given" {
		t.Fatalf("given secret %s", r.raw)
	}
	id := r.data()["id"].(string)
	e.do(request{method: "DELETE", path: "/webhooks/{webhookId}", params: map[string]string{"webhookId": id}, key: key}) // no delivery to example.com
	for _, req := range []request{
		{method: "DELETE", path: "/webhooks/{webhookId}", params: map[string]string{"webhookId": id}, key: other},
		{method: "GET", path: "/webhooks/{webhookId}/deliveries", params: map[string]string{"webhookId": id}, key: other},
	} {
		expect(t, e.do(req), http.StatusNotFound, accountable.ECodeNotFound)
	}
}

// The cap on a workspace's endpoints, attacked through the running server: past it a
// registration is refused (409 webhook_limit_reached, with the cap in details.limit), also
// when registrations race for the last places (they count under the workspace's lock, so
// exactly as many win as there are places); a replay of a registration is still answered
// at the cap; deleted endpoints free their places; other workspaces are not touched.
func TestWebhookEndpointCap(t *testing.T) {
	// Quiet: the endpoints' delivery workflows are not started (example.com receives nothing).
	e := newEnvRelaying(t, nil, false)
	key := storetest.NewTenant(t, e.db).Key
	other := storetest.NewTenant(t, e.db).Key
	limit := accountable.DefaultWebhookMaxEndpoints
	register := func(key, idem string) response {
		req := request{method: "POST", path: "/webhooks", key: key,
			body: map[string]any{"url": "https://hooks.example.com/cap/" + idem, "event_types": []string{"work.created"}}}
		if idem != "" {
			req.headers = map[string]string{"Idempotency-Key": idem}
		}
		return e.do(req)
	}
	active := func() int {
		r := e.do(request{method: "GET", path: "/webhooks", key: key})
		expect(t, r, http.StatusOK, "")
		return len(r.dataList())
	}
	var ids []string
	for i := range limit - 1 {
		r := register(key, fmt.Sprintf("cap-%d", i))
		expect(t, r, http.StatusCreated, "")
		ids = append(ids, r.data()["id"].(string))
	}
	// race sends n registrations at once and returns how many were created; each of the
	// others must be the cap's refusal.
	race := func(round, n int) int {
		answers := make([]response, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				answers[i] = register(key, fmt.Sprintf("race-%d-%d", round, i))
			}()
		}
		close(start)
		wg.Wait()
		created := 0
		for _, r := range answers {
			switch {
			case r.status == http.StatusCreated:
				created++
			case r.status == http.StatusConflict && r.errorCode() == accountable.ECodeWebhookLimitReached:
			default:
				t.Fatalf("a racing registration answered %d: %s", r.status, r.raw)
			}
		}
		return created
	}
	if won := race(1, 8); won != 1 || active() != limit {
		t.Fatalf("8 registrations raced for the last place: %d created, %d active, want 1 and %d", won, active(), limit)
	}

	r := register(key, "")
	expect(t, r, http.StatusConflict, accountable.ECodeWebhookLimitReached)
	if d, _ := r.errorObj()["details"].(map[string]any); d["limit"] != float64(limit) || d["active"] != float64(limit) {
		t.Fatalf("refusal %s", r.raw)
	}
	again := register(key, "cap-0")
	expect(t, again, http.StatusOK, "")
	if again.data()["id"] != ids[0] || again.meta()["duplicate"] != true {
		t.Fatalf("a replay at the cap: %s", again.raw)
	}

	// Deleted endpoints do not count: three places free, ten racers, three win.
	for _, id := range ids[:3] {
		expect(t, e.do(request{method: "DELETE", path: "/webhooks/{webhookId}", params: map[string]string{"webhookId": id}, key: key}), http.StatusOK, "")
	}
	if won := race(2, 10); won != 3 || active() != limit {
		t.Fatalf("10 registrations raced for 3 places: %d created, %d active, want 3 and %d", won, active(), limit)
	}
	expect(t, register(key, ""), http.StatusConflict, accountable.ECodeWebhookLimitReached)
	expect(t, register(other, ""), http.StatusCreated, "")
}

// With the default policy, registering an address of a translation or special-purpose
// range, or a port other than 80 and 443, is refused; with WEBHOOK_PORTS, only its ports.
func TestWebhookTargetRefusals(t *testing.T) {
	strict := newEnvRelaying(t, nil, false, func(c *api.Config, _ *api.Deps) { c.WebhookTargets = webhook.TargetPolicy{} })
	custom := newEnvRelaying(t, strict.db, false, func(c *api.Config, _ *api.Deps) {
		c.WebhookTargets = webhook.TargetPolicy{Ports: []uint16{8443}}
	})
	key := storetest.NewTenant(t, strict.db).Key
	register := func(e *env, url string) response {
		return e.do(request{method: "POST", path: "/webhooks", key: key, body: map[string]any{"url": url, "event_types": []string{"work.created"}}})
	}
	for _, url := range []string{
		"http://[64:ff9b::7f00:1]/in",      // NAT64 of 127.0.0.1
		"https://[64:ff9b::a9fe:a9fe]/in",  // NAT64 of the metadata address
		"https://[64:ff9b:1::a00:1]/in",    // local-use NAT64
		"https://[2002:a9fe:a9fe::1]/in",   // 6to4
		"https://[::ffff:0:7f00:1]/in",     // IPv4-translated
		"https://198.18.0.1/in",            // benchmarking
		"https://0.1.2.3/in",               // "this network"
		"https://hooks.example.com:8080/",  // a port other than 80 and 443
		"http://hooks.example.com:25/",     // SMTP
		"https://hooks.example.com:6379/x", // a database's port
	} {
		r := register(strict, url)
		expect(t, r, http.StatusBadRequest, accountable.ECodeValidationFailed)
		if !strings.Contains(string(r.raw), "/url") {
			t.Fatalf("%s: %s", url, r.raw)
		}
	}
	for _, url := range []string{"https://hooks.example.com/in", "http://hooks.example.com/in", "https://hooks.example.com:443/in"} {
		r := register(strict, url)
		expect(t, r, http.StatusCreated, "")
		expect(t, strict.do(request{method: "DELETE", path: "/webhooks/{webhookId}", params: map[string]string{"webhookId": r.data()["id"].(string)}, key: key}),
			http.StatusOK, "")
	}
	expect(t, register(custom, "https://hooks.example.com/in"), http.StatusBadRequest, accountable.ECodeValidationFailed)
	expect(t, register(custom, "https://hooks.example.com:8443/in"), http.StatusCreated, "")
}
