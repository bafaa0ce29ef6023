package store

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/payload"
)

// Ledger verification compares these aggregates' rows with their chains (aggregateTables).
func init() {
	verifiesAggregateTable(accountable.AggregateDedupClaim, `SELECT claim_id::text, 1::bigint FROM dedup_claims WHERE workspace_id = $1`)
}

// ClaimDedup claims an event's fingerprint for the principal's workspace. The first
// claimant wins: one INSERT ... ON CONFLICT writes the claim, replacing the standing claim
// only when it has expired; concurrent claimants of one fingerprint queue on its row, and
// each re-checks the claim it finds once the one before it has committed, so exactly one
// of them writes. The winner appends dedup.claimed in the same transaction; a loser
// writes nothing and answers with the standing claim (read after its INSERT, which sees
// the claim that beat it).
func (db *DB) ClaimDedup(ctx context.Context, p accountable.Principal, in accountable.ClaimDedup) (accountable.DedupClaimResult, error) {
	fingerprint, err := canonical.DigestOf(accountable.DedupFingerprintOf(p.WorkspaceID, in.Source, in.EventKey))
	if err != nil {
		return accountable.DedupClaimResult{}, err
	}
	initiative, run := normalizeUUID(in.InitiativeID), normalizeUUID(in.ActiveRunID)
	actor := p.Actor()
	cmd := command[accountable.DedupClaimResult]{workspaceID: p.WorkspaceID, actor: actor}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.DedupClaimResult, error) {
		now := accountable.TimeOf(tx.Now())
		expires := accountable.TimeOf(now.Add(in.TTL()))
		res := accountable.DedupClaimResult{OK: true, FingerprintHash: fingerprint}
		claimID := uuid.Must(uuid.NewV7()).String()
		var replaced *string
		err := tx.QueryRow(ctx, `INSERT INTO dedup_claims (workspace_id, fingerprint_hash, claim_id, source, event_key,
				initiative_id, active_run_id, claimed_by_type, claimed_by_id, claimed_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT (workspace_id, fingerprint_hash) DO UPDATE SET claim_id = excluded.claim_id,
				previous_claim_id = dedup_claims.claim_id, source = excluded.source, event_key = excluded.event_key,
				initiative_id = excluded.initiative_id, active_run_id = excluded.active_run_id,
				claimed_by_type = excluded.claimed_by_type, claimed_by_id = excluded.claimed_by_id,
				claimed_at = excluded.claimed_at, expires_at = excluded.expires_at
			WHERE dedup_claims.expires_at <= excluded.claimed_at
			RETURNING previous_claim_id::text`,
			p.WorkspaceID, fingerprint, claimID, in.Source, in.EventKey, initiative, run, string(actor.Type), actor.ID,
			now.Time, expires.Time).Scan(&replaced)
		if errors.Is(err, pgx.ErrNoRows) {
			// A standing claim holds the fingerprint.
			res.Deduped = true
			err := tx.QueryRow(ctx, `SELECT claim_id::text, claimed_at, expires_at, initiative_id::text, active_run_id::text
				FROM dedup_claims WHERE workspace_id = $1 AND fingerprint_hash = $2`, p.WorkspaceID, fingerprint).
				Scan(&res.ClaimID, &res.ClaimedAt, &res.ExpiresAt, &res.InitiativeID, &res.ActiveRunID)
			return res, err
		}
		if err != nil {
			return res, err
		}
		res.Claimed, res.ClaimID, res.ClaimedAt, res.ExpiresAt, res.InitiativeID, res.ActiveRunID = true, claimID, now, expires, initiative, run
		_, err = tx.Append(aggregate(accountable.AggregateDedupClaim, claimID), accountable.EventDedupClaimed, payload.DedupClaimed{
			ClaimID: claimID, FingerprintHash: fingerprint, Source: in.Source, EventKey: in.EventKey, TTLSeconds: int64(in.TTL().Seconds()),
			ClaimedAt: now, ExpiresAt: expires, InitiativeID: initiative, ActiveRunID: run, ReplacedClaimID: replaced})
		return res, err
	}
	res, _, err := runCommand(ctx, db, cmd)
	return res, err
}
