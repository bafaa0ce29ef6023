package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/payload"
)

// Ledger verification compares these aggregates' rows with their chains (aggregateTables).
func init() {
	verifiesAggregateTable(accountable.AggregateTask, `SELECT id::text, aggregate_version FROM tasks WHERE workspace_id = $1`)
}

const taskColumns = `id, workspace_id, title, description, status, priority, due_date, initiative_id,
	workstream_id, milestone_id, metadata::text, estimated_cost_cents, created_at, updated_at, aggregate_version`

// scanTask reads a row of taskColumns (and extra). Its instants are scanned as time.Time,
// a type pgx scans natively, and then made accountable.Time as Time.Scan makes them (UTC):
// pgx plans every column's scan anew for each row, and a sql.Scanner's plan is the
// longest to find and boxes the value on the way (a tenth of GET /work/{taskId}'s scan).
func scanTask(row pgx.Row, extra ...any) (accountable.Task, error) {
	var t accountable.Task
	var status, priority, metadata string
	var due *time.Time
	var created, updated time.Time
	dest := append([]any{&t.ID, &t.WorkspaceID, &t.Title, &t.Description, &status, &priority, &due,
		&t.InitiativeID, &t.WorkstreamID, &t.MilestoneID, &metadata, &t.EstimatedCostCents, &created,
		&updated, &t.AggregateVersion}, extra...)
	if err := row.Scan(dest...); err != nil {
		return t, err
	}
	if due != nil {
		t.DueDate = &accountable.Time{Time: due.UTC()}
	}
	t.CreatedAt, t.UpdatedAt = accountable.Time{Time: created.UTC()}, accountable.Time{Time: updated.UTC()}
	t.Status, t.Priority, t.Metadata = accountable.TaskStatus(status), accountable.Priority(priority), accountable.Object(metadata)
	return t.WithConcurrency(), nil
}

// commandOf is the part of a command every Work command shares: who, which key, why.
func commandOf[T any](p accountable.Principal, idem *accountable.Idempotency, c accountable.Causation) command[T] {
	return command[T]{workspaceID: p.WorkspaceID, actor: p.Actor(), idempotency: idem, causation: c}
}

// CreateWork creates a work item in the principal's workspace, in one round trip (it reads
// nothing).
func (db *DB) CreateWork(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.CreateWork) (accountable.WorkCreated, bool, error) {
	cmd := commandOf[accountable.WorkCreated](p, idem, in.Causation)
	cmd.blind = true // it only creates: one round trip
	cmd.run = func(ctx context.Context, tx *tx) (accountable.WorkCreated, error) {
		now := accountable.TimeOf(tx.Now())
		t := accountable.Task{
			ID: uuid.Must(uuid.NewV7()).String(), WorkspaceID: p.WorkspaceID, Title: in.Title,
			Description: in.Description, Status: accountable.TaskTodo, Priority: accountable.PriorityMedium,
			InitiativeID: normalizeUUID(in.InitiativeID), WorkstreamID: normalizeUUID(in.WorkstreamID),
			MilestoneID: normalizeUUID(in.MilestoneID), Metadata: in.Metadata,
			EstimatedCostCents: in.EstimatedCostCents, CreatedAt: now, UpdatedAt: now, AggregateVersion: 1,
		}
		if in.Priority != nil {
			t.Priority = *in.Priority
		}
		if in.DueDate != nil {
			due := in.DueDate.Time
			t.DueDate = &due
		}
		if len(t.Metadata) == 0 {
			t.Metadata = accountable.Object("{}")
		}
		ev, err := appendTask(tx, t, in.Causation.CommandID)
		if err != nil {
			return accountable.WorkCreated{}, err
		}
		return accountable.WorkCreated{TaskID: t.ID, EventRef: ev.Ref(), Task: t.WithConcurrency()}, nil
	}
	return runCommand(ctx, db, cmd)
}

// appendTask creates the work item t in a command: its work.created event and its row
// (queued with the commit). Every way of creating work (POST /work, committing a
// proposal) goes through it.
func appendTask(tx *tx, t accountable.Task, commandID *string) (accountable.Event, error) {
	ev, err := tx.Append(aggregate(accountable.AggregateTask, t.ID), accountable.EventWorkCreated,
		payload.WorkCreated{Task: t, CommandID: commandID})
	if err != nil {
		return ev, err
	}
	tx.Queue(`INSERT INTO tasks (workspace_id, id, title, description, status, priority, due_date,
		initiative_id, workstream_id, milestone_id, metadata, estimated_cost_cents, created_at, updated_at, aggregate_version)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		t.WorkspaceID, t.ID, t.Title, t.Description, string(t.Status), string(t.Priority), t.DueDate,
		t.InitiativeID, t.WorkstreamID, t.MilestoneID, string(t.Metadata), t.EstimatedCostCents,
		t.CreatedAt, t.UpdatedAt, t.AggregateVersion)
	return ev, nil
}

func normalizeUUID(p *string) *string {
	if p == nil {
		return nil
	}
	v := accountable.NormalizeUUID(*p)
	return &v
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

// keysetAfter returns the (created_at, id) a newest-first list resumes after, or nils
// for its first page.
func keysetAfter(c *accountable.WorkCursor) (*time.Time, *string) {
	if c == nil {
		return nil, nil
	}
	return &c.CreatedAt, &c.ID
}

// keysetPage collects a newest-first page of at most limit rows from rows (queried with
// LIMIT limit+1) and the cursor of the next page (nil on the last), read from each row's
// created_at and id by key.
func keysetPage[T any](rows pgx.Rows, limit int, scan func(pgx.Row) (T, error), key func(T) (time.Time, string)) ([]T, *accountable.WorkCursor, error) {
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (T, error) { return scan(row) })
	if err != nil {
		return nil, nil, mapError(err)
	}
	var next *accountable.WorkCursor
	if len(out) > limit {
		out = out[:limit]
		at, id := key(out[len(out)-1])
		next = &accountable.WorkCursor{CreatedAt: at, ID: id}
	}
	return out, next, nil
}

// pageLimit is a list's page size: the filter's, or the default.
func pageLimit(limit int) int {
	if limit <= 0 {
		return accountable.DefaultPageLimit
	}
	return limit
}

// optionalString is the text of an optional enumerated filter (nil: no filter).
func optionalString[T ~string](v *T) *string {
	if v == nil {
		return nil
	}
	s := string(*v)
	return &s
}

// scanDoc reads a row of one jsonb document (selected as text) into a T; what names it
// in errors.
func scanDoc[T any](row pgx.Row, what string) (T, error) {
	var doc string
	var v T
	if err := row.Scan(&doc); err != nil {
		return v, err
	}
	if err := decodeStored([]byte(doc), &v); err != nil {
		return v, fmt.Errorf("store: decode %s: %w", what, err)
	}
	return v, nil
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
	afterAt, afterID := keysetAfter(f.After)
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
			next = &accountable.WorkCursor{CreatedAt: last.CreatedAt.Time, ID: last.ID}
			break
		}
		tasks = append(tasks, t)
	}
	return tasks, next, mapError(rows.Err())
}

// CompletableStatusesSQL lists, for SQL, the task statuses accountable.TaskStatus.Completable
// admits: 'todo', 'in_progress', 'blocked'. The completing UPDATE checks the status in its
// WHERE rather than reading the row and asking Completable, so that the check is atomic
// with the version check and costs no round trip (completion is the benchmarked path);
// the list is made from the rule, which so has one definition, and
// TestCompletionFollowsCompletable holds the statement to it. It is exported for make
// bench, whose pgbench script must send the statement the store sends.
var CompletableStatusesSQL = func() string {
	var quoted []string
	for _, s := range accountable.TaskStatuses {
		if s.Completable() {
			quoted = append(quoted, "'"+strings.ReplaceAll(string(s), "'", "''")+"'")
		}
	}
	return strings.Join(quoted, ", ")
}()

// CompleteWork completes a work item at the expected version and writes its receipt. The
// task's head is locked first, so concurrent completions of one task run one after the
// other; the UPDATE checks the version, so only the first of them matches a row and the
// others get task_version_stale. The UPDATE goes in the command's first round trip (it
// needs nothing the command reads), so a completion costs two round trips.
func (db *DB) CompleteWork(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.CompleteWork) (accountable.WorkCompletion, bool, error) {
	expected, err := in.Expected()
	if err != nil {
		return accountable.WorkCompletion{}, false, err
	}
	// An instant finer than the stored microseconds can never equal a stored version.
	exact := expected.UpdatedAt.Equal(expected.UpdatedAt.Truncate(time.Microsecond))
	ref := aggregate(accountable.AggregateTask, in.TaskID)
	cmd := commandOf[accountable.WorkCompletion](p, idem, in.Causation)
	cmd.locks = []aggregateRef{ref}
	var (
		t         accountable.Task
		updateErr error
	)
	cmd.prepare = func(pre *prelude) {
		t, updateErr = accountable.Task{}, nil
		pre.QueryRow(`UPDATE tasks SET status = $5, updated_at = $6, aggregate_version = aggregate_version + 1
			WHERE workspace_id = $1 AND id = $2 AND aggregate_version = $3 AND updated_at = $4 AND $7
			  AND status IN (`+CompletableStatusesSQL+`) AND `+pre.Gate(8)+`
			RETURNING `+taskColumns,
			func(row pgx.Row) error {
				t, updateErr = scanTask(row)
				return nil // run decides what a missing row means
			},
			append([]any{p.WorkspaceID, in.TaskID, expected.AggregateVersion, expected.UpdatedAt,
				string(accountable.TaskCompleted), pre.cc.Now, exact}, pre.GateArgs()...)...)
	}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.WorkCompletion, error) {
		if errors.Is(updateErr, pgx.ErrNoRows) {
			return accountable.WorkCompletion{}, completionRefused(ctx, tx, p.WorkspaceID, in.TaskID, expected)
		}
		if updateErr != nil {
			return accountable.WorkCompletion{}, updateErr
		}
		r := accountable.Receipt{
			ID: uuid.Must(uuid.NewV7()).String(), TaskID: t.ID, Status: accountable.ReceiptCompleted,
			MeasuredDurationHours: in.MeasuredDurationHours, CostCents: in.CostCents,
			Evidence: in.Evidence, CreatedAt: accountable.TimeOf(tx.Now()),
		}
		if in.Summary != nil {
			r.Summary = *in.Summary
		}
		if len(r.Evidence) == 0 {
			r.Evidence = accountable.Object("{}")
		}
		ev, err := tx.Append(ref, accountable.EventWorkCompleted, payload.WorkCompleted{
			TaskID: t.ID, Status: t.Status, Receipt: r, CommandID: in.Causation.CommandID})
		if err != nil {
			return accountable.WorkCompletion{}, err
		}
		tx.Queue(`INSERT INTO receipts (workspace_id, id, task_id, status, summary, measured_duration_hours,
			cost_cents, evidence, event_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			p.WorkspaceID, r.ID, r.TaskID, r.Status, r.Summary, r.MeasuredDurationHours, r.CostCents,
			string(r.Evidence), ev.ID, r.CreatedAt)
		return accountable.WorkCompletion{TaskID: t.ID, ReceiptID: r.ID, EventRef: ev.Ref(), Task: t, Receipt: r}, nil
	}
	return runCommand(ctx, db, cmd)
}

// completionRefused explains why the completing UPDATE matched no row.
func completionRefused(ctx context.Context, tx *tx, workspaceID, taskID string, expected accountable.TaskVersion) error {
	var status string
	var cur accountable.TaskVersion
	err := tx.QueryRow(ctx, `SELECT status, aggregate_version, updated_at FROM tasks WHERE workspace_id = $1 AND id = $2`,
		workspaceID, taskID).Scan(&status, &cur.AggregateVersion, &cur.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return accountable.NotFound("task")
	}
	if err != nil {
		return err
	}
	cur.UpdatedAt = cur.UpdatedAt.UTC()
	if !cur.Equal(expected) {
		return accountable.TaskVersionStale(cur)
	}
	return accountable.Errorf(accountable.ECodeInvalidStateTransition,
		"A task in status %q cannot be completed.", status)
}

// WorkReceipt reads the completion receipt of a work item with the work.completed event
// that recorded it (not_found for a work item that has none, or another workspace's).
// A work item completed again after a reopening has several; the newest is read.
func (db *DB) WorkReceipt(ctx context.Context, workspaceID, taskID string) (accountable.WorkReceipt, error) {
	var out accountable.WorkReceipt
	var r accountable.Receipt
	var evidence, payload string
	var created time.Time
	err := db.pool.QueryRow(ctx, `SELECT r.id::text, r.task_id::text, r.status, r.summary, r.measured_duration_hours, r.cost_cents,
			r.evidence::text, r.created_at, e.id::text, e.event_hash, e.payload::text
		FROM receipts r JOIN ledger_events e ON e.workspace_id = r.workspace_id AND e.id = r.event_id
		WHERE r.workspace_id = $1 AND r.task_id = $2
		ORDER BY r.created_at DESC, r.id DESC LIMIT 1`, workspaceID, taskID).Scan(
		&r.ID, &r.TaskID, &r.Status, &r.Summary, &r.MeasuredDurationHours, &r.CostCents, &evidence, &created,
		&out.EventID, &out.EventHash, &payload)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, accountable.Errorf(accountable.ECodeNotFound, "The work item has no completion receipt.")
	}
	if err != nil {
		return out, mapError(err)
	}
	r.Evidence, r.CreatedAt = accountable.Object(evidence), accountable.TimeOf(created)
	out.Receipt, out.Payload = r, accountable.Object(payload)
	return out, nil
}
