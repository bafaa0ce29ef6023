package api

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/ory/fosite"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/oauth"
)

// The authorization server's HTTP side. The protocol (request checks, PKCE, codes,
// tokens, rotation) is fosite's, reached through Fiber's net/http adaptor; what is the
// service's own is here: the metadata documents (RFC 8414, RFC 9728), client registration
// (RFC 7591), the resource indicator (RFC 8707), exact redirect URI matching, and the
// consent screen behind the key settings page's sign-in.

// Paths of the authorization server (accountable.OAuth*Path), as the API serves them.
const (
	OAuthAuthorizePath = accountable.OAuthAuthorizePath
	OAuthTokenPath     = accountable.OAuthTokenPath
	OAuthRegisterPath  = accountable.OAuthRegisterPath
	OAuthRevokePath    = accountable.OAuthRevokePath
)

// OAuthRoutes are the authorization server's routes: OAuth endpoints and metadata, not
// operations of the API description.
var OAuthRoutes = []string{"GET " + ProtectedResourcePath, "GET " + ProtectedResourcePath + MCPPath, "GET " + AuthServerMetaPath,
	"GET " + OAuthAuthorizePath, "POST " + OAuthAuthorizePath, "POST " + OAuthTokenPath, "POST " + OAuthRegisterPath,
	"POST " + OAuthRevokePath}

// oauthRoutes mounts the authorization server and the resource metadata. Browser-based
// MCP clients (the MCP Inspector) read the metadata, register and exchange codes with
// fetch from their own origin, so those routes and /mcp answer CORS requests (no
// credentials: a bearer token is not a cookie). The authorize endpoint is a page, never
// fetched.
func (s *Server) oauthRoutes() {
	if s.deps.OAuth == nil {
		return
	}
	open := cors.New(cors.Config{AllowOrigins: "*", AllowMethods: "GET,POST,DELETE,OPTIONS",
		AllowHeaders:  "Authorization,Content-Type,Accept,Mcp-Protocol-Version,Mcp-Session-Id,Last-Event-ID,Idempotency-Key",
		ExposeHeaders: "WWW-Authenticate,Mcp-Session-Id,X-Request-Id"})
	for _, p := range []string{"/.well-known", OAuthTokenPath, OAuthRegisterPath, OAuthRevokePath, MCPPath} {
		s.app.Use(p, open)
	}
	s.app.Get(ProtectedResourcePath, s.protectedResourceMetadata(s.cfg.SiteURL, "Accountable Work API"))
	s.app.Get(ProtectedResourcePath+MCPPath, s.protectedResourceMetadata(s.cfg.SiteURL+MCPPath, "Accountable Work MCP server"))
	s.app.Get(AuthServerMetaPath, s.authServerMetadata)
	s.app.Post(OAuthRegisterPath, s.registerClient)
	s.app.Get(OAuthAuthorizePath, s.netHTTP(http.HandlerFunc(s.authorize)))
	s.app.Post(OAuthAuthorizePath, s.netHTTP(http.HandlerFunc(s.consent)))
	s.app.Post(OAuthTokenPath, s.netHTTP(http.HandlerFunc(s.token)))
	s.app.Post(OAuthRevokePath, s.netHTTP(http.HandlerFunc(s.revoke)))
}

func (s *Server) protectedResourceMetadata(resource, name string) fiber.Handler {
	body, err := json.Marshal(oauthex.ProtectedResourceMetadata{Resource: resource, AuthorizationServers: []string{s.cfg.SiteURL},
		ScopesSupported: accountable.ScopesSupported, BearerMethodsSupported: []string{"header"}, ResourceName: name,
		ResourceDocumentation: s.cfg.SiteURL + V1Root + "/openapi.json"})
	if err != nil {
		panic(err) // a struct of strings always encodes
	}
	return func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
		c.Type("json")
		return c.Send(body)
	}
}

// authServerMetadataDoc is RFC 8414's document, as far as this server fills it.
type authServerMetadataDoc struct {
	Issuer                                 string   `json:"issuer"`
	AuthorizationEndpoint                  string   `json:"authorization_endpoint"`
	TokenEndpoint                          string   `json:"token_endpoint"`
	RegistrationEndpoint                   string   `json:"registration_endpoint"`
	RevocationEndpoint                     string   `json:"revocation_endpoint"`
	ScopesSupported                        []string `json:"scopes_supported"`
	ResponseTypesSupported                 []string `json:"response_types_supported"`
	ResponseModesSupported                 []string `json:"response_modes_supported"`
	GrantTypesSupported                    []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported      []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethodsSupported []string `json:"revocation_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported          []string `json:"code_challenge_methods_supported"`
	AuthorizationResponseIssParameter      bool     `json:"authorization_response_iss_parameter_supported"`
	ServiceDocumentation                   string   `json:"service_documentation"`
}

func (s *Server) authServerMetadata(c *fiber.Ctx) error {
	site := s.cfg.SiteURL
	methods := []string{oauth.ClientAuthNone, oauth.ClientAuthBasic, oauth.ClientAuthPost}
	c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
	return c.JSON(authServerMetadataDoc{Issuer: site, AuthorizationEndpoint: site + OAuthAuthorizePath,
		TokenEndpoint: site + OAuthTokenPath, RegistrationEndpoint: site + OAuthRegisterPath, RevocationEndpoint: site + OAuthRevokePath,
		ScopesSupported: accountable.ScopesSupported, ResponseTypesSupported: []string{oauth.ResponseTypeCode},
		ResponseModesSupported: []string{"query"}, GrantTypesSupported: []string{oauth.GrantAuthCode, oauth.GrantRefresh},
		TokenEndpointAuthMethodsSupported: methods, RevocationEndpointAuthMethodsSupported: methods,
		CodeChallengeMethodsSupported: []string{"S256"}, AuthorizationResponseIssParameter: true,
		ServiceDocumentation: site + V1Root + "/openapi.json"})
}

// oauthError is the error body of the registration endpoint (RFC 7591 section 3.2.2).
type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

// registeredClient is the registration response (RFC 7591 section 3.2.1).
type registeredClient struct {
	ClientID                string   `json:"client_id"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	ClientSecret            string   `json:"client_secret,omitempty"`
	ClientSecretExpiresAt   *int64   `json:"client_secret_expires_at,omitempty"`
	ClientName              string   `json:"client_name"`
	ClientURI               string   `json:"client_uri,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	Scope                   string   `json:"scope,omitempty"`
}

// registerClient is dynamic client registration (RFC 7591), open to anyone as MCP
// clients need it, and limited per client address (registrations).
func (s *Server) registerClient(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	budget := "register " + s.clientOf(c)
	now := time.Now()
	if ok, wait := s.registrations.available(budget, now); !ok {
		return RateLimited(accountable.ECodeRateLimited, "Too many client registrations from this address; retry after error.retryAfter seconds.", wait)
	}
	s.registrations.charge(budget, now)
	var reg oauth.ClientRegistration
	if err := json.Unmarshal(c.Body(), &reg); err != nil {
		return c.Status(fiber.StatusBadRequest).JSON(oauthError{"invalid_client_metadata", "The body must be a JSON object of client metadata (RFC 7591)."})
	}
	client, secret, err := s.deps.OAuth.RegisterClient(c.UserContext(), reg)
	var ve *accountable.Error
	if errors.As(err, &ve) && ve.Code == accountable.ECodeValidationFailed {
		code, msgs := "invalid_client_metadata", []string{}
		issues, _ := ve.Details["issues"].(accountable.Issues)
		for _, is := range issues {
			if strings.HasPrefix(is.Path, "redirect_uris") {
				code = "invalid_redirect_uri"
			}
			msgs = append(msgs, is.Path+": "+is.Message)
		}
		return c.Status(fiber.StatusBadRequest).JSON(oauthError{code, strings.Join(msgs, "; ")})
	}
	if err != nil {
		return err
	}
	out := registeredClient{ClientID: client.ID, ClientIDIssuedAt: client.CreatedAt.Unix(), ClientSecret: secret, ClientName: client.Name,
		ClientURI: client.ClientURI, RedirectURIs: client.RedirectURIs, GrantTypes: client.GrantTypes, ResponseTypes: client.ResponseTypes,
		TokenEndpointAuthMethod: client.TokenEndpointAuthMethod, Scope: client.Scope}
	if secret != "" {
		never := int64(0)
		out.ClientSecretExpiresAt = &never
	}
	return c.Status(fiber.StatusCreated).JSON(out)
}

// errInvalidTarget refuses a resource this service does not serve (RFC 8707 section 2).
func errInvalidTarget(resource string) error {
	return &fosite.RFC6749Error{ErrorField: "invalid_target", CodeField: http.StatusBadRequest,
		DescriptionField: "The requested resource is not served by this authorization server.",
		HintField:        "Ask for " + resource + "'s own authorization server, or for this service's API or MCP endpoint."}
}

// authorizeRequest checks an authorization request beyond fosite's own checks: the
// redirect URI must be one the client registered, character for character (fosite would
// accept any port on a loopback address), PKCE S256 is there, and every resource must be
// this service's.
func (s *Server) authorizeRequest(w http.ResponseWriter, r *http.Request) (fosite.AuthorizeRequester, bool) {
	ctx := r.Context()
	if err := r.ParseForm(); err != nil {
		writePage(w, http.StatusBadRequest, oauthMessageTemplate, "The authorization request could not be read.")
		return nil, false
	}
	ar, err := s.deps.OAuth.NewAuthorizeRequest(ctx, r)
	// Never redirect to an address the client did not register, not even with an error
	// (fosite would: it takes any port of a registered loopback address).
	if ru := r.Form.Get("redirect_uri"); ru != "" && (ar == nil || ar.GetClient() == nil || !slices.Contains(ar.GetClient().GetRedirectURIs(), ru)) {
		writePage(w, http.StatusBadRequest, oauthMessageTemplate, "The redirect URI is not one this client registered (or the client is unknown); the client must be registered again.")
		return nil, false
	}
	if err != nil {
		s.deps.OAuth.WriteAuthorizeError(ctx, w, ar, err)
		return nil, false
	}
	// PKCE is checked here too, not only when the code is issued (fosite's handlers run
	// then): the user is not asked to consent to a request that cannot succeed.
	if challenge := r.Form.Get("code_challenge"); r.Form.Get("code_challenge_method") != "S256" || len(challenge) < 43 || len(challenge) > 128 {
		s.deps.OAuth.WriteAuthorizeError(ctx, w, ar, fosite.ErrInvalidRequest.WithHint(
			"PKCE is required: send code_challenge (the S256 of a code_verifier) with code_challenge_method=S256; plain is not accepted."))
		return nil, false
	}
	for _, res := range r.Form["resource"] {
		if !s.servesResource(res) {
			s.deps.OAuth.WriteAuthorizeError(ctx, w, ar, errInvalidTarget(res))
			return nil, false
		}
	}
	return ar, true
}

// consentData is the consent screen.
type consentData struct {
	ClientName, ClientURI, RedirectHost string
	Workspace                           accountable.Workspace
	UserEmail                           string
	Scopes                              []scopeLine
	Params                              []formField
	CSRF                                string
}

type scopeLine struct {
	Name, Description string
	EveryArea         bool // accountable.ScopesReachingEveryArea
}

// authorizeParams are the parameters of an authorization request the consent form carries
// back (and nothing else a client put in its URL).
var authorizeParams = []string{"response_type", "client_id", "redirect_uri", "scope", "state", "code_challenge",
	"code_challenge_method", "resource", "audience", "response_mode", "nonce", "prompt"}

type formField struct{ Name, Value string }

// authorize is GET /oauth/authorize: a signed-in user sees the consent screen, others
// sign in first and come back.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	ar, ok := s.authorizeRequest(w, r)
	if !ok {
		return
	}
	sess, ok, err := s.browserSession(r)
	if err != nil {
		writePage(w, http.StatusServiceUnavailable, oauthMessageTemplate, msgPageUnavailable)
		return
	}
	if !ok {
		http.Redirect(w, r, SignInPath+"?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	ctx := r.Context()
	client, err := s.deps.OAuth.Client(ctx, ar.GetClient().GetID())
	if err != nil {
		writePage(w, http.StatusServiceUnavailable, oauthMessageTemplate, "The client could not be read; try again.")
		return
	}
	ws, err := s.deps.Keys.GetWorkspace(ctx, sess.WorkspaceID)
	if err != nil {
		writePage(w, http.StatusServiceUnavailable, oauthMessageTemplate, "The workspace could not be read; try again.")
		return
	}
	d := consentData{ClientName: client.Name, ClientURI: client.ClientURI, Workspace: ws, UserEmail: sess.UserEmail, CSRF: sess.CSRFToken}
	if u := ar.GetRedirectURI(); u.Host != "" {
		d.RedirectHost = u.Scheme + "://" + u.Host
	} else { // a native app's private-use scheme
		d.RedirectHost = u.Scheme + ":"
	}
	for _, sc := range consentScopes(ar) {
		d.Scopes = append(d.Scopes, scopeLine{sc, accountable.ScopeDescriptions[sc], slices.Contains(accountable.ScopesReachingEveryArea, sc)})
	}
	for name, values := range r.URL.Query() {
		if !slices.Contains(authorizeParams, name) { // not csrf, not decision: the user's answer is the user's
			continue
		}
		for _, v := range values {
			d.Params = append(d.Params, formField{name, v})
		}
	}
	slices.SortFunc(d.Params, func(a, b formField) int { return strings.Compare(a.Name, b.Name) })
	// The consent form's answer redirects to the client: the page's form-action allows it.
	writePageTo(w, http.StatusOK, consentTemplate, d, " "+d.RedirectHost)
}

// consentScopes are the scopes a consent grants: those requested, or, when the client
// asked for none, every resource scope (not offline_access, which must be asked for).
func consentScopes(ar fosite.AuthorizeRequester) []string {
	if req := ar.GetRequestedScopes(); len(req) > 0 {
		return req
	}
	return accountable.ResourceScopes
}

// consent is POST /oauth/authorize: the user's answer on the consent screen (the
// session's CSRF token required). Allowing issues the code for the session's user and
// workspace, bound to the requested resources (all of this service's when none was
// named); denying returns access_denied to the client.
func (s *Server) consent(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writePage(w, http.StatusBadRequest, oauthMessageTemplate, "The form could not be read.")
		return
	}
	sess, ok, err := s.browserSession(r)
	if err != nil {
		writePage(w, http.StatusServiceUnavailable, oauthMessageTemplate, msgPageUnavailable)
		return
	}
	if !ok || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(sess.CSRFToken)) != 1 {
		writePage(w, http.StatusForbidden, oauthMessageTemplate, "The form is not from this page (CSRF check failed) or the session ended; start the connection again from the client.")
		return
	}
	ar, ok := s.authorizeRequest(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	if d := r.PostForm["decision"]; len(d) != 1 || (d[0] != "allow" && d[0] != "deny") {
		writePage(w, http.StatusBadRequest, oauthMessageTemplate, "The answer of the consent form is not one answer; start the connection again from the client.")
		return
	}
	if r.PostForm.Get("decision") != "allow" {
		s.deps.OAuth.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint("The user declined the authorization."))
		return
	}
	client, err := s.deps.OAuth.Client(ctx, ar.GetClient().GetID())
	if err != nil {
		writePage(w, http.StatusServiceUnavailable, oauthMessageTemplate, "The client could not be read; try again.")
		return
	}
	for _, sc := range consentScopes(ar) {
		ar.GrantScope(sc)
	}
	resources := r.Form["resource"]
	if len(resources) == 0 {
		resources = s.deps.OAuth.Resources()
	}
	for _, res := range resources {
		ar.GrantAudience(strings.TrimRight(res, "/"))
	}
	resp, err := s.deps.OAuth.NewAuthorizeResponse(ctx, ar, s.deps.OAuth.NewSession(sess.UserID, sess.WorkspaceID, client.Name))
	if err != nil {
		s.deps.OAuth.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	resp.AddParameter("iss", s.cfg.SiteURL) // RFC 9207: the client checks whom the code is from
	s.deps.OAuth.WriteAuthorizeResponse(ctx, w, ar, resp)
}

// servesResource reports whether res names this service's API or MCP endpoint (a
// trailing slash aside).
func (s *Server) servesResource(res string) bool {
	return slices.Contains(s.deps.OAuth.Resources(), strings.TrimRight(res, "/"))
}

// token is POST /oauth/token: a code (with its PKCE verifier) or a refresh token for an
// access token. A resource named here must be this service's (the token stays bound to
// the resources of its consent).
//
// Nothing a client did not get from this server is looked up: a code or refresh token
// without this deployment's HMAC is invalid_grant at once (OAuthServer.Authentic), and
// a grant type the server does not serve is refused before the client is. A client
// secret is compared (bcrypt) only when admitted (clientSecretAdmission), and a correct
// one is remembered, so that a confidential client is never refused for the failures of
// others.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if r.Method == http.MethodPost && r.ParseForm() == nil {
		grant := r.PostForm.Get("grant_type")
		var credential string
		switch grant {
		case oauth.GrantAuthCode:
			credential = r.PostForm.Get("code")
		case oauth.GrantRefresh:
			credential = r.PostForm.Get("refresh_token")
		default:
			s.deps.OAuth.WriteAccessError(ctx, w, nil, fosite.ErrUnsupportedGrantType.WithHint("This server serves the authorization_code and refresh_token grants."))
			return
		}
		if !s.deps.OAuth.Authentic(ctx, credential) {
			s.deps.OAuth.WriteAccessError(ctx, w, nil, fosite.ErrInvalidGrant.WithHint("The "+grant+" was not issued by this server, or is malformed."))
			return
		}
	}
	admission, refused := s.clientSecretAdmission(r)
	ar, err := s.deps.OAuth.NewAccessRequest(oauth.WithSecretAdmission(ctx, admission), r, s.deps.OAuth.EmptySession())
	if *refused != nil {
		s.writeRefusal(w, r, *refused)
		return
	}
	if err != nil {
		s.deps.OAuth.WriteAccessError(ctx, w, ar, err)
		return
	}
	for _, res := range r.PostForm["resource"] {
		if !s.servesResource(res) {
			s.deps.OAuth.WriteAccessError(ctx, w, ar, errInvalidTarget(res))
			return
		}
	}
	resp, err := s.deps.OAuth.NewAccessResponse(ctx, ar)
	if errors.Is(err, fosite.ErrInvalidatedAuthorizeCode) { // exchanged at the same moment by another request
		err = fosite.ErrInvalidGrant.WithHint("The authorization code was already used.")
	}
	if err != nil {
		s.deps.OAuth.WriteAccessError(ctx, w, ar, err)
		return
	}
	s.deps.OAuth.WriteAccessResponse(ctx, w, ar, resp)
}

// revoke is POST /oauth/revoke (RFC 7009). A token this server did not issue is
// answered 200 at once, as RFC 7009 section 2.2 answers every invalid token, before the
// client is authenticated: nothing is looked up and no secret compared for it.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if r.Method == http.MethodPost && r.ParseForm() == nil && !s.deps.OAuth.Authentic(ctx, r.PostForm.Get("token")) {
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		return
	}
	admission, refused := s.clientSecretAdmission(r)
	err := s.deps.OAuth.NewRevocationRequest(oauth.WithSecretAdmission(ctx, admission), r)
	if *refused != nil {
		s.writeRefusal(w, r, *refused)
		return
	}
	s.deps.OAuth.WriteRevocationResponse(ctx, w, err)
}

// clientSecretBudget names the failure budget of a request's client authentication: its
// client address and the client it authenticates as (failures are charged to the pair, so
// that one address's failures neither lock a client out at other addresses nor other
// clients out at this one).
func (s *Server) clientSecretBudget(r *http.Request) string {
	id, _, ok := r.BasicAuth()
	if !ok {
		id = r.PostForm.Get("client_id")
	}
	if len(id) > 200 {
		id = id[:200]
	}
	return "client-secret " + s.clientOfHTTP(r) + " " + id
}

// clientSecretAdmission returns the admission of a request's client secret comparison
// (oauth.SecretAdmission): it takes a slot of the password-hash gate, its turns
// shared among client addresses, and a token of the pair's failure budget
// (clientSecretBudget), given back when the secret is correct. *refused is why it was
// not admitted, once asked.
func (s *Server) clientSecretAdmission(r *http.Request) (oauth.SecretAdmission, *error) {
	refused := new(error)
	return func() (func(bool), error) {
		budget, now := s.clientSecretBudget(r), time.Now()
		release, err := s.hashes.Acquire(r.Context(), s.clientOfHTTP(r))
		if err != nil {
			*refused = RateLimited(accountable.ECodeRateLimited, "Too many client secrets are being checked right now; retry in a moment.", time.Second)
			return nil, *refused
		}
		if ok, wait := s.clientSecretFailures.take(budget, now); !ok {
			release()
			*refused = RateLimited(accountable.ECodeRateLimited, "Too many failed client authentications from this address; retry later.", wait)
			return nil, *refused
		}
		return func(correct bool) {
			release()
			if correct {
				s.clientSecretFailures.refund(budget, now)
			}
		}, nil
	}, refused
}

// writeRefusal answers an OAuth endpoint's request that was not admitted: 429
// temporarily_unavailable with Retry-After (held past the address's prompt refusals).
func (s *Server) writeRefusal(w http.ResponseWriter, r *http.Request, err error) {
	s.holdRefusal(s.addressRefusals, s.clientOfHTTP(r))
	wait := time.Second
	var e *accountable.Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		wait = e.RetryAfter
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
	writeOAuthJSON(w, http.StatusTooManyRequests, oauthError{"temporarily_unavailable", e.Message})
}

// browserSession returns the live settings-page session of a browser's request; err is a
// failure to look it up (the store down), not its absence.
func (s *Server) browserSession(r *http.Request) (accountable.Session, bool, error) {
	if s.deps.Settings == nil {
		return accountable.Session{}, false, nil
	}
	token := s.sessionToken(func(name string) string {
		if ck, err := r.Cookie(name); err == nil {
			return ck.Value
		}
		return ""
	})
	if token == "" {
		return accountable.Session{}, false, nil
	}
	sess, err := s.lookupSession(r.Context(), token)
	if accountable.ErrorCode(err) == accountable.ECodeNotFound {
		return sess, false, nil
	}
	return sess, err == nil, err
}

const msgPageUnavailable = "The service cannot read its data right now; try again in a moment."

// writePage renders a page on a net/http response with the headers of every page (page).
func writePage(w http.ResponseWriter, status int, t *template.Template, data any) {
	writePageTo(w, status, t, data, "")
}

// writePageTo is writePage for a page whose form leads to formTarget too.
func writePageTo(w http.ResponseWriter, status int, t *template.Template, data any, formTarget string) {
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		status, b = http.StatusInternalServerError, strings.Builder{}
		b.WriteString("The page could not be rendered.")
	}
	for k, v := range pageHeaders(formTarget) {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

var consentTemplate = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Authorize {{.ClientName}} · Accountable</title>` + pageStyle + `</head><body>
<h1>Authorize {{.ClientName}}</h1>
<p><strong id="client-name">{{.ClientName}}</strong>{{if .ClientURI}} (<span class="muted">{{.ClientURI}}</span>){{end}} asks to act for you,
<strong>{{.UserEmail}}</strong>, in the workspace <strong id="workspace-name">{{.Workspace.Name}}</strong> <span class="muted">({{.Workspace.ID}})</span>.</p>
<p>Its changes are recorded on the workspace's ledger as an agent acting for you. After you allow it, it returns to <code>{{.RedirectHost}}</code>.</p>
<h2>It may</h2>
<ul id="scopes">{{range .Scopes}}<li><code>{{.Name}}</code>: {{.Description}}{{if .EveryArea}} <strong class="every-area">Not limited to events: it reaches everything recorded in the workspace.</strong>{{end}}</li>{{end}}</ul>
<form method="post" action="/oauth/authorize">
<input type="hidden" name="csrf" value="{{.CSRF}}">
{{range .Params}}<input type="hidden" name="{{.Name}}" value="{{.Value}}">
{{end}}<p><button type="submit" name="decision" value="allow" id="allow">Allow</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button></p>
</form>
<p class="muted">Only allow clients you started yourself. You can revoke access by signing out of the client; access tokens last minutes.</p>
</body></html>`))

var oauthMessageTemplate = template.Must(template.New("oauth-message").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Authorization · Accountable</title>` + pageStyle + `</head><body>
<p class="error" role="alert">{{.}}</p></body></html>`))

// remoteIP is the client address of a request served through the net/http adaptor.
func remoteIP(r *http.Request) net.IP {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return net.ParseIP(host)
}

func writeOAuthJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
