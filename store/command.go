package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
)

// commandFunc does the work of one command inside its transaction. Reads and updates whose
// results it needs go straight to tx; inserts whose results it does not need are queued on
// b, which runCommand sends in one round trip together with the idempotency record.
type commandFunc[T any] func(ctx context.Context, tx pgx.Tx, b *pgx.Batch) (T, error)

// runCommand runs a mutating operation as one transaction: its rows, its ledger events and
// its idempotency record commit together or not at all.
//
// With an idempotency key it first takes a transaction-scoped advisory lock on
// (workspace, key) without waiting: a second request while the first is running gets
// idempotency_request_in_progress. Holding the lock it looks the key up: the same request
// replays the stored result (duplicate=true), another request is idempotency_key_reused.
// A command that fails stores nothing, so a corrected retry may reuse the key.
func runCommand[T any](ctx context.Context, db *DB, cc commandContext, fn commandFunc[T]) (result T, duplicate bool, err error) {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return result, false, mapError(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after commit

	if idem := cc.Idempotency; idem != nil {
		stored, found, err := lookupIdempotency(ctx, tx, cc)
		if err != nil {
			return result, false, mapError(err)
		}
		if found {
			if stored.operation != idem.Operation || stored.digest != idem.RequestDigest {
				return result, false, accountable.Errorf(accountable.ECodeIdempotencyKeyReused,
					"The Idempotency-Key %q was already used with a different request.", idem.Key)
			}
			if err := json.Unmarshal(stored.result, &result); err != nil {
				return result, false, fmt.Errorf("store: decode stored result: %w", err)
			}
			return result, true, nil
		}
	}

	b := &pgx.Batch{}
	if result, err = fn(ctx, tx, b); err != nil {
		return result, false, mapError(err)
	}
	if idem := cc.Idempotency; idem != nil {
		raw, err := json.Marshal(result)
		if err != nil {
			return result, false, fmt.Errorf("store: encode result: %w", err)
		}
		b.Queue(`INSERT INTO idempotency_records (workspace_id, key, operation, request_digest, result, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (workspace_id, key) DO UPDATE SET operation = excluded.operation,
				request_digest = excluded.request_digest, result = excluded.result,
				created_at = excluded.created_at, expires_at = excluded.expires_at
			WHERE idempotency_records.expires_at <= excluded.created_at`,
			cc.WorkspaceID, idem.Key, idem.Operation, idem.RequestDigest, string(raw), cc.Now,
			cc.Now.Add(accountable.IdempotencyRetention))
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return result, false, mapError(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return result, false, mapError(err)
	}
	return result, false, nil
}

type storedResult struct {
	operation string
	digest    string
	result    []byte
}

// lookupIdempotency takes the (workspace, key) lock and reads the stored result, pipelined
// in one round trip. The read is a separate statement after the lock, so under READ
// COMMITTED it sees a result committed by the previous holder of the lock.
func lookupIdempotency(ctx context.Context, tx pgx.Tx, cc commandContext) (storedResult, bool, error) {
	var s storedResult
	b := &pgx.Batch{}
	b.Queue(`SELECT pg_try_advisory_xact_lock(hashtextextended($1::text || '/' || $2::text, 0))`, cc.WorkspaceID, cc.Idempotency.Key)
	b.Queue(`SELECT operation, request_digest, result::text FROM idempotency_records
		WHERE workspace_id = $1 AND key = $2 AND expires_at > $3`, cc.WorkspaceID, cc.Idempotency.Key, cc.Now)
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	var locked bool
	if err := br.QueryRow().Scan(&locked); err != nil {
		return s, false, err
	}
	if !locked {
		return s, false, accountable.Errorf(accountable.ECodeIdempotencyInProgress,
			"A request with Idempotency-Key %q is still in progress; retry later.", cc.Idempotency.Key)
	}
	var result string
	err := br.QueryRow().Scan(&s.operation, &s.digest, &result)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, false, br.Close()
	}
	if err != nil {
		return s, false, err
	}
	s.result = []byte(result)
	return s, true, br.Close()
}

// PurgeExpiredIdempotency deletes idempotency records past their retention.
func (db *DB) PurgeExpiredIdempotency(ctx context.Context) (int64, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM idempotency_records WHERE expires_at <= now()`)
	if err != nil {
		return 0, mapError(err)
	}
	return tag.RowsAffected(), nil
}
