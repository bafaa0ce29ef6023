package accountable

import (
	"slices"
	"time"
)

// OAuth 2.1 for MCP clients (and any other client that cannot hold an API key): a client
// registers itself (RFC 7591), sends its user through the browser to sign in and consent,
// and gets an access token bound to this service (RFC 8707 resource), the user and one
// workspace, with the scopes the user granted. Access tokens are short-lived; with
// offline_access a refresh token comes too, rotated at each use. The root names the
// scopes and what is stored of clients, tokens and grants; the protocol (registration and
// its rules, the authorization server) is package oauth's.

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

// AgentFor is the actorId of an agent acting for a user (an MCP client, an OAuth client):
// "<agent> for user <user id>", so the ledger says both who acted and for whom.
func AgentFor(agent, userID string) string { return agent + " for user " + userID }

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
