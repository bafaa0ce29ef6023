// Package accountable holds the domain of the Accountable Work Service: its types, enums,
// identifiers, error codes and context helpers. It imports the standard library only; the
// store, api, planner, activities, workflows and worker packages are adapters around it.
package accountable

import "strings"

// APIVersion is the constant meta.apiVersion of every success envelope.
const APIVersion = "1"

// SchemaVersion is the schemaVersion carried by resource schemas and ledger events.
const SchemaVersion = "1.0.0"

// ContractDates are the documented contract dates a client may pin with the Svc-Version
// header. The first is the default applied when the header is absent.
var ContractDates = []string{"2026-11-22"}

// UUIDPattern is the form of ids: a UUID in its canonical hyphenated text form.
const UUIDPattern = `^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`

// ValidUUID reports whether s matches UUIDPattern. (Checked by hand: every request checks
// several ids, and a regular expression costs more than the check; a test keeps the two
// in agreement.)
func ValidUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// NormalizeUUID lower-cases a valid UUID so ids compare and hash the same however they
// were written.
func NormalizeUUID(s string) string { return strings.ToLower(s) }

// Principal is who a request acts as: the user behind an API key and the workspace the
// request is scoped to.
type Principal struct {
	UserID      string
	UserEmail   string
	WorkspaceID string
	KeyID       string
	KeyPrefix   string
	// AgentName is set when the key is an agent's: its commands are recorded as the agent's.
	AgentName string
	// Scopes limit what the credential may do (nil: everything its user may: keys and
	// sessions); an OAuth access token has the scopes its user granted.
	Scopes Scopes
	// TokenBound is set for an OAuth access token: it is bound to one workspace, and the
	// request may not select another.
	TokenBound bool
	// MemberOf are the workspaces the user was a member of when the credential was read
	// (an API key: the key store keeps it current, dropping the key when a membership of
	// its user changes), which workspace_id may select without a lookup; nil: not known,
	// membership is looked up.
	MemberOf []string
}

// Actor is the actor recorded on ledger events for commands made by this principal: the
// agent named by an agent key, otherwise the user.
func (p Principal) Actor() Actor {
	if p.AgentName != "" {
		return Actor{Type: ActorAgent, ID: p.AgentName}
	}
	return Actor{Type: ActorHuman, ID: p.UserID}
}

// ActorType says what kind of party made a change.
type ActorType string

// Actor types (the specification's authoredBy enum).
const (
	ActorHuman         ActorType = "human"
	ActorAgent         ActorType = "agent"
	ActorService       ActorType = "service"
	ActorExternalAgent ActorType = "external_agent"
	ActorSystem        ActorType = "system"
)

// Enum lists the actor types.
func (ActorType) Enum() []any {
	return EnumStrings(ActorHuman, ActorAgent, ActorService, ActorExternalAgent, ActorSystem)
}

// Actor is a party that made a change.
type Actor struct {
	Type ActorType `json:"type"`
	ID   string    `json:"id"`
}
