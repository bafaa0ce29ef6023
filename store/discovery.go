package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/payload"
)

// Ledger verification compares these aggregates' rows with their chains (aggregateTables).
func init() {
	verifiesAggregateTable(accountable.AggregateDiscoveryRun, `SELECT id::text, aggregate_version FROM discovery_runs WHERE workspace_id = $1`)
}

// StartDiscoveryRun records a queued discovery run with its discovery_run.requested event
// and the message that starts its DiscoveryRun workflow (DiscoveryRunStart, whose workflow
// id the run records), in one transaction.
func (db *DB) StartDiscoveryRun(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, id string,
	in accountable.StartDiscoveryRun) (accountable.DiscoveryRun, bool, error) {
	cmd := commandOf[accountable.DiscoveryRun](p, idem, in.Causation)
	cmd.blind = true
	cmd.run = func(ctx context.Context, tx *tx) (accountable.DiscoveryRun, error) {
		start, err := tx.Messages().DiscoveryRunStart(p.WorkspaceID, id)
		if err != nil {
			return accountable.DiscoveryRun{}, err
		}
		now := accountable.TimeOf(tx.Now())
		kinds := in.SourceKinds
		if len(kinds) == 0 {
			kinds = accountable.SourceKinds
		}
		run := accountable.DiscoveryRun{ID: id, WorkspaceID: p.WorkspaceID, Mode: in.ModeOr(), Status: accountable.DiscoveryQueued,
			Query: in.Query, SourceKinds: kinds, Technique: accountable.DiscoveryTechnique, CreatedAt: now, UpdatedAt: now,
			AggregateVersion: 1, WorkflowID: start.WorkflowID, Counts: accountable.DiscoveryCounts{Observations: len(in.Observations)}}
		if _, err := tx.Append(aggregate(accountable.AggregateDiscoveryRun, id), accountable.EventDiscoveryRunRequested,
			payload.DiscoveryRunRequested{RunID: id, Mode: run.Mode, Query: in.Query, SourceKinds: kinds, Observations: len(in.Observations),
				WorkflowID: start.WorkflowID, CommandID: in.Causation.CommandID}); err != nil {
			return run, err
		}
		doc, err := json.Marshal(run)
		if err != nil {
			return run, err
		}
		request, err := json.Marshal(in)
		if err != nil {
			return run, err
		}
		tx.Queue(`INSERT INTO discovery_runs (workspace_id, id, status, created_at, aggregate_version, doc, request) VALUES ($1, $2, $3, $4, 1, $5, $6)`,
			p.WorkspaceID, id, string(run.Status), now, string(doc), string(request))
		tx.Send(start)
		return run, nil
	}
	return runCommand(ctx, db, cmd)
}

// discoveryResultColumns select a run of discovery_runs d with its result: the run, its
// request (the observations it was given), its candidates, and the processes proposed
// from them that people have confirmed since. scanDiscovery reads them.
const discoveryResultColumns = `d.doc::text, d.request::text, d.cards::text,
	ARRAY(SELECT p.id::text FROM operating_processes p WHERE p.workspace_id = d.workspace_id AND p.discovery_run_id = d.id
		AND p.lifecycle_state NOT IN ('discovered', 'proposed') ORDER BY p.created_at, p.id)`

func scanDiscovery(row pgx.Row) (accountable.DiscoveryResult, error) {
	var doc, request, cards string
	var confirmed []string
	var res accountable.DiscoveryResult
	if err := row.Scan(&doc, &request, &cards, &confirmed); err != nil {
		return res, err
	}
	var in accountable.StartDiscoveryRun
	if err := errors.Join(decodeStored([]byte(doc), &res.Run), decodeStored([]byte(request), &in),
		decodeStored([]byte(cards), &res.ProcessCards)); err != nil {
		return res, fmt.Errorf("store: decode discovery run: %w", err)
	}
	res.Observations = in.Observations
	if res.Observations == nil {
		res.Observations = []accountable.Observation{}
	}
	if res.ProcessCards == nil {
		res.ProcessCards = []accountable.ProcessCard{}
	}
	for i := range res.ProcessCards {
		if res.ProcessCards[i].Grouping == nil { // found before candidates said why their cases were grouped
			res.ProcessCards[i].Grouping = []accountable.CaseGrouping{}
		}
	}
	res.ConfirmedProcessRefs = accountable.Refs(res.Run.WorkspaceID, refInputs(confirmed))
	return res, nil
}

// GetDiscoveryRun reads a run of the workspace with its candidates (so far).
func (db *DB) GetDiscoveryRun(ctx context.Context, workspaceID, id string) (accountable.DiscoveryResult, error) {
	res, err := scanDiscovery(db.pool.QueryRow(ctx, `SELECT `+discoveryResultColumns+` FROM discovery_runs d
		WHERE d.workspace_id = $1 AND d.id = $2`, workspaceID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return res, accountable.NotFound("discovery run")
	}
	return res, mapError(err)
}

func refInputs(ids []string) []accountable.RefInput {
	out := make([]accountable.RefInput, len(ids))
	for i, id := range ids {
		out[i] = accountable.RefInput{ID: id}
	}
	return out
}

// ListDiscoveryRuns reads a page of the workspace's runs, newest first, each with its
// result as GET /discovery-runs/{id} answers it (the public clients read a list of results).
func (db *DB) ListDiscoveryRuns(ctx context.Context, workspaceID string, limit int, after *accountable.WorkCursor) ([]accountable.DiscoveryResult, *accountable.WorkCursor, error) {
	limit = pageLimit(limit)
	afterAt, afterID := keysetAfter(after)
	rows, err := db.pool.Query(ctx, `SELECT `+discoveryResultColumns+` FROM discovery_runs d WHERE d.workspace_id = $1
		  AND ($2::timestamptz IS NULL OR (d.created_at, d.id) < ($2, $3::uuid))
		ORDER BY d.created_at DESC, d.id DESC LIMIT $4`, workspaceID, afterAt, afterID, limit+1)
	if err != nil {
		return nil, nil, mapError(err)
	}
	return keysetPage(rows, limit, scanDiscovery, func(r accountable.DiscoveryResult) (time.Time, string) { return r.Run.CreatedAt.Time, r.Run.ID })
}

// DiscoveryRequest returns what a run was asked (for its workflow's activity).
func (db *DB) DiscoveryRequest(ctx context.Context, workspaceID, id string) (accountable.StartDiscoveryRun, accountable.DiscoveryStatus, error) {
	var request, status string
	var in accountable.StartDiscoveryRun
	err := db.pool.QueryRow(ctx, `SELECT request::text, status FROM discovery_runs WHERE workspace_id = $1 AND id = $2`, workspaceID, id).
		Scan(&request, &status)
	if errors.Is(err, pgx.ErrNoRows) {
		return in, "", accountable.NotFound("discovery run")
	}
	if err != nil {
		return in, "", mapError(err)
	}
	return in, accountable.DiscoveryStatus(status), decodeStored([]byte(request), &in)
}

// DiscoveryProgress records how far a running run got (its counts and candidates so far):
// progress of a projection, not a command, so no event; a finished run is left alone.
func (db *DB) DiscoveryProgress(ctx context.Context, workspaceID, id string, counts accountable.DiscoveryCounts, cards []accountable.ProcessCard) error {
	c, err := json.Marshal(counts)
	if err != nil {
		return err
	}
	cj, err := json.Marshal(cards)
	if err != nil {
		return err
	}
	_, err = db.pool.Exec(ctx, `UPDATE discovery_runs SET status = 'running', cards = $4,
			doc = jsonb_set(jsonb_set(jsonb_set(doc, '{status}', '"running"'), '{counts}', $3::jsonb), '{updatedAt}', to_jsonb(now()))
		WHERE workspace_id = $1 AND id = $2 AND status IN ('queued', 'running')`, workspaceID, id, string(c), string(cj))
	return mapError(err)
}

// FinishDiscoveryRun records a run's result (succeeded, partial or failed) with its
// discovery_run.completed (or .failed) event, once: a finished run is returned as it is.
func (db *DB) FinishDiscoveryRun(ctx context.Context, workspaceID, id string, status accountable.DiscoveryStatus,
	counts accountable.DiscoveryCounts, cards []accountable.ProcessCard, failure *string) (accountable.DiscoveryRun, error) {
	ref := aggregate(accountable.AggregateDiscoveryRun, id)
	cmd := command[accountable.DiscoveryRun]{workspaceID: workspaceID, actor: worker, locks: []aggregateRef{ref}}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.DiscoveryRun, error) {
		run, err := scanDoc[accountable.DiscoveryRun](tx.QueryRow(ctx, `SELECT doc::text FROM discovery_runs WHERE workspace_id = $1 AND id = $2`,
			workspaceID, id), "discovery run")
		if err != nil || run.Status.Finished() {
			return run, err
		}
		now := accountable.TimeOf(tx.Now())
		run.Status, run.Counts, run.Error, run.UpdatedAt, run.CompletedAt = status, counts, failure, now, &now
		run.AggregateVersion++
		ids := make([]string, len(cards))
		for i, c := range cards {
			ids[i] = c.ID
		}
		event := accountable.EventDiscoveryRunCompleted
		if status == accountable.DiscoveryFailed {
			event = accountable.EventDiscoveryRunFailed
		}
		if _, err := tx.Append(ref, event, payload.DiscoveryRunFinished{RunID: id, Status: status, Counts: counts, Candidates: ids,
			Error: failure}); err != nil {
			return run, err
		}
		doc, err := json.Marshal(run)
		if err != nil {
			return run, err
		}
		if cards == nil {
			cards = []accountable.ProcessCard{}
		}
		cj, err := json.Marshal(cards)
		if err != nil {
			return run, err
		}
		tx.Queue(`UPDATE discovery_runs SET status = $3, aggregate_version = $4, doc = $5, cards = $6 WHERE workspace_id = $1 AND id = $2`,
			workspaceID, id, string(status), run.AggregateVersion, string(doc), string(cj))
		return run, nil
	}
	run, _, err := runCommand(ctx, db, cmd)
	return run, err
}

// DiscoveryWork returns what discovery reads of the given completed work items (see
// accountable.WorkFacts): the task row, the names of its initiative, workstream and
// milestone, and the ids of its first ledger event (the command that created it). One
// query per page of events, each join by primary key, so a run reads no more pages than
// before.
func (db *DB) DiscoveryWork(ctx context.Context, workspaceID string, taskIDs []string) (map[string]accountable.WorkFacts, error) {
	out := map[string]accountable.WorkFacts{}
	if len(taskIDs) == 0 {
		return out, nil
	}
	rows, err := db.pool.Query(ctx, `SELECT t.id::text, t.title,
			CASE WHEN jsonb_typeof(t.metadata->'case_id') = 'string' THEN t.metadata->>'case_id' ELSE '' END,
			CASE WHEN jsonb_typeof(t.metadata->'process_stage') = 'string' THEN t.metadata->>'process_stage' ELSE '' END,
			CASE WHEN jsonb_typeof(t.metadata->'process_stage_name') = 'string' THEN t.metadata->>'process_stage_name' ELSE '' END,
			coalesce((SELECT jsonb_object_agg(m.key, m.value #>> '{}') FROM jsonb_each(t.metadata) AS m
				WHERE jsonb_typeof(m.value) IN ('string', 'number') AND length(m.value #>> '{}') <= 200), '{}')::text,
			coalesce(t.initiative_id::text, ''), coalesce(i.title, ''), coalesce(t.workstream_id::text, ''), coalesce(w.name, ''),
			coalesce(t.milestone_id::text, ''), coalesce(ms.title, ''),
			coalesce(c.id::text, ''), coalesce(c.payload->>'command_id', ''), coalesce(c.causation_id, ''), coalesce(c.correlation_id, '')
		FROM tasks t
		LEFT JOIN initiatives i ON i.workspace_id = t.workspace_id AND i.id = t.initiative_id
		LEFT JOIN workstreams w ON w.workspace_id = t.workspace_id AND w.id = t.workstream_id
		LEFT JOIN milestones ms ON ms.workspace_id = t.workspace_id AND ms.id = t.milestone_id
		LEFT JOIN ledger_events c ON c.workspace_id = t.workspace_id AND c.aggregate_type = 'task' AND c.aggregate_id = t.id::text
			AND c.aggregate_version = 1
		WHERE t.workspace_id = $1 AND t.id = ANY ($2::uuid[])`, workspaceID, taskIDs)
	if err != nil {
		return nil, mapError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, meta string
		var f accountable.WorkFacts
		if err := rows.Scan(&id, &f.Title, &f.CaseID, &f.Stage, &f.StageName, &meta, &f.InitiativeID, &f.InitiativeName,
			&f.WorkstreamID, &f.WorkstreamName, &f.MilestoneID, &f.MilestoneName,
			&f.CreatedEventID, &f.CreatedCommandID, &f.CreatedCausationID, &f.CreatedCorrelationID); err != nil {
			return nil, mapError(err)
		}
		if err := decodeStored([]byte(meta), &f.Metadata); err != nil {
			return nil, fmt.Errorf("store: decode task metadata: %w", err)
		}
		out[id] = f
	}
	return out, mapError(rows.Err())
}
