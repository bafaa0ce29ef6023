package accountable

import "time"

// Deduplication lets several consumers of the same stream of outside events (webhooks
// delivered twice, agents polling the same inbox, parallel workers) agree that exactly one
// of them handles each event: each claims the event's fingerprint before acting, the first
// claimant wins, and everyone else is told the event is already claimed until the claim
// expires. A claim is a lease, not a lock held forever: once it expires the next claimant
// takes the event over (a crashed winner does not block it for good).

// Ledger vocabulary of deduplication claims. Every winning claim is an aggregate of its
// own (its claim_id), with one event.
const (
	AggregateDedupClaim = "dedup_claim"
	EventDedupClaimed   = "dedup.claimed"
)

// Bounds of a claim's lease.
const (
	MinDedupTTLSeconds     = 1
	MaxDedupTTLSeconds     = 604800 // 7 days
	DefaultDedupTTLSeconds = 3600
)

// ClaimDedup is the command that claims an event's fingerprint (POST /live/dedup/claim).
type ClaimDedup struct {
	Source       string  `json:"source" minLength:"1" maxLength:"200" description:"Where the event comes from (a webhook, a mailbox, a feed)."`
	EventKey     string  `json:"event_key" minLength:"1" maxLength:"1000" description:"The event's own identity within its source (a delivery id, a message id)."`
	TTLSeconds   *int64  `json:"ttl_seconds,omitzero" minimum:"1" maximum:"604800" description:"How long the claim stands (default 3600)."`
	InitiativeID *string `json:"initiative_id,omitzero" format:"uuid" description:"The initiative the claimant works for, recorded with the claim as given."`
	ActiveRunID  *string `json:"active_run_id,omitzero" format:"uuid" description:"The run that handles the event, recorded with the claim as given."`
}

// Validate checks the command's fields.
func (c ClaimDedup) Validate() error { return CheckFields(c).Err() }

// TTL returns the claim's lease.
func (c ClaimDedup) TTL() time.Duration {
	s := int64(DefaultDedupTTLSeconds)
	if c.TTLSeconds != nil {
		s = *c.TTLSeconds
	}
	return time.Duration(s) * time.Second
}

// DedupFingerprint is what the fingerprint of an event in a workspace covers: the
// fingerprint is "sha256:" + the hex SHA-256 of its RFC 8785 canonical JSON
// ({event_key, source, workspace_id}). Including the workspace keeps the same event of two
// workspaces apart (and tells neither anything of the other).
type DedupFingerprint struct {
	WorkspaceID string `json:"workspace_id"`
	Source      string `json:"source"`
	EventKey    string `json:"event_key"`
}

// DedupFingerprintOf is what the fingerprint of the event eventKey of source in the
// workspace covers.
func DedupFingerprintOf(workspaceID, source, eventKey string) DedupFingerprint {
	return DedupFingerprint{WorkspaceID: NormalizeUUID(workspaceID), Source: source, EventKey: eventKey}
}

// DedupClaimResult is the answer to a claim: claimed (this request won, deduped false) or
// deduped (a standing claim holds the event, claimed false); either way the standing
// claim's id, times and references.
type DedupClaimResult struct {
	OK              bool    `json:"ok"`
	Deduped         bool    `json:"deduped"`
	Claimed         bool    `json:"claimed"`
	FingerprintHash string  `json:"fingerprint_hash" pattern:"^sha256:[a-f0-9]{64}$"`
	ExpiresAt       Time    `json:"expires_at"`
	ClaimID         string  `json:"claim_id" format:"uuid"`
	ClaimedAt       Time    `json:"claimed_at"`
	InitiativeID    *string `json:"initiative_id" format:"uuid"`
	ActiveRunID     *string `json:"active_run_id" format:"uuid"`
}
