package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
)

const taskColumns = `id, workspace_id, title, description, status, priority, due_date, initiative_id,
	workstream_id, milestone_id, metadata::text, estimated_cost_cents, created_at, updated_at, aggregate_version`

func scanTask(row pgx.Row, extra ...any) (accountable.Task, error) {
	var t accountable.Task
	var status, priority, metadata string
	dest := append([]any{&t.ID, &t.WorkspaceID, &t.Title, &t.Description, &status, &priority, &t.DueDate,
		&t.InitiativeID, &t.WorkstreamID, &t.MilestoneID, &metadata, &t.EstimatedCostCents, &t.CreatedAt,
		&t.UpdatedAt, &t.AggregateVersion}, extra...)
	if err := row.Scan(dest...); err != nil {
		return t, err
	}
	t.Status, t.Priority, t.Metadata = accountable.TaskStatus(status), accountable.Priority(priority), []byte(metadata)
	t.CreatedAt, t.UpdatedAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC()
	if t.DueDate != nil {
		d := t.DueDate.UTC()
		t.DueDate = &d
	}
	return t, nil
}

// taskPayload is the task as ledger payloads carry it.
func taskPayload(t accountable.Task) map[string]any {
	var due *string
	if t.DueDate != nil {
		s := accountable.FormatTime(*t.DueDate)
		due = &s
	}
	return map[string]any{
		"id": t.ID, "title": t.Title, "description": t.Description, "status": t.Status,
		"priority": t.Priority, "due_date": due, "initiative_id": t.InitiativeID,
		"workstream_id": t.WorkstreamID, "milestone_id": t.MilestoneID, "metadata": t.Metadata,
		"estimated_cost_cents": t.EstimatedCostCents,
	}
}

func commandFor(p accountable.Principal, idem *accountable.Idempotency, c accountable.Causation) commandContext {
	return commandContext{WorkspaceID: p.WorkspaceID, Actor: p.Actor(), Idempotency: idem, Causation: c, Now: accountable.Now()}
}

// CreateWork creates a work item in the principal's workspace.
func (db *DB) CreateWork(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.CreateWork) (accountable.WorkCreated, bool, error) {
	cc := commandFor(p, idem, in.Causation)
	return runCommand(ctx, db, cc, func(ctx context.Context, tx querier, b *pgx.Batch) (accountable.WorkCreated, error) {
		t := accountable.Task{
			ID: uuid.Must(uuid.NewV7()).String(), WorkspaceID: p.WorkspaceID, Title: in.Title,
			Description: in.Description, Status: accountable.TaskTodo, Priority: in.Priority, DueDate: in.DueDate,
			InitiativeID: in.InitiativeID, WorkstreamID: in.WorkstreamID, MilestoneID: in.MilestoneID,
			Metadata: in.Metadata, EstimatedCostCents: in.EstimatedCostCents, CreatedAt: cc.Now, UpdatedAt: cc.Now,
			AggregateVersion: 1,
		}
		if t.Priority == "" {
			t.Priority = accountable.PriorityMedium
		}
		if len(t.Metadata) == 0 {
			t.Metadata = []byte("{}")
		}
		ev, err := newEvent(cc, change{
			AggregateType: accountable.AggregateTask, AggregateID: t.ID, AggregateVersion: 1,
			EventType: accountable.EventWorkCreated,
			Payload:   map[string]any{"task": taskPayload(t), "command_id": in.Causation.CommandID},
		})
		if err != nil {
			return accountable.WorkCreated{}, err
		}
		b.Queue(`INSERT INTO tasks (workspace_id, id, title, description, status, priority, due_date,
			initiative_id, workstream_id, milestone_id, metadata, estimated_cost_cents, created_at, updated_at, aggregate_version)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
			t.WorkspaceID, t.ID, t.Title, t.Description, string(t.Status), string(t.Priority), t.DueDate,
			t.InitiativeID, t.WorkstreamID, t.MilestoneID, string(t.Metadata), t.EstimatedCostCents,
			t.CreatedAt, t.UpdatedAt, t.AggregateVersion)
		queueEvent(b, ev)
		return accountable.WorkCreated{Task: t, Event: ev.Ref()}, nil
	})
}

// GetWork reads one work item of the workspace.
func (db *DB) GetWork(ctx context.Context, workspaceID, taskID string) (accountable.Task, error) {
	t, err := scanTask(db.pool.QueryRow(ctx, `SELECT `+taskColumns+` FROM tasks WHERE workspace_id = $1 AND id = $2`,
		workspaceID, taskID))
	if errors.Is(err, pgx.ErrNoRows) {
		return t, accountable.NotFound("task")
	}
	return t, mapError(err)
}

// ListWork reads a page of the workspace's work items, newest first.
func (db *DB) ListWork(ctx context.Context, workspaceID string, f accountable.WorkFilter) ([]accountable.Task, *accountable.WorkCursor, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = accountable.DefaultPageLimit
	}
	var status *string
	if f.Status != nil {
		s := string(*f.Status)
		status = &s
	}
	var afterAt *time.Time
	var afterID *string
	if f.After != nil {
		afterAt, afterID = &f.After.CreatedAt, &f.After.ID
	}
	rows, err := db.pool.Query(ctx, `SELECT `+taskColumns+` FROM tasks
		WHERE workspace_id = $1
		  AND ($2::text IS NULL OR status = $2)
		  AND ($3::uuid IS NULL OR initiative_id = $3)
		  AND ($4::timestamptz IS NULL OR updated_at >= $4)
		  AND ($5::timestamptz IS NULL OR (created_at, id) < ($5, $6::uuid))
		ORDER BY created_at DESC, id DESC
		LIMIT $7`, workspaceID, status, f.InitiativeID, f.UpdatedSince, afterAt, afterID, limit+1)
	if err != nil {
		return nil, nil, mapError(err)
	}
	defer rows.Close()
	tasks := make([]accountable.Task, 0, min(limit, 64))
	var next *accountable.WorkCursor
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, nil, mapError(err)
		}
		if len(tasks) == limit {
			last := tasks[len(tasks)-1]
			next = &accountable.WorkCursor{CreatedAt: last.CreatedAt, ID: last.ID}
			break
		}
		tasks = append(tasks, t)
	}
	return tasks, next, mapError(rows.Err())
}

// CompleteWork completes a work item at the expected version and writes its receipt. The
// version is checked by the UPDATE itself, so of concurrent completions of one version
// exactly one matches a row; the others find a newer version and get task_version_stale.
func (db *DB) CompleteWork(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.CompleteWork) (accountable.WorkCompletion, bool, error) {
	cc := commandFor(p, idem, in.Causation)
	return runCommand(ctx, db, cc, func(ctx context.Context, tx querier, b *pgx.Batch) (accountable.WorkCompletion, error) {
		var prevHash *string
		// An instant finer than the stored microseconds can never equal a stored version.
		exact := in.Expected.UpdatedAt.Equal(in.Expected.UpdatedAt.Truncate(time.Microsecond))
		t, err := scanTask(tx.QueryRow(ctx, `UPDATE tasks SET status = $5, updated_at = $6, aggregate_version = aggregate_version + 1
			WHERE workspace_id = $1 AND id = $2 AND aggregate_version = $3 AND updated_at = $4 AND $7
			  AND status IN ('todo', 'in_progress', 'blocked')
			RETURNING `+taskColumns+`, (SELECT event_hash FROM ledger_events
				WHERE workspace_id = $1 AND aggregate_type = 'task' AND aggregate_id = $2::text AND aggregate_version = $3)`,
			p.WorkspaceID, in.TaskID, in.Expected.AggregateVersion, in.Expected.UpdatedAt,
			string(accountable.TaskCompleted), cc.Now, exact), &prevHash)
		if errors.Is(err, pgx.ErrNoRows) {
			return accountable.WorkCompletion{}, completionRefused(ctx, tx, p.WorkspaceID, in)
		}
		if err != nil {
			return accountable.WorkCompletion{}, err
		}
		r := accountable.Receipt{
			ID: uuid.Must(uuid.NewV7()).String(), TaskID: t.ID, Status: accountable.ReceiptCompleted,
			Summary: in.Summary, MeasuredDurationHours: in.MeasuredDurationHours, CostCents: in.CostCents,
			Evidence: in.Evidence, CreatedAt: cc.Now,
		}
		if len(r.Evidence) == 0 {
			r.Evidence = []byte("{}")
		}
		ev, err := newEvent(cc, change{
			AggregateType: accountable.AggregateTask, AggregateID: t.ID, AggregateVersion: t.AggregateVersion,
			PreviousHash: prevHash, EventType: accountable.EventWorkCompleted,
			Payload: map[string]any{
				"task_id": t.ID, "receipt_id": r.ID, "status": t.Status, "summary": r.Summary,
				"measured_duration_hours": r.MeasuredDurationHours, "cost_cents": r.CostCents,
				"evidence": r.Evidence, "command_id": in.Causation.CommandID,
			},
		})
		if err != nil {
			return accountable.WorkCompletion{}, err
		}
		b.Queue(`INSERT INTO receipts (workspace_id, id, task_id, status, summary, measured_duration_hours,
			cost_cents, evidence, event_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			p.WorkspaceID, r.ID, r.TaskID, r.Status, r.Summary, r.MeasuredDurationHours, r.CostCents,
			string(r.Evidence), ev.ID, r.CreatedAt)
		queueEvent(b, ev)
		return accountable.WorkCompletion{Task: t, Receipt: r, Event: ev.Ref()}, nil
	})
}

// completionRefused explains why the completing UPDATE matched no row.
func completionRefused(ctx context.Context, tx querier, workspaceID string, in accountable.CompleteWork) error {
	var status string
	var cur accountable.TaskVersion
	err := tx.QueryRow(ctx, `SELECT status, aggregate_version, updated_at FROM tasks WHERE workspace_id = $1 AND id = $2`,
		workspaceID, in.TaskID).Scan(&status, &cur.AggregateVersion, &cur.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return accountable.NotFound("task")
	}
	if err != nil {
		return err
	}
	cur.UpdatedAt = cur.UpdatedAt.UTC()
	if !cur.Equal(in.Expected) {
		return accountable.TaskVersionStale(cur)
	}
	return accountable.Errorf(accountable.ECodeInvalidStateTransition,
		"A task in status %q cannot be completed.", status)
}
