package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// secondWorkspace makes another workspace of tenant's user, and a key of it.
func secondWorkspace(t *testing.T, e *env, tenant storetest.Tenant) store.CreatedKey {
	t.Helper()
	k, err := e.db.CreateKey(t.Context(), store.CreateKeyRequest{Name: "second", UserEmail: tenant.Principal.UserEmail, NewWorkspace: "second of " + tenant.Principal.UserEmail})
	if err != nil {
		t.Fatal(err)
	}
	storetest.NoteSecrets(k.Key)
	return k
}

// The attack: a key writes in another workspace of its user through the body's
// workspace_id, as fast as it can. It is charged to the workspace it acts in (B), not to
// its own (A): B's budget refuses it, B's own key meets the spent budget, and A's budget
// is whole. Were the request charged before its body re-scoped it, the key would spend A's
// budget (A's clients refused while A is quiet) and write in B past B's.
func TestBodyWorkspaceIsChargedToItsRate(t *testing.T) {
	const burst = 5
	// A token every 10 s: none comes back while the test runs.
	e := newEnv(t, nil, func(c *api.Config, _ *api.Deps) { c.WorkspaceRateLimit, c.WorkspaceRateBurst = 0.1, burst })
	a := storetest.NewTenant(t, e.db)
	b := secondWorkspace(t, e, a)
	start := time.Now()
	created, refused := 0, 0
	for i := range 3 * burst {
		r := e.do(request{method: "POST", path: "/work", key: a.Key, headers: map[string]string{"Idempotency-Key": fmt.Sprintf("in-b-%d", i)},
			body: map[string]any{"title": fmt.Sprintf("In B %d", i), "workspace_id": b.WorkspaceID}})
		switch r.status {
		case http.StatusCreated:
			if r.meta()["workspaceId"] != b.WorkspaceID {
				t.Fatalf("written in %v, not B: %s", r.meta()["workspaceId"], r.raw)
			}
			created++
		case http.StatusTooManyRequests:
			expect(t, r, http.StatusTooManyRequests, accountable.ECodeRateLimited)
			if !strings.Contains(r.errorObj()["message"].(string), "workspace") {
				t.Fatalf("refused by another limit: %s", r.raw)
			}
			refused++
		default:
			t.Fatalf("a write in B: %d %s", r.status, r.raw)
		}
	}
	elapsed := time.Since(start)
	// B's burst, and what B's bucket refilled meanwhile.
	if most := burst + int(elapsed.Seconds()*0.1) + 1; created > most || refused == 0 {
		t.Fatalf("%d written in B and %d refused in %s; B allows at most %d", created, refused, elapsed, most)
	}
	// B's own key meets B's spent budget.
	r := e.do(request{method: "GET", path: "/work", key: b.Key})
	expect(t, r, http.StatusTooManyRequests, accountable.ECodeRateLimited)
	// A was not charged: the key's own workspace still has its whole burst.
	for range burst {
		expect(t, e.do(request{method: "GET", path: "/work", key: a.Key}), http.StatusOK, "")
	}
	t.Logf("%d writes in B through A's key: %d answered 201, %d refused 429 (B's burst %d) in %s; A then served %d of %d",
		3*burst, created, refused, burst, elapsed.Round(time.Millisecond), burst, burst)
}

// The same for the writes in flight: a write in B through A's key holds B's slot (one a
// workspace), so B's own writes wait their turn and are refused past the wait, while A's
// writes run at once.
func TestBodyWorkspaceIsChargedToItsWritesInFlight(t *testing.T) {
	const wait = time.Second
	e := newEnv(t, nil, func(c *api.Config, _ *api.Deps) { c.WorkspaceMaxInFlight, c.WorkspaceInFlightWait = 1, wait })
	gate := &gatedPlanner{entered: make(chan struct{}), open: make(chan struct{})}
	e.planner.use(gate)
	a := storetest.NewTenant(t, e.db)
	b := secondWorkspace(t, e, a)
	held := make(chan response, 1)
	go func() {
		held <- propose(e, a.Key, "held-in-b", map[string]any{"title": "Held in B", "workspace_id": b.WorkspaceID})
	}()
	select {
	case <-gate.entered: // the proposal's request holds its slot while its plan is made
	case r := <-held:
		t.Fatalf("the held write answered: %s", r.raw)
	case <-time.After(20 * time.Second):
		t.Fatal("the proposal's plan was never asked for")
	}
	post := func(key, idem string) (response, time.Duration) {
		start := time.Now()
		r := e.do(request{method: "POST", path: "/work", key: key, headers: map[string]string{"Idempotency-Key": idem},
			body: map[string]any{"title": idem}})
		return r, time.Since(start)
	}
	r, took := post(b.Key, "b-waits")
	expect(t, r, http.StatusTooManyRequests, accountable.ECodeRateLimited)
	if !strings.Contains(r.errorObj()["message"].(string), "in flight") || took < wait {
		t.Fatalf("B's write answered after %s: %s", took, r.raw)
	}
	r, tookA := post(a.Key, "a-runs")
	expect(t, r, http.StatusCreated, "")
	if tookA >= wait {
		t.Fatalf("A's write waited %s for B's slot", tookA)
	}
	close(gate.open)
	expect(t, <-held, http.StatusCreated, "")
	r, _ = post(b.Key, "b-runs")
	expect(t, r, http.StatusCreated, "")
	t.Logf("while A's key held B's one slot: B's write refused after %s, A's write answered 201 in %s",
		took.Round(time.Millisecond), tookA.Round(time.Millisecond))
}
