package store

import (
	"context"

	"github.com/google/uuid"

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
