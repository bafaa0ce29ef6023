package store

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
)

// worker is the actor of changes made by workflow activities.
var worker = accountable.Actor{Type: accountable.ActorService, ID: "accountable-worker"}

const verificationColumns = `id, workspace_id, status, requested_at, completed_at, verified, event_count,
	head_hash, first_broken_event_id, first_broken_reason`

func scanVerification(row pgx.Row) (accountable.LedgerVerificationJob, error) {
	var j accountable.LedgerVerificationJob
	var verified *bool
	var count *int64
	var head, brokenID, reason *string
	if err := row.Scan(&j.ID, &j.WorkspaceID, &j.Status, &j.RequestedAt, &j.CompletedAt, &verified, &count,
		&head, &brokenID, &reason); err != nil {
		return j, err
	}
	j.RequestedAt = j.RequestedAt.UTC()
	if j.CompletedAt != nil {
		t := j.CompletedAt.UTC()
		j.CompletedAt = &t
	}
	if verified != nil && count != nil {
		j.Result = &accountable.LedgerVerification{Verified: *verified, EventCount: *count, HeadHash: head,
			FirstBrokenEventID: brokenID, FirstBrokenReason: reason}
	}
	return j, nil
}

// RequestLedgerVerification records a request to verify the workspace's ledger in the
// background; the caller then starts the workflow that completes it.
func (db *DB) RequestLedgerVerification(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency) (accountable.LedgerVerificationJob, bool, error) {
	cc := commandFor(p, idem, accountable.Causation{})
	return runCommand(ctx, db, cc, func(ctx context.Context, tx querier, b *pgx.Batch) (accountable.LedgerVerificationJob, error) {
		j := accountable.LedgerVerificationJob{ID: uuid.Must(uuid.NewV7()).String(), WorkspaceID: p.WorkspaceID,
			Status: accountable.VerificationRunning, RequestedAt: cc.Now}
		ev, err := newEvent(cc, change{AggregateType: accountable.AggregateLedgerVerification, AggregateID: j.ID,
			AggregateVersion: 1, EventType: accountable.EventLedgerVerificationRequested,
			Payload: map[string]any{"verification_id": j.ID}})
		if err != nil {
			return j, err
		}
		b.Queue(`INSERT INTO ledger_verifications (workspace_id, id, status, requested_at) VALUES ($1, $2, $3, $4)`,
			j.WorkspaceID, j.ID, j.Status, j.RequestedAt)
		queueEvent(b, ev)
		return j, nil
	})
}

// GetLedgerVerification reads a background verification of the workspace.
func (db *DB) GetLedgerVerification(ctx context.Context, workspaceID, id string) (accountable.LedgerVerificationJob, error) {
	j, err := scanVerification(db.pool.QueryRow(ctx, `SELECT `+verificationColumns+` FROM ledger_verifications
		WHERE workspace_id = $1 AND id = $2`, workspaceID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return j, accountable.NotFound("ledger verification")
	}
	return j, mapError(err)
}

// CompleteLedgerVerification records the result of a verification and its ledger event.
// It is idempotent: completing a completed verification changes nothing.
func (db *DB) CompleteLedgerVerification(ctx context.Context, workspaceID, id string, res accountable.LedgerVerification) error {
	cc := commandContext{WorkspaceID: workspaceID, Actor: worker, Now: accountable.Now()}
	_, _, err := runCommand(ctx, db, cc, func(ctx context.Context, tx querier, b *pgx.Batch) (struct{}, error) {
		var prevHash string
		err := tx.QueryRow(ctx, `UPDATE ledger_verifications SET status = $3, completed_at = $4, verified = $5,
				event_count = $6, head_hash = $7, first_broken_event_id = $8, first_broken_reason = $9
			WHERE workspace_id = $1 AND id = $2 AND status = 'running'
			RETURNING (SELECT event_hash FROM ledger_events WHERE workspace_id = $1
				AND aggregate_type = 'ledger_verification' AND aggregate_id = $2::text AND aggregate_version = 1)`,
			workspaceID, id, accountable.VerificationCompleted, cc.Now, res.Verified, res.EventCount, res.HeadHash,
			res.FirstBrokenEventID, res.FirstBrokenReason).Scan(&prevHash)
		if errors.Is(err, pgx.ErrNoRows) {
			return struct{}{}, nil // already completed (an activity retry), or unknown
		}
		if err != nil {
			return struct{}{}, err
		}
		ev, err := newEvent(cc, change{AggregateType: accountable.AggregateLedgerVerification, AggregateID: id,
			AggregateVersion: 2, PreviousHash: &prevHash, EventType: accountable.EventLedgerVerificationCompleted,
			Payload: map[string]any{"verification_id": id, "verified": res.Verified, "event_count": res.EventCount,
				"head_hash": res.HeadHash, "first_broken_event_id": res.FirstBrokenEventID,
				"first_broken_reason": res.FirstBrokenReason}})
		if err != nil {
			return struct{}{}, err
		}
		queueEvent(b, ev)
		return struct{}{}, nil
	})
	return err
}
