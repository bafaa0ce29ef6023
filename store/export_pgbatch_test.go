package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// QueryRowBatched sends sql with args as the one statement of a command batch on a
// connection of db's pool and scans its row into dest.
func QueryRowBatched(ctx context.Context, db *DB, sql string, args []any, dest ...any) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var scanErr error
	b := &batch{}
	b.QueryRow(sql, func(row pgx.Row) error {
		scanErr = row.Scan(dest...)
		return nil
	}, args...)
	if err := b.send(ctx, conn.Conn()).Close(); err != nil {
		return err
	}
	return scanErr
}

// QueryRowPgx runs sql with args as pgx runs a query on a connection of db's pool.
func QueryRowPgx(ctx context.Context, db *DB, sql string, args []any, dest ...any) error {
	return db.pool.QueryRow(ctx, sql, args...).Scan(dest...)
}

// AppendText is appendText.
func AppendText(buf []byte, oid uint32, arg any) ([]byte, bool, bool) {
	return appendText(buf, oid, arg)
}

// NewTypeMap is the type map of a new connection.
func NewTypeMap() *pgtype.Map { return pgtype.NewMap() }
