package api_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

// The consent screen says what a scope reaches, not only what it is called: the event
// scopes read and export what every area records (the ledger holds every change), and
// are marked so beside their description; an area's own scope is not.
func TestConsentScreenSaysTheEventScopesReachEveryArea(t *testing.T) {
	e := newEnv(t, nil)
	ten := newPerson(t, e)
	app := registerApp(t, e, map[string]any{"client_name": "Scope reader", "redirect_uris": []string{"http://127.0.0.1:9/callback"},
		"token_endpoint_auth_method": "none"})
	b := newBrowser(t, e)
	b.signIn(ten)
	res, page := b.get(authorizeURL(app, oauth2.GenerateVerifier(), "work:read events:read events:write", nil))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("consent screen: %d %s", res.StatusCode, page)
	}
	items := regexp.MustCompile(`(?s)<li><code>([^<]+)</code>: (.*?)</li>`).FindAllStringSubmatch(page, -1)
	lines := map[string]string{}
	for _, m := range items {
		lines[m[1]] = htmlUnescape(m[2])
	}
	const mark = "it reaches everything recorded in the workspace"
	for scope, want := range map[string][]string{
		"events:read":  {"every change in the workspace, of every area", "more than all the other read scopes together", mark},
		"events:write": {`a webhook for "*" sends every future event of every area`, "any address the client names", mark},
	} {
		for _, w := range want {
			if !strings.Contains(lines[scope], w) {
				t.Errorf("the consent screen's %s does not say %q: %q", scope, w, lines[scope])
			}
		}
	}
	if line, ok := lines["work:read"]; !ok || strings.Contains(line, mark) {
		t.Errorf("work:read on the consent screen: %q (present %v)", line, ok)
	}
}
