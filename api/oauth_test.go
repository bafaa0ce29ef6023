package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
)

// oauthApp is a client registered with the authorization server.
type oauthApp struct {
	id, secret, redirect string
}

func (e *env) postJSON(t *testing.T, path string, body any) (int, map[string]any, http.Header) {
	t.Helper()
	res, err := e.client.Post(e.base+path, "application/json", strings.NewReader(toJSON(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(raw, &out)
	return res.StatusCode, out, res.Header
}

func registerApp(t *testing.T, e *env, meta map[string]any) oauthApp {
	t.Helper()
	status, out, _ := e.postJSON(t, "/oauth/register", meta)
	if status != http.StatusCreated {
		t.Fatalf("registration: %d %v", status, out)
	}
	secret, _ := out["client_secret"].(string)
	return oauthApp{id: out["client_id"].(string), secret: secret, redirect: meta["redirect_uris"].([]string)[0]}
}

// tokenRequest posts form to the token endpoint.
func tokenRequest(t *testing.T, e *env, form url.Values) (int, map[string]any) {
	t.Helper()
	res, err := e.client.PostForm(e.base+"/oauth/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("token endpoint %d: %s", res.StatusCode, raw)
	}
	return res.StatusCode, out
}

// authorizeURL is an authorization request of app with a PKCE challenge for verifier.
func authorizeURL(app oauthApp, verifier, scope string, extra url.Values) string {
	q := url.Values{"response_type": {"code"}, "client_id": {app.id}, "redirect_uri": {app.redirect}, "state": {"state-1234567890"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"}}
	if scope != "" {
		q.Set("scope", scope)
	}
	for k, v := range extra {
		q[k] = v
	}
	return "/oauth/authorize?" + q.Encode()
}

var hiddenField = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// consent answers the consent screen of authorize (the browser signed in) with decision
// and returns where the browser is sent.
func (b *browser) consent(authorize, decision string) *url.URL {
	b.t.Helper()
	res, page := b.get(authorize)
	if res.StatusCode != http.StatusOK {
		b.t.Fatalf("consent screen: %d %s %s", res.StatusCode, res.Header.Get("Location"), page)
	}
	form := url.Values{"decision": {decision}}
	for _, m := range hiddenField.FindAllStringSubmatch(page, -1) {
		form.Add(m[1], htmlUnescape(m[2]))
	}
	res, body := b.post("/oauth/authorize", form)
	if res.StatusCode != http.StatusSeeOther && res.StatusCode != http.StatusFound {
		b.t.Fatalf("consent answer: %d %s", res.StatusCode, body)
	}
	u, err := url.Parse(res.Header.Get("Location"))
	if err != nil {
		b.t.Fatal(err)
	}
	return u
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&#43;", "+", "&#34;", `"`, "&#39;", "'", "&lt;", "<", "&gt;", ">").Replace(s)
}

// signIn signs the browser in as ten.
func (b *browser) signIn(ten storetest.Tenant) {
	b.t.Helper()
	_, page := b.get("/sign-in")
	res, _ := b.post("/sign-in", url.Values{"csrf": {csrfOf(b.t, page)}, "email": {ten.Principal.UserEmail}, "password": {testPassword}})
	if res.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("sign-in: %d", res.StatusCode)
	}
}

// The authorization server by hand (a client's side of it with golang.org/x/oauth2's
// PKCE helpers): metadata, registration, sign-in and consent, code exchange with PKCE
// (missing, wrong and right verifiers), exact redirect URIs, resources, scopes enforced
// on REST, the workspace binding, expiry, refresh rotation and reuse, revocation, and no
// token in the logs.
func TestOAuthAuthorizationServer(t *testing.T) {
	e := newEnv(t, nil, withSiteURLOfListener)
	ten := newPerson(t, e)
	other := storetest.NewTenant(t, e.db)
	otherTask := createWork(t, e, other.Key, "Another workspace's task")

	// Discovery: the MCP endpoint's 401 points to its metadata, which names the
	// authorization server, whose metadata names the endpoints.
	res, err := e.client.Post(e.base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if want := `resource_metadata="` + e.base + `/.well-known/oauth-protected-resource/mcp"`; res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.Header.Get("WWW-Authenticate"), want) {
		t.Fatalf("/mcp without a token: %d %q", res.StatusCode, res.Header.Get("WWW-Authenticate"))
	}
	var prm, asm map[string]any
	getJSON(t, e, "/.well-known/oauth-protected-resource/mcp", &prm)
	if prm["resource"] != e.base+"/mcp" || prm["authorization_servers"].([]any)[0] != e.base {
		t.Fatalf("protected resource metadata: %v", prm)
	}
	getJSON(t, e, "/.well-known/oauth-authorization-server", &asm)
	if asm["issuer"] != e.base || asm["registration_endpoint"] != e.base+"/oauth/register" ||
		toJSON(asm["code_challenge_methods_supported"]) != `["S256"]` {
		t.Fatalf("authorization server metadata: %v", asm)
	}

	// Registration refuses what OAuth 2.1 does not allow.
	for _, bad := range []map[string]any{
		{"redirect_uris": []string{"http://example.com/cb"}},
		{"redirect_uris": []string{"https://example.com/cb#frag"}},
		{"redirect_uris": []string{"https://example.com/cb"}, "grant_types": []string{"implicit"}},
		{"redirect_uris": []string{}},
		{"redirect_uris": []string{"https://example.com/cb"}, "client_name": "Helper\u202e"},
		{"redirect_uris": []string{"https://example.com/cb"}, "client_name": "Bot for user 0190"},
	} {
		if status, out, _ := e.postJSON(t, "/oauth/register", bad); status != http.StatusBadRequest || !strings.HasPrefix(out["error"].(string), "invalid_") {
			t.Fatalf("registration of %v: %d %v", bad, status, out)
		}
	}
	app := registerApp(t, e, map[string]any{"client_name": "Test Agent", "redirect_uris": []string{"http://127.0.0.1:9/callback"},
		"grant_types": []string{"authorization_code", "refresh_token"}, "token_endpoint_auth_method": "none"})
	if app.secret != "" {
		t.Fatal("a public client got a secret")
	}

	b := newBrowser(t, e)
	verifier := oauth2.GenerateVerifier()
	authorize := authorizeURL(app, verifier, "work:read work:write offline_access", url.Values{"resource": {e.base + "/mcp"}})

	// Signed out: to the sign-in page, and back to the request after it.
	res, _ = b.get(authorize)
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/sign-in?next=") {
		t.Fatalf("signed out: %d %s", res.StatusCode, loc)
	}
	_, page := b.get(res.Header.Get("Location"))
	res, _ = b.post("/sign-in", url.Values{"csrf": {csrfOf(t, page)}, "email": {ten.Principal.UserEmail}, "password": {testPassword},
		"next": {authorize}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != authorize {
		t.Fatalf("sign-in did not return to the authorization: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	res, page = b.get(authorize)
	ws, _ := e.db.GetWorkspace(context.Background(), ten.Principal.WorkspaceID)
	for _, want := range []string{"Test Agent", ws.Name, "work:write", "offline_access", ten.Principal.UserEmail} {
		if !strings.Contains(page, want) {
			t.Fatalf("the consent screen does not name %q: %s", want, page)
		}
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' http://127.0.0.1:9") {
		t.Fatalf("consent page CSP: %s", csp)
	}

	// Deny: access_denied at the client, also when the client slipped an answer of its own
	// into the authorization request.
	if u := b.consent(authorize, "deny"); u.Query().Get("error") != "access_denied" {
		t.Fatalf("denied: %s", u)
	}
	if u := b.consent(authorize+"&decision=allow&csrf=x", "deny"); u.Query().Get("error") != "access_denied" || u.Query().Get("code") != "" {
		t.Fatalf("denied, with decision=allow in the request: %s", u)
	}
	// Allow: a code for the client, with the issuer (RFC 9207).
	u := b.consent(authorize, "allow")
	code := u.Query().Get("code")
	if code == "" || u.Query().Get("state") != "state-1234567890" || u.Query().Get("iss") != e.base || !strings.HasPrefix(u.String(), app.redirect) {
		t.Fatalf("allowed: %s", u)
	}
	exchange := func(code, verifier string) (int, map[string]any) {
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {app.redirect}, "client_id": {app.id},
			"resource": {e.base + "/mcp"}}
		if verifier != "" {
			form.Set("code_verifier", verifier)
		}
		return tokenRequest(t, e, form)
	}
	// A missing verifier, then a wrong one: refused (and the code is spent).
	if status, out := exchange(code, ""); status != http.StatusBadRequest {
		t.Fatalf("without a verifier: %d %v", status, out)
	}
	code = b.consent(authorize, "allow").Query().Get("code")
	if status, out := exchange(code, oauth2.GenerateVerifier()); status != http.StatusBadRequest || out["error"] != "invalid_grant" {
		t.Fatalf("with a wrong verifier: %d %v", status, out)
	}
	code = b.consent(authorize, "allow").Query().Get("code")
	status, tok := exchange(code, verifier)
	if status != http.StatusOK {
		t.Fatalf("exchange: %d %v", status, tok)
	}
	access, refresh := tok["access_token"].(string), tok["refresh_token"].(string)
	if !strings.HasPrefix(access, accountable.AccessTokenPrefix) || !strings.HasPrefix(refresh, accountable.RefreshTokenPrefix) ||
		tok["token_type"] != "bearer" || tok["expires_in"].(float64) > 15*60 {
		t.Fatalf("tokens: %v", tok)
	}
	// The code is single-use: a second exchange is refused, and revokes what the first
	// one gave (someone else had the code).
	expect(t, e.do(request{method: "GET", path: "/work", key: access}), http.StatusOK, "")
	if status, _ := exchange(code, verifier); status != http.StatusBadRequest {
		t.Fatalf("a code used twice: %d", status)
	}
	expect(t, e.do(request{method: "GET", path: "/work", key: access}), http.StatusUnauthorized, "")
	code = b.consent(authorize, "allow").Query().Get("code")
	if status, tok = exchange(code, verifier); status != http.StatusOK {
		t.Fatalf("exchange: %d %v", status, tok)
	}
	access, refresh = tok["access_token"].(string), tok["refresh_token"].(string)

	// The token on REST: its user's workspace, its scopes, nothing else.
	taskID := createWork(t, e, access, "Made with an access token")
	if got := getWork(t, e, ten.Key, taskID); got["title"] != "Made with an access token" {
		t.Fatalf("the token's work in the user's workspace: %v", got)
	}
	expect(t, e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": otherTask}, key: access}), http.StatusNotFound, accountable.ECodeNotFound)
	expect(t, e.do(request{method: "GET", path: "/work", query: "workspace_id=" + other.Principal.WorkspaceID, key: access}), http.StatusNotFound, accountable.ECodeNotFound)
	r := e.do(request{method: "GET", path: "/initiatives/proposals/{proposalId}", params: map[string]string{"proposalId": "prp_0000000000000000"}, key: access})
	expect(t, r, http.StatusForbidden, accountable.ECodeForbidden)
	if !strings.Contains(r.header.Get("WWW-Authenticate"), `error="insufficient_scope", scope="initiatives:read"`) {
		t.Fatalf("insufficient scope challenge: %q", r.header.Get("WWW-Authenticate"))
	}
	consents := e.streamEvents(ten.Key, "event_type=oauth.client_authorized", 1)
	if c := consents[0]; c["actorType"] != "human" || c["actorId"] != ten.Principal.UserID || c["aggregateType"] != "workspace" ||
		c["payload"].(map[string]any)["client_name"] != "Test Agent" || toJSON(c["payload"].(map[string]any)["scopes"]) != `["work:read","work:write","offline_access"]` {
		t.Fatalf("the consent on the ledger: %v", c)
	}
	events := e.streamEvents(ten.Key, "event_type=work.created", 1)
	if last := events[len(events)-1]; last["actorType"] != "agent" || last["actorId"] != "Test Agent for user "+ten.Principal.UserID {
		t.Fatalf("the token's command on the ledger: %v", last)
	}

	// Refresh rotates: a new pair; the old access token and refresh token stop working, and
	// reusing the old refresh token revokes the new pair too (the family). Refreshes with
	// one token at the same moment: one wins.
	refreshWith := func(rt string) (int, map[string]any) {
		return tokenRequest(t, e, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {app.id}})
	}
	raceVerifier := oauth2.GenerateVerifier()
	code = b.consent(authorizeURL(app, raceVerifier, "work:read offline_access", nil), "allow").Query().Get("code")
	_, raceTok := exchange(code, raceVerifier)
	statuses := make(chan int, 8)
	for range 8 {
		go func() { st, _ := refreshWith(raceTok["refresh_token"].(string)); statuses <- st }()
	}
	won := 0
	for range 8 {
		if <-statuses == http.StatusOK {
			won++
		}
	}
	if won != 1 {
		t.Fatalf("%d of 8 simultaneous refreshes with one token succeeded", won)
	}
	status, tok2 := refreshWith(refresh)
	if status != http.StatusOK || tok2["refresh_token"] == refresh || tok2["access_token"] == access {
		t.Fatalf("refresh: %d %v", status, tok2)
	}
	access2, refresh2 := tok2["access_token"].(string), tok2["refresh_token"].(string)
	expect(t, e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": taskID}, key: access}), http.StatusUnauthorized, "")
	expect(t, e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": taskID}, key: access2}), http.StatusOK, "")
	if status, out := refreshWith(refresh); status != http.StatusBadRequest || out["error"] != "invalid_grant" {
		t.Fatalf("a reused refresh token: %d %v", status, out)
	}
	expect(t, e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": taskID}, key: access2}), http.StatusUnauthorized, "")
	if status, out := refreshWith(refresh2); status != http.StatusBadRequest {
		t.Fatalf("the family's newer refresh token after reuse: %d %v", status, out)
	}

	// Scopes granted are scopes enforced: a read-only token cannot write.
	readVerifier := oauth2.GenerateVerifier()
	code = b.consent(authorizeURL(app, readVerifier, "work:read", nil), "allow").Query().Get("code")
	_, readTok := exchange(code, readVerifier)
	readOnly := readTok["access_token"].(string)
	if readTok["refresh_token"] != nil {
		t.Fatalf("a refresh token without offline_access: %v", readTok)
	}
	expect(t, e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": taskID}, key: readOnly}), http.StatusOK, "")
	expect(t, e.do(request{method: "POST", path: "/work", key: readOnly, body: map[string]any{"title": "not allowed"}}), http.StatusForbidden, accountable.ECodeForbidden)

	// An expired token is refused (its session's expiry moved into the past).
	if _, err := storetest.Conn(t).Exec(context.Background(), `UPDATE oauth_grants SET request = jsonb_set(request, '{session,expires_at,access_token}', '"2020-01-01T00:00:00Z"')
		WHERE kind = 'access' AND client_id = $1`, app.id); err != nil {
		t.Fatal(err)
	}
	r = e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": taskID}, key: readOnly})
	expect(t, r, http.StatusUnauthorized, "")
	if !strings.Contains(r.header.Get("WWW-Authenticate"), `resource_metadata="`+e.base+`/.well-known/oauth-protected-resource"`) {
		t.Fatalf("REST 401 challenge: %q", r.header.Get("WWW-Authenticate"))
	}

	// Redirect URIs match exactly: another port of the loopback address, another path, or
	// an unregistered address gets an error page, never a redirect.
	for _, ru := range []string{"http://127.0.0.1:10/callback", "http://127.0.0.1:9/other", "https://evil.example/cb", "http://127.0.0.1:10/callback?scope"} {
		bad := app
		redirect, invalid := strings.CutSuffix(ru, "?scope")
		bad.redirect = redirect
		q := url.Values{}
		if invalid { // an invalid request too: its error must not be sent there either
			q.Set("scope", "admin")
		}
		res, page := b.get(authorizeURL(bad, verifier, "", q))
		if res.StatusCode < 400 || res.Header.Get("Location") != "" {
			t.Fatalf("redirect %s: %d %s %s", ru, res.StatusCode, res.Header.Get("Location"), page)
		}
	}
	// PKCE is required and S256 only; resources are this service's only.
	for name, q := range map[string]url.Values{
		"plain":               {"code_challenge_method": {"plain"}, "code_challenge": {verifier}},
		"no challenge":        {"code_challenge": {""}, "code_challenge_method": {""}},
		"another resource":    {"resource": {"https://other.example/mcp"}},
		"an unknown scope":    {"scope": {"admin"}},
		"response_type=token": {"response_type": {"token"}},
	} {
		res, _ := b.get(authorizeURL(app, verifier, "", q))
		loc, _ := url.Parse(res.Header.Get("Location"))
		if loc == nil || loc.Query().Get("error") == "" || loc.Query().Get("code") != "" {
			t.Fatalf("%s: %d %s", name, res.StatusCode, res.Header.Get("Location"))
		}
	}

	// /mcp takes one JSON-RPC message per request, not a batch.
	batch, _ := http.NewRequest("POST", e.base+"/mcp", strings.NewReader(`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`))
	batch.Header.Set("Authorization", "Bearer "+ten.Key)
	batch.Header.Set("Content-Type", "application/json")
	batch.Header.Set("Accept", "application/json, text/event-stream")
	if res, err := e.client.Do(batch); err != nil || res.StatusCode != http.StatusBadRequest {
		t.Fatalf("a batch: %v %v", err, res)
	} else {
		res.Body.Close()
	}

	// Revocation (RFC 7009) ends a token at once.
	fresh := oauth2.GenerateVerifier()
	code = b.consent(authorizeURL(app, fresh, "work:read", nil), "allow").Query().Get("code")
	_, tok3 := exchange(code, fresh)
	access3 := tok3["access_token"].(string)
	expect(t, e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": taskID}, key: access3}), http.StatusOK, "")
	res, err = e.client.PostForm(e.base+"/oauth/revoke", url.Values{"token": {access3}, "client_id": {app.id}})
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("revocation: %v %v", err, res)
	}
	res.Body.Close()
	expect(t, e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": taskID}, key: access3}), http.StatusUnauthorized, "")

	// No token, code or verifier reaches the log.
	e.logsMu.Lock()
	logs := e.logs.String()
	e.logsMu.Unlock()
	for _, secret := range []string{access, refresh, access2, refresh2, readOnly, code, verifier, strings.TrimPrefix(access, accountable.AccessTokenPrefix)} {
		if strings.Contains(logs, secret) {
			t.Fatalf("a secret in the logs: %s", secret)
		}
	}
}

func getJSON(t *testing.T, e *env, path string, out any) {
	t.Helper()
	res, err := e.client.Get(e.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Access-Control-Allow-Origin") != "*" && res.Request.Header.Get("Origin") != "" {
		t.Fatalf("GET %s: %d", path, res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// mintAccessToken is an access token of ten with scope, the way a client gets one:
// registration, sign-in, consent and the code exchange with PKCE.
func mintAccessToken(t *testing.T, e *env, ten storetest.Tenant, scope string) string {
	t.Helper()
	app := registerApp(t, e, map[string]any{"client_name": "Minting client", "redirect_uris": []string{"http://127.0.0.1:9/callback"},
		"token_endpoint_auth_method": "none"})
	b := newBrowser(t, e)
	b.signIn(ten)
	verifier := oauth2.GenerateVerifier()
	code := b.consent(authorizeURL(app, verifier, scope, nil), "allow").Query().Get("code")
	status, tok := tokenRequest(t, e, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {app.redirect},
		"client_id": {app.id}, "code_verifier": {verifier}})
	if status != http.StatusOK {
		t.Fatalf("minting a token: %d %v", status, tok)
	}
	return tok["access_token"].(string)
}
