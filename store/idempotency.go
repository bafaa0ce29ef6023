package store

import (
	"context"
	"time"
)

// janitorLock is the advisory lock whose holder purges expired idempotency records: one
// replica at a time does it, the others skip their turn.
const janitorLock = int64(0x616363745f6a616e) // "acct_jan"

// PurgeExpiredIdempotency deletes idempotency records past their retention, in batches of
// batch rows, each its own short transaction, so the purge never holds a lock or the event
// stream's horizon for long. It returns how many it deleted; when another replica is
// purging it deletes nothing.
func (db *DB) PurgeExpiredIdempotency(ctx context.Context, batch int) (int64, error) {
	if batch <= 0 {
		batch = 500
	}
	var total int64
	for {
		n, locked, err := db.purgeBatch(ctx, batch)
		total += n
		if err != nil || !locked || n < int64(batch) {
			return total, err
		}
	}
}

func (db *DB) purgeBatch(ctx context.Context, batch int) (deleted int64, locked bool, err error) {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return 0, false, mapError(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit this is a no-op
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, janitorLock).Scan(&locked); err != nil || !locked {
		return 0, false, mapError(err)
	}
	tag, err := tx.Exec(ctx, `DELETE FROM idempotency_records WHERE ctid = ANY (ARRAY(
		SELECT ctid FROM idempotency_records WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED))`,
		time.Now(), batch)
	if err != nil {
		return 0, true, mapError(err)
	}
	return tag.RowsAffected(), true, mapError(tx.Commit(ctx))
}
