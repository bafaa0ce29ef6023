package accountable

import (
	"context"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// OAuth 2.1 for MCP clients (and any other client that cannot hold an API key): a client
// registers itself (RFC 7591), sends its user through the browser to sign in and consent,
// and gets an access token bound to this service (RFC 8707 resource), the user and one
// workspace, with the scopes the user granted. Access tokens are short-lived; with
// offline_access a refresh token comes too, rotated at each use.

// Scopes. A credential with a scope may call the operations of its family: "read" ones
// (GET) with family:read, the others with family:write. API keys and sessions have every
// scope (a key inherits the workspace access of its user); tokens have what the user
// granted.
const (
	ScopeWorkRead         = "work:read"
	ScopeWorkWrite        = "work:write"
	ScopeInitiativesRead  = "initiatives:read"
	ScopeInitiativesWrite = "initiatives:write"
	ScopeProcessesRead    = "processes:read"
	ScopeProcessesWrite   = "processes:write"
	ScopeEventsRead       = "events:read"
	ScopeEventsWrite      = "events:write"
	// ScopeOfflineAccess asks for a refresh token.
	ScopeOfflineAccess = "offline_access"
)

// Paths of the authorization server's endpoints, at the site root.
const (
	OAuthAuthorizePath = "/oauth/authorize"
	OAuthTokenPath     = "/oauth/token"
	OAuthRegisterPath  = "/oauth/register"
	OAuthRevokePath    = "/oauth/revoke"
)

// Prefixes of the OAuth tokens (the HMAC strategy of the authorization server's library):
// an access token is told from an API key by its prefix.
const (
	AccessTokenPrefix  = "ory_at_"
	RefreshTokenPrefix = "ory_rt_"
)

// ScopeFamily names the scopes of an area of the API ("work": work:read and work:write).
type ScopeFamily string

// Scope families.
const (
	ScopesWork        ScopeFamily = "work"
	ScopesInitiatives ScopeFamily = "initiatives"
	ScopesProcesses   ScopeFamily = "processes"
	ScopesEvents      ScopeFamily = "events"
)

// Scope returns the family's read or write scope.
func (f ScopeFamily) Scope(write bool) string {
	if write {
		return string(f) + ":write"
	}
	return string(f) + ":read"
}

// ResourceScopes are the scopes of the API's resources, in the order they are shown.
var ResourceScopes = []string{ScopeWorkRead, ScopeWorkWrite, ScopeInitiativesRead, ScopeInitiativesWrite,
	ScopeProcessesRead, ScopeProcessesWrite, ScopeEventsRead, ScopeEventsWrite}

// ScopesSupported are the scopes a client may ask for.
var ScopesSupported = append(slices.Clone(ResourceScopes), ScopeOfflineAccess)

// ScopeDescriptions say what each scope allows, for the consent screen (and the OpenAPI
// document's oauth2 scheme). They say what a grant reaches, not what its area is called:
// the event scopes are named after the ledger, but the ledger records every change of
// every area (ScopesReachingEveryArea).
var ScopeDescriptions = map[string]string{
	ScopeWorkRead:         "Read work, artifacts, receipts and projections",
	ScopeWorkWrite:        "Create and complete work, import receipts, record artifacts",
	ScopeInitiativesRead:  "Read initiatives, proposals, launches, runs and decisions",
	ScopeInitiativesWrite: "Propose, commit and launch initiatives; finalize runs; approve or decline decisions",
	ScopeProcessesRead:    "Read operating processes, handoffs, discovery runs, episodes and controllers",
	ScopeProcessesWrite:   "Declare processes, create and fulfil handoffs, run discovery, reconcile controllers",
	ScopeEventsRead: "Read the whole event ledger and verify it: every change in the workspace, of every area, with its " +
		"full content (work and its evidence, initiatives, decisions, processes, handoffs, receipts, members, keys and " +
		"connected clients), which is more than all the other read scopes together; list webhooks and their deliveries",
	ScopeEventsWrite: "Register webhooks, which send the workspace's events to any address the client names, from now on " +
		"and without asking again (a webhook for \"*\" sends every future event of every area, with its full content); " +
		"delete webhooks; start ledger verifications",
	ScopeOfflineAccess: "Stay connected: refresh access without signing in again",
}

// ScopesReachingEveryArea are the scopes whose grant is not bounded by their area: reading
// the ledger reads what every area recorded, and a webhook exports it. The consent screen
// marks them.
var ScopesReachingEveryArea = []string{ScopeEventsRead, ScopeEventsWrite}

// Scopes is a set of granted scopes; nil grants every scope (API keys, sessions).
type Scopes []string

// Allows reports whether the set holds scope (or is unrestricted).
func (s Scopes) Allows(scope string) bool { return s == nil || slices.Contains(s, scope) }

// ParseScopeParam splits an OAuth scope parameter and reports the scopes this service
// does not know.
func ParseScopeParam(param string) (scopes, unknown []string) {
	for _, sc := range strings.Fields(param) {
		if !slices.Contains(ScopesSupported, sc) {
			unknown = append(unknown, sc)
		} else if !slices.Contains(scopes, sc) {
			scopes = append(scopes, sc)
		}
	}
	return scopes, unknown
}

// AgentFor is the actorId of an agent acting for a user (an MCP client, an OAuth client):
// "<agent> for user <user id>", so the ledger says both who acted and for whom.
func AgentFor(agent, userID string) string { return agent + " for user " + userID }

// Token endpoint authentication methods a client may register with: a public client
// (none: it proves itself with PKCE) or a confidential one with a client secret.
const (
	ClientAuthNone   = "none"
	ClientAuthBasic  = "client_secret_basic"
	ClientAuthPost   = "client_secret_post"
	GrantAuthCode    = "authorization_code"
	GrantRefresh     = "refresh_token"
	ResponseTypeCode = "code"
)

// ClientRegistration is a client's registration request (RFC 7591 section 2), as far as
// this service uses it.
type ClientRegistration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name,omitempty"`
	ClientURI               string   `json:"client_uri,omitempty"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	ResponseTypes           []string `json:"response_types,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	Scope                   string   `json:"scope,omitempty"`
}

// Registration limits.
const (
	maxRedirectURIs     = 10
	maxClientNameLength = 100
	maxURILength        = 2000
)

// Normalize fills the defaults of RFC 7591 (authorization_code, code,
// client_secret_basic) and names a nameless client after its first redirect's host.
func (r *ClientRegistration) Normalize() {
	if len(r.GrantTypes) == 0 {
		r.GrantTypes = []string{GrantAuthCode}
	}
	if len(r.ResponseTypes) == 0 {
		r.ResponseTypes = []string{ResponseTypeCode}
	}
	if r.TokenEndpointAuthMethod == "" {
		r.TokenEndpointAuthMethod = ClientAuthBasic
	}
	r.ClientName = strings.TrimSpace(r.ClientName)
	if r.ClientName == "" && len(r.RedirectURIs) > 0 {
		if u, err := url.Parse(r.RedirectURIs[0]); err == nil {
			r.ClientName = u.Scheme + "://" + u.Host
		}
	}
}

// Validate checks a normalized registration: redirect URIs are absolute, without
// fragment, and either https, http on a loopback address (a native app's local callback,
// RFC 8252) or a private-use scheme (com.example.app:/cb); only the authorization code
// grant (and refresh) with response type code.
func (r ClientRegistration) Validate() error {
	var issues []Issue
	if len(r.RedirectURIs) == 0 {
		issues = append(issues, Issue{Path: "redirect_uris", Message: "at least one redirect URI is required"})
	}
	if len(r.RedirectURIs) > maxRedirectURIs {
		issues = append(issues, Issue{Path: "redirect_uris", Message: "at most 10 redirect URIs"})
	}
	for i, raw := range r.RedirectURIs {
		if msg := redirectURIProblem(raw); msg != "" {
			issues = append(issues, Issue{Path: "redirect_uris[" + strconv.Itoa(i) + "]", Message: msg})
		}
	}
	for _, g := range r.GrantTypes {
		if g != GrantAuthCode && g != GrantRefresh {
			issues = append(issues, Issue{Path: "grant_types", Message: "only authorization_code and refresh_token are supported, not " + g})
		}
	}
	if !slices.Contains(r.GrantTypes, GrantAuthCode) {
		issues = append(issues, Issue{Path: "grant_types", Message: "must include authorization_code"})
	}
	for _, t := range r.ResponseTypes {
		if t != ResponseTypeCode {
			issues = append(issues, Issue{Path: "response_types", Message: "only code is supported, not " + t})
		}
	}
	switch r.TokenEndpointAuthMethod {
	case ClientAuthNone, ClientAuthBasic, ClientAuthPost:
	default:
		issues = append(issues, Issue{Path: "token_endpoint_auth_method", Message: "must be none, client_secret_basic or client_secret_post"})
	}
	if len(r.ClientName) > maxClientNameLength {
		issues = append(issues, Issue{Path: "client_name", Message: "at most 100 characters"})
	}
	// The name is shown on the consent screen and is the agent the ledger records: no
	// control, format or bidirectional characters to disguise it, and not a name that
	// would read as acting for someone in particular.
	if strings.IndexFunc(r.ClientName, func(c rune) bool { return unicode.IsControl(c) || unicode.Is(unicode.Cf, c) }) >= 0 {
		issues = append(issues, Issue{Path: "client_name", Message: "must not contain control or formatting characters"})
	}
	if strings.Contains(strings.ToLower(r.ClientName), " for user ") {
		issues = append(issues, Issue{Path: "client_name", Message: `must not contain " for user "`})
	}
	if u := r.ClientURI; u != "" {
		if p, err := url.Parse(u); err != nil || len(u) > maxURILength || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			issues = append(issues, Issue{Path: "client_uri", Message: "must be an http(s) URL"})
		}
	}
	if _, unknown := ParseScopeParam(r.Scope); len(unknown) > 0 {
		issues = append(issues, Issue{Path: "scope", Message: "unknown scopes: " + strings.Join(unknown, " ")})
	}
	if len(issues) > 0 {
		return ValidationError(issues...)
	}
	return nil
}

func redirectURIProblem(raw string) string {
	if len(raw) > maxURILength {
		return "at most 2000 characters"
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return "must be an absolute URI"
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return "must not have a fragment"
	}
	switch u.Scheme {
	case "https":
		if u.Host == "" {
			return "must name a host"
		}
	case "http":
		if !IsLoopbackHost(u.Hostname()) {
			return "http is allowed only on a loopback address (localhost, 127.0.0.1, [::1]); use https"
		}
	case "javascript", "data", "file", "vbscript":
		return "scheme " + u.Scheme + " is not allowed"
	default: // a private-use scheme of a native app: reverse-domain, with a dot (RFC 8252 section 7.1)
		if !strings.Contains(u.Scheme, ".") {
			return "a private-use scheme must be a reverse domain name (com.example.app)"
		}
	}
	return ""
}

// IsLoopbackHost reports whether host is localhost or a loopback address.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// OAuthClient is a registered client.
type OAuthClient struct {
	ID                      string
	Name                    string
	ClientURI               string
	RedirectURIs            []string
	GrantTypes              []string
	ResponseTypes           []string
	TokenEndpointAuthMethod string
	// SecretHash is the bcrypt hash of a confidential client's secret (nil: public).
	SecretHash []byte
	// Scope is what the client registered for ("": any scope).
	Scope     string
	CreatedAt time.Time
}

// OAuthToken is what an access token stands for: who, where, with what, until when.
type OAuthToken struct {
	ClientID    string
	ClientName  string
	UserID      string
	WorkspaceID string
	Scopes      Scopes
}

// OAuthGrant is a stored authorization code, access token, refresh token or PKCE request
// (store side): Signature is the SHA-256 of the token's signature (tokens are never kept),
// RequestID the grant the token belongs to (its family: every token rotated from one
// consent), Request the serialized request the token stands for.
type OAuthGrant struct {
	Signature   []byte
	Kind        string
	RequestID   string
	ClientID    string
	UserID      string
	WorkspaceID string
	Request     []byte
	Active      bool
	ExpiresAt   time.Time
}

// Kinds of OAuthGrant.
const (
	GrantKindCode    = "code"
	GrantKindAccess  = "access"
	GrantKindRefresh = "refresh"
	GrantKindPKCE    = "pkce"
)

// SecretAdmission is asked before a client secret is compared with its stored hash
// (bcrypt: tens of milliseconds of a core): it returns done, to be called with the
// comparison's outcome once it has run, or why it may not run now. The HTTP side puts one
// in the context of each token and revocation request (its failure budget and the
// password-hash gate); the authorization server asks it.
type SecretAdmission func() (done func(correct bool), err error)

type secretAdmissionKey struct{}

// WithSecretAdmission returns ctx carrying admit.
func WithSecretAdmission(ctx context.Context, admit SecretAdmission) context.Context {
	return context.WithValue(ctx, secretAdmissionKey{}, admit)
}

// SecretAdmissionFrom returns the admission ctx carries, if any.
func SecretAdmissionFrom(ctx context.Context) (SecretAdmission, bool) {
	a, ok := ctx.Value(secretAdmissionKey{}).(SecretAdmission)
	return a, ok && a != nil
}
