package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/tokens"
)

// memberCache is a process's key cache (as `serve` runs it) that counts the membership
// lookups workspace selection makes.
type memberCache struct {
	*store.KeyCache
	memberLookups atomic.Int64
}

func (c *memberCache) IsMember(ctx context.Context, userID, workspaceID string) (bool, error) {
	c.memberLookups.Add(1)
	return c.KeyCache.IsMember(ctx, userID, workspaceID)
}

// newProcess is one API process on db: a server with a key cache of its own (its own
// LISTEN connection), keys held for an hour.
func newProcess(t *testing.T, db *store.DB) (*env, *memberCache) {
	t.Helper()
	kc := &memberCache{KeyCache: store.NewKeyCache(db, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))}
	kc.Start()
	t.Cleanup(kc.Stop)
	return newEnv(t, db, func(_ *api.Config, d *api.Deps) { d.Keys = kc }), kc
}

// refusedWithin sends req until it gets status and returns how long after since that took
// (to within storetest.WaitFor's poll interval); it fails past within after since.
func refusedWithin(t *testing.T, e *env, req request, status int, since time.Time, within time.Duration) time.Duration {
	t.Helper()
	var took time.Duration
	what := fmt.Sprintf("%s %s?%s to answer %d after the removal", req.method, req.path, req.query, status)
	storetest.WaitFor(t, within-time.Since(since), what, func() bool {
		r := e.do(req)
		if r.status == status {
			took = time.Since(since)
			return true
		}
		if r.status != http.StatusOK {
			t.Fatalf("%s %s?%s: %d %s, want 200 until %d", req.method, req.path, req.query, r.status, r.raw, status)
		}
		return false
	})
	return took
}

// The attack of issue 24, finding 6, against two running API processes holding the key in
// memory: a member removed from a workspace keeps using their key there (through
// workspace_id, in the query or a body) and, removed from the key's own workspace, the key
// itself. Both processes refuse at once (404 as an unknown workspace; then 401), while the
// key keeps working where its user still is a member, and selecting a workspace costs a
// key no query.
func TestRemovedMembersKeysAreRefusedAtOnceInEveryProcess(t *testing.T) {
	const bound = 2 * time.Second
	ctx := context.Background()
	db := storetest.Open(t)
	a, b := storetest.NewTenant(t, db), storetest.NewTenant(t, db)
	if _, err := db.CreateUser(ctx, store.CreateKeyRequest{UserEmail: a.Principal.UserEmail, WorkspaceID: b.Principal.WorkspaceID}); err != nil {
		t.Fatal(err)
	}
	e1, kc1 := newProcess(t, db)
	e2, kc2 := newProcess(t, db)
	procs := []*env{e1, e2}
	inB := request{method: "GET", path: "/work", key: a.Key, query: "workspace_id=" + b.Principal.WorkspaceID}
	inA := request{method: "GET", path: "/work", key: a.Key}
	// Until both processes hold a's key, with b among its workspaces.
	storetest.WaitFor(t, 10*time.Second, "both processes hold a's key", func() bool {
		for _, e := range procs {
			r := e.do(inB)
			expect(t, r, http.StatusOK, "")
			if r.meta()["workspaceId"] != b.Principal.WorkspaceID {
				t.Fatalf("workspace_id ignored: %s", r.raw)
			}
		}
		_, held1 := kc1.KnownKeyHash(a.Principal.KeyPrefix)
		_, held2 := kc2.KnownKeyHash(a.Principal.KeyPrefix)
		return held1 && held2
	})
	for _, e := range procs {
		r := e.do(request{method: "POST", path: "/work", key: a.Key, headers: map[string]string{"Idempotency-Key": "a-in-b-" + e.base},
			body: map[string]any{"title": "a's task in b", "workspace_id": b.Principal.WorkspaceID}})
		expect(t, r, http.StatusCreated, "")
	}
	if n := kc1.memberLookups.Load() + kc2.memberLookups.Load(); n != 0 {
		t.Fatalf("selecting a workspace with a key cost %d membership queries", n)
	}

	// a is removed from b: neither process lets a's key act in b any more.
	if _, err := db.RemoveMember(ctx, b.Principal.WorkspaceID, a.Principal.UserEmail); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	for i, e := range procs {
		took := refusedWithin(t, e, inB, http.StatusNotFound, removed, bound)
		t.Logf("process %d refused a's key in b %s after the removal", i+1, took)
		unknown := e.do(request{method: "GET", path: "/work", key: a.Key, query: "workspace_id=0190c0de-0000-7000-8000-000000000000"})
		if d := sameErrorBody(e.do(inB), unknown); d != "" {
			t.Fatalf("b differs from an unknown workspace: %s", d)
		}
		r := e.do(request{method: "POST", path: "/work", key: a.Key, headers: map[string]string{"Idempotency-Key": "a-in-b-again"},
			body: map[string]any{"title": "a's task in b", "workspace_id": b.Principal.WorkspaceID}})
		expect(t, r, http.StatusNotFound, accountable.ECodeNotFound)
		expect(t, e.do(inA), http.StatusOK, "")
		expect(t, e.do(request{method: "GET", path: "/work", key: b.Key}), http.StatusOK, "")
	}

	// a is removed from a's own workspace: the key acts nowhere, in either process.
	if _, err := db.RemoveMember(ctx, a.Principal.WorkspaceID, a.Principal.UserEmail); err != nil {
		t.Fatal(err)
	}
	removed = time.Now()
	for i, e := range procs {
		took := refusedWithin(t, e, inA, http.StatusUnauthorized, removed, bound)
		t.Logf("process %d refused a's key in its own workspace %s after the removal", i+1, took)
		expect(t, e.do(request{method: "GET", path: "/credential", key: a.Key}), http.StatusUnauthorized, "")
		expect(t, e.do(request{method: "GET", path: "/work", key: b.Key}), http.StatusOK, "")
	}
	// Added back, the member's key acts again (it was never revoked).
	if _, err := db.CreateUser(ctx, store.CreateKeyRequest{UserEmail: a.Principal.UserEmail, WorkspaceID: a.Principal.WorkspaceID}); err != nil {
		t.Fatal(err)
	}
	for _, e := range procs {
		storetest.WaitFor(t, bound, "a's key acts again once a is back", func() bool {
			return e.do(inA).status == http.StatusOK
		})
	}
}

// Sessions and OAuth access tokens are bound to a workspace and checked against the
// membership on every request: a user removed from it loses them there at once (and a
// session cannot select a workspace its user has left).
func TestSessionsAndAccessTokensStopWhenTheirUserLeaves(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil, withSiteURLOfListener)
	a := newPerson(t, e)
	b := storetest.NewTenant(t, e.db)
	if _, err := e.db.CreateUser(ctx, store.CreateKeyRequest{UserEmail: a.Principal.UserEmail, WorkspaceID: b.Principal.WorkspaceID}); err != nil {
		t.Fatal(err)
	}
	token := mintAccessToken(t, e, a, "work:read") // bound to a's own workspace
	// A session of a's own workspace and one of b (as signing in to b would make).
	session := func(ws string) map[string]string {
		tok, hash := tokens.NewSessionToken(testSessionKey)
		storetest.NoteSecrets(tok)
		s := accountable.Session{UserID: a.Principal.UserID, UserEmail: a.Principal.UserEmail, WorkspaceID: ws,
			CSRFToken: tokens.NewCSRFToken(), ExpiresAt: time.Now().Add(time.Hour)}
		if err := e.db.CreateSession(ctx, hash, s); err != nil {
			t.Fatal(err)
		}
		return map[string]string{"Cookie": accountable.SessionCookie + "=" + tok}
	}
	inA, inB := session(a.Principal.WorkspaceID), session(b.Principal.WorkspaceID)
	bearer := map[string]string{"Authorization": "Bearer " + token}
	selectB := "workspace_id=" + b.Principal.WorkspaceID
	expect(t, e.do(request{method: "GET", path: "/work", headers: bearer}), http.StatusOK, "")
	expect(t, e.do(request{method: "GET", path: "/work", headers: inB}), http.StatusOK, "")
	expect(t, e.do(request{method: "GET", path: "/work", headers: inA, query: selectB}), http.StatusOK, "")

	if _, err := e.db.RemoveMember(ctx, b.Principal.WorkspaceID, a.Principal.UserEmail); err != nil {
		t.Fatal(err)
	}
	expect(t, e.do(request{method: "GET", path: "/work", headers: inB}), http.StatusUnauthorized, "")
	expect(t, e.do(request{method: "GET", path: "/work", headers: inA, query: selectB}), http.StatusNotFound, accountable.ECodeNotFound)
	expect(t, e.do(request{method: "GET", path: "/work", headers: inA}), http.StatusOK, "")
	expect(t, e.do(request{method: "GET", path: "/work", headers: bearer}), http.StatusOK, "")

	if _, err := e.db.RemoveMember(ctx, a.Principal.WorkspaceID, a.Principal.UserEmail); err != nil {
		t.Fatal(err)
	}
	expect(t, e.do(request{method: "GET", path: "/work", headers: inA}), http.StatusUnauthorized, "")
	expect(t, e.do(request{method: "GET", path: "/work", headers: bearer}), http.StatusUnauthorized, "")
	br := newBrowser(t, e)
	br.http.Jar.SetCookies(mustURL(t, e.base), []*http.Cookie{{Name: accountable.SessionCookie, Value: strings.TrimPrefix(inA["Cookie"], accountable.SessionCookie+"=")}})
	if res, _ := br.get("/settings/api-keys"); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/sign-in" {
		t.Fatalf("the settings page of a removed member's session: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Each workspace's settings page lists every key that can act in it, its members' keys
// made in their other workspaces too (marked with owner and workspace), and revokes any of
// them (the API refuses the key at once, in every workspace); a non-member's key is
// neither listed nor revocable (404).
func TestSettingsPageListsAndRevokesEveryKeyThatActsInItsWorkspace(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	e, _ := newProcess(t, db)
	owner := newPerson(t, e)  // signs in to b, owner's workspace
	member := newPerson(t, e) // made a key in a, member's workspace; joins b
	outsider := storetest.NewTenant(t, db)
	b := owner.Principal.WorkspaceID
	if _, err := db.CreateUser(ctx, store.CreateKeyRequest{UserEmail: member.Principal.UserEmail, WorkspaceID: b}); err != nil {
		t.Fatal(err)
	}
	// The outsider is a member of the member's workspace (not of b), with a key there.
	if _, err := db.CreateUser(ctx, store.CreateKeyRequest{UserEmail: outsider.Principal.UserEmail, WorkspaceID: member.Principal.WorkspaceID}); err != nil {
		t.Fatal(err)
	}
	outsiderInA, err := db.CreateKey(ctx, store.CreateKeyRequest{Name: "outsider in a", UserEmail: outsider.Principal.UserEmail, WorkspaceID: member.Principal.WorkspaceID})
	if err != nil {
		t.Fatal(err)
	}
	storetest.NoteSecrets(outsiderInA.Key)
	inB := request{method: "GET", path: "/work", key: member.Key, query: "workspace_id=" + b}
	expect(t, e.do(inB), http.StatusOK, "")

	br := newBrowser(t, e)
	br.signIn(owner)
	res, page := br.get("/settings/api-keys")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("keys page: %d %s", res.StatusCode, page)
	}
	row := keyRow(page, member.Principal.KeyPrefix)
	if row == "" || !strings.Contains(row, member.Principal.UserEmail) || !strings.Contains(row, member.Principal.WorkspaceID) ||
		!strings.Contains(row, "ws "+member.Principal.UserEmail) || !strings.Contains(row, `class="revoke"`) {
		t.Fatalf("the member's key of another workspace on b's page: %q in %s", row, page)
	}
	if own := keyRow(page, owner.Principal.KeyPrefix); !strings.Contains(own, "this workspace") {
		t.Fatalf("b's own key: %q", own)
	}
	for _, p := range []string{outsider.Principal.KeyPrefix, outsiderInA.KeyPrefix} {
		if strings.Contains(page, p) {
			t.Fatalf("b's page lists %s, a key of a non-member", p)
		}
	}
	csrf := csrfOf(t, page)
	for _, p := range []string{outsider.Principal.KeyPrefix, outsiderInA.KeyPrefix} {
		if res, _ := br.post("/settings/api-keys/revoke", url.Values{"csrf": {csrf}, "prefix": {p}}); res.StatusCode != http.StatusNotFound {
			t.Fatalf("b's page revokes %s, a non-member's key: %d", p, res.StatusCode)
		}
	}
	expect(t, e.do(request{method: "GET", path: "/work", key: outsider.Key}), http.StatusOK, "")
	expect(t, e.do(request{method: "GET", path: "/work", key: outsiderInA.Key}), http.StatusOK, "")

	if res, _ := br.post("/settings/api-keys/revoke", url.Values{"csrf": {csrf}, "prefix": {member.Principal.KeyPrefix}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("b's page revoking the member's key: %d", res.StatusCode)
	}
	t.Logf("the member's key refused in b %s after b's page revoked it", refusedWithin(t, e, inB, http.StatusUnauthorized, time.Now(), 2*time.Second))
	expect(t, e.do(request{method: "GET", path: "/work", key: member.Key}), http.StatusUnauthorized, "")
	if _, page := br.get("/settings/api-keys"); strings.Contains(page, member.Principal.KeyPrefix) {
		t.Fatal("b's page still lists the member's revoked key of another workspace")
	}
	// The revocation is the member's workspace's event, by b's owner, from b.
	events := e.streamEvents(outsiderInA.Key, "event_type=api_key.revoked", 1)
	if len(events) != 1 {
		t.Fatalf("revocations in a: %v", events)
	}
	p := events[0]["payload"].(map[string]any)
	if events[0]["actorId"] != owner.Principal.UserID || p["key_prefix"] != member.Principal.KeyPrefix || p["revoked_from_workspace_id"] != b {
		t.Fatalf("the revocation in a: %v", events[0])
	}
}

// keyRow returns the table row of the key with prefix on a keys page ("" if none).
func keyRow(page, prefix string) string {
	i := strings.Index(page, `<tr data-prefix="`+prefix+`"`)
	if i < 0 {
		return ""
	}
	end := strings.Index(page[i:], "</tr>")
	if end < 0 {
		return page[i:]
	}
	return page[i : i+end]
}
