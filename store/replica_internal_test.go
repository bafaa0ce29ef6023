package store

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/accountablework/accountable"
)

// A read that failed on the replica runs again on the primary only when the replica was
// at fault; an error the primary would give as well is the read's answer.
func TestReplicaFaultIsTheReplicasOnly(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("store: %w", &pgconn.PgError{Code: code}) }
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"unreachable (mapped)", fmt.Errorf("%w: dial", accountable.ErrLedgerUnavailable), true},
		{"connection lost (unmapped)", io.ErrUnexpectedEOF, true},
		// A batch sent on a pooled connection the crash had closed (pgconn's lock error).
		{"connection closed before use (unmapped)", fmt.Errorf("wrapped: %w", pgconn.ErrConnClosed), true},
		{"cancelled by a conflict with recovery", pg("40001"), true},
		{"a lock conflict with recovery", pg("40P01"), true},
		{"the database dropped under it", pg("57P04"), true},
		{"a write refused by the standby", pg("25006"), true},
		{"invalid input", pg("22P02"), false},
		{"a NUL in a string (mapped)", mapError(pg("22021")), false},
		{"a statement timeout (mapped)", mapError(pg("57014")), false},
		{"a statement timeout (unmapped)", pg("57014"), false},
		{"the request's deadline", mapError(context.DeadlineExceeded), false},
		{"a division by zero", pg("22012"), false},
	}
	for _, c := range cases {
		if got := replicaFault(c.err); got != c.want {
			t.Errorf("%s (%v): replicaFault = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
