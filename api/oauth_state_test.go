package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

// A client that sends no state, as the official MCP TypeScript SDK does unless its host
// gives one (OAuth 2.1 makes state optional with PKCE, which is required here): dynamic
// registration, sign-in and the consent screen, the code back without a state, the
// exchange with PKCE, and the MCP server's tools/list with the token. Every redirect
// back (a code, a denial, an error) carries no state, as RFC 6749 section 4.1.2 returns
// it only to a request that had one; an empty state is no state (section 3.1). A
// present state is the client's opaque value, of any length, returned as it was sent.
func TestOAuthAuthorizationWithoutState(t *testing.T) {
	e := newEnv(t, nil, withSiteURLOfListener)
	ten := newPerson(t, e)
	app := registerApp(t, e, map[string]any{"client_name": "Stateless Agent", "redirect_uris": []string{"http://127.0.0.1:9/callback"},
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}, "token_endpoint_auth_method": "none"})
	b := newBrowser(t, e)
	b.signIn(ten)
	verifier := oauth2.GenerateVerifier()
	// authorizeURL's parameters without state (a nil value encodes to nothing).
	authorize := authorizeURL(app, verifier, "", url.Values{"state": nil, "resource": {e.base + "/mcp"}})
	if strings.Contains(authorize, "state") {
		t.Fatalf("the request sends a state: %s", authorize)
	}
	noState := func(what string, u *url.URL) {
		t.Helper()
		if _, ok := u.Query()["state"]; ok || strings.Contains(u.RawQuery, "state") || strings.Contains(u.Fragment, "state") ||
			!strings.HasPrefix(u.String(), app.redirect) {
			t.Fatalf("%s: the redirect carries a state, or goes elsewhere: %s", what, u)
		}
	}

	// The consent screen, whose form carries back no state either.
	res, page := b.get(authorize)
	if res.StatusCode != http.StatusOK || !strings.Contains(page, "Stateless Agent") || strings.Contains(page, `name="state"`) {
		t.Fatalf("consent screen: %d %s", res.StatusCode, page)
	}
	if u := b.consent(authorize, "deny"); u.Query().Get("error") != "access_denied" {
		t.Fatalf("denied: %s", u)
	} else {
		noState("denied", u)
	}
	u := b.consent(authorize, "allow")
	noState("allowed", u)
	code := u.Query().Get("code")
	if code == "" || u.Query().Get("iss") != e.base {
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
	status, tok := exchange(code, verifier)
	if status != http.StatusOK || tok["access_token"] == nil {
		t.Fatalf("exchange: %d %v", status, tok)
	}

	// The MCP server with that token: tools/list.
	tools, err := mcpSession(t, e, tok["access_token"].(string), "").ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
	}
	if !names["create_work"] || !names["import_receipt"] {
		t.Fatalf("tools/list: %v", names)
	}

	// PKCE is still required without state: a code without its verifier is refused (and
	// spent), a request without a challenge, or with a plain one, is refused before the
	// consent screen; every refusal's redirect carries no state.
	code = b.consent(authorize, "allow").Query().Get("code")
	if status, out := exchange(code, ""); status != http.StatusBadRequest || out["error"] != "invalid_grant" && out["error"] != "invalid_request" {
		t.Fatalf("without a verifier: %d %v", status, out)
	}
	for name, q := range map[string]url.Values{
		"no challenge":     {"state": nil, "code_challenge": nil, "code_challenge_method": nil},
		"an empty one":     {"state": nil, "code_challenge": {""}, "code_challenge_method": {""}},
		"a plain one":      {"state": nil, "code_challenge_method": {"plain"}, "code_challenge": {verifier}},
		"an unknown scope": {"state": nil, "scope": {"admin"}},
	} {
		res, _ := b.get(authorizeURL(app, verifier, "", q))
		loc, err := url.Parse(res.Header.Get("Location"))
		if err != nil || res.StatusCode != http.StatusSeeOther || loc.Query().Get("error") == "" || loc.Query().Get("code") != "" {
			t.Fatalf("%s: %d %s", name, res.StatusCode, res.Header.Get("Location"))
		}
		noState(name, loc)
	}
	res, _ = b.get(authorizeURL(app, verifier, "", url.Values{"state": nil, "code_challenge": nil}))
	if loc, _ := url.Parse(res.Header.Get("Location")); loc == nil || loc.Query().Get("error") != "invalid_request" ||
		!strings.Contains(loc.Query().Get("error_description"), "PKCE") {
		t.Fatalf("without a challenge: %s", res.Header.Get("Location"))
	}

	// An empty state is no state; a short one is the client's, returned as it was sent.
	noState("state=", b.consent(authorizeURL(app, verifier, "", url.Values{"state": {""}}), "allow"))
	for _, state := range []string{"a", "x y&z=1"} {
		u := b.consent(authorizeURL(app, verifier, "", url.Values{"state": {state}}), "allow")
		if u.Query().Get("state") != state || u.Query().Get("code") == "" {
			t.Fatalf("state %q: %s", state, u)
		}
		res, _ := b.get(authorizeURL(app, verifier, "", url.Values{"state": {state}, "scope": {"admin"}}))
		if loc, _ := url.Parse(res.Header.Get("Location")); loc == nil || loc.Query().Get("state") != state || loc.Query().Get("error") == "" {
			t.Fatalf("state %q, refused: %s", state, res.Header.Get("Location"))
		}
	}
}
