// Package store is the PostgreSQL adapter of the service: the connection pool, embedded
// migrations, one file per aggregate, the ledger (append, stream, verification) and the
// idempotency records. It is the only package that knows pgx and its errors.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/accountablework/accountable"
)

// DB is the service's handle on PostgreSQL.
type DB struct {
	pool        *pgxpool.Pool
	metrics     metrics
	outboxNudge func()
	// messages make the workflow messages commands send (UseWorkflowMessages).
	messages WorkflowMessages
	// onAppended is told the workspace of every command that committed events (the
	// process's LedgerFeed).
	onAppended func(workspaceID string)
	// replica serves the ledger's reads when DATABASE_READ_URL is set (nil: the pool does).
	replica *replica
	// longPool is the pool of the long reads (verification, projections; longread.go), and
	// long schedules them: the shared pool never waits behind them.
	longPool *pgxpool.Pool
	long     *longReads
}

// Config tunes the pool.
type Config struct {
	URL      string
	MaxConns int32 // 0: the URL's pool_max_conns, else DefaultMaxConns()
	// LockTimeout bounds how long a statement waits for a row lock (lock_timeout); 0: 3s.
	LockTimeout time.Duration
	// StatementTimeout bounds every statement (statement_timeout); 0: 30s. Requests have
	// their own, usually shorter, deadlines; this is the backstop for everything else.
	StatementTimeout time.Duration
	// ReadURL, when set, is a streaming replica (hot standby) of URL: the ledger's reads
	// (event pages, verification, projections) run there once it has replayed what the
	// primary had committed when the read began (see replica.go). "": every read on URL.
	ReadURL string
	// ReadMaxWait bounds how long a read waits for the replica to catch up before it runs
	// on the primary instead; 0: DefaultReadMaxWait.
	ReadMaxWait time.Duration
	// LongReadMaxConns is the size of the pool of long reads (ledger verification and the
	// projections, whose cost grows with a workspace's ledger), beside the pool of MaxConns,
	// and so how many of them run at once; a workspace runs one at a time (longread.go).
	// With ReadURL the replica has a long-read pool of this size too. 0:
	// DefaultLongReadMaxConns.
	LongReadMaxConns int32
	// LongReadWait bounds how long a long read waits for its turn before it is refused (429
	// rate_limited); 0: DefaultLongReadWait.
	LongReadWait time.Duration
}

// Metrics receives the store's measurements (bound to Prometheus in cmd).
type Metrics interface {
	LedgerEventsAppended(n int)
	CommandConflict(outcome string)
	// LedgerRead counts a read that could run on the replica by where it ran: "replica",
	// or "primary" with why (replica_lagging, replica_failed, not_a_standby).
	LedgerRead(servedBy, reason string)
	// LongRead counts long reads (kind "verification" or "projection") by outcome: "ran" (a
	// read ran; a verification's run counts once however many requests it answered),
	// "shared" (a verification answered by a run another request asked for first) or
	// "refused" (its turn did not come within the wait).
	LongRead(kind, outcome string)
}

type metrics struct{ m Metrics }

func (m metrics) appended(n int) {
	if m.m != nil {
		m.m.LedgerEventsAppended(n)
	}
}

func (m metrics) conflict(outcome string) {
	if m.m != nil {
		m.m.CommandConflict(outcome)
	}
}

func (m metrics) ledgerRead(servedBy, reason string) {
	if m.m != nil {
		m.m.LedgerRead(servedBy, reason)
	}
}

func (m metrics) longRead(kind, outcome string) {
	if m.m != nil {
		m.m.LongRead(kind, outcome)
	}
}

// Observe sends the store's measurements to m.
func (db *DB) Observe(m Metrics) { db.metrics = metrics{m} }

// OnWorkflowMessage registers f, called after a command that wrote workflow messages
// commits (the relay delivers them at once instead of at its next poll).
func (db *DB) OnWorkflowMessage(f func()) { db.outboxNudge = f }

// PoolStat reports the pool's use.
func (db *DB) PoolStat() *pgxpool.Stat { return db.pool.Stat() }

// LongReadPoolStat reports the use of the long reads' pool (on the primary).
func (db *DB) LongReadPoolStat() *pgxpool.Stat { return db.longPool.Stat() }

// Open connects a pool to url. It does not fail when the server is down: the pool
// connects lazily, requests answer 503 ledger_unavailable, and it recovers by itself.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	if cfg.LongReadMaxConns <= 0 {
		cfg.LongReadMaxConns = DefaultLongReadMaxConns
	}
	long := cfg
	long.MaxConns = cfg.LongReadMaxConns
	db := &DB{long: newLongReads(int(cfg.LongReadMaxConns), cfg.LongReadWait)}
	var err error
	if db.pool, err = openPool(ctx, cfg.URL, cfg); err != nil {
		return nil, fmt.Errorf("store: DATABASE_URL: %w", err)
	}
	// Its connections are made when a long read first needs one: it costs the server nothing
	// until then.
	if db.longPool, err = openPool(ctx, cfg.URL, long); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: DATABASE_URL (long reads): %w", err)
	}
	if cfg.ReadURL != "" {
		db.replica = &replica{maxWait: cfg.ReadMaxWait}
		if db.replica.maxWait <= 0 {
			db.replica.maxWait = DefaultReadMaxWait
		}
		if db.replica.pool, err = openPool(ctx, cfg.ReadURL, cfg); err == nil {
			db.replica.longPool, err = openPool(ctx, cfg.ReadURL, long)
		}
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("store: DATABASE_READ_URL: %w", err)
		}
	}
	return db, nil
}

// DefaultMaxConns is the pool's size when neither Config.MaxConns nor the URL's
// pool_max_conns sets it: max(16, 2 × CPUs). A command's time is mostly spent waiting on
// PostgreSQL's commit (its WAL flush), not on a core, and the commits waiting together are
// flushed together: completing work at 32 clients on 2 cores measured 0.78x of the tuned
// service (32 connections) with pgxpool's max(4, CPUs), 1.00x with 8, 1.01x with 16 and 0.90x
// to 1.0x with 32 (`make bench`'s defaults line, BENCH_DEFAULTS_ENV), reads the same from 8 on.
// 16 is where it stopped growing, and leaves PostgreSQL's default max_connections (100) room
// for five processes with their long-read pools.
func DefaultMaxConns() int32 { return int32(max(16, 2*runtime.NumCPU())) }

// openPool makes a pool of url with the session settings every connection has.
func openPool(ctx context.Context, url string, cfg Config) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	switch {
	case cfg.MaxConns > 0:
		pc.MaxConns = cfg.MaxConns
	case !strings.Contains(url, "pool_max_conns"):
		pc.MaxConns = DefaultMaxConns()
	}
	if pc.ConnConfig.ConnectTimeout == 0 || pc.ConnConfig.ConnectTimeout > 5*time.Second {
		// A request should fail fast with 503 rather than hang while the server is down.
		pc.ConnConfig.ConnectTimeout = 3 * time.Second
	}
	pc.HealthCheckPeriod = 5 * time.Second
	if cfg.LockTimeout <= 0 {
		cfg.LockTimeout = 3 * time.Second
	}
	if cfg.StatementTimeout <= 0 {
		cfg.StatementTimeout = 30 * time.Second
	}
	// Every session: a row lock is waited for a bounded time (then resource_busy), every
	// statement ends, and a session never sits idle inside a transaction (that would hold
	// the event stream's horizon back).
	pc.ConnConfig.RuntimeParams["lock_timeout"] = strconv.FormatInt(cfg.LockTimeout.Milliseconds(), 10)
	pc.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(cfg.StatementTimeout.Milliseconds(), 10)
	pc.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = "60000"
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	return pool, nil
}

// Close releases every connection.
func (db *DB) Close() {
	pools := []*pgxpool.Pool{db.pool, db.longPool}
	if db.replica != nil {
		pools = append(pools, db.replica.pool, db.replica.longPool)
	}
	for _, p := range pools {
		if p != nil {
			p.Close()
		}
	}
}

// Ping reports whether PostgreSQL answers.
func (db *DB) Ping(ctx context.Context) error { return mapError(db.pool.Ping(ctx)) }

// mapError turns pgx errors into domain errors: unreachable server -> ledger_unavailable;
// values PostgreSQL cannot store -> validation_failed; everything else stays internal.
// It maps by SQLSTATE and error type, never by message text.
func mapError(err error) error {
	if err == nil {
		return nil
	}
	var ae *accountable.Error
	if errors.As(err, &ae) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	var connectErr *pgconn.ConnectError
	if errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &connectErr) {
		return fmt.Errorf("%w: %v", errDeadline, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "55P03": // lock_not_available: lock_timeout
			return fmt.Errorf("%w (%s)", errBusy, pgErr.Code)
		case pgErr.Code == "57014": // query_canceled: statement_timeout or the request's deadline
			return fmt.Errorf("%w (%s)", errDeadline, pgErr.Code)
		case pgErr.Code == "22P05" || pgErr.Code == "22021":
			// untranslatable character / invalid byte sequence: a NUL in a string.
			return accountable.ValidationError(accountable.Issue{Path: "", Message: "strings must not contain NUL characters"})
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			strings.HasPrefix(pgErr.Code, "53"),                                 // insufficient resources (too many connections)
			pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // shutdown / cannot connect now
			return fmt.Errorf("%w (%s)", accountable.ErrLedgerUnavailable, pgErr.Code)
		}
		return fmt.Errorf("store: %w", err)
	}
	var netErr net.Error
	if errors.As(err, &connectErr) || errors.As(err, &netErr) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, pgconn.ErrConnClosed) ||
		pgconn.Timeout(err) ||
		errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %v", accountable.ErrLedgerUnavailable, err)
	}
	return fmt.Errorf("store: %w", err)
}

var (
	errBusy = &accountable.Error{Code: accountable.ECodeResourceBusy,
		Message: "Another request held a lock on this resource for too long; nothing was changed; retry."}
	errDeadline = &accountable.Error{Code: accountable.ECodeDeadlineExceeded,
		Message: "The request did not finish within the server's deadline; nothing was changed."}
)

// retryable reports whether err means the command lost a race and may simply run again:
// a serialization failure, a deadlock, or a unique violation (a concurrent writer of the
// same row; a constraint the command relies on is mapped before this is asked).
func retryable(err error) bool {
	switch sqlState(err) {
	case "40001", "40P01", "23505":
		return true
	}
	return false
}

// constraintError returns the domain error a command named for the unique constraint err
// violates.
func constraintError(err error, constraints map[string]error) (error, bool) {
	var pgErr *pgconn.PgError
	if len(constraints) == 0 || !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		return nil, false
	}
	domainErr, ok := constraints[pgErr.ConstraintName]
	return domainErr, ok
}

// sqlState returns the SQLSTATE of err, or "" when it is not a PostgreSQL error.
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// uniqueViolation reports whether err is a unique_violation on constraint (any when "").
func uniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && (constraint == "" || pgErr.ConstraintName == constraint)
}

// aggregateVersionViolation reports a second event at an aggregate's version: the
// constraint ledger_events_aggregate_version, or its copy on a partition of the
// partitioned layout (store/layouts), named ledger_events_pNN_aggregate_version.
func aggregateVersionViolation(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		return false
	}
	c := pgErr.ConstraintName
	return c == "ledger_events_aggregate_version" || strings.HasPrefix(c, "ledger_events_p") && strings.HasSuffix(c, "_aggregate_version")
}

// querier is what reads need of the pool, a snapshot's transaction or a command's tx.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// snapshot runs read in one read-only transaction at REPEATABLE READ: a read of several
// rows of an aggregate (a launch with its jobs, runs and receipts) sees one committed
// state, never half of a command.
func (db *DB) snapshot(ctx context.Context, read func(q pgx.Tx) error) error {
	return snapshotOn(ctx, db.pool, read)
}

func snapshotOn(ctx context.Context, conn readConn, read func(q pgx.Tx) error) error {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return mapError(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	if err := read(tx); err != nil {
		return err
	}
	return mapError(tx.Commit(ctx))
}
