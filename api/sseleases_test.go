package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// The attack: a key opens live streams until it is refused. It holds at most its bound
// (3 here), the workspace at most its own (5) over all its keys, and each refusal is 429
// rate_limited with a Retry-After no later than the first of the full set's leases ends;
// meanwhile another workspace streams and the attacker's own workspace is still served.
// A lease stops counting when its client goes away (within about a second), when it runs
// out, and at shutdown.
func TestLiveStreamsAreBoundedPerKeyAndWorkspace(t *testing.T) {
	const perKey, perWorkspace = 3, 5
	e := newEnv(t, nil, func(c *api.Config, _ *api.Deps) {
		c.MaxSSELeasesPerKey, c.MaxSSELeasesPerWorkspace = perKey, perWorkspace
	})
	a := storetest.NewTenant(t, e.db)
	second, err := e.db.CreateKey(t.Context(), store.CreateKeyRequest{Name: "second", UserEmail: a.Principal.UserEmail, WorkspaceID: a.Principal.WorkspaceID})
	if err != nil {
		t.Fatal(err)
	}
	storetest.NoteSecrets(second.Key)
	other := storetest.NewTenant(t, e.db)
	ws := a.Principal.WorkspaceID
	refused := func(key, query, about string) int {
		t.Helper()
		r := e.do(request{method: "GET", path: "/events/stream", key: key, query: "transport=sse&" + query,
			headers: map[string]string{"Accept": "text/event-stream"}})
		expect(t, r, http.StatusTooManyRequests, accountable.ECodeRateLimited)
		after, err := strconv.Atoi(r.header.Get("Retry-After"))
		if err != nil || after < 1 || r.errorObj()["retryAfter"] != float64(after) || !strings.Contains(r.errorObj()["message"].(string), about) {
			t.Fatalf("refusal: Retry-After %q, %s", r.header.Get("Retry-After"), r.raw)
		}
		return after
	}

	// The key's bound: its fourth lease waits for the first of its three to end (20 s).
	var held []*sseClient
	for range perKey {
		held = append(held, e.openStream(t, a.Key, "stream_ms=20000", nil))
	}
	for _, s := range held {
		s.next(t, 10*time.Second) // the tenant's own events: each stream is running
	}
	if after := refused(a.Key, "stream_ms=20000", "credential"); after > 20 {
		t.Fatalf("Retry-After %d past the end of the key's leases", after)
	}
	// The workspace's bound, over its keys: the second key opens the two left (leases of
	// 2 s), then is refused.
	short := []*sseClient{e.openStream(t, second.Key, "stream_ms=2000", nil), e.openStream(t, second.Key, "stream_ms=2000", nil)}
	refused(second.Key, "stream_ms=2000", "workspace")
	if n := e.server.StreamsOpenIn(ws); n != perWorkspace {
		t.Fatalf("%d streams counted in the workspace, want %d", n, perWorkspace)
	}
	// Others are served meanwhile: another workspace's stream, and the workspace's reads.
	e.openStream(t, other.Key, "stream_ms=2000", nil).next(t, 10*time.Second)
	expect(t, e.do(request{method: "GET", path: "/work", key: a.Key}), http.StatusOK, "")

	// Leases that run out stop counting: the second key opens again once its two ended.
	start := time.Now()
	for _, s := range short {
		s.rest(t, 5*time.Second)
	}
	waitStreams(t, e, ws, perKey, 2*time.Second)
	e.openStream(t, second.Key, "stream_ms=20000", nil)
	t.Logf("the second key's leases of 2 s ran out and it opened another %s later", time.Since(start).Round(time.Millisecond))

	// A client that goes away frees its lease: the key opens another within seconds.
	held[0].res.Body.Close()
	start = time.Now()
	waitStreams(t, e, ws, perKey, 3*time.Second)
	released := time.Since(start)
	e.openStream(t, a.Key, "stream_ms=20000", nil)
	t.Logf("a client closed its stream: its lease was released after %s", released.Round(time.Millisecond))

	// Shutdown ends every stream, and its lease with it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.server.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitStreams(t, e, ws, 0, 3*time.Second)
}

// waitStreams waits until want streams are counted in workspace ws.
func waitStreams(t *testing.T, e *env, ws string, want int, within time.Duration) {
	t.Helper()
	storetest.WaitFor(t, within, fmt.Sprintf("%d streams counted in the workspace", want), func() bool { return e.server.StreamsOpenIn(ws) == want })
}
