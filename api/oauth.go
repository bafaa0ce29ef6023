package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/ory/fosite"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/oauth"
)

// OAuthServer is the authorization server (package oauth) as the API uses it: fosite's
// provider for the protocol endpoints, and the service's side of tokens and clients.
type OAuthServer interface {
	fosite.OAuth2Provider
	// AccessToken resolves an access token: not_found when it is unknown, expired or
	// revoked.
	AccessToken(ctx context.Context, token string) (accountable.OAuthToken, error)
	Client(ctx context.Context, id string) (accountable.OAuthClient, error)
	RegisterClient(ctx context.Context, reg oauth.ClientRegistration) (accountable.OAuthClient, string, error)
	// NewSession is the session of a consent; EmptySession one to fill from a grant.
	NewSession(userID, workspaceID, clientName string) fosite.Session
	EmptySession() fosite.Session
	// Resources are the identifiers tokens may be bound to (RFC 8707).
	Resources() []string
	// Authentic reports whether a token or code carries this deployment's HMAC (no query).
	Authentic(ctx context.Context, token string) bool
}

// bearerAccessToken returns the OAuth access token of an Authorization header, when it
// carries one (rather than an API key).
func bearerAccessToken(auth string) (string, bool) {
	token, ok := bearerCredential(auth)
	return token, ok && strings.HasPrefix(token, accountable.AccessTokenPrefix)
}

const msgInvalidToken = "Invalid, expired or revoked access token. Refresh it, or authorize again."

// verifyAccessToken returns the principal of an OAuth access token: its user, acting
// through the client (an agent, on the ledger) in the workspace the user consented to,
// with the scopes they granted. A token this deployment did not sign is refused without
// a query (OAuthServer.Authentic); one it signed is looked up whatever its address's
// failures, so a valid token is never refused for others' failures (a dead one can only
// be sent by whoever held it, at one lookup a request).
func (s *Server) verifyAccessToken(c *fiber.Ctx, token string) (accountable.Principal, error) {
	ctx, cancel := s.lookupContext(c)
	defer cancel()
	t, err := s.deps.OAuth.AccessToken(ctx, token)
	if accountable.ErrorCode(err) == accountable.ECodeNotFound {
		return accountable.Principal{}, errUnauthorized{msgInvalidToken}
	}
	if err != nil {
		return accountable.Principal{}, err
	}
	return accountable.Principal{UserID: t.UserID, WorkspaceID: t.WorkspaceID, KeyID: "oauth:" + t.ClientID + ":" + t.UserID,
		AgentName: accountable.AgentFor(t.ClientName, t.UserID), Scopes: t.Scopes, TokenBound: true}, nil
}

// MCPPath is the MCP endpoint (Streamable HTTP), at the site root.
const MCPPath = "/mcp"

// Paths of the protected resource metadata (RFC 9728): the API's at the root, the MCP
// endpoint's with its path appended.
const (
	ProtectedResourcePath = "/.well-known/oauth-protected-resource"
	AuthServerMetaPath    = "/.well-known/oauth-authorization-server"
)

// resourceMetadataURL is the metadata URL of the resource that path belongs to.
func (s *Server) resourceMetadataURL(path string) string {
	if path == MCPPath || strings.HasPrefix(path, MCPPath+"/") {
		return s.cfg.SiteURL + ProtectedResourcePath + MCPPath
	}
	return s.cfg.SiteURL + ProtectedResourcePath
}

// authenticateMCP authenticates a request to /mcp: a bearer credential only (an OAuth
// access token, or the API key of a headless agent; not the session cookie), whose 401
// points the client to the MCP endpoint's resource metadata.
func (s *Server) authenticateMCP(c *fiber.Ctx) error {
	p, err := s.verifyBearer(c)
	if err != nil {
		return err
	}
	c.Locals(localPrincipal, p)
	return c.Next()
}

// netHTTP serves a net/http handler (fosite's endpoints, the MCP SDK) on Fiber. Fiber's
// adaptor gives the handler fasthttp's RequestCtx as its request's context; that context
// must not reach database calls or goroutines (fasthttp reuses it once the handler
// returns, and its Done reads server state without synchronisation: the race detector
// caught a pgx context watcher reading it while the server shut down). The handler gets
// instead a context of its own, bounded by the command deadline, carrying the request's
// values it needs (keys: the Fiber Locals to copy).
func (s *Server) netHTTP(h http.Handler, keys ...string) fiber.Handler {
	detached := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(context.Background(), s.deadline(DeadlineCommand))
		defer cancel()
		for _, k := range keys {
			if v := r.Context().Value(k); v != nil {
				ctx = context.WithValue(ctx, k, v)
			}
		}
		h.ServeHTTP(w, r.WithContext(ctx))
	})
	return adaptor.HTTPHandler(detached)
}
