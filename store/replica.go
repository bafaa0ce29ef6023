package store

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/accountablework/accountable"
)

// DefaultReadMaxWait is how long a read waits, by default, for the replica to replay what
// the primary had committed when the read began. Streaming replication on one network
// replays within milliseconds; a replica further behind serves nothing until it catches up.
const DefaultReadMaxWait = 200 * time.Millisecond

// replica is a streaming replica (hot standby) of the primary that serves the ledger's
// reads: the event stream's pages, verification and the projections, the reads that grow
// with a workspace's history. Commands, their idempotency checks and every read a command
// depends on stay on the primary.
//
// A read never sees less than the primary held when it began, so a client reads its own
// acknowledged writes, through any API process: the read takes the primary's WAL position
// (pg_current_wal_lsn, past the commit record of every acknowledged write) and runs on the
// replica only once the replica has replayed up to it (pg_last_wal_replay_lsn; a
// transaction whose commit record is replayed is in every later snapshot of the standby).
// When the replica lags longer than maxWait, fails, or is not a standby, the read runs on
// the primary: a replica can make reads cheaper for the primary, never wrong or unavailable.
//
// The event stream's consistency rule holds there too: a standby counts every transaction
// id up to the newest it has seen in the WAL as running until it replays its end, so its
// snapshot's xmin, the stream's horizon, never passes a transaction the primary still runs.
type replica struct {
	pool    *pgxpool.Pool
	maxWait time.Duration
	// notStandby is set when the server behind DATABASE_READ_URL is not in recovery (a
	// primary, or a promoted replica): it cannot be fenced, so nothing reads there.
	notStandby atomic.Bool
	// downUntil (unix nanoseconds) skips the replica for a moment after it failed, so that
	// reads do not each wait for a connection to a replica that is down.
	downUntil atomic.Int64
}

// replicaRetryAfter is how long reads skip a replica that failed.
const replicaRetryAfter = time.Second

func (r *replica) failed() { r.downUntil.Store(time.Now().Add(replicaRetryAfter).UnixNano()) }

// Reasons a read that could run on the replica ran on the primary.
const (
	readServedByReplica  = "replica"
	readServedByPrimary  = "primary"
	readReasonLagging    = "replica_lagging"
	readReasonFailed     = "replica_failed"
	readReasonNotStandby = "not_a_standby"
)

// ledgerRead runs read on the replica when there is one and it has caught up with the
// primary, otherwise on the primary. read may run twice (on the replica, failing, then on
// the primary), so it builds its result afresh each time.
func (db *DB) ledgerRead(ctx context.Context, read func(pool *pgxpool.Pool) error) error {
	r := db.replica
	if r == nil {
		return read(db.pool)
	}
	reason, err := r.caughtUp(ctx, db.pool)
	if err != nil {
		return mapError(err)
	}
	if reason == "" {
		err := read(r.pool)
		if err == nil || ctx.Err() != nil || !replicaFault(err) {
			db.metrics.ledgerRead(readServedByReplica, "")
			return err
		}
		r.failed() // a conflict with recovery, a replica down: the primary answers
		reason = readReasonFailed
	}
	db.metrics.ledgerRead(readServedByPrimary, reason)
	return read(db.pool)
}

// ledgerSnapshot is snapshot for the ledger's reads: on the replica once it has caught up.
func (db *DB) ledgerSnapshot(ctx context.Context, read func(q pgx.Tx) error) error {
	return db.ledgerRead(ctx, func(pool *pgxpool.Pool) error { return snapshotOn(ctx, pool, read) })
}

// replicaFault reports whether err is the replica's doing (unreachable, shut down, a
// query cancelled by a conflict with recovery), not the read's (invalid input, a deadline).
func replicaFault(err error) bool {
	var ae *accountable.Error
	if errors.As(err, &ae) {
		return ae.Code == accountable.ECodeLedgerUnavailable
	}
	return true
}

// caughtUp waits, up to maxWait, until the replica has replayed the primary's current WAL
// position. It returns "" when it has, or why the read goes to the primary; an error only
// when the primary cannot say its position (the read would fail there too).
func (r *replica) caughtUp(ctx context.Context, primary *pgxpool.Pool) (string, error) {
	if r.notStandby.Load() {
		return readReasonNotStandby, nil
	}
	if time.Now().UnixNano() < r.downUntil.Load() {
		return readReasonFailed, nil
	}
	var lsn string
	if err := primary.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		return "", err
	}
	deadline := time.Now().Add(r.maxWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 20*time.Millisecond) {
		var inRecovery, replayed bool
		err := r.pool.QueryRow(ctx, `SELECT pg_is_in_recovery(), coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)`, lsn).
			Scan(&inRecovery, &replayed)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			r.failed()
			return readReasonFailed, nil
		case !inRecovery:
			r.notStandby.Store(true)
			return readReasonNotStandby, nil
		case replayed:
			return "", nil
		case time.Now().Add(pause).After(deadline):
			return readReasonLagging, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(pause):
		}
	}
}

// ReplicaStat reports the replica pool's use (nil without a replica).
func (db *DB) ReplicaStat() *pgxpool.Stat {
	if db.replica == nil {
		return nil
	}
	return db.replica.pool.Stat()
}
