package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/passwords"
	"github.com/accountablework/accountable/store/storetest"
)

// testPassword is the password of the people newPerson makes.
const testPassword = "correct horse battery staple"

// newPerson makes a tenant whose user can sign in to the settings page with testPassword.
func newPerson(t *testing.T, e *env) storetest.Tenant {
	t.Helper()
	ten := storetest.NewTenant(t, e.db)
	storetest.NoteSecrets(testPassword)
	hash, err := passwords.Hash(testPassword)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.SetPassword(context.Background(), ten.Principal.UserEmail, hash); err != nil {
		t.Fatal(err)
	}
	return ten
}

// browser is a cookie-keeping client that does not follow redirects.
type browser struct {
	t    *testing.T
	e    *env
	http *http.Client
}

func newBrowser(t *testing.T, e *env) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, e: e, http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) get(path string) (*http.Response, string) {
	b.t.Helper()
	res, err := b.http.Get(b.e.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

func (b *browser) post(path string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	res, err := b.http.PostForm(b.e.base+path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF field in %s", page)
	}
	return m[1]
}

func cookieHeader(res *http.Response, name string) string {
	for _, c := range res.Header.Values("Set-Cookie") {
		if strings.HasPrefix(c, name+"=") {
			return c
		}
	}
	return ""
}

// Sign in, create a key on the page (shown once), use it, revoke it (the API answers 401
// at once), sign out; CSRF on every form, the cookie's flags, wrong passwords limited, and
// no password or key in the logs.
func TestSettingsPage(t *testing.T) {
	e := newEnv(t, nil)
	ten := newPerson(t, e)
	b := newBrowser(t, e)

	res, page := b.get("/settings/api-keys")
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/sign-in" {
		t.Fatalf("signed out: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	res, page = b.get("/sign-in")
	if res.StatusCode != http.StatusOK || !strings.Contains(page, `type="password"`) || !strings.Contains(res.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("sign-in page: %d %s", res.StatusCode, page)
	}
	csrf := csrfOf(t, page)
	if res, _ := b.post("/sign-in", url.Values{"email": {ten.Principal.UserEmail}, "password": {testPassword}}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("sign-in without its CSRF token: %d", res.StatusCode)
	}
	res, page = b.get("/sign-in")
	csrf = csrfOf(t, page)
	res, page = b.post("/sign-in", url.Values{"csrf": {csrf}, "email": {ten.Principal.UserEmail}, "password": {"wrong password!"}})
	if res.StatusCode != http.StatusUnauthorized || cookieHeader(res, "__session") != "" || !strings.Contains(page, "do not match") {
		t.Fatalf("a wrong password: %d %s", res.StatusCode, page)
	}
	csrf = csrfOf(t, page)
	res, _ = b.post("/sign-in", url.Values{"csrf": {csrf}, "email": {ten.Principal.UserEmail}, "password": {testPassword}})
	session := cookieHeader(res, "__session")
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/settings/api-keys" ||
		!strings.Contains(session, "HttpOnly") || !strings.Contains(strings.ToLower(session), "samesite=lax") || strings.Contains(session, "Secure") {
		t.Fatalf("sign-in: %d %q", res.StatusCode, session)
	}

	res, page = b.get("/settings/api-keys")
	if res.StatusCode != http.StatusOK || !strings.Contains(page, ten.Principal.KeyPrefix) || !strings.Contains(page, ten.Principal.UserEmail) {
		t.Fatalf("keys page: %d %s", res.StatusCode, page)
	}
	csrf = csrfOf(t, page)
	if res, _ := b.post("/settings/api-keys", url.Values{"name": {"no token"}}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("create without the CSRF token: %d", res.StatusCode)
	}
	res, page = b.post("/settings/api-keys", url.Values{"csrf": {csrf}, "name": {"From the page"}})
	key := regexp.MustCompile(`id="new-key">(svk_[0-9a-f]+)<`).FindStringSubmatch(page)
	if res.StatusCode != http.StatusOK || key == nil {
		t.Fatalf("create: %d %s", res.StatusCode, page)
	}
	expect(t, e.do(request{method: "GET", path: "/credential", key: key[1]}), http.StatusOK, "")
	if _, again := b.get("/settings/api-keys"); strings.Contains(again, key[1]) || !strings.Contains(again, "From the page") {
		t.Fatal("the new key is shown again, or not listed")
	}
	prefix := key[1][:12]
	if res, _ := b.post("/settings/api-keys/revoke", url.Values{"csrf": {csrf}, "prefix": {prefix}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke: %d", res.StatusCode)
	}
	if r := e.do(request{method: "GET", path: "/credential", key: key[1]}); r.status != http.StatusUnauthorized {
		t.Fatalf("a revoked key: %d", r.status)
	}
	// The page's key events are the user's acts, not the command line's.
	events := e.streamEvents(ten.Key, "aggregate_type=api_key", 3)
	for _, ev := range events[len(events)-2:] {
		if ev["actorType"] != "human" || ev["actorId"] != ten.Principal.UserID {
			t.Fatalf("%v by %v %v, want the user", ev["eventType"], ev["actorType"], ev["actorId"])
		}
	}
	other := storetest.NewTenant(t, e.db)
	if res, _ := b.post("/settings/api-keys/revoke", url.Values{"csrf": {csrf}, "prefix": {other.Principal.KeyPrefix}}); res.StatusCode != http.StatusNotFound {
		t.Fatalf("revoking another workspace's key: %d", res.StatusCode)
	}
	expect(t, e.do(request{method: "GET", path: "/credential", key: other.Key}), http.StatusOK, "")

	// The REST API takes the session cookie: reads as they are, changes with the CSRF token.
	session = strings.SplitN(strings.TrimPrefix(session, "__session="), ";", 2)[0]
	cookie := map[string]string{"Cookie": "__session=" + session}
	if r := e.do(request{method: "GET", path: "/events/stream", query: "limit=1", headers: cookie}); r.status != http.StatusOK || r.meta()["workspaceId"] != ten.Principal.WorkspaceID {
		t.Fatalf("GET with the cookie: %d %s", r.status, r.raw)
	}
	expect(t, e.do(request{method: "GET", path: "/credential", headers: cookie}), http.StatusNotFound, "not_found") // no key to describe
	expect(t, e.do(request{method: "POST", path: "/work", headers: cookie, body: map[string]any{"title": "no token"}}), http.StatusForbidden, "forbidden")
	cookie["X-CSRF-Token"], cookie["Idempotency-Key"] = csrf, "by-cookie"
	created := e.do(request{method: "POST", path: "/work", headers: cookie, body: map[string]any{"title": "by cookie"}})
	expect(t, created, http.StatusCreated, "")
	task := created.data()["taskId"].(string)
	expect(t, e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": task}, key: ten.Key}), http.StatusOK, "")
	expect(t, e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": task}, key: other.Key}), http.StatusNotFound, "not_found")

	if res, _ := b.post("/sign-out", url.Values{"csrf": {csrf}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", res.StatusCode)
	}
	if res, _ := b.get("/settings/api-keys"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("after sign-out: %d", res.StatusCode)
	}
	if r := e.do(request{method: "GET", path: "/events/stream", headers: map[string]string{"Cookie": "__session=" + session}}); r.status != http.StatusUnauthorized {
		t.Fatalf("a signed-out session's cookie: %d %s", r.status, r.raw)
	}

	// Wrong passwords from one address are limited (the first ten pass to the check).
	limited := false
	for range 15 {
		_, page := b.get("/sign-in")
		res, _ := b.post("/sign-in", url.Values{"csrf": {csrfOf(t, page)}, "email": {ten.Principal.UserEmail}, "password": {"guess guess guess"}})
		limited = limited || res.StatusCode == http.StatusTooManyRequests
	}
	if !limited {
		t.Fatal("15 wrong passwords in a row were not limited")
	}
	e.logsMu.Lock()
	logs := e.logs.String()
	e.logsMu.Unlock()
	for _, secret := range []string{testPassword, key[1], "guess guess guess"} {
		if strings.Contains(logs, secret) {
			t.Fatalf("the logs contain %q", secret)
		}
	}
}

// On an https site the cookies are Secure and carry the __Host- prefix, which the service
// reads back; the specification's __session name still works for a client that sends it.
func TestCookiesOfAnHTTPSSiteAreHostPrefixed(t *testing.T) {
	e := newEnv(t, nil, func(c *api.Config, _ *api.Deps) { c.SiteURL = "https://accountable.example" })
	ten := newPerson(t, e)
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := plain.Get(e.base + "/sign-in")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	signin := cookieHeader(res, "__Host-signin")
	if lower := strings.ToLower(signin); signin == "" || !strings.Contains(lower, "; secure") || !strings.Contains(lower, "path=/;") || strings.Contains(lower, "domain") {
		t.Fatalf("the sign-in form's cookie: %q", res.Header.Values("Set-Cookie"))
	}
	csrf := csrfOf(t, string(page))
	form := url.Values{"csrf": {csrf}, "email": {ten.Principal.UserEmail}, "password": {testPassword}}
	post := func(cookie string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, e.base+"/sign-in", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", cookie)
		res, err := plain.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := post("__signin=" + csrf); res.StatusCode != http.StatusForbidden {
		t.Fatalf("the form's token in a cookie without the prefix: %d", res.StatusCode)
	}
	res = post("__Host-signin=" + csrf)
	session := cookieHeader(res, "__Host-session")
	if res.StatusCode != http.StatusSeeOther || !strings.Contains(strings.ToLower(session), "; secure") || !strings.Contains(session, "HttpOnly") {
		t.Fatalf("sign-in: %d %q", res.StatusCode, res.Header.Values("Set-Cookie"))
	}
	token := strings.SplitN(strings.TrimPrefix(session, "__Host-session="), ";", 2)[0]
	for _, name := range []string{"__Host-session", "__session"} {
		r := e.do(request{method: "GET", path: "/events/stream", query: "limit=1", headers: map[string]string{"Cookie": name + "=" + token}})
		if r.status != http.StatusOK || r.meta()["workspaceId"] != ten.Principal.WorkspaceID {
			t.Fatalf("the session in %s: %d %s", name, r.status, r.raw)
		}
	}
}
