package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/payload"
)

// Ledger verification compares these aggregates' rows with their chains (aggregateTables).
func init() {
	verifiesAggregateTable(accountable.AggregateLedgerVerification, `SELECT id::text, CASE WHEN status = 'running' THEN 1 ELSE 2 END::bigint
		FROM ledger_verifications WHERE workspace_id = $1`)
}

// worker is the actor of changes made by workflow activities.
var worker = accountable.Actor{Type: accountable.ActorService, ID: "accountable-worker"}

const verificationColumns = `id, workspace_id, status, workflow_id, requested_at, completed_at, verified, event_count,
	head_hash, first_broken_event_id, first_broken_reason`

func scanVerification(row pgx.Row) (accountable.LedgerVerificationJob, error) {
	var j accountable.LedgerVerificationJob
	var status string
	var verified *bool
	var count *int64
	var head, brokenID, reason *string
	if err := row.Scan(&j.ID, &j.WorkspaceID, &status, &j.WorkflowID, &j.RequestedAt, &j.CompletedAt, &verified, &count,
		&head, &brokenID, &reason); err != nil {
		return j, err
	}
	j.Status = accountable.VerificationStatus(status)
	if verified != nil && count != nil {
		j.Result = &accountable.LedgerVerification{Verified: *verified, EventCount: *count, HeadHash: head,
			FirstBrokenEventID: brokenID, FirstBrokenReason: reason}
	}
	return j, nil
}

// StartLedgerVerification records a requested background verification with its ledger
// event and the message that starts its workflow (LedgerVerificationStart), in one
// transaction: the relay starts the workflow (the job's WorkflowID) once this has
// committed.
func (db *DB) StartLedgerVerification(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency,
	id string) (accountable.LedgerVerificationJob, bool, error) {
	cmd := command[accountable.LedgerVerificationJob]{workspaceID: p.WorkspaceID, actor: p.Actor(), idempotency: idem}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.LedgerVerificationJob, error) {
		start, err := tx.Messages().LedgerVerificationStart(p.WorkspaceID, id)
		if err != nil {
			return accountable.LedgerVerificationJob{}, err
		}
		job := accountable.LedgerVerificationJob{ID: id, WorkspaceID: p.WorkspaceID, Status: accountable.VerificationRunning,
			WorkflowID: start.WorkflowID, RequestedAt: accountable.TimeOf(tx.Now())}
		tx.Queue(`INSERT INTO ledger_verifications (workspace_id, id, status, workflow_id, requested_at) VALUES ($1, $2, $3, $4, $5)`,
			p.WorkspaceID, id, string(job.Status), job.WorkflowID, job.RequestedAt)
		if _, err := tx.Append(aggregate(accountable.AggregateLedgerVerification, id), accountable.EventLedgerVerificationRequested,
			payload.LedgerVerificationRequested{VerificationID: id, RequestedAt: job.RequestedAt, WorkflowID: job.WorkflowID}); err != nil {
			return job, err
		}
		tx.Send(start)
		return job, nil
	}
	return runCommand(ctx, db, cmd)
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

// CompleteLedgerVerification records the result of a running verification with its ledger
// event. It is idempotent: ending a verification that already ended changes nothing.
func (db *DB) CompleteLedgerVerification(ctx context.Context, workspaceID, id string, res accountable.LedgerVerification) error {
	return db.endLedgerVerification(ctx, workspaceID, id, accountable.VerificationCompleted, &res,
		accountable.EventLedgerVerificationCompleted, payload.LedgerVerificationCompleted{VerificationID: id, LedgerVerification: res})
}

// FailLedgerVerification records that a running verification gave up without a result.
func (db *DB) FailLedgerVerification(ctx context.Context, workspaceID, id, reason string) error {
	return db.endLedgerVerification(ctx, workspaceID, id, accountable.VerificationFailed, nil,
		accountable.EventLedgerVerificationFailed, payload.LedgerVerificationFailed{VerificationID: id, Reason: reason})
}

func (db *DB) endLedgerVerification(ctx context.Context, workspaceID, id string, status accountable.VerificationStatus,
	res *accountable.LedgerVerification, eventType string, ended any) error {
	ref := aggregate(accountable.AggregateLedgerVerification, id)
	cmd := command[struct{}]{workspaceID: workspaceID, actor: worker, locks: []aggregateRef{ref}}
	cmd.run = func(ctx context.Context, tx *tx) (struct{}, error) {
		if res == nil {
			res = &accountable.LedgerVerification{}
		}
		var ended bool
		err := tx.QueryRow(ctx, `WITH u AS (UPDATE ledger_verifications SET status = $3, completed_at = $4,
				verified = CASE WHEN $3 = 'completed' THEN $5::boolean END, event_count = CASE WHEN $3 = 'completed' THEN $6::bigint END,
				head_hash = $7, first_broken_event_id = $8, first_broken_reason = $9
			WHERE workspace_id = $1 AND id = $2 AND status = 'running' RETURNING 1)
			SELECT EXISTS (SELECT 1 FROM u)`,
			workspaceID, id, string(status), tx.Now(), res.Verified, res.EventCount, res.HeadHash,
			res.FirstBrokenEventID, res.FirstBrokenReason).Scan(&ended)
		if err != nil || !ended {
			return struct{}{}, err // !ended: already ended (an activity retry), or unknown
		}
		_, err = tx.Append(ref, eventType, ended)
		return struct{}{}, err
	}
	_, _, err := runCommand(ctx, db, cmd)
	return err
}
