package payload

import "github.com/accountablework/accountable"

// The payload types of these events (Types).
func init() {
	describes[DedupClaimed](accountable.EventDedupClaimed)
}

// DedupClaimed is the payload of dedup.claimed, written by the winning claim in its
// transaction. ReplacedClaimID is the expired claim it took the event over from (null for
// the event's first claim).
type DedupClaimed struct {
	ClaimID         string           `json:"claim_id"`
	FingerprintHash string           `json:"fingerprint_hash"`
	Source          string           `json:"source"`
	EventKey        string           `json:"event_key"`
	TTLSeconds      int64            `json:"ttl_seconds"`
	ClaimedAt       accountable.Time `json:"claimed_at"`
	ExpiresAt       accountable.Time `json:"expires_at"`
	InitiativeID    *string          `json:"initiative_id"`
	ActiveRunID     *string          `json:"active_run_id"`
	ReplacedClaimID *string          `json:"replaced_claim_id"`
}
