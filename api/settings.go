package api

import (
	"context"
	"crypto/subtle"
	"html/template"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/passwords"
	"github.com/accountablework/accountable/tokens"
)

// The key settings page: {site_url}/settings/api-keys, server-rendered (html/template, no
// build step), behind the `__session` cookie of a sign-in page. People list the keys that
// can act in their workspace (prefix, name, owner, the workspace it was made in, created,
// last used), create one (the full key shown once, on the answer of the form that made
// it, never stored) and revoke any of them.
//
// Every form carries a CSRF token: the session's own once signed in, and on the sign-in
// form a random one that must equal the `__signin` cookie (double submit), so another
// site can neither sign a browser in nor act for it. The session cookie is HttpOnly,
// SameSite=Lax, Secure when the site URL is https, and lasts accountable.SessionLifetime;
// signing out revokes it. Sign-in attempts are limited per client address. Passwords and
// keys never reach a log: the request log has only the method, path and status.

// SettingsStore is what the settings page needs of the store.
type SettingsStore interface {
	SignInTarget(ctx context.Context, email string) (userID, hash, workspaceID string, err error)
	CreateSession(ctx context.Context, tokenHash []byte, s accountable.Session) error
	SessionByToken(ctx context.Context, tokenHash []byte) (accountable.Session, error)
	RevokeSession(ctx context.Context, tokenHash []byte) error
	IssueKey(ctx context.Context, s accountable.Session, name string) (key, prefix string, err error)
	// WorkspaceKeys are the keys that can act in the workspace: its current members' keys,
	// made in it or in their other workspaces (which act in it through workspace_id).
	WorkspaceKeys(ctx context.Context, workspaceID string) ([]accountable.APIKey, error)
	// RevokeWorkspaceKey revokes one of WorkspaceKeys (everywhere); another is not_found.
	RevokeWorkspaceKey(ctx context.Context, workspaceID, prefix string, by accountable.Actor) (accountable.APIKey, error)
}

// Paths of the settings page.
const (
	SignInPath   = "/sign-in"
	SignOutPath  = "/sign-out"
	SettingsPath = "/settings/api-keys"
	signInCookie = "__signin"
)

// dummyHash is verified against when an email has no password, so that the answer takes
// as long as for a wrong password (no telling which emails exist). Made at the first
// such sign-in, not at start-up (a hash costs tens of milliseconds).
var dummyHash = sync.OnceValue(func() string {
	h, _ := passwords.Hash("not the password of anyone")
	return h
})

// WebRoutes are the settings page's routes: HTML for browsers, not operations of the API
// description.
var WebRoutes = []string{"GET " + SignInPath, "POST " + SignInPath, "POST " + SignOutPath, "GET " + SettingsPath,
	"POST " + SettingsPath, "POST " + SettingsPath + "/revoke"}

func init() { WebRoutes = append(WebRoutes, ConsoleRoutes...) }

func (s *Server) settingsRoutes() {
	if s.deps.Settings == nil {
		return
	}
	s.app.Get(SignInPath, s.signInPage)
	s.app.Post(SignInPath, s.signIn)
	s.app.Post(SignOutPath, s.signOut)
	s.app.Get(SettingsPath, s.withSession(s.keysPage))
	s.app.Post(SettingsPath, s.withSession(s.createKeyForm))
	s.app.Post(SettingsPath+"/revoke", s.withSession(s.revokeKeyForm))
	s.consoleRoutes()
}

// secureCookies reports whether cookies are marked Secure (an https site URL).
func (s *Server) secureCookies() bool { return strings.HasPrefix(s.cfg.SiteURL, "https://") }

// cookieName is the name the site's cookie name has in browsers: on an https site with
// the __Host- prefix ("__session" becomes "__Host-session"), which a browser accepts only
// from this host, over https, for the whole site, so that neither a sibling subdomain nor
// a plain-http page can set or shadow it.
func (s *Server) cookieName(name string) string {
	if s.secureCookies() {
		return "__Host-" + strings.TrimPrefix(name, "__")
	}
	return name
}

// sessionToken returns the session cookie of a request whose cookies cookie reads: the
// browser's (cookieName), else the specification's `__session`, which an API client may
// send itself.
func (s *Server) sessionToken(cookie func(string) string) string {
	if t := cookie(s.cookieName(accountable.SessionCookie)); t != "" {
		return t
	}
	return cookie(accountable.SessionCookie)
}

// fiberCookie reads a Fiber request's cookies.
func fiberCookie(c *fiber.Ctx) func(string) string {
	return func(name string) string { return c.Cookies(name) }
}

// lookupSession returns the live session of token: not_found, without a query, for a
// token this deployment did not issue (tokens.SessionTokenAuthentic).
func (s *Server) lookupSession(ctx context.Context, token string) (accountable.Session, error) {
	if !tokens.SessionTokenAuthentic(s.sessionKey, token) {
		return accountable.Session{}, accountable.NotFound("session")
	}
	return s.deps.Settings.SessionByToken(ctx, tokens.HashSessionToken(token))
}

func (s *Server) setCookie(c *fiber.Ctx, name, value string, maxAge time.Duration) {
	ck := &fiber.Cookie{Name: s.cookieName(name), Value: value, Path: "/", HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode,
		Secure: s.secureCookies(), MaxAge: int(maxAge.Seconds())}
	if maxAge < 0 {
		ck.MaxAge, ck.Expires, ck.Value = -1, time.Unix(0, 0), ""
	}
	c.Cookie(ck)
}

// page renders a template with the headers every page has: nothing cached, not framed,
// no script, forms only to this site.
func page(c *fiber.Ctx, status int, t *template.Template, data any) error {
	for k, v := range pageHeaders("") {
		c.Set(k, v)
	}
	c.Type("html", "utf-8")
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return err
	}
	return c.Status(status).SendString(b.String())
}

// pageHeaders are the headers of every page; formTarget is a place other than this site
// that its forms may lead to (the consent form's redirect to the client).
func pageHeaders(formTarget string) map[string]string {
	return map[string]string{
		fiber.HeaderCacheControl:  "no-store",
		fiber.HeaderXFrameOptions: "DENY",
		"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'" + formTarget +
			"; frame-ancestors 'none'; base-uri 'none'",
		"Referrer-Policy": "no-referrer",
	}
}

type signInData struct {
	CSRF, Email, Error, Next string
}

// afterSignIn is where a sign-in continues: the authorization request or the console
// page that sent the browser to sign in (next), else the key settings page. Only an
// authorization request or a console path of this site is followed (never another site:
// no open redirect).
func afterSignIn(next string) string {
	if strings.HasPrefix(next, OAuthAuthorizePath+"?") && !strings.ContainsAny(next, "\\\r\n") {
		return next
	}
	if isConsolePath(next) {
		return next
	}
	return SettingsPath
}

func (s *Server) signInPage(c *fiber.Ctx) error {
	return s.renderSignIn(c, fiber.StatusOK, "", "")
}

func (s *Server) renderSignIn(c *fiber.Ctx, status int, email, message string) error {
	token := tokens.NewCSRFToken()
	s.setCookie(c, signInCookie, token, 30*time.Minute)
	next := ""
	if n := afterSignIn(c.FormValue("next")); n != SettingsPath {
		next = n
	}
	return page(c, status, signInTemplate, signInData{CSRF: token, Email: email, Error: message, Next: next})
}

// maxEmailLength bounds the email of a sign-in (RFC 5321's path limit): the budgets are
// named by it, and no account has a longer one.
const maxEmailLength = 320

// signIn checks an email and password. Each check is an Argon2id hash (HashMemory, tens
// of milliseconds of a core), for an unknown email too (against dummyHash, so that the
// answer does not tell which emails exist), so a check is admitted in three steps:
//
//  1. the hash gate (passwords.Gate): a few hashes at once, taken in turn by the client
//     addresses waiting, at most four per address; a flood from one address waits behind
//     itself, and past its four is refused at once without hashing;
//  2. the failure budgets, taken before the hash and given back when it succeeds: one per
//     address and account (ten attempts, then five a minute) and one per account over
//     all addresses (twenty, then six a minute). Neither is per address alone, so that
//     clients sharing an address (a NAT, a proxy without TRUSTED_PROXIES) are not locked
//     out of their own accounts by another's failures; and one address cannot spend an
//     account's budget by itself (its share refills more slowly than the account's);
//  3. the hash.
func (s *Server) signIn(c *fiber.Ctx) error {
	form := c.FormValue
	cookie := c.Cookies(s.cookieName(signInCookie))
	if cookie == "" || subtle.ConstantTimeCompare([]byte(cookie), []byte(form("csrf"))) != 1 {
		return s.renderSignIn(c, fiber.StatusForbidden, "", "The form expired; sign in again.")
	}
	email, password := strings.TrimSpace(form("email")), form("password")
	if len(email) > maxEmailLength {
		return s.renderSignIn(c, fiber.StatusBadRequest, "", "That is not an email address this service has.")
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), s.deadline(DeadlineRead))
	defer cancel()
	client := s.clientOf(c)
	release, err := s.hashes.Acquire(ctx, client)
	if err != nil {
		s.holdRefusal(s.addressRefusals, client)
		c.Set(fiber.HeaderRetryAfter, "1")
		return s.renderSignIn(c, fiber.StatusTooManyRequests, email, "Too many sign-ins are being checked right now; try again in a moment.")
	}
	defer release()
	account := strings.ToLower(email)
	pair, now := "sign-in "+client+" "+account, time.Now()
	if ok, wait := s.signInPairs.take(pair, now); !ok {
		return s.tooManySignIns(c, email, wait)
	}
	if ok, wait := s.signInAccounts.take(account, now); !ok {
		s.signInPairs.refund(pair, now)
		return s.tooManySignIns(c, email, wait)
	}
	userID, hash, workspaceID, err := s.deps.Settings.SignInTarget(ctx, email)
	if err != nil && accountable.ErrorCode(err) != accountable.ECodeNotFound {
		s.signInPairs.refund(pair, now)
		s.signInAccounts.refund(account, now)
		return err
	}
	ok := false
	if hash != "" {
		ok, _ = passwords.Verify(hash, password)
	} else {
		passwords.Verify(dummyHash(), password) //nolint:errcheck // only takes the same time
	}
	release()
	if !ok {
		return s.renderSignIn(c, fiber.StatusUnauthorized, email, "That email and password do not match.")
	}
	s.signInPairs.refund(pair, now)
	s.signInAccounts.refund(account, now)
	token, tokenHash := tokens.NewSessionToken(s.sessionKey)
	session := accountable.Session{UserID: userID, UserEmail: email, WorkspaceID: workspaceID, CSRFToken: tokens.NewCSRFToken(),
		ExpiresAt: time.Now().Add(accountable.SessionLifetime)}
	if err := s.deps.Settings.CreateSession(ctx, tokenHash, session); err != nil {
		return err
	}
	s.setCookie(c, accountable.SessionCookie, token, accountable.SessionLifetime)
	s.setCookie(c, signInCookie, "", -1)
	return c.Redirect(afterSignIn(form("next")), fiber.StatusSeeOther)
}

// tooManySignIns answers a sign-in over its budget.
func (s *Server) tooManySignIns(c *fiber.Ctx, email string, wait time.Duration) error {
	s.holdRefusal(s.addressRefusals, s.clientOf(c))
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(wait.Seconds())+1))
	return s.renderSignIn(c, fiber.StatusTooManyRequests, email, "Too many failed sign-ins to this account; wait a few minutes.")
}

// session returns the request's live session, if any.
func (s *Server) session(c *fiber.Ctx) (accountable.Session, []byte, bool) {
	token := s.sessionToken(fiberCookie(c))
	if token == "" {
		return accountable.Session{}, nil, false
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), s.deadline(DeadlineRead))
	defer cancel()
	sess, err := s.lookupSession(ctx, token)
	return sess, tokens.HashSessionToken(token), err == nil
}

// withSession serves h to a signed-in browser (others go to the sign-in page); a POST must
// carry the session's CSRF token.
func (s *Server) withSession(h func(*fiber.Ctx, accountable.Session) error) fiber.Handler {
	return func(c *fiber.Ctx) error {
		sess, _, ok := s.session(c)
		if !ok {
			return c.Redirect(SignInPath, fiber.StatusSeeOther)
		}
		if c.Method() == fiber.MethodPost && subtle.ConstantTimeCompare([]byte(c.FormValue("csrf")), []byte(sess.CSRFToken)) != 1 {
			return page(c, fiber.StatusForbidden, messageTemplate, "The form is not from this page (CSRF check failed); reload the page.")
		}
		return h(c, sess)
	}
}

func (s *Server) signOut(c *fiber.Ctx) error {
	if sess, hash, ok := s.session(c); ok {
		if subtle.ConstantTimeCompare([]byte(c.FormValue("csrf")), []byte(sess.CSRFToken)) != 1 {
			return page(c, fiber.StatusForbidden, messageTemplate, "The form is not from this page (CSRF check failed); reload the page.")
		}
		if err := s.deps.Settings.RevokeSession(c.UserContext(), hash); err != nil {
			return err
		}
	}
	s.setCookie(c, accountable.SessionCookie, "", -1)
	return c.Redirect(SignInPath, fiber.StatusSeeOther)
}

type keysData struct {
	Session accountable.Session
	Keys    []accountable.APIKey
	NewKey  string
	NewName string
	Error   string
	APIRoot string
}

func (s *Server) renderKeys(c *fiber.Ctx, status int, sess accountable.Session, d keysData) error {
	keys, err := s.deps.Settings.WorkspaceKeys(c.UserContext(), sess.WorkspaceID)
	if err != nil {
		return err
	}
	d.Session, d.Keys, d.APIRoot = sess, keys, s.cfg.SiteURL+V1Root
	return page(c, status, keysTemplate, d)
}

func (s *Server) keysPage(c *fiber.Ctx, sess accountable.Session) error {
	return s.renderKeys(c, fiber.StatusOK, sess, keysData{})
}

func (s *Server) createKeyForm(c *fiber.Ctx, sess accountable.Session) error {
	name := strings.TrimSpace(c.FormValue("name"))
	if name == "" || len(name) > 100 {
		return s.renderKeys(c, fiber.StatusBadRequest, sess, keysData{Error: "Give the key a name of 1 to 100 characters."})
	}
	key, _, err := s.deps.Settings.IssueKey(c.UserContext(), sess, name)
	if err != nil {
		return err
	}
	return s.renderKeys(c, fiber.StatusOK, sess, keysData{NewKey: key, NewName: name})
}

// revokeKeyForm revokes a key that can act in the session's workspace, whoever's it is:
// every member may stop any key acting in the workspace, a member's key made in another
// workspace too (revoked there as well: a key is one credential). A key that cannot act
// here (another workspace's, a non-member's) is a 404, as an unknown prefix.
func (s *Server) revokeKeyForm(c *fiber.Ctx, sess accountable.Session) error {
	by := accountable.Actor{Type: accountable.ActorHuman, ID: sess.UserID}
	_, err := s.deps.Settings.RevokeWorkspaceKey(c.UserContext(), sess.WorkspaceID, c.FormValue("prefix"), by)
	if accountable.ErrorCode(err) == accountable.ECodeNotFound {
		return s.renderKeys(c, fiber.StatusNotFound, sess, keysData{Error: "No key that acts in this workspace has that prefix."})
	}
	if err != nil {
		return err
	}
	return c.Redirect(SettingsPath, fiber.StatusSeeOther)
}

const pageStyle = `<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#1b1f24}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #d0d7de}
input[type=text],input[type=email],input[type=password]{padding:.35rem;width:16rem}button{padding:.35rem .8rem}
.key{font-family:ui-monospace,monospace;background:#f6f8fa;border:1px solid #d0d7de;padding:.6rem;word-break:break-all}
.error{color:#b42318}.muted{color:#57606a}header{display:flex;justify-content:space-between;align-items:center}
</style>`

var signInTemplate = template.Must(template.New("sign-in").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in · Accountable</title>` + pageStyle + `</head><body>
<h1>Sign in</h1>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
<form method="post" action="/sign-in">
<input type="hidden" name="csrf" value="{{.CSRF}}">
{{if .Next}}<input type="hidden" name="next" value="{{.Next}}">{{end}}
<p><label>Email<br><input type="email" name="email" id="email" value="{{.Email}}" autocomplete="username" required></label></p>
<p><label>Password<br><input type="password" name="password" id="password" autocomplete="current-password" required></label></p>
<p><button type="submit" id="sign-in">Sign in</button></p>
</form>
<p class="muted">No password yet? An operator sets one with <code>accountable users set-password --email you@example.com</code>.</p>
</body></html>`))

var keysTemplate = template.Must(template.New("keys").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>API keys · Accountable</title>
<meta name="csrf-token" content="{{.Session.CSRFToken}}">` + pageStyle + `</head><body>
<header><h1>API keys</h1>
<form method="post" action="/sign-out"><input type="hidden" name="csrf" value="{{.Session.CSRFToken}}">
<span class="muted">{{.Session.UserEmail}}</span> <button type="submit" id="sign-out">Sign out</button></form></header>
<nav aria-label="Site"><p><a href="/console" id="to-console">Workspace console</a></p></nav>
<p class="muted">Workspace {{.Session.WorkspaceID}}. Keys act for their owner in it against <code>{{.APIRoot}}</code> (<code>Authorization: Bearer …</code>).
These are all the keys that can act in it: those its members made here, and those they made in their other workspaces (with <code>workspace_id</code>).
Any member may revoke any of them; revoking one ends it everywhere.</p>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
{{if .NewKey}}<section><h2>New key “{{.NewName}}”</h2>
<p>Copy it now: it is shown only this once.</p><p class="key" id="new-key">{{.NewKey}}</p></section>{{end}}
<h2>Create a key</h2>
<form method="post" action="/settings/api-keys"><input type="hidden" name="csrf" value="{{.Session.CSRFToken}}">
<label>Name <input type="text" name="name" id="key-name" maxlength="100" required></label> <button type="submit" id="create-key">Create key</button></form>
<h2>Keys</h2>
<table><thead><tr><th>Prefix</th><th>Name</th><th>Owner</th><th>Made in</th><th>Created</th><th>Last used</th><th></th></tr></thead><tbody>
{{range .Keys}}<tr data-prefix="{{.Prefix}}"><td><code>{{.Prefix}}</code></td><td>{{.Name}}</td>
<td class="owner">{{with .AgentName}}agent {{.}} for {{end}}{{.UserEmail}}</td>
<td class="home">{{if eq .WorkspaceID $.Session.WorkspaceID}}this workspace{{else}}<span title="{{.WorkspaceID}}">{{.WorkspaceName}}</span>{{end}}</td>
<td>{{.CreatedAt.UTC.Format "2006-01-02 15:04"}}</td>
<td>{{with .LastUsedAt}}{{.UTC.Format "2006-01-02 15:04"}}{{else}}never{{end}}</td>
<td>{{if .RevokedAt}}revoked{{else}}<form method="post" action="/settings/api-keys/revoke"><input type="hidden" name="csrf" value="{{$.Session.CSRFToken}}">
<input type="hidden" name="prefix" value="{{.Prefix}}"><button type="submit" class="revoke">Revoke</button></form>{{end}}</td></tr>
{{else}}<tr><td colspan="7" class="muted">No keys yet.</td></tr>{{end}}
</tbody></table>
</body></html>`))

var messageTemplate = template.Must(template.New("message").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Accountable</title>` + pageStyle + `</head><body>
<p class="error" role="alert">{{.}}</p><p><a href="/settings/api-keys">Back to the API keys</a></p></body></html>`))
