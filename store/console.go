package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
)

// The workspace console's reads (api/console.go): small, bounded and always scoped by the
// session's workspace. Each is one statement on an existing index.

// SessionWorkspaces lists the workspaces userID is a member of, in the order sign-in picks
// the first.
func (db *DB) SessionWorkspaces(ctx context.Context, userID string) ([]accountable.Workspace, error) {
	rows, err := db.pool.Query(ctx, `SELECT w.id, w.name FROM workspace_members m JOIN workspaces w ON w.id = m.workspace_id
		WHERE m.user_id = $1 ORDER BY m.created_at, m.workspace_id LIMIT 100`, userID)
	if err != nil {
		return nil, mapError(err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (accountable.Workspace, error) {
		var w accountable.Workspace
		return w, r.Scan(&w.ID, &w.Name)
	})
	return list, mapError(err)
}

// SwitchSessionWorkspace re-scopes the live session of tokenHash to workspaceID, only when
// the session's user is a member of it (not_found otherwise, as an unknown workspace).
func (db *DB) SwitchSessionWorkspace(ctx context.Context, tokenHash []byte, workspaceID string) error {
	tag, err := db.pool.Exec(ctx, `UPDATE web_sessions s SET workspace_id = $2
		WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > now()
		  AND EXISTS (SELECT 1 FROM workspace_members m WHERE m.user_id = s.user_id AND m.workspace_id = $2::uuid)`,
		tokenHash, workspaceID)
	if err != nil {
		if accountable.ErrorCode(mapError(err)) == accountable.ECodeValidationFailed {
			return accountable.NotFound("workspace")
		}
		return mapError(err)
	}
	if tag.RowsAffected() == 0 {
		return accountable.NotFound("workspace")
	}
	return nil
}

// TaskCounts counts the workspace's tasks by status.
func (db *DB) TaskCounts(ctx context.Context, workspaceID string) (map[accountable.TaskStatus]int64, error) {
	rows, err := db.pool.Query(ctx, `SELECT status, count(*) FROM tasks WHERE workspace_id = $1 GROUP BY status`, workspaceID)
	if err != nil {
		return nil, mapError(err)
	}
	defer rows.Close()
	counts := map[accountable.TaskStatus]int64{}
	for rows.Next() {
		var status string
		var n int64
		if err := rows.Scan(&status, &n); err != nil {
			return nil, mapError(err)
		}
		counts[accountable.TaskStatus(status)] = n
	}
	return counts, mapError(rows.Err())
}

// RecentReceipts are the workspace's newest completion receipts (at most limit).
func (db *DB) RecentReceipts(ctx context.Context, workspaceID string, limit int) ([]accountable.ConsoleReceipt, error) {
	rows, err := db.pool.Query(ctx, `SELECT r.id, r.task_id, t.title, r.status, r.summary, r.cost_cents, r.event_id, r.created_at
		FROM receipts r JOIN tasks t ON t.workspace_id = r.workspace_id AND t.id = r.task_id
		WHERE r.workspace_id = $1 ORDER BY r.created_at DESC, r.id DESC LIMIT $2`, workspaceID, limit)
	if err != nil {
		return nil, mapError(err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (accountable.ConsoleReceipt, error) {
		var c accountable.ConsoleReceipt
		return c, r.Scan(&c.ID, &c.TaskID, &c.TaskTitle, &c.Status, &c.Summary, &c.CostCents, &c.EventID, &c.CreatedAt)
	})
	return list, mapError(err)
}

// OpenHandoffs are the workspace's open handoffs (not fulfilled or cancelled), breached
// first, then by due time (those without an SLA last), newest first: the handoffs_open
// index's order.
func (db *DB) OpenHandoffs(ctx context.Context, workspaceID string, limit int) ([]accountable.ConsoleHandoff, error) {
	rows, err := db.pool.Query(ctx, `SELECT h.doc::text, h.sla_breached_at, d.id, d.status, d.title, d.selected_option
		FROM handoffs h
		LEFT JOIN LATERAL (SELECT id, status, title, selected_option FROM decisions d
			WHERE d.workspace_id = h.workspace_id AND d.shape = 'escalation' AND d.context->>'handoff_id' = h.id::text
			ORDER BY d.created_at DESC LIMIT 1) d ON h.sla_breached_at IS NOT NULL
		WHERE h.workspace_id = $1 AND h.status NOT IN ('fulfilled', 'cancelled')
		ORDER BY (h.sla_breached_at IS NULL), h.due_at, h.created_at DESC, h.id LIMIT $2`, workspaceID, limit)
	if err != nil {
		return nil, mapError(err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (accountable.ConsoleHandoff, error) {
		var c accountable.ConsoleHandoff
		var doc string
		if err := r.Scan(&doc, &c.BreachedAt, &c.DecisionID, &c.DecisionStatus, &c.DecisionTitle, &c.DecisionSelected); err != nil {
			return c, err
		}
		if err := decodeStored([]byte(doc), &c.Handoff); err != nil {
			return c, fmt.Errorf("store: decode handoff: %w", err)
		}
		return c, nil
	})
	return list, mapError(err)
}

// RecentEvents are the workspace's newest ledger events, in reverse stream order.
func (db *DB) RecentEvents(ctx context.Context, workspaceID string, limit int) ([]accountable.ConsoleEvent, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, event_type, aggregate_type, aggregate_id, actor_type, actor_id, event_hash, occurred_at
		FROM ledger_events WHERE workspace_id = $1 ORDER BY stream_position DESC, seq DESC LIMIT $2`, workspaceID, limit)
	if err != nil {
		return nil, mapError(err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (accountable.ConsoleEvent, error) {
		var e accountable.ConsoleEvent
		return e, r.Scan(&e.ID, &e.EventType, &e.AggregateType, &e.AggregateID, &e.ActorType, &e.ActorID, &e.EventHash, &e.OccurredAt)
	})
	return list, mapError(err)
}

// LatestLedgerVerification is the workspace's newest ledger verification (not_found when
// none was asked for).
func (db *DB) LatestLedgerVerification(ctx context.Context, workspaceID string) (accountable.LedgerVerificationJob, error) {
	var id string
	err := db.pool.QueryRow(ctx, `SELECT id FROM ledger_verifications WHERE workspace_id = $1 ORDER BY requested_at DESC, id DESC LIMIT 1`,
		workspaceID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return accountable.LedgerVerificationJob{}, accountable.NotFound("ledger verification")
	}
	if err != nil {
		return accountable.LedgerVerificationJob{}, mapError(err)
	}
	return db.GetLedgerVerification(ctx, workspaceID, id)
}

// RecentLaunches are the workspace's newest launches.
func (db *DB) RecentLaunches(ctx context.Context, workspaceID string, limit int) ([]accountable.ConsoleLaunch, error) {
	rows, err := db.pool.Query(ctx, `SELECT l.id, l.initiative_id, coalesce(i.title, ''), l.state, l.cost_ceiling_cents, l.reserved_cents,
			l.settled_cents, (SELECT count(*) FROM launch_jobs j WHERE j.workspace_id = l.workspace_id AND j.launch_id = l.id), l.created_at
		FROM launches l LEFT JOIN initiatives i ON i.workspace_id = l.workspace_id AND i.id = l.initiative_id
		WHERE l.workspace_id = $1 ORDER BY l.created_at DESC, l.id DESC LIMIT $2`, workspaceID, limit)
	if err != nil {
		return nil, mapError(err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (accountable.ConsoleLaunch, error) {
		var l accountable.ConsoleLaunch
		return l, r.Scan(&l.ID, &l.InitiativeID, &l.InitiativeTitle, &l.State, &l.CeilingCents, &l.ReservedCents, &l.SettledCents, &l.Jobs, &l.CreatedAt)
	})
	return list, mapError(err)
}

// LaunchJobs are a launch's jobs in their order, with what each reserved, ran and settled.
func (db *DB) LaunchJobs(ctx context.Context, workspaceID, launchID string) ([]accountable.ConsoleJob, error) {
	rows, err := db.pool.Query(ctx, `SELECT j.id, j.workstream_id, coalesce(w.name, ''), j.status, j.block_code, j.estimate_cents,
			r.id, r.settlement_status, r.cost_estimate_cents, r.settled_cents, u.id, u.status, u.cost_cents, d.id, d.status
		FROM launch_jobs j
		LEFT JOIN workstreams w ON w.workspace_id = j.workspace_id AND w.id = j.workstream_id
		LEFT JOIN reservations r ON r.workspace_id = j.workspace_id AND r.job_id = j.id
		LEFT JOIN LATERAL (SELECT id, status, cost_cents FROM runs u WHERE u.workspace_id = j.workspace_id AND u.job_id = j.id
			ORDER BY u.created_at DESC LIMIT 1) u ON true
		LEFT JOIN decisions d ON d.workspace_id = j.workspace_id AND d.id = j.decision_id
		WHERE j.workspace_id = $1 AND j.launch_id = $2 ORDER BY j.position`, workspaceID, launchID)
	if err != nil {
		return nil, mapError(err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (accountable.ConsoleJob, error) {
		var j accountable.ConsoleJob
		return j, r.Scan(&j.ID, &j.WorkstreamID, &j.WorkstreamName, &j.Status, &j.BlockCode, &j.EstimateCents,
			&j.ReservationID, &j.SettlementStatus, &j.ReservedCents, &j.SettledCents, &j.RunID, &j.RunStatus, &j.RunCostCents,
			&j.DecisionID, &j.DecisionStatus)
	})
	return list, mapError(err)
}

// StreamEnd is the position of the workspace's newest event (zero when it has none): a
// live page follows the stream after it. An event that commits late below it is not
// followed, which a page's refresh hint can afford (it is read on the next page view).
func (db *DB) StreamEnd(ctx context.Context, workspaceID string) (accountable.StreamPosition, error) {
	var p accountable.StreamPosition
	err := db.pool.QueryRow(ctx, newestEventQuery, workspaceID).Scan(&p.Position, &p.Seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return accountable.StreamPosition{}, nil
	}
	return p, mapError(err)
}

// newestEventQuery reads the position of the workspace's newest event ($1), if it has one.
const newestEventQuery = `SELECT stream_position, seq FROM ledger_events WHERE workspace_id = $1
	ORDER BY stream_position DESC, seq DESC LIMIT 1`

// ConsoleMap reads the counts of the workspace's operating map and its limit processes with
// the most episodes and limit edges most at risk, in one snapshot. Only the processes shown
// are decoded: the ranking reads ids and episode counts, and the documents are joined to
// the limit chosen.
func (db *DB) ConsoleMap(ctx context.Context, workspaceID string, limit int) (accountable.ConsoleMap, error) {
	var m accountable.ConsoleMap
	err := db.snapshot(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE lifecycle_state IN ('discovered', 'proposed'))
			FROM operating_processes WHERE workspace_id = $1`, workspaceID).Scan(&m.Processes, &m.Unconfirmed); err != nil {
			return mapError(err)
		}
		rows, err := tx.Query(ctx, `WITH ranked AS (
				SELECT p.id, p.created_at, coalesce(e.n, 0) AS episodes FROM operating_processes p
				LEFT JOIN (SELECT process_id, count(*) AS n FROM episodes WHERE workspace_id = $1 GROUP BY process_id) e ON e.process_id = p.id
				WHERE p.workspace_id = $1 ORDER BY episodes DESC, p.created_at, p.id LIMIT $2)
			SELECT p.doc::text, coalesce(r.doc::text, '{}'), ranked.episodes FROM ranked
			JOIN operating_processes p ON p.workspace_id = $1 AND p.id = ranked.id
			LEFT JOIN process_revisions r ON r.workspace_id = $1 AND r.id = (p.doc->'currentRevisionRef'->>'id')::uuid
			ORDER BY ranked.episodes DESC, ranked.created_at, ranked.id`, workspaceID, limit)
		if err != nil {
			return mapError(err)
		}
		m.TopProcesses = []accountable.MapProcess{}
		if err := scanMapProcesses(rows, func(_ accountable.OperatingProcess, mp accountable.MapProcess) {
			m.TopProcesses = append(m.TopProcesses, mp)
		}); err != nil {
			return err
		}
		// The counts of all edges ride on each row shown (a window over the groups); with
		// none shown, the workspace has no edges.
		erows, err := tx.Query(ctx, `SELECT *, count(*) OVER (), count(*) FILTER (WHERE breached > 0) OVER () FROM (`+
			handoffEdgesQuery+`) AS edges(from_key, to_key, handoffs, open, breached, fulfilled, median)
			ORDER BY breached DESC, open DESC, handoffs DESC, from_key, to_key LIMIT $2`, workspaceID, limit)
		if err != nil {
			return mapError(err)
		}
		m.TopEdges, err = pgx.CollectRows(erows, func(row pgx.CollectableRow) (accountable.HandoffEdge, error) {
			var e accountable.HandoffEdge
			return e, scanHandoffEdge(row, &e, &m.Edges, &m.EdgesAtRisk)
		})
		return mapError(err)
	})
	return m, err
}
