package payload

import "github.com/accountablework/accountable"

// The payload types of these events (Types).
func init() {
	describes[WorkspaceCreated](accountable.EventWorkspaceCreated)
	describes[UserCreated](accountable.EventUserCreated)
	describes[MemberAdded](accountable.EventMemberAdded)
	describes[MemberRemoved](accountable.EventMemberRemoved)
	describes[APIKeyCreated](accountable.EventAPIKeyCreated)
	describes[APIKeyRevoked](accountable.EventAPIKeyRevoked)
	describes[OAuthClientAuthorized](accountable.EventOAuthClientAuthorized)
}

// Payloads of the access-grant events: access to a workspace is an accountable change.
type (
	// WorkspaceCreated is the payload of workspace.created.
	WorkspaceCreated struct {
		WorkspaceID string `json:"workspace_id"`
		Name        string `json:"name"`
	}
	// UserCreated is the payload of user.created.
	UserCreated struct {
		UserID string `json:"user_id"`
		Email  string `json:"email"`
	}
	// MemberAdded is the payload of workspace.member_added.
	MemberAdded struct {
		UserID string `json:"user_id"`
		Role   string `json:"role"`
	}
	// APIKeyCreated is the payload of api_key.created (never the key, nor its hash).
	APIKeyCreated struct {
		KeyID     string  `json:"key_id"`
		KeyPrefix string  `json:"key_prefix"`
		Name      string  `json:"name"`
		UserID    string  `json:"user_id"`
		Kind      string  `json:"kind"`
		AgentName *string `json:"agent_name"`
	}
	// MemberRemoved is the payload of workspace.member_removed.
	MemberRemoved struct {
		UserID string `json:"user_id"`
	}
	// APIKeyRevoked is the payload of api_key.revoked.
	APIKeyRevoked struct {
		KeyID     string `json:"key_id"`
		KeyPrefix string `json:"key_prefix"`
		// RevokedFrom is the workspace whose settings page revoked the key, when that is
		// not the key's own (a member's key acts in every workspace of the member).
		RevokedFrom string `json:"revoked_from_workspace_id,omitempty"`
	}
	// OAuthClientAuthorized is the payload of oauth.client_authorized: the ledger's record
	// of a consent.
	OAuthClientAuthorized struct {
		GrantID    string   `json:"grant_id"`
		ClientID   string   `json:"client_id"`
		ClientName string   `json:"client_name"`
		UserID     string   `json:"user_id"`
		Scopes     []string `json:"scopes"`
		Resources  []string `json:"resources"`
	}
)
