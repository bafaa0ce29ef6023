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
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/accountablework/accountable"
)

// DB is the service's handle on PostgreSQL.
type DB struct {
	pool *pgxpool.Pool
}

// Config tunes the pool.
type Config struct {
	URL      string
	MaxConns int32 // 0: pgxpool's default (max(4, NumCPU))
}

// Open connects a pool to url. It does not fail when the server is down: the pool
// connects lazily, requests answer 503 ledger_unavailable, and it recovers by itself.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("store: parse DATABASE_URL: %w", err)
	}
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	if pc.ConnConfig.ConnectTimeout == 0 || pc.ConnConfig.ConnectTimeout > 5*time.Second {
		// A request should fail fast with 503 rather than hang while the server is down.
		pc.ConnConfig.ConnectTimeout = 3 * time.Second
	}
	pc.HealthCheckPeriod = 5 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("store: open pool: %w", err)
	}
	return &DB{pool: pool}, nil
}

// Close releases every connection.
func (db *DB) Close() { db.pool.Close() }

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
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
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
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connectErr) || errors.As(err, &netErr) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || pgconn.Timeout(err) ||
		errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %v", accountable.ErrLedgerUnavailable, err)
	}
	return fmt.Errorf("store: %w", err)
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
