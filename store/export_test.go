package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable"
)

// BlindCreateThenFail runs a blind command that appends an event, inserts a task row and
// then a statement that fails, as one round trip, and returns the task id and the error.
func BlindCreateThenFail(ctx context.Context, db *DB, p accountable.Principal, idem *accountable.Idempotency) (string, error) {
	id := uuid.Must(uuid.NewV7()).String()
	cmd := commandOf[struct{}](p, idem, accountable.Causation{})
	cmd.blind = true
	cmd.run = func(ctx context.Context, tx *tx) (struct{}, error) {
		if _, err := tx.Append(aggregate(accountable.AggregateTask, id), accountable.EventWorkCreated, map[string]string{"id": id}); err != nil {
			return struct{}{}, err
		}
		tx.Queue(`INSERT INTO tasks (workspace_id, id, title, status, priority, created_at, updated_at, aggregate_version)
			VALUES ($1, $2, 'doomed', 'todo', 'medium', $3, $3, 1)`, p.WorkspaceID, id, tx.Now())
		tx.Queue(`SELECT 1 / 0`)
		return struct{}{}, nil
	}
	_, _, err := runCommand(ctx, db, cmd)
	return id, err
}

// ErrNoWorkflowMessages is errNoWorkflowMessages.
var ErrNoWorkflowMessages = errNoWorkflowMessages

// ErrMissingPredecessor is errMissingPredecessor.
var ErrMissingPredecessor = errMissingPredecessor

// AppendUndeclared runs a command that appends to the existing task id without declaring
// it (so without its locked head), having declared the new tasks declaredNew.
func AppendUndeclared(ctx context.Context, db *DB, p accountable.Principal, id string, declaredNew ...string) error {
	cmd := commandOf[struct{}](p, nil, accountable.Causation{})
	for _, n := range declaredNew { // declared, and without a head: the command would create them
		cmd.locks = append(cmd.locks, aggregate(accountable.AggregateTask, n))
	}
	cmd.run = func(ctx context.Context, tx *tx) (struct{}, error) {
		_, err := tx.Append(aggregate(accountable.AggregateTask, id), accountable.EventWorkCompleted, map[string]string{"id": id})
		return struct{}{}, err
	}
	_, _, err := runCommand(ctx, db, cmd)
	return err
}

// RunFailing runs a command whose function raises SQLSTATE code (naming constraint) in its
// first failures attempts and appends an event to a new aggregate after that. It returns
// how many attempts ran and the command's error; constraints are the command's named ones.
func RunFailing(ctx context.Context, db *DB, p accountable.Principal, code, constraint string, failures int,
	constraints map[string]error) (int, error) {
	attempts := 0
	cmd := commandOf[struct{}](p, nil, accountable.Causation{})
	cmd.constraints = constraints
	cmd.run = func(ctx context.Context, tx *tx) (struct{}, error) {
		attempts++
		if attempts <= failures {
			if err := tx.Exec(ctx, fmt.Sprintf(`DO $$ BEGIN RAISE EXCEPTION 'injected' USING ERRCODE = '%s', CONSTRAINT = '%s'; END $$`,
				code, constraint)); err != nil {
				return struct{}{}, err
			}
		}
		id := uuid.Must(uuid.NewV7()).String()
		_, err := tx.Append(aggregate(accountable.AggregateTask, id), accountable.EventWorkCreated, map[string]string{"id": id})
		return struct{}{}, err
	}
	_, _, err := runCommand(ctx, db, cmd)
	return attempts, err
}

// JanitorLock is the advisory lock of the idempotency janitor.
const JanitorLock = janitorLock

// ProjectionEventsPredicate is the projections' partial-index predicate.
const ProjectionEventsPredicate = projectionEvents

// AggregateTableQueries are the queries of aggregateTables.
func AggregateTableQueries() []string {
	var out []string
	for _, t := range aggregateTables {
		out = append(out, t.query)
	}
	return out
}

// EventHash is the hand-written event hash, for its test against canonical.DigestOf.
var EventHash = eventHash

// EventHashInPostgres hashes h in PostgreSQL as a command that reads its head in the same
// statement would: eventHashSQL over the header's parts around the head's values, with
// h's version and previous hash given as the head's.
func EventHashInPostgres(ctx context.Context, db *DB, h accountable.EventHeader) (string, error) {
	before, middle, after := eventHeaderAround(h)
	var hash string
	err := db.pool.QueryRow(ctx, `SELECT `+eventHashSQL(1, "$4::bigint", "$5::text"),
		before, middle, after, h.AggregateVersion, h.PreviousHash).Scan(&hash)
	return hash, err
}

// LedgerLogTreeAt is the workspace's tree of size size, from its stored hashes.
func (db *DB) LedgerLogTreeAt(ctx context.Context, workspaceID string, size int64) (tlog.Tree, error) {
	return db.ledgerLogTreeAt(ctx, workspaceID, size)
}
