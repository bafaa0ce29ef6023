package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
)

// ReadContextSources reads what a context capsule of the scope is built from, in one
// snapshot (REPEATABLE READ, read only) and two round trips: the scope, then every
// section in one batch. The narrowest id of the request names the scope; the levels above
// it are the ones the service holds (a hint that names another is set aside, with a
// reason). Each section is read ranked and bounded (accountable.ContextSectionReadLimit,
// one more read to know there are more):
//
//   - decisions of the scope's initiative (of its jobs on the workstream, for a workstream
//     or a task): pending by urgency and due time, decided ones newest first;
//   - the workspace's open handoffs, breached and nearest their SLA first (handoffs belong
//     to the workspace's processes, not to an initiative);
//   - runs of the initiative (of the workstream), newest first;
//   - the newest ledger events of the scope's aggregates (the task; the workstream and its
//     tasks; the initiative, its workstreams and tasks; the whole workspace);
//   - artifacts of the scope's entity first, then of its initiative, newest first;
//   - receipts of the scope's tasks, newest first.
func (db *DB) ReadContextSources(ctx context.Context, workspaceID string, req accountable.ContextScopeRequest) (accountable.ContextSources, error) {
	var src accountable.ContextSources
	err := db.snapshot(ctx, func(q pgx.Tx) error {
		src = accountable.ContextSources{WorkspaceID: workspaceID}
		if err := readContextScope(ctx, q, workspaceID, req, &src); err != nil {
			return err
		}
		return readContextSections(ctx, q, workspaceID, &src)
	})
	return src, err
}

// readContextScope resolves the request's scope into src.Scope.
func readContextScope(ctx context.Context, q pgx.Tx, ws string, req accountable.ContextScopeRequest, src *accountable.ContextSources) error {
	s := &src.Scope
	s.Kind = accountable.ContextScopeWorkspace
	var initiativeID, workstreamID *string
	switch {
	case req.TaskID != nil:
		t := accountable.ContextTask{}
		var id string
		err := q.QueryRow(ctx, `SELECT id, title, description, status, priority, due_date, estimated_cost_cents,
				aggregate_version, initiative_id, workstream_id
			FROM tasks WHERE workspace_id = $1 AND id = $2`, ws, *req.TaskID).Scan(&id, &t.Title, &t.Description, &t.Status,
			&t.Priority, &t.DueDate, &t.EstimatedCostCents, &t.AggregateVersion, &initiativeID, &workstreamID)
		if errors.Is(err, pgx.ErrNoRows) {
			return accountable.NotFound("task")
		}
		if err != nil {
			return mapError(err)
		}
		t.Ref = accountable.Ref(accountable.AggregateTask, id)
		s.Kind, s.Task = accountable.ContextScopeTask, &t
		src.Reasons = append(src.Reasons, hintReasons("task", req.WorkstreamID, workstreamID, req.InitiativeID, initiativeID)...)
	case req.WorkstreamID != nil:
		workstreamID = req.WorkstreamID
	case req.InitiativeID != nil:
		initiativeID = req.InitiativeID
	}
	w := accountable.ContextWorkstream{}
	var id, ini string
	if workstreamID != nil {
		err := q.QueryRow(ctx, `SELECT id, initiative_id, name, goal, domain, agent_name FROM workstreams
			WHERE workspace_id = $1 AND id = $2`, ws, *workstreamID).Scan(&id, &ini, &w.Name, &w.Goal, &w.Domain, &w.AgentName)
		switch {
		case errors.Is(err, pgx.ErrNoRows) && s.Task == nil:
			return accountable.NotFound("workstream")
		case errors.Is(err, pgx.ErrNoRows):
			// A task may name a workstream the service does not hold (POST /work takes
			// the ids as given): the task's scope is then the task, and its initiative.
			src.Reasons = append(src.Reasons, fmt.Sprintf("the task's workstream %s is not one of the workspace's", *workstreamID))
			workstreamID = nil
		case err != nil:
			return mapError(err)
		}
	}
	if workstreamID != nil {
		w.Ref = accountable.Ref(accountable.AggregateWorkstream, id)
		s.Workstream = &w
		if s.Kind == accountable.ContextScopeWorkspace {
			s.Kind = accountable.ContextScopeWorkstream
			src.Reasons = append(src.Reasons, hintReasons("workstream", nil, nil, req.InitiativeID, &ini)...)
		}
		initiativeID = &ini
	}
	if initiativeID != nil {
		i := accountable.ContextInitiative{}
		var iid string
		err := q.QueryRow(ctx, `SELECT id, title, summary, status FROM initiatives WHERE workspace_id = $1 AND id = $2`,
			ws, *initiativeID).Scan(&iid, &i.Title, &i.Summary, &i.Status)
		switch {
		case errors.Is(err, pgx.ErrNoRows) && s.Kind == accountable.ContextScopeWorkspace:
			return accountable.NotFound("initiative")
		case errors.Is(err, pgx.ErrNoRows):
			src.Reasons = append(src.Reasons, fmt.Sprintf("the %s's initiative %s is not one of the workspace's", s.Kind, *initiativeID))
			return nil
		case err != nil:
			return mapError(err)
		}
		i.Ref = accountable.Ref(accountable.AggregateInitiative, iid)
		s.Initiative = &i
		if s.Kind == accountable.ContextScopeWorkspace {
			s.Kind = accountable.ContextScopeInitiative
		}
	}
	return nil
}

// hintReasons says which of the request's hints above the scope named something else than
// the scope's own levels.
func hintReasons(scope string, askedWorkstream, workstream, askedInitiative, initiative *string) []string {
	var out []string
	if askedWorkstream != nil && (workstream == nil || accountable.NormalizeUUID(*askedWorkstream) != accountable.NormalizeUUID(*workstream)) {
		out = append(out, fmt.Sprintf("workstream_id %s is not the %s's workstream: the %s's own scope is used", *askedWorkstream, scope, scope))
	}
	if askedInitiative != nil && (initiative == nil || accountable.NormalizeUUID(*askedInitiative) != accountable.NormalizeUUID(*initiative)) {
		out = append(out, fmt.Sprintf("initiative_id %s is not the %s's initiative: the %s's own scope is used", *askedInitiative, scope, scope))
	}
	return out
}

// readContextSections reads every section of the scope in one batch.
func readContextSections(ctx context.Context, q pgx.Tx, ws string, src *accountable.ContextSources) error {
	s := src.Scope
	var initiative, workstream, task *string
	if s.Initiative != nil {
		initiative = &s.Initiative.Ref.ID
	}
	if s.Workstream != nil {
		workstream = &s.Workstream.Ref.ID
	}
	if s.Task != nil {
		task = &s.Task.Ref.ID
	}
	// A scope outside any initiative the service holds (a task of none, or naming one it
	// does not hold) has no decisions or runs.
	orphan := s.Kind != accountable.ContextScopeWorkspace && initiative == nil
	limit := accountable.ContextSectionReadLimit + 1
	b := &pgx.Batch{}

	b.Queue(newestEventQuery, ws).QueryRow(func(row pgx.Row) error {
		var seq int64
		if err := row.Scan(&src.AsOfGlobalSequence, &seq); !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		return nil // a workspace without events is as of 0
	})

	// Decisions of the scope: the initiative's, and on a workstream only those of no job
	// or of a job on it. Each scope has its own statement (a parameter that may be NULL
	// would keep a cached generic plan from the indexes of migration 026).
	decisions := `SELECT id, title, status, urgency, due_at, selected_option FROM decisions d WHERE workspace_id = $1`
	args := []any{ws}
	switch {
	case workstream != nil:
		decisions += ` AND initiative_id = $2 AND (job_id IS NULL OR EXISTS (SELECT 1 FROM launch_jobs j
				WHERE j.workspace_id = d.workspace_id AND j.id = d.job_id AND j.workstream_id = $3))`
		args = append(args, *initiative, *workstream)
	case initiative != nil:
		decisions += ` AND initiative_id = $2`
		args = append(args, *initiative)
	}
	scanDecisions := func(into *[]accountable.ContextDecision, more *int, provenance string) func(pgx.Rows) error {
		return func(rows pgx.Rows) error {
			out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (accountable.ContextDecision, error) {
				var d accountable.ContextDecision
				var id string
				err := row.Scan(&id, &d.Summary, &d.Status, &d.Urgency, &d.DueAt, &d.SelectedOption)
				d.Ref, d.Provenance = accountable.Ref(accountable.AggregateDecision, id), provenance
				return d, err
			})
			*into, *more = bounded(out, limit)
			return err
		}
	}
	if !orphan {
		n := strconv.Itoa(len(args) + 1)
		b.Queue(decisions+` AND status = 'pending'
			ORDER BY CASE urgency WHEN 'critical' THEN 0 WHEN 'urgent' THEN 1 WHEN 'standard' THEN 2 ELSE 3 END,
				due_at NULLS LAST, created_at DESC, id LIMIT $`+n, append(args, limit)...).
			Query(scanDecisions(&src.Pending, &src.MoreOfEach.ActiveConstraints, "requested"))
		b.Queue(decisions+` AND status IN ('approved', 'declined')
			ORDER BY decided_at DESC NULLS LAST, created_at DESC, id LIMIT $`+n, append(args, limit)...).
			Query(scanDecisions(&src.Decided, &src.MoreOfEach.AuthoritativeDecisions, "decided"))
	}

	b.Queue(`SELECT id, doc->>'title', status, doc->>'priority', doc->>'fromStageKey', doc->>'toStageKey', due_at,
			sla_breached_at IS NOT NULL
		FROM handoffs WHERE workspace_id = $1 AND status NOT IN ('fulfilled', 'cancelled')
		ORDER BY sla_breached_at IS NULL, due_at NULLS LAST, created_at DESC, id LIMIT $2`, ws, limit).
		Query(func(rows pgx.Rows) error {
			out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (accountable.ContextHandoff, error) {
				var h accountable.ContextHandoff
				var id string
				err := row.Scan(&id, &h.Summary, &h.Status, &h.Priority, &h.From, &h.To, &h.DueAt, &h.SLABreached)
				h.Ref = accountable.Ref(accountable.AggregateHandoff, id)
				return h, err
			})
			src.Handoffs, src.MoreOfEach.OpenRisks = bounded(out, limit)
			return err
		})

	runs, runArgs := `SELECT id, COALESCE(summary, ''), status, outcome_kind, cost_cents, workstream_id FROM runs
		WHERE workspace_id = $1`, []any{ws, limit}
	switch {
	case workstream != nil:
		runs, runArgs = runs+` AND workstream_id = $3`, append(runArgs, *workstream)
	case initiative != nil:
		runs, runArgs = runs+` AND initiative_id = $3`, append(runArgs, *initiative)
	}
	if orphan {
		runs += ` AND false`
	}
	b.Queue(runs+` ORDER BY created_at DESC, id DESC LIMIT $2`, runArgs...).
		Query(func(rows pgx.Rows) error {
			out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (accountable.ContextRun, error) {
				var r accountable.ContextRun
				var id string
				err := row.Scan(&id, &r.Summary, &r.Status, &r.OutcomeKind, &r.CostCents, &r.WorkstreamID)
				r.Ref = accountable.Ref(accountable.AggregateRun, id)
				return r, err
			})
			src.Runs, src.MoreOfEach.Runs = bounded(out, limit)
			return err
		})

	// The newest events: of the workspace, or of the scope's aggregates, each aggregate's
	// newest read through its chain's index.
	eventColumnsOf := `e.id, e.event_type, e.aggregate_type, e.aggregate_id, e.aggregate_version, e.recorded_at, e.event_hash`
	scanEvents := func(rows pgx.Rows) error {
		out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (accountable.ContextEvent, error) {
			var e accountable.ContextEvent
			var id string
			err := row.Scan(&id, &e.EventType, &e.AggregateType, &e.AggregateID, &e.AggregateVersion, &e.RecordedAt, &e.EventHash)
			e.Ref = accountable.Ref("ledger_event", id)
			return e, err
		})
		src.Events, src.MoreOfEach.RecentEvents = bounded(out, limit)
		return err
	}
	// The scope's aggregates: the task alone; or the workstream (initiative) with its
	// workstreams and its 200 most recently changed tasks.
	newest := `SELECT ` + eventColumnsOf + ` FROM aggregates a CROSS JOIN LATERAL (
			SELECT * FROM ledger_events x WHERE x.workspace_id = $1 AND x.aggregate_type = a.aggregate_type
			  AND x.aggregate_id = a.aggregate_id ORDER BY x.aggregate_version DESC LIMIT $2) e
		ORDER BY e.stream_position DESC, e.seq DESC LIMIT $2`
	switch s.Kind {
	case accountable.ContextScopeWorkspace:
		b.Queue(`SELECT `+eventColumnsOf+` FROM ledger_events e WHERE e.workspace_id = $1
			ORDER BY e.stream_position DESC, e.seq DESC LIMIT $2`, ws, limit).Query(scanEvents)
	case accountable.ContextScopeTask:
		b.Queue(`SELECT `+eventColumnsOf+` FROM ledger_events e WHERE e.workspace_id = $1 AND e.aggregate_type = 'task'
			AND e.aggregate_id = $3 ORDER BY e.aggregate_version DESC LIMIT $2`, ws, limit, *task).Query(scanEvents)
	case accountable.ContextScopeWorkstream:
		b.Queue(`WITH aggregates (aggregate_type, aggregate_id) AS (
				SELECT 'workstream', $3::text
				UNION ALL (SELECT 'task', t.id::text FROM tasks t WHERE t.workspace_id = $1 AND t.workstream_id = $3::uuid
					ORDER BY t.updated_at DESC LIMIT 200)) `+newest, ws, limit, *workstream).Query(scanEvents)
	case accountable.ContextScopeInitiative:
		b.Queue(`WITH aggregates (aggregate_type, aggregate_id) AS (
				SELECT 'initiative', $3::text
				UNION ALL SELECT 'workstream', w.id::text FROM workstreams w WHERE w.workspace_id = $1 AND w.initiative_id = $3::uuid
				UNION ALL (SELECT 'task', t.id::text FROM tasks t WHERE t.workspace_id = $1 AND t.initiative_id = $3::uuid
					ORDER BY t.updated_at DESC LIMIT 200)) `+newest, ws, limit, *initiative).Query(scanEvents)
	}

	// Artifacts of the scope's own entity first, then of its initiative.
	entityType, entityID := "", ""
	switch {
	case task != nil:
		entityType, entityID = string(accountable.EntityTask), *task
	case workstream != nil:
		entityType, entityID = string(accountable.EntityWorkstream), *workstream
	case initiative != nil:
		entityType, entityID = string(accountable.EntityInitiative), *initiative
	}
	b.Queue(`SELECT id, doc->>'name', artifact_type, status, version FROM artifacts
		WHERE workspace_id = $1 AND ($2 = '' OR (entity_type = $2 AND entity_id = $3) OR initiative_id = $4::uuid)
		ORDER BY ($2 <> '' AND entity_type = $2 AND entity_id = $3) DESC, created_at DESC, id DESC LIMIT $5`,
		ws, entityType, entityID, initiative, limit).
		Query(func(rows pgx.Rows) error {
			out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (accountable.ContextArtifact, error) {
				var a accountable.ContextArtifact
				var id string
				err := row.Scan(&id, &a.Summary, &a.ArtifactType, &a.Status, &a.Version)
				a.Ref = accountable.Ref(accountable.AggregateArtifact, id)
				return a, err
			})
			src.Artifacts, src.MoreOfEach.Artifacts = bounded(out, limit)
			return err
		})

	// Receipts of the scope's tasks: the task's, through the tasks of the workstream or
	// initiative, or the workspace's newest.
	receipts, receiptArgs := `SELECT r.id FROM receipts r WHERE r.workspace_id = $1`, []any{ws, limit}
	switch {
	case task != nil:
		receipts, receiptArgs = receipts+` AND r.task_id = $3`, append(receiptArgs, *task)
	case workstream != nil:
		receipts = `SELECT r.id FROM tasks t JOIN receipts r ON r.workspace_id = t.workspace_id AND r.task_id = t.id
			WHERE t.workspace_id = $1 AND t.workstream_id = $3`
		receiptArgs = append(receiptArgs, *workstream)
	case initiative != nil:
		receipts = `SELECT r.id FROM tasks t JOIN receipts r ON r.workspace_id = t.workspace_id AND r.task_id = t.id
			WHERE t.workspace_id = $1 AND t.initiative_id = $3`
		receiptArgs = append(receiptArgs, *initiative)
	}
	b.Queue(receipts+` ORDER BY r.created_at DESC, r.id DESC LIMIT $2`, receiptArgs...).
		Query(func(rows pgx.Rows) error {
			out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (accountable.ContextRef, error) {
				var id string
				err := row.Scan(&id)
				return accountable.Ref("work_receipt", id), err
			})
			src.Receipts, src.MoreOfEach.RecentReceiptRefs = bounded(out, limit)
			return err
		})
	return mapError(q.SendBatch(ctx, b).Close())
}

// bounded keeps the first limit-1 items of a read of limit, and says (1) whether there
// was one more.
func bounded[T any](items []T, limit int) ([]T, int) {
	if len(items) >= limit {
		return items[:limit-1], 1
	}
	return items, 0
}
