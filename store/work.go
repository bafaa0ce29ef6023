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

// CompleteWork completes a work item at the expected version and writes its receipt, in
// one round trip when it can (CompleteWorkSQL: one statement, after the idempotency gate,
// as one implicit transaction). When that statement matches nothing (a stale version, a
// task that is not there or cannot be completed) it writes nothing, and the completion
// runs the long way, in two round trips, which tells why: the task's head is locked
// first, so concurrent completions of one task run one after the other; the UPDATE checks
// the version, so only the first of them matches a row and the others get
// task_version_stale. The UPDATE goes in the long way's first round trip (it needs nothing
// the command reads).
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
	if exact && in.TaskID == accountable.NormalizeUUID(in.TaskID) { // else the long way says why
		cmd.single = func(tx *tx) (func() (accountable.WorkCompletion, error), error) {
			return queueCompletion(tx, ref, in, expected)
		}
	}
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
		r := completionReceipt(t.ID, in, tx.Now())
		ev, err := tx.Append(ref, accountable.EventWorkCompleted, completedPayload(in, r))
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

// completionReceipt is the receipt a completion of the task taskID writes, made at now.
func completionReceipt(taskID string, in accountable.CompleteWork, now time.Time) accountable.Receipt {
	r := accountable.Receipt{
		ID: uuid.Must(uuid.NewV7()).String(), TaskID: taskID, Status: accountable.ReceiptCompleted,
		MeasuredDurationHours: in.MeasuredDurationHours, CostCents: in.CostCents,
		Evidence: in.Evidence, CreatedAt: accountable.TimeOf(now),
	}
	if in.Summary != nil {
		r.Summary = *in.Summary
	}
	if len(r.Evidence) == 0 {
		r.Evidence = accountable.Object("{}")
	}
	return r
}

// completedPayload is the payload of the work.completed event of a completion with the
// receipt r.
func completedPayload(in accountable.CompleteWork, r accountable.Receipt) payload.WorkCompleted {
	return payload.WorkCompleted{TaskID: r.TaskID, Status: accountable.TaskCompleted, Receipt: r, CommandID: in.Causation.CommandID}
}

// CompleteWorkSQL is a completion in one statement (exported for make bench's mirror of
// it, which must send what the service sends), whose data-modifying parts PostgreSQL
// runs on one snapshot: it locks the task's head (head), updates the task at the expected
// version (done: the head's lock is taken first, as the long way takes it, by the
// one-time filter on it), and from those two rows appends the work.completed event with
// its version, previous hash and hash (ev: eventHashSQL over the header's parts), the
// receipt (rc), the moved head (moved) and, with a key, the idempotency record (rec),
// whose replay document is its parts around the event's version and hash and the task's
// JSON (taskJSONSQL). It returns the task's row and the event's version, hash and
// previous hash, or no row and writes nothing. A due date whose year is not 0001-9999 is
// left to the long way: the task's JSON here writes four-digit years.
var CompleteWorkSQL = `WITH head AS (
	SELECT version, event_hash FROM ledger_heads
	WHERE workspace_id = $1 AND aggregate_type = $3 AND aggregate_id = $4 FOR UPDATE
), done AS (
	UPDATE tasks SET status = $7, updated_at = $8, aggregate_version = aggregate_version + 1
	WHERE workspace_id = $1 AND id = $2 AND aggregate_version = $5 AND updated_at = $6
	  AND status IN (` + CompletableStatusesSQL + `)
	  AND (due_date IS NULL OR extract(year FROM due_date AT TIME ZONE 'UTC') BETWEEN 1 AND 9999)
	  AND (SELECT version FROM head) IS NOT NULL
	RETURNING *
), ev AS (
	INSERT INTO ledger_events (workspace_id, id, aggregate_type, aggregate_id,
		aggregate_version, event_type, schema_version, actor_type, actor_id, payload, payload_digest,
		occurred_at, recorded_at, idempotency_key, causation_id, correlation_id, previous_hash, event_hash)
	SELECT $1, $9::uuid, $3, $4, h.version + 1, $10::text, $11::text, $12::text, $13::text, $14::jsonb, $15::text, $8, $8,
		$16::text, $17::text, $18::text, h.event_hash, ` + eventHashSQL(19, "h.version + 1", "h.event_hash") + `
	FROM head h, done
	RETURNING id AS event_id, aggregate_version AS event_version, event_hash, previous_hash
), rc AS (
	INSERT INTO receipts (workspace_id, id, task_id, status, summary, measured_duration_hours,
		cost_cents, evidence, event_id, created_at)
	SELECT $1, $22::uuid, $2, $23::text, $24::text, $25::float8, $26::bigint, $27::jsonb, ev.event_id, $8 FROM ev
), moved AS (
	UPDATE ledger_heads SET version = ev.event_version, event_id = ev.event_id, event_hash = ev.event_hash, updated_at = $8
	FROM ev WHERE ledger_heads.workspace_id = $1 AND ledger_heads.aggregate_type = $3 AND ledger_heads.aggregate_id = $4
), rec AS (
	INSERT INTO idempotency_records (workspace_id, key, operation, request_digest, response,
		status, created_at, expires_at)
	SELECT $1, $16::text, $28::text, $29::text,
		($30::text || ev.event_version || $31::text || ev.event_hash || $32::text || ` + taskJSONSQL + ` || $33::text)::json,
		'completed', $8, $35::timestamptz
	FROM ev, done d WHERE $16::text IS NOT NULL
	` + idempotencyRecordConflictSQL + `
)
SELECT ` + taskColumns + `, event_version, event_hash, previous_hash FROM done, ev`

// taskJSONSQL is the JSON of the completed task d in CompleteWorkSQL's replay document:
// the members accountable.Task's JSON has, with the same values (instants as RFC 3339
// with microseconds in UTC, the metadata as stored), and its concurrency made by the
// service ($34). A replay decodes it, so only the values must be the same, not the text.
// (The time format quotes its colons, and no colon of the statement is followed by a
// name: make bench's pgbench mirror sends this statement, and pgbench would take ":MI"
// for a variable.)
const taskJSONSQL = `json_build_object('id', d.id, 'title', d.title, 'description', d.description, 'status', d.status,
		'priority', d.priority, 'due_date', to_char(d.due_date AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24":"MI":"SS.US"Z"'),
		'initiative_id', d.initiative_id, 'workstream_id', d.workstream_id, 'milestone_id', d.milestone_id,
		'metadata', d.metadata, 'estimated_cost_cents', d.estimated_cost_cents,
		'created_at', to_char(d.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24":"MI":"SS.US"Z"'),
		'updated_at', to_char(d.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24":"MI":"SS.US"Z"'),
		'aggregate_version', d.aggregate_version, 'concurrency', $34::json)::text`

// completeWorkParams is the number of CompleteWorkSQL's parameters.
const completeWorkParams = 35

// queueCompletion queues CompleteWorkSQL for in on tx's batch, and returns what makes the
// completion from its row (errNoMatch when it matched none).
func queueCompletion(tx *tx, ref aggregateRef, in accountable.CompleteWork, expected accountable.TaskVersion) (func() (accountable.WorkCompletion, error), error) {
	cc := tx.cc
	r := completionReceipt(in.TaskID, in, cc.Now) // the task's id as the database writes it (normalized)
	ev, err := newUnchainedEvent(cc, ref, 0, nil, accountable.EventWorkCompleted, completedPayload(in, r))
	if err != nil {
		return nil, err
	}
	before, middle, after := eventHeaderAround(ev.EventHeader)
	// $1–$27 the completion, $28–$35 its idempotency record: one array, filled in place.
	args := append(make([]any, 0, completeWorkParams), cc.WorkspaceID, in.TaskID, ref.Type, ref.ID, expected.AggregateVersion, expected.UpdatedAt,
		string(accountable.TaskCompleted), cc.Now, ev.ID, ev.EventType, ev.SchemaVersion, string(ev.ActorType), ev.ActorID,
		string(ev.Payload), ev.PayloadDigest, ev.IdempotencyKey, ev.CausationID, ev.CorrelationID, before, middle, after,
		r.ID, r.Status, r.Summary, r.MeasuredDurationHours, r.CostCents, string(r.Evidence))
	if idem := cc.Idempotency; idem == nil {
		args = args[:completeWorkParams] // no record: its parameters NULL (make's zero values)
	} else {
		// The task as it will be: its version and instant, and so its concurrency, are known.
		done := accountable.Task{AggregateVersion: expected.AggregateVersion + 1, UpdatedAt: accountable.TimeOf(cc.Now)}.WithConcurrency()
		docA, docB, docC, docD, err := completionDocument(in.TaskID, ev, r)
		if err != nil {
			return nil, err
		}
		args = append(args, idem.Operation, idem.RequestDigest, docA, docB, docC, docD,
			string(done.Concurrency.AppendJSON(nil)), cc.Now.Add(accountable.IdempotencyRetention))
	}
	var (
		t        accountable.Task
		chained  accountable.Event
		matchErr error
	)
	tx.batch.QueryRow(CompleteWorkSQL, func(row pgx.Row) error {
		var prev *string
		t, matchErr = scanTask(row, &chained.AggregateVersion, &chained.EventHash, &prev)
		chained.PreviousHash = prev
		return nil
	}, args...)
	return func() (accountable.WorkCompletion, error) {
		if errors.Is(matchErr, pgx.ErrNoRows) {
			return accountable.WorkCompletion{}, errNoMatch
		}
		if matchErr != nil {
			return accountable.WorkCompletion{}, matchErr
		}
		ev.AggregateVersion, ev.EventHash, ev.PreviousHash = chained.AggregateVersion, chained.EventHash, chained.PreviousHash
		tx.events = append(tx.events, ev)
		return accountable.WorkCompletion{TaskID: t.ID, ReceiptID: r.ID, EventRef: ev.Ref(), Task: t, Receipt: r}, nil
	}, nil
}

// completionDocument is the replay document of a completion (the text queueCommit would
// store for it) around what CompleteWorkSQL fills in: the event's version (between a and
// b), its hash (between b and c) and the task's JSON (between c and d).
func completionDocument(taskID string, ev accountable.Event, r accountable.Receipt) (a, b, c, d string, err error) {
	buf := append(make([]byte, 0, 1<<10), replayDocumentPrefix...)
	buf = append(buf, `{"taskId":`...)
	buf = accountable.AppendJSONString(buf, taskID)
	buf = append(buf, `,"receiptId":`...)
	buf = accountable.AppendJSONString(buf, r.ID)
	buf = append(buf, `,"eventId":`...)
	buf = accountable.AppendJSONString(buf, ev.ID)
	buf = append(buf, `,"aggregateVersion":`...)
	a = string(buf)
	buf = append(buf[:0], `,"receipt":`...)
	if buf, err = r.AppendJSON(buf); err != nil {
		return "", "", "", "", err
	}
	d = string(append(buf, "}}"...))
	return a, `,"eventHash":"`, `","duplicate":false,"task":`, d, nil
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
