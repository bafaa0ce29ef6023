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
// DATABASE_READ_URL names one server (the fence and the read share a connection); run the
// standby with hot_standby_feedback = on, or vacuum on the primary conflicts with a long
// read there (a verification), pausing replay and sending reads to the primary meanwhile.
//
// The event stream's consistency rule holds there too: a standby counts every transaction
// id up to the newest it has seen in the WAL as running until it replays its end, so its
// snapshot's xmin, the stream's horizon, never passes a transaction the primary still runs.
type replica struct {
	pool *pgxpool.Pool
	// longPool serves the long reads there, as the primary's long-read pool does (longread.go).
	longPool *pgxpool.Pool
	maxWait  time.Duration
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

// readConn is where a ledger read runs: the primary's pool, or the one replica connection
// the read was fenced on.
type readConn interface {
	querier
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// ledgerRead runs read on the replica when there is one and it has caught up with the
// primary, otherwise on the primary. read may run twice (on the replica, failing, then on
// the primary), so it builds its result afresh each time. A long read (admitted by
// db.long) runs on the long-read pools instead of the shared ones.
func (db *DB) ledgerRead(ctx context.Context, long bool, read func(q readConn) error) error {
	primary, r := db.pool, db.replica
	if long {
		primary = db.longPool
	}
	if r == nil {
		return read(primary)
	}
	conn, reason, err := r.caughtUp(ctx, primary, long)
	if err != nil {
		return mapError(err)
	}
	if conn != nil {
		// The read runs on the connection the fence was checked on: a URL naming several
		// servers (or a balancer in front of them) must not fence on one and read on another.
		err := read(conn)
		conn.Release()
		if err == nil || ctx.Err() != nil || !replicaFault(err) {
			db.metrics.ledgerRead(readServedByReplica, "")
			return err
		}
		r.failed()
		reason = readReasonFailed
	}
	db.metrics.ledgerRead(readServedByPrimary, reason)
	return read(primary)
}

// ledgerSnapshot is snapshot for the ledger's reads: on the replica once it has caught up.
func (db *DB) ledgerSnapshot(ctx context.Context, long bool, read func(q pgx.Tx) error) error {
	return db.ledgerRead(ctx, long, func(q readConn) error { return snapshotOn(ctx, q, read) })
}

// replicaFault reports whether err is the replica's doing, so that the primary should
// answer instead: unreachable or shutting down (ledger_unavailable), a query cancelled by
// a conflict with recovery (40001, 40P01), its database dropped (57P04), or a write the
// standby refuses (25006). Anything else (invalid input, a deadline, a fault of the
// query) would fail on the primary too, and is the read's answer.
func replicaFault(err error) bool {
	var ae *accountable.Error
	if errors.As(mapError(err), &ae) && ae.Code == accountable.ECodeLedgerUnavailable {
		return true
	}
	switch sqlState(err) {
	case "40001", "40P01", "57P04", "25006":
		return true
	}
	return false
}

// caughtUp takes the primary's current WAL position, then waits, up to maxWait, until the
// replica has replayed it. It returns a replica connection (the caller releases it) when
// it has, or why the read goes to the primary; an error only when the primary cannot say
// its position (the read would fail there too).
//
// pg_current_wal_lsn is the primary's WAL write position: with synchronous_commit on (the
// default; the service never turns it off) it is past the commit record of every
// acknowledged write.
func (r *replica) caughtUp(ctx context.Context, primary *pgxpool.Pool, long bool) (*pgxpool.Conn, string, error) {
	if r.notStandby.Load() {
		return nil, readReasonNotStandby, nil
	}
	if time.Now().UnixNano() < r.downUntil.Load() {
		return nil, readReasonFailed, nil
	}
	var lsn string
	if err := primary.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		return nil, "", err
	}
	// The whole fence, the connection included, is bounded by maxWait: a replica that
	// drops packets must not hold reads up for the connect timeout.
	fenceCtx, cancel := context.WithTimeout(ctx, r.maxWait)
	defer cancel()
	pool := r.pool
	if long {
		pool = r.longPool
	}
	conn, err := pool.Acquire(fenceCtx)
	if err != nil {
		reason, err := r.unreachable(ctx)
		return nil, reason, err
	}
	if reason, err := r.waitForReplay(ctx, fenceCtx, conn, lsn); reason != "" || err != nil {
		conn.Release()
		return nil, reason, err
	}
	return conn, "", nil
}

// waitForReplay polls conn until its server has replayed lsn: "" when it has, otherwise
// why the read goes to the primary, or the request's own end. fenceCtx bounds the wait.
func (r *replica) waitForReplay(ctx, fenceCtx context.Context, conn *pgxpool.Conn, lsn string) (string, error) {
	for pause := time.Millisecond; ; pause = min(2*pause, 20*time.Millisecond) {
		var inRecovery, replayed bool
		err := conn.QueryRow(fenceCtx, `SELECT pg_is_in_recovery(), coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)`, lsn).
			Scan(&inRecovery, &replayed)
		switch {
		case err != nil && fenceCtx.Err() != nil && ctx.Err() == nil:
			return readReasonLagging, nil // the fence's own bound, not a failure
		case err != nil:
			return r.unreachable(ctx)
		case !inRecovery:
			r.notStandby.Store(true)
			return readReasonNotStandby, nil
		case replayed:
			return "", nil
		}
		select {
		case <-fenceCtx.Done():
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return readReasonLagging, nil
		case <-time.After(pause):
		}
	}
}

// unreachable is the fence's answer when the replica could not be asked: the request's
// own end, or a failed replica (skipped for a moment).
func (r *replica) unreachable(ctx context.Context) (string, error) {
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	r.failed()
	return readReasonFailed, nil
}
