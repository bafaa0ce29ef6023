package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/accountablework/accountable"
)

// Workflow-backed operations that answer with their workflow's result (proposal
// generation) use the same idempotency records as every command, in three steps:
//
//  1. claimWorkflowOperation, before the workflow starts: in one transaction it takes the
//     key's lock, finds the key's record, and, when there is none, runs the operation's
//     admission check (a rate limit) and writes a pending record naming the workflow. A
//     completed record of the same request is replayed; a pending one is attached to (the
//     caller waits for the run it names); another request's is idempotency_key_reused.
//  2. The workflow's last activity runs an ordinary command (runCommand) marked
//     completesPending: it writes the operation's rows and events and turns the pending
//     record into the completed one, with the response, in the same transaction. Without
//     the pending record it stores nothing (errClaimReleased).
//  3. A start Temporal refuses, or a run that ends without completing the record, releases
//     the claim (releaseWorkflowOperation): no record is left, so a retry starts afresh. A
//     run releases only the record naming it, never a retry's.
//     A start that failed may still have begun a run (Temporal took it as the caller's
//     deadline ran out); by step 2 that run stores nothing, as its request was told.

// abandonedClaimAge is how long a pending record may wait for its run to be named: a
// claim whose request died between claiming and starting its workflow is taken over by a
// retry after it (the start itself is bounded by seconds).
const abandonedClaimAge = 30 * time.Second

// workflowClaim is what claiming a key found.
type workflowClaim[T any] struct {
	replay *T                       // the completed response of the same request
	attach *accountable.WorkflowRun // the pending run of the same request
}

// claimWorkflowOperation claims idem (nil: no key, only admit runs) for an operation run
// by the workflow workflowID. admit runs in the transaction before the pending record is
// written (and not for a replay or an attachment).
func claimWorkflowOperation[T any](ctx context.Context, db *DB, workspaceID string, idem *accountable.Idempotency,
	workflowID string, admit func(ctx context.Context, tx pgx.Tx, now time.Time) error) (workflowClaim[T], error) {
	var claim workflowClaim[T]
	now := accountable.Now()
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if idem != nil {
			var locked, abandoned bool
			var operation, digest, status, runID, response *string
			var s storedRecord
			if err := tx.QueryRow(ctx, `SELECT c.locked, c.operation, c.request_digest, c.status, c.workflow_id, c.response,
					r.workflow_run_id, COALESCE(r.status = 'pending' AND r.workflow_run_id IS NULL AND r.created_at <= $4, false)
				FROM idempotency_claim($1, $2, $3) c
				LEFT JOIN idempotency_records r ON r.workspace_id = $1::uuid AND r.key = $2`, workspaceID, idem.Key, now,
				now.Add(-abandonedClaimAge)).
				Scan(&locked, &operation, &digest, &status, &s.workflowID, &response, &runID, &abandoned); err != nil {
				return err
			}
			if !locked {
				return errIdempotencyInProgress(idem.Key)
			}
			if operation != nil && !abandoned {
				s.operation, s.digest, s.status = *operation, *digest, *status
				if response != nil {
					s.response = []byte(*response)
				}
				if s.status == "pending" && s.operation == idem.Operation && s.digest == idem.RequestDigest {
					claim.attach = &accountable.WorkflowRun{WorkflowID: deref(s.workflowID), RunID: deref(runID)}
					return nil
				}
				res, err := replay[T](&s, idem)
				if err != nil {
					return err
				}
				claim.replay = &res
				return nil
			}
		}
		if admit != nil {
			if err := admit(ctx, tx, now); err != nil {
				return err
			}
		}
		if idem == nil {
			return nil
		}
		_, err := tx.Exec(ctx, `INSERT INTO idempotency_records (workspace_id, key, operation, request_digest, status,
				workflow_id, created_at, expires_at)
			VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7)
			ON CONFLICT (workspace_id, key) DO UPDATE SET operation = excluded.operation, request_digest = excluded.request_digest,
				response = NULL, status = 'pending', workflow_id = excluded.workflow_id, workflow_run_id = NULL,
				created_at = excluded.created_at, expires_at = excluded.expires_at
			WHERE idempotency_records.expires_at <= excluded.created_at
			   OR (idempotency_records.status = 'pending' AND idempotency_records.workflow_run_id IS NULL
			       AND idempotency_records.created_at <= $8)`,
			workspaceID, idem.Key, idem.Operation, idem.RequestDigest, workflowID, now, now.Add(accountable.IdempotencyRetention),
			now.Add(-abandonedClaimAge))
		return err
	})
	return claim, mapError(err)
}

// SetWorkflowRun records the run a pending record waits for, once it has started.
func (db *DB) SetWorkflowRun(ctx context.Context, workspaceID string, idem *accountable.Idempotency, runID string) error {
	if idem == nil {
		return nil
	}
	_, err := db.pool.Exec(ctx, `UPDATE idempotency_records SET workflow_run_id = $5
		WHERE workspace_id = $1 AND key = $2 AND operation = $3 AND request_digest = $4 AND status = 'pending'`,
		workspaceID, idem.Key, idem.Operation, idem.RequestDigest, runID)
	return mapError(err)
}

// releaseWorkflowOperation removes the pending record of idem that names the run runID,
// or names no run when runID is "" (the request's start failed before it named one). A
// completed record stays, and so does a record naming another run: a retry's, claimed
// after this run's request was released, which a late release must not take from it.
func releaseWorkflowOperation(ctx context.Context, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, workspaceID string, idem *accountable.Idempotency, runID string) error {
	if idem == nil {
		return nil
	}
	_, err := q.Exec(ctx, `DELETE FROM idempotency_records
		WHERE workspace_id = $1 AND key = $2 AND operation = $3 AND request_digest = $4 AND status = 'pending'
		  AND workflow_run_id IS NOT DISTINCT FROM NULLIF($5, '')`,
		workspaceID, idem.Key, idem.Operation, idem.RequestDigest, runID)
	return err
}

// PendingWorkflowRun returns the run the pending record of idem waits for, if it is still
// pending (ok false once it completed or was released).
func (db *DB) PendingWorkflowRun(ctx context.Context, workspaceID string, idem *accountable.Idempotency) (accountable.WorkflowRun, bool, error) {
	var run accountable.WorkflowRun
	var wf, runID *string
	err := db.pool.QueryRow(ctx, `SELECT workflow_id, workflow_run_id FROM idempotency_records
		WHERE workspace_id = $1 AND key = $2 AND operation = $3 AND request_digest = $4 AND status = 'pending'`,
		workspaceID, idem.Key, idem.Operation, idem.RequestDigest).Scan(&wf, &runID)
	if errors.Is(err, pgx.ErrNoRows) {
		return run, false, nil
	}
	run.WorkflowID, run.RunID = deref(wf), deref(runID)
	return run, err == nil, mapError(err)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
