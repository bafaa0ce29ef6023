package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/accountablework/accountable"
)

// querier is what a command uses inside its transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// commandFunc does the work of one command inside its transaction. Reads and updates whose
// results it needs go straight to q; inserts whose results it does not need are queued on
// b, which runCommand sends in one round trip together with the idempotency record and
// the COMMIT.
type commandFunc[T any] func(ctx context.Context, q querier, b *pgx.Batch) (T, error)

// runCommand runs a mutating operation as one transaction: its rows, its ledger events and
// its idempotency record commit together or not at all.
//
// BEGIN travels in one pipeline with the idempotency lookup, and COMMIT with the queued
// writes, so a command costs two round trips plus those of its own reads.
//
// With an idempotency key it takes a transaction-scoped advisory lock on (workspace, key)
// without waiting: a second request while the first is running gets
// idempotency_request_in_progress. Holding the lock it looks the key up: the same request
// replays the stored result (duplicate=true), another request is idempotency_key_reused.
// A command that fails stores nothing, so a corrected retry may reuse the key.
func runCommand[T any](ctx context.Context, db *DB, cc commandContext, fn commandFunc[T]) (result T, duplicate bool, err error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return result, false, mapError(err)
	}
	// Release destroys a connection left inside a transaction, so nothing leaks.
	defer conn.Release()
	committed := false
	defer func() {
		if !committed { // ROLLBACK outside a transaction is only a warning
			conn.Exec(context.WithoutCancel(ctx), "ROLLBACK") //nolint:errcheck // the connection is dropped if this fails
		}
	}()

	stored, found, err := begin(ctx, conn, cc)
	if err != nil {
		return result, false, mapError(err)
	}
	if found {
		idem := cc.Idempotency
		if stored.operation != idem.Operation || stored.digest != idem.RequestDigest {
			return result, false, accountable.Errorf(accountable.ECodeIdempotencyKeyReused,
				"The Idempotency-Key %q was already used with a different request.", idem.Key)
		}
		if err := json.Unmarshal(stored.result, &result); err != nil {
			return result, false, fmt.Errorf("store: decode stored result: %w", err)
		}
		return result, true, nil
	}

	b := &pgx.Batch{}
	if result, err = fn(ctx, conn, b); err != nil {
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
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return result, false, mapError(err)
	}
	committed = true
	return result, false, nil
}

type storedResult struct {
	operation string
	digest    string
	result    []byte
}

// begin opens the transaction and, for an idempotent command, takes the (workspace, key)
// lock and reads the stored result, all in one pipeline. The read is a separate statement
// after the lock, so under READ COMMITTED it sees a result committed by the previous
// holder of the lock.
func begin(ctx context.Context, conn *pgxpool.Conn, cc commandContext) (storedResult, bool, error) {
	var s storedResult
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	idem := cc.Idempotency
	if idem != nil {
		b.Queue(`SELECT pg_try_advisory_xact_lock(hashtextextended($1::text || '/' || $2::text, 0))`, cc.WorkspaceID, idem.Key)
		b.Queue(`SELECT operation, request_digest, result::text FROM idempotency_records
			WHERE workspace_id = $1 AND key = $2 AND expires_at > $3`, cc.WorkspaceID, idem.Key, cc.Now)
	}
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return s, false, err
	}
	if idem == nil {
		return s, false, br.Close()
	}
	var locked bool
	if err := br.QueryRow().Scan(&locked); err != nil {
		return s, false, err
	}
	if !locked {
		return s, false, accountable.Errorf(accountable.ECodeIdempotencyInProgress,
			"A request with Idempotency-Key %q is still in progress; retry later.", idem.Key)
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
