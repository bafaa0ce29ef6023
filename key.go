package accountable

import "time"

// APIKeyPrefix begins every API key (package tokens makes, parses and hashes them).
const APIKeyPrefix = "svk_"

// APIKey is a stored key (never its secret).
type APIKey struct {
	ID          string
	Prefix      string
	Name        string
	UserID      string
	UserEmail   string
	WorkspaceID string
	// AgentName is set on an agent's key: the agent acts for the user, and the ledger
	// records its commands as the agent's.
	AgentName  *string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	// MemberOf are the workspaces the key's user is a member of, as read for
	// authentication (its own workspace among them: a key whose user left it is not
	// found); nil in listings.
	MemberOf []string
	// WorkspaceName is the name of the key's own workspace, in listings that show it.
	WorkspaceName string
}

// Principal returns who a request authenticated with k acts as, in k's own workspace.
func (k APIKey) Principal() Principal {
	p := Principal{UserID: k.UserID, UserEmail: k.UserEmail, WorkspaceID: k.WorkspaceID, KeyID: k.ID, KeyPrefix: k.Prefix,
		MemberOf: k.MemberOf}
	if k.AgentName != nil {
		p.AgentName = *k.AgentName
	}
	return p
}

// Workspace is the unit every resource and event is scoped to.
type Workspace struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// User is a person (or the account of an agent) that holds keys.
type User struct {
	ID        string
	Email     string
	CreatedAt time.Time
}

// Ledger vocabulary of access grants: creating a workspace, a user, a membership or a key,
// and revoking a key, are accountable changes like any other.
const (
	AggregateWorkspace    = "workspace"
	AggregateUser         = "user"
	AggregateAPIKey       = "api_key"
	EventWorkspaceCreated = "workspace.created"
	EventMemberAdded      = "workspace.member_added"
	EventUserCreated      = "user.created"
	EventAPIKeyCreated    = "api_key.created"
	EventAPIKeyRevoked    = "api_key.revoked"
	// EventMemberRemoved: the user is no longer a member; every credential of theirs
	// stops acting in the workspace at once.
	EventMemberRemoved = "workspace.member_removed"
	// EventOAuthClientAuthorized: a user consented to an OAuth client (an MCP client)
	// acting for them in the workspace.
	EventOAuthClientAuthorized = "oauth.client_authorized"
)

// UserRef names a user in responses.
type UserRef struct {
	ID    string `json:"id" format:"uuid"`
	Email string `json:"email"`
}

// WorkspaceRef names a workspace in responses.
type WorkspaceRef struct {
	ID   string `json:"id" format:"uuid"`
	Name string `json:"name"`
}

// Credential describes the key a request was made with (GET /credential).
type Credential struct {
	KeyPrefix  string       `json:"key_prefix" pattern:"^svk_[0-9a-f]{8}$"`
	Name       string       `json:"name"`
	Kind       string       `json:"kind"`
	AgentName  *string      `json:"agent_name"`
	User       UserRef      `json:"user"`
	Workspace  WorkspaceRef `json:"workspace"`
	CreatedAt  Time         `json:"created_at"`
	LastUsedAt *Time        `json:"last_used_at"`
}

// Key kinds: a person's key, or an agent's (acting for a person).
const (
	KeyKindHuman = "human"
	KeyKindAgent = "agent"
)

// Kind returns the kind of k.
func (k APIKey) Kind() string {
	if k.AgentName != nil {
		return KeyKindAgent
	}
	return KeyKindHuman
}
