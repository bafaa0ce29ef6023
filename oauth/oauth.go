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
func (s *Server) RegisterClient(ctx context.Context, reg accountable.ClientRegistration) (accountable.OAuthClient, string, error) {
	reg.Normalize()
	if err := reg.Validate(); err != nil {
		return accountable.OAuthClient{}, "", err
	}
	c := accountable.OAuthClient{ID: "mcp_" + uuid.NewString(), Name: reg.ClientName, ClientURI: reg.ClientURI,
		RedirectURIs: reg.RedirectURIs, GrantTypes: reg.GrantTypes, ResponseTypes: reg.ResponseTypes,
		TokenEndpointAuthMethod: reg.TokenEndpointAuthMethod, Scope: reg.Scope, CreatedAt: accountable.Now()}
	var secret string
	if c.TokenEndpointAuthMethod != accountable.ClientAuthNone {
		b := make([]byte, 32)
		rand.Read(b) //nolint:errcheck // never fails (crypto/rand)
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
		scopes, _ = accountable.ParseScopeParam(c.Scope)
	}
	return &fosite.DefaultClient{ID: c.ID, Secret: c.SecretHash, RedirectURIs: c.RedirectURIs, GrantTypes: c.GrantTypes,
		ResponseTypes: c.ResponseTypes, Scopes: scopes, Audience: s.cfg.Resources,
		Public: c.TokenEndpointAuthMethod == accountable.ClientAuthNone}
}
