package api_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/tokens"
)

// countingSessions counts the session lookups that reach the store.
type countingSessions struct {
	api.SettingsStore
	lookups atomic.Int64
}

func (s *countingSessions) SessionByToken(ctx context.Context, tokenHash []byte) (accountable.Session, error) {
	s.lookups.Add(1)
	return s.SettingsStore.SessionByToken(ctx, tokenHash)
}

// from returns a copy of e whose requests come from ip (a loopback address).
func (e *env) from(t *testing.T, ip string) *env {
	o := e.as(t)
	jar, _ := cookiejar.New(nil)
	o.client = &http.Client{Timeout: 30 * time.Second, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext}}
	return o
}

// oauthGrant is what a client holds after the code exchange.
type oauthGrant struct {
	app             oauthApp
	access, refresh string
}

// grantOf registers a client (confidential with a secret when confidential), has ten
// consent to it in b, and exchanges the code from e's address.
func grantOf(t *testing.T, e *env, b *browser, name string, confidential bool) oauthGrant {
	t.Helper()
	method := "none"
	if confidential {
		method = "client_secret_post"
	}
	app := registerApp(t, e, map[string]any{"client_name": name, "redirect_uris": []string{"http://127.0.0.1:9/callback"},
		"grant_types": []string{"authorization_code", "refresh_token"}, "token_endpoint_auth_method": method})
	verifier := oauth2.GenerateVerifier()
	code := b.consent(authorizeURL(app, verifier, "work:read offline_access", nil), "allow").Query().Get("code")
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {app.redirect}, "client_id": {app.id}, "code_verifier": {verifier}}
	if confidential {
		form.Set("client_secret", app.secret)
	}
	status, tok := tokenRequest(t, e, form)
	if status != http.StatusOK {
		t.Fatalf("%s: code exchange %d %v", name, status, tok)
	}
	return oauthGrant{app: app, access: tok["access_token"].(string), refresh: tok["refresh_token"].(string)}
}

// refreshGrant refreshes g from e's address (its secret, if any, as given) and returns
// the status and body.
func refreshGrant(t *testing.T, e *env, g oauthGrant, refresh, secret string) (int, map[string]any) {
	t.Helper()
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {g.app.id}}
	if secret != "" {
		form.Set("client_secret", secret)
	}
	return tokenRequest(t, e, form)
}

// Issue 24, finding 2: another client's failures from the same address (a NAT, a proxy)
// never refuse a valid credential. One address sends forged access tokens, forged
// session cookies, unknown API keys, forged sign-ins, forged refresh tokens and wrong
// client secrets; from that address afterwards a valid access token, session, API key
// (never used before), refresh token and confidential client, and the real user's
// sign-in, all work. Forged tokens and cookies are refused without a lookup.
func TestOthersFailuresNeverLockOutValidCredentials(t *testing.T) {
	db := storetest.Open(t)
	kc := store.NewKeyCache(db, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	kc.Start()
	t.Cleanup(kc.Stop)
	sessions := &countingSessions{SettingsStore: db}
	e := newEnv(t, db, func(c *api.Config, d *api.Deps) {
		d.Keys, d.Settings = kc, sessions
		c.AuthFailureRate, c.AuthFailureBurst = 0.1, 3
	})
	ten := newPerson(t, e)
	storetest.WaitFor(t, 10*time.Second, "the key cache to learn the new key's prefix (its announcement)", func() bool {
		return kc.KnownPrefix(ten.Principal.KeyPrefix)
	})

	// The valid credentials, obtained from another address (127.0.0.2).
	good := e.from(t, "127.0.0.2")
	b := &browser{t: t, e: good, http: good.client}
	b.signIn(ten)
	siteURL, _ := url.Parse(e.base)
	var session string
	for _, ck := range good.client.Jar.Cookies(siteURL) {
		if ck.Name == accountable.SessionCookie {
			session = ck.Value
		}
	}
	if session == "" {
		t.Fatal("no session cookie")
	}
	public := grantOf(t, good, b, "Public agent", false)
	confidential := grantOf(t, good, b, "Confidential agent", true)

	// The attack, from 127.0.0.1.
	bad := e.from(t, "127.0.0.1")
	sessionLookups := sessions.lookups.Load()
	for i := range 100 {
		r := bad.do(request{method: "GET", path: "/work", key: accountable.AccessTokenPrefix + "forged" + string(rune('a'+i%26)) + ".x"})
		expect(t, r, http.StatusUnauthorized, "")
		forgedSession, _ := tokens.NewSessionToken([]byte("not this deployment's session key"))
		r = bad.do(request{method: "GET", path: "/work", headers: map[string]string{"Cookie": "__session=" + forgedSession}})
		expect(t, r, http.StatusUnauthorized, "")
	}
	if n := sessions.lookups.Load() - sessionLookups; n != 0 {
		t.Fatalf("100 forged session cookies cost %d lookups", n)
	}
	limited := 0
	for range 50 {
		unknown, _ := tokens.NewAPIKey()
		if r := bad.do(request{method: "GET", path: "/work", key: unknown}); r.status == http.StatusTooManyRequests {
			limited++
		} else {
			expect(t, r, http.StatusUnauthorized, "")
		}
	}
	if limited == 0 {
		t.Fatal("50 unknown keys from one address were never limited")
	}
	badBrowser := &browser{t: t, e: bad, http: bad.client}
	for i := range 50 {
		_, page := badBrowser.get("/sign-in")
		email := "nobody" + string(rune('a'+i%26)) + "@forged.example"
		if res, _ := badBrowser.post("/sign-in", url.Values{"csrf": {csrfOf(t, page)}, "email": {email}, "password": {"guess guess guess"}}); res.StatusCode == http.StatusSeeOther {
			t.Fatal("a forged sign-in succeeded")
		}
	}
	for range 20 {
		status, out := refreshGrant(t, bad, public, accountable.RefreshTokenPrefix+"forged.x", "")
		if status != http.StatusBadRequest || out["error"] != "invalid_grant" {
			t.Fatalf("a forged refresh token: %d %v", status, out)
		}
	}
	// Wrong secrets for the confidential client, with a grant of the server's making (the
	// public client's refresh token, which is not the confidential client's): each is a
	// bcrypt comparison, admitted ten times, then 429 for this address and client.
	secretLimited := 0
	for range 15 {
		status, out := refreshGrant(t, bad, confidential, public.refresh, "a wrong secret")
		switch {
		case status == http.StatusTooManyRequests && out["error"] == "temporarily_unavailable":
			secretLimited++
		case status != http.StatusUnauthorized || out["error"] != "invalid_client":
			t.Fatalf("a wrong client secret: %d %v", status, out)
		}
	}
	if secretLimited == 0 {
		t.Fatal("15 wrong client secrets from one address were never limited")
	}

	// From the attacking address, every valid credential works.
	same := e.from(t, "127.0.0.1")
	expect(t, same.do(request{method: "GET", path: "/work", key: public.access}), http.StatusOK, "")
	expect(t, same.do(request{method: "GET", path: "/work", headers: map[string]string{"Cookie": "__session=" + session}}), http.StatusOK, "")
	expect(t, same.do(request{method: "GET", path: "/work", key: ten.Key}), http.StatusOK, "") // its first use
	if status, out := refreshGrant(t, same, public, public.refresh, ""); status != http.StatusOK {
		t.Fatalf("the public client's refresh from the attacking address: %d %v", status, out)
	}
	if status, out := refreshGrant(t, same, confidential, confidential.refresh, confidential.app.secret); status != http.StatusOK {
		t.Fatalf("the confidential client's refresh from the attacking address: %d %v", status, out)
	}
	sameBrowser := &browser{t: t, e: same, http: same.client}
	sameBrowser.signIn(ten)

	// A revoked or made-up token at the revocation endpoint: 200, as RFC 7009 answers
	// every invalid token, without a secret compared.
	res, err := bad.client.PostForm(e.base+"/oauth/revoke", url.Values{"token": {"ory_at_forged.x"}, "client_id": {confidential.app.id},
		"client_secret": {"a wrong secret"}})
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("revoking a forged token: %v %v", err, res)
	}
	res.Body.Close()
}

// Issue 24, finding 3: a confidential client's wrong secrets, sent in a loop from one
// address at the revocation and token endpoints, cost a bounded number of bcrypt
// comparisons (the address and client's failure budget, ten), never more at once than the
// password-hash gate runs; another client's reads go on meanwhile, and the client's right
// secret still works from that address.
func TestClientSecretGuessingIsBounded(t *testing.T) {
	e := newEnv(t, nil, func(c *api.Config, _ *api.Deps) { c.RateLimitHold = time.Second }) // the default of serve
	ten := newPerson(t, e)
	task := createWork(t, e, ten.Key, "read while secrets are guessed")
	good := e.from(t, "127.0.0.2")
	b := &browser{t: t, e: good, http: good.client}
	b.signIn(ten)
	c := grantOf(t, good, b, "Confidential agent", true)

	bad := e.from(t, "127.0.0.1")
	bad.client.Transport.(*http.Transport).MaxConnsPerHost = 16
	const guessers, guessFor = 16, 3 * time.Second
	var checked, limited, other atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), guessFor)
	defer cancel()
	done := make(chan struct{})
	for g := range guessers {
		go func() {
			defer func() { done <- struct{}{} }()
			for ctx.Err() == nil {
				path, form := "/oauth/revoke", url.Values{"token": {c.access}, "client_id": {c.app.id}, "client_secret": {"a wrong secret"}}
				if g%2 == 1 {
					path, form = "/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {c.refresh}, "client_id": {c.app.id}, "client_secret": {"a wrong secret"}}
				}
				res, err := bad.client.PostForm(e.base+path, form)
				if err != nil {
					other.Add(1)
					continue
				}
				io.Copy(io.Discard, res.Body) //nolint:errcheck // only the connection's reuse needs the body read
				res.Body.Close()
				switch res.StatusCode {
				case http.StatusUnauthorized:
					checked.Add(1)
				case http.StatusTooManyRequests:
					limited.Add(1)
				default:
					other.Add(1)
				}
			}
		}()
	}
	reader := e.from(t, "127.0.0.3")
	var lat []time.Duration
	for ctx.Err() == nil {
		start := time.Now()
		expect(t, reader.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": task}, key: ten.Key}), http.StatusOK, "")
		lat = append(lat, time.Since(start))
		time.Sleep(20 * time.Millisecond) // the pace of an ordinary client beside the guessers, not a synchronisation
	}
	for range guessers {
		<-done
	}
	p99 := percentile(lat, 0.99)
	t.Logf("%v of guessing from %d connections: %d secrets compared (401), %d refused (429), %d other; another client's %d reads p99 %v",
		guessFor, guessers, checked.Load(), limited.Load(), other.Load(), len(lat), p99)
	if checked.Load() > 11 || limited.Load() == 0 || other.Load() != 0 {
		t.Fatalf("%d wrong secrets compared (want at most the budget's 10, and one more refilled), %d refused, %d other answers",
			checked.Load(), limited.Load(), other.Load())
	}
	if p99 > 500*time.Millisecond {
		t.Fatalf("another client's reads p99 %v during the guessing", p99)
	}
	// The client's right secret works from the guessing address.
	same := e.from(t, "127.0.0.1")
	if status, out := refreshGrant(t, same, c, c.refresh, c.app.secret); status != http.StatusOK {
		t.Fatalf("the client's own refresh from the guessing address: %d %v", status, out)
	}
}

// percentile is the q quantile of ds (sorted in place); 0 for none.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(float64(len(ds))*q))]
}
