package store

import (
	"context"
	"errors"

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

// RecordLedgerVerificationRequest records a requested verification and its ledger event,
// once: recording the same request again (an activity retry) changes nothing.
func (db *DB) RecordLedgerVerificationRequest(ctx context.Context, req accountable.LedgerVerificationRequest) error {
	cc := commandContext{WorkspaceID: req.WorkspaceID, Actor: req.RequestedBy, Now: accountable.Now()}
	_, _, err := runCommand(ctx, db, cc, func(ctx context.Context, q querier, b *pgx.Batch) (struct{}, error) {
		var id string
		err := q.QueryRow(ctx, `INSERT INTO ledger_verifications (workspace_id, id, status, requested_at)
			VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING id`,
			req.WorkspaceID, req.VerificationID, accountable.VerificationRunning, req.RequestedAt).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return struct{}{}, nil
		}
		if err != nil {
			return struct{}{}, err
		}
		ev, err := newEvent(cc, change{AggregateType: accountable.AggregateLedgerVerification, AggregateID: req.VerificationID,
			AggregateVersion: 1, EventType: accountable.EventLedgerVerificationRequested,
			Payload: map[string]any{"verification_id": req.VerificationID, "requested_at": accountable.FormatTime(req.RequestedAt)}})
		if err != nil {
			return struct{}{}, err
		}
		queueEvent(b, ev)
		return struct{}{}, nil
	})
	return err
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
