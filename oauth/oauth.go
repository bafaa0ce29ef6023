// Package oauth is the authorization server of MCP clients: OAuth 2.1 (authorization code
// with PKCE S256 only, rotating refresh tokens with reuse detection, dynamic client
// registration) on ory/fosite, the maintained OAuth 2 framework, with its grants kept in
// PostgreSQL by the store. Token handling (generation, HMAC validation, PKCE, rotation,
// revocation of a family on reuse) is fosite's; this package gives it storage, a session
// that names the user and workspace, and the service's rules (resources, scopes).
//
// The HTTP side (endpoints, sign-in, consent screen) is in package api.
package oauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/token/hmac"

	"github.com/accountablework/accountable"
)

// Config configures the authorization server.
type Config struct {
	// Issuer is the site URL: the authorization server's identifier (RFC 8414).
	Issuer string
	// Resources are the identifiers of the protected resources tokens may be bound to
	// (RFC 8707): the API (the site URL) and the MCP endpoint.
	Resources []string
	// Secret keys the HMAC of tokens (at least 32 bytes). Every process of a deployment
	// needs the same one.
	Secret []byte
	// Lifespans (defaults: access 15 minutes, refresh 30 days, authorization code 5
	// minutes).
	AccessTokenLifespan   time.Duration
	RefreshTokenLifespan  time.Duration
	AuthorizeCodeLifespan time.Duration
}

// Store keeps clients and grants (store.DB).
type Store interface {
	BeginOAuthTx(ctx context.Context) (context.Context, error)
	CommitOAuthTx(ctx context.Context) error
	RollbackOAuthTx(ctx context.Context) error
	CreateOAuthClient(ctx context.Context, c accountable.OAuthClient) error
	OAuthClient(ctx context.Context, id string) (accountable.OAuthClient, error)
	CreateOAuthGrant(ctx context.Context, g accountable.OAuthGrant) error
	AuthorizeOAuthCode(ctx context.Context, g accountable.OAuthGrant, clientName string, scopes, resources []string) error
	OAuthGrant(ctx context.Context, kind string, signature []byte) (accountable.OAuthGrant, error)
	DeactivateOAuthGrant(ctx context.Context, kind string, signature []byte) (bool, error)
	DeleteOAuthGrant(ctx context.Context, kind string, signature []byte) error
	DeactivateOAuthFamily(ctx context.Context, kind, requestID string) error
	DeleteOAuthFamily(ctx context.Context, kind, requestID string) error
}

// Server is the authorization server: fosite's provider (authorize, token, revocation
// endpoints) and what the API needs besides.
type Server struct {
	fosite.OAuth2Provider
	cfg    Config
	fosite *fosite.Config
	store  Store
	// enigma signs and checks tokens' HMAC (the strategy fosite's is built on).
	enigma *hmac.HMACStrategy
}

// MinSecretLength is the shortest token secret accepted.
const MinSecretLength = 32

// New builds the authorization server.
func New(cfg Config, st Store) (*Server, error) {
	if len(cfg.Secret) < MinSecretLength {
		return nil, errors.New("oauth: the token secret must be at least 32 bytes")
	}
	if cfg.AccessTokenLifespan <= 0 {
		cfg.AccessTokenLifespan = 15 * time.Minute
	}
	if cfg.RefreshTokenLifespan <= 0 {
		cfg.RefreshTokenLifespan = 30 * 24 * time.Hour
	}
	if cfg.AuthorizeCodeLifespan <= 0 {
		cfg.AuthorizeCodeLifespan = 5 * time.Minute
	}
	fc := &fosite.Config{
		AccessTokenLifespan:   cfg.AccessTokenLifespan,
		RefreshTokenLifespan:  cfg.RefreshTokenLifespan,
		AuthorizeCodeLifespan: cfg.AuthorizeCodeLifespan,
		GlobalSecret:          cfg.Secret,
		// OAuth 2.1: PKCE for every client, S256 only (plain is refused).
		EnforcePKCE:                    true,
		EnablePKCEPlainChallengeMethod: false,
		// state is the client's opaque value (RFC 6749 section 4.1.1), of any length: no
		// standard sets a minimum (fosite's default of 8 characters is its own), and with
		// PKCE required it is not what protects the flow (RFC 9700 section 4.7.1). 1 is
		// the lowest fosite takes (0 means its default); a request without state at all is
		// NewAuthorizeRequest's to accept.
		MinParameterEntropy: 1,
		// A refresh token only with offline_access.
		RefreshTokenScopes: []string{accountable.ScopeOfflineAccess},
		ScopeStrategy:      fosite.ExactScopeStrategy,
		AccessTokenIssuer:  cfg.Issuer,
		TokenURL:           cfg.Issuer + accountable.OAuthTokenPath,
		// Client secrets are bcrypt hashes; a lower cost than fosite's default keeps a
		// confidential client's token request around 50 ms.
		HashCost: 10,
	}
	fc.ClientSecretsHasher = newSecretHasher(fc)
	s := &Server{cfg: cfg, fosite: fc, store: st, enigma: &hmac.HMACStrategy{Config: fc}}
	s.OAuth2Provider = compose.Compose(fc, &grants{store: st, server: s}, oauth2.NewHMACSHAStrategy(s.enigma, fc),
		compose.OAuth2AuthorizeExplicitFactory,
		compose.OAuth2RefreshTokenGrantFactory,
		compose.OAuth2PKCEFactory,
		compose.OAuth2TokenIntrospectionFactory,
		compose.OAuth2TokenRevocationFactory,
	)
	return s, nil
}

// A request without state. OAuth 2.1 makes state optional where PKCE is used (and it is
// required here): the official MCP TypeScript SDK sends none unless its host gives one.
// fosite refuses a state shorter than MinParameterEntropy, and 0 cannot be configured,
// so a request that sends none (or an empty one, which RFC 6749 section 3.1 takes as
// none) is checked by fosite with a stand-in, which is then taken out again, from the
// request and its form (which the authorization code's grant keeps): the request has no
// state. The redirect back then carries none either (RFC 6749 section 4.1.2: state is
// returned when the request had one); fosite writes an empty one, which
// WriteAuthorizeResponse and WriteAuthorizeError leave out.

// stateStandIn is the state fosite checks a request without one with; it never leaves
// NewAuthorizeRequest.
const stateStandIn = "no-state-sent"

// NewAuthorizeRequest is fosite's, also for a request without state (see above).
func (s *Server) NewAuthorizeRequest(ctx context.Context, r *http.Request) (fosite.AuthorizeRequester, error) {
	// fosite reads the form the same way; a form it cannot read, it refuses itself.
	if err := r.ParseMultipartForm(1 << 20); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		return s.OAuth2Provider.NewAuthorizeRequest(ctx, r)
	}
	if r.Form.Get("state") != "" {
		return s.OAuth2Provider.NewAuthorizeRequest(ctx, r)
	}
	r.Form.Set("state", stateStandIn)
	ar, err := s.OAuth2Provider.NewAuthorizeRequest(ctx, r)
	r.Form.Del("state")
	req, ok := ar.(*fosite.AuthorizeRequest)
	if !ok { // not fosite's own request type: the stand-in cannot be taken out of it
		return ar, fosite.ErrServerError.WithDebug("oauth: an authorization request of another type")
	}
	req.State = ""
	req.Form.Del("state")
	return req, err
}

// WriteAuthorizeResponse is fosite's, without the empty state of a request that had none.
func (s *Server) WriteAuthorizeResponse(ctx context.Context, rw http.ResponseWriter, ar fosite.AuthorizeRequester, resp fosite.AuthorizeResponder) {
	if ar.GetState() == "" {
		resp.GetParameters().Del("state")
	}
	s.OAuth2Provider.WriteAuthorizeResponse(ctx, rw, ar, resp)
}

// WriteAuthorizeError is fosite's, without the empty state of a request that had none.
func (s *Server) WriteAuthorizeError(ctx context.Context, rw http.ResponseWriter, ar fosite.AuthorizeRequester, err error) {
	if ar != nil && ar.GetState() == "" {
		rw = stateless{rw}
	}
	s.OAuth2Provider.WriteAuthorizeError(ctx, rw, ar, err)
}

// stateless takes the empty state fosite adds to an error's redirect out of it, as the
// redirect is sent.
type stateless struct{ http.ResponseWriter }

func (w stateless) WriteHeader(status int) {
	if loc := w.Header().Get("Location"); loc != "" {
		w.Header().Set("Location", withoutEmptyState(loc))
	}
	w.ResponseWriter.WriteHeader(status)
}

// withoutEmptyState removes an empty state parameter from the query of a redirect (the
// only response mode served: a registered client cannot ask fosite for another).
func withoutEmptyState(location string) string {
	u, err := url.Parse(location)
	if err != nil {
		return location
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil || len(q["state"]) != 1 || q["state"][0] != "" {
		return location
	}
	q.Del("state")
	u.RawQuery = q.Encode()
	return u.String()
}

// Resources are the identifiers tokens may be bound to.
func (s *Server) Resources() []string { return s.cfg.Resources }

// Session is what a grant stands for besides its scopes: the user (Subject), the
// workspace they consented in and the client's name (the agent the ledger records).
type Session struct {
	fosite.DefaultSession
	WorkspaceID string `json:"workspace_id"`
	ClientName  string `json:"client_name"`
}

// Clone copies the session (fosite keeps one per request it derives).
func (s *Session) Clone() fosite.Session {
	if s == nil {
		return nil
	}
	c := *s
	c.DefaultSession = *s.DefaultSession.Clone().(*fosite.DefaultSession)
	return &c
}

// NewSession is the session of a consent: userID acting through clientName in
// workspaceID.
func (s *Server) NewSession(userID, workspaceID, clientName string) fosite.Session {
	return newSession(userID, workspaceID, clientName)
}

// EmptySession is a session for fosite to fill from a stored grant.
func (s *Server) EmptySession() fosite.Session { return newSession("", "", "") }

func newSession(userID, workspaceID, clientName string) *Session {
	return &Session{DefaultSession: fosite.DefaultSession{Subject: userID, ExpiresAt: map[fosite.TokenType]time.Time{}},
		WorkspaceID: workspaceID, ClientName: clientName}
}

// AccessToken resolves an access token: not_found when it is unknown, expired, revoked,
// bound to another resource, or its user has left the workspace; a store failure is
// returned as it is (ledger_unavailable, not a 401).
func (s *Server) AccessToken(ctx context.Context, token string) (accountable.OAuthToken, error) {
	if !strings.HasPrefix(token, accountable.AccessTokenPrefix) || !s.Authentic(ctx, token) {
		return accountable.OAuthToken{}, accountable.NotFound("access token")
	}
	_, ar, err := s.IntrospectToken(ctx, token, fosite.AccessToken, s.EmptySession())
	if err != nil {
		var ae *accountable.Error
		if errors.As(err, &ae) && ae.Code != accountable.ECodeNotFound {
			return accountable.OAuthToken{}, ae
		}
		return accountable.OAuthToken{}, accountable.NotFound("access token")
	}
	sess, ok := ar.GetSession().(*Session)
	if !ok || sess.Subject == "" || sess.WorkspaceID == "" {
		return accountable.OAuthToken{}, accountable.NotFound("access token")
	}
	// Bound to this service: its API or its MCP endpoint. A token consented for the MCP
	// endpoint works on the API too, deliberately: every tool is an API operation, so
	// either audience grants the same operations (those of its scopes); what the binding
	// keeps out is a token for another resource (or for this service under another site
	// URL).
	if !slices.ContainsFunc(ar.GetGrantedAudience(), func(a string) bool { return slices.Contains(s.cfg.Resources, a) }) {
		return accountable.OAuthToken{}, accountable.NotFound("access token")
	}
	scopes := accountable.Scopes{} // never nil: nil would grant every scope
	for _, sc := range ar.GetGrantedScopes() {
		if sc != accountable.ScopeOfflineAccess {
			scopes = append(scopes, sc)
		}
	}
	return accountable.OAuthToken{ClientID: ar.GetClient().GetID(), ClientName: sess.ClientName, UserID: sess.Subject,
		WorkspaceID: sess.WorkspaceID, Scopes: scopes}, nil
}

// Client returns a registered client.
func (s *Server) Client(ctx context.Context, id string) (accountable.OAuthClient, error) {
	return s.store.OAuthClient(ctx, id)
}

// RegisterClient registers a client (RFC 7591): reg is normalized and validated, and a
// confidential client gets a secret, returned this once (only its bcrypt hash is kept).
func (s *Server) RegisterClient(ctx context.Context, reg ClientRegistration) (accountable.OAuthClient, string, error) {
	reg.Normalize()
	if err := reg.Validate(); err != nil {
		return accountable.OAuthClient{}, "", err
	}
	c := accountable.OAuthClient{ID: "mcp_" + uuid.NewString(), Name: reg.ClientName, ClientURI: reg.ClientURI,
		RedirectURIs: reg.RedirectURIs, GrantTypes: reg.GrantTypes, ResponseTypes: reg.ResponseTypes,
		TokenEndpointAuthMethod: reg.TokenEndpointAuthMethod, Scope: reg.Scope, CreatedAt: accountable.Now()}
	var secret string
	if c.TokenEndpointAuthMethod != ClientAuthNone {
		b := make([]byte, 32)
		rand.Read(b) // never fails (crypto/rand)
		secret = base64.RawURLEncoding.EncodeToString(b)
		hash, err := s.fosite.GetSecretsHasher(ctx).Hash(ctx, []byte(secret))
		if err != nil {
			return accountable.OAuthClient{}, "", err
		}
		c.SecretHash = hash
	}
	if err := s.store.CreateOAuthClient(ctx, c); err != nil {
		return accountable.OAuthClient{}, "", err
	}
	return c, secret, nil
}

// fositeClient is a registered client as fosite sees it: allowed the scopes it
// registered for (every scope when it named none) and the service's resources.
func (s *Server) fositeClient(c accountable.OAuthClient) fosite.Client {
	scopes := accountable.ScopesSupported
	if c.Scope != "" {
		scopes, _ = parseScopeParam(c.Scope)
	}
	return &fosite.DefaultClient{ID: c.ID, Secret: c.SecretHash, RedirectURIs: c.RedirectURIs, GrantTypes: c.GrantTypes,
		ResponseTypes: c.ResponseTypes, Scopes: scopes, Audience: s.cfg.Resources,
		Public: c.TokenEndpointAuthMethod == ClientAuthNone}
}
