package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
)

// ClaimWorkflowMessages leases up to limit undelivered workflow messages for lease: no
// other relay takes them meanwhile, and if this one dies they are taken again when the
// lease ends (delivery is idempotent). It is one short transaction: relays never hold a
// lock, or the event stream's horizon, while they talk to Temporal. A leased message has
// no last_error (a failed delivery sets it again): ReleaseWorkflowMessages, which frees
// the messages waiting out a backoff, must not free one another relay is delivering.
func (db *DB) ClaimWorkflowMessages(ctx context.Context, limit int, lease time.Duration) ([]accountable.WorkflowMessage, error) {
	rows, err := db.pool.Query(ctx, `UPDATE outbox o SET available_at = now() + $2::interval, attempts = o.attempts + 1, last_error = NULL
		FROM (SELECT id FROM outbox WHERE available_at <= now() AND dead_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED) c
		WHERE o.id = c.id
		RETURNING o.id, o.workspace_id, o.kind, o.workflow_name, o.workflow_id, COALESCE(o.signal_name, ''), o.payload::text, o.attempts`,
		limit, lease)
	if err != nil {
		return nil, mapError(err)
	}
	msgs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (accountable.WorkflowMessage, error) {
		var m accountable.WorkflowMessage
		var kind, payload string
		err := row.Scan(&m.ID, &m.WorkspaceID, &kind, &m.WorkflowName, &m.WorkflowID, &m.SignalName, &payload, &m.Attempts)
		m.Kind, m.Input = accountable.WorkflowMessageKind(kind), []byte(payload)
		return m, err
	})
	return msgs, mapError(err)
}

// DeliveredWorkflowMessages removes delivered messages.
func (db *DB) DeliveredWorkflowMessages(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := db.pool.Exec(ctx, `DELETE FROM outbox WHERE id = ANY ($1)`, ids)
	return mapError(err)
}

// RetryWorkflowMessage schedules another delivery of a message after a failed one.
func (db *DB) RetryWorkflowMessage(ctx context.Context, id int64, after time.Duration, reason string) error {
	_, err := db.pool.Exec(ctx, `UPDATE outbox SET available_at = now() + $2::interval, last_error = $3 WHERE id = $1`,
		id, after, reason)
	return mapError(err)
}

// DeadWorkflowMessage keeps a message Temporal refused for good as a dead letter: it is
// not delivered again until an operator sets its dead_at back to NULL.
func (db *DB) DeadWorkflowMessage(ctx context.Context, id int64, reason string) error {
	_, err := db.pool.Exec(ctx, `UPDATE outbox SET dead_at = now(), last_error = $2 WHERE id = $1`, id, reason)
	return mapError(err)
}

// ReleaseWorkflowMessages makes every message waiting for a retry available now: the relay
// calls it when Temporal is reachable again, so nothing waits out its backoff after an
// outage. Messages leased to a relay (no last_error) are left to it: freed, a second relay
// would deliver them too.
func (db *DB) ReleaseWorkflowMessages(ctx context.Context) (int64, error) {
	tag, err := db.pool.Exec(ctx, `UPDATE outbox SET available_at = now()
		WHERE available_at > now() AND last_error IS NOT NULL AND dead_at IS NULL`)
	if err != nil {
		return 0, mapError(err)
	}
	return tag.RowsAffected(), nil
}

// PendingWorkflowMessages counts the messages not delivered yet (a gauge for operators).
func (db *DB) PendingWorkflowMessages(ctx context.Context) (int64, error) {
	var n int64
	err := db.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE dead_at IS NULL`).Scan(&n)
	return n, mapError(err)
}

// DeadWorkflowMessages counts the dead letters (a gauge for operators: each needs one).
func (db *DB) DeadWorkflowMessages(ctx context.Context) (int64, error) {
	var n int64
	err := db.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE dead_at IS NOT NULL`).Scan(&n)
	return n, mapError(err)
}
