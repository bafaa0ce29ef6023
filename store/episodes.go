package store

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/payload"
)

// Ledger verification compares these aggregates' rows with their chains (aggregateTables).
func init() {
	verifiesAggregateTable(accountable.AggregateEpisode, `SELECT id::text, aggregate_version FROM episodes WHERE workspace_id = $1`)
}

func scanEpisode(row pgx.Row) (accountable.Episode, error) {
	return scanDoc[accountable.Episode](row, "episode")
}

// RecordEpisode records an observed execution of a process of the workspace (404 for
// another) with its episode.recorded event (the episode is the payload).
func (db *DB) RecordEpisode(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.RecordEpisode) (accountable.Episode, bool, error) {
	cmd := commandOf[accountable.Episode](p, idem, in.Causation)
	cmd.run = func(ctx context.Context, tx *tx) (accountable.Episode, error) {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM operating_processes WHERE workspace_id = $1 AND id = $2)`,
			p.WorkspaceID, in.ProcessID).Scan(&exists); err != nil {
			return accountable.Episode{}, err
		}
		if !exists {
			return accountable.Episode{}, accountable.NotFound("operating process")
		}
		now := accountable.TimeOf(tx.Now())
		e := accountable.Episode{SchemaVersion: accountable.SchemaVersion, ID: uuid.Must(uuid.NewV7()).String(), WorkspaceID: p.WorkspaceID,
			ProcessRef: accountable.ProcessRef{ID: in.ProcessID, WorkspaceID: p.WorkspaceID}, StartedAt: accountable.TimeOf(in.StartedAt.Time),
			EndedAt: in.EndedAt, Outcome: in.OutcomeOr(), Stages: in.Stages, Evidence: in.Evidence, RecordedBy: p.Actor(),
			CreatedAt: now, AggregateVersion: 1}
		e.CaseID = e.ID
		if in.CaseID != nil {
			e.CaseID = *in.CaseID
		}
		if in.Summary != nil {
			e.Summary = *in.Summary
		}
		if e.Stages == nil {
			e.Stages = []accountable.EpisodeStage{}
		}
		if len(e.Evidence) == 0 {
			e.Evidence = accountable.Object("{}")
		}
		if _, err := tx.Append(aggregate(accountable.AggregateEpisode, e.ID), accountable.EventEpisodeRecorded, payload.EpisodeRecorded(e)); err != nil {
			return e, err
		}
		doc, err := json.Marshal(e)
		if err != nil {
			return e, err
		}
		tx.Queue(`INSERT INTO episodes (workspace_id, id, process_id, created_at, aggregate_version, doc) VALUES ($1, $2, $3, $4, 1, $5)`,
			p.WorkspaceID, e.ID, in.ProcessID, now, string(doc))
		return e, nil
	}
	return runCommand(ctx, db, cmd)
}

// GetEpisode reads an episode of the workspace.
func (db *DB) GetEpisode(ctx context.Context, workspaceID, id string) (accountable.Episode, error) {
	e, err := scanEpisode(db.pool.QueryRow(ctx, `SELECT doc::text FROM episodes WHERE workspace_id = $1 AND id = $2`, workspaceID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return e, accountable.NotFound("episode")
	}
	return e, mapError(err)
}

// ListEpisodes reads a page of the workspace's episodes (of one process when asked), newest first.
func (db *DB) ListEpisodes(ctx context.Context, workspaceID string, f accountable.EpisodeFilter) ([]accountable.Episode, *accountable.WorkCursor, error) {
	limit := pageLimit(f.Limit)
	afterAt, afterID := keysetAfter(f.After)
	rows, err := db.pool.Query(ctx, `SELECT doc::text FROM episodes
		WHERE workspace_id = $1 AND ($2::uuid IS NULL OR process_id = $2)
		  AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4::uuid))
		ORDER BY created_at DESC, id DESC LIMIT $5`, workspaceID, f.ProcessID, afterAt, afterID, limit+1)
	if err != nil {
		return nil, nil, mapError(err)
	}
	return keysetPage(rows, limit, scanEpisode, func(e accountable.Episode) (time.Time, string) { return e.CreatedAt.Time, e.ID })
}

// OperatingMap derives the workspace's operating map from its processes (and their current
// revisions), episodes and handoffs, in one snapshot.
func (db *DB) OperatingMap(ctx context.Context, workspaceID string) (accountable.OperatingMap, error) {
	var m accountable.OperatingMap
	err := db.snapshot(ctx, func(tx pgx.Tx) error {
		var err error
		m, err = operatingMap(ctx, tx, workspaceID)
		return err
	})
	return m, err
}

func operatingMap(ctx context.Context, tx pgx.Tx, workspaceID string) (accountable.OperatingMap, error) {
	rows, err := tx.Query(ctx, `SELECT p.doc::text, coalesce(r.doc::text, '{}'),
			(SELECT count(*) FROM episodes e WHERE e.workspace_id = p.workspace_id AND e.process_id = p.id)
		FROM operating_processes p
		LEFT JOIN process_revisions r ON r.workspace_id = p.workspace_id AND r.id = (p.doc->'currentRevisionRef'->>'id')::uuid
		WHERE p.workspace_id = $1 ORDER BY p.created_at, p.id`, workspaceID)
	if err != nil {
		return accountable.OperatingMap{}, mapError(err)
	}
	var procs []accountable.MapProcess
	recipients, domains := map[string][]string{}, map[string][]string{}
	err = scanMapProcesses(rows, func(proc accountable.OperatingProcess, mp accountable.MapProcess) {
		for _, r := range proc.ValueRecipientRefs {
			recipients[r.ID] = append(recipients[r.ID], proc.ID)
		}
		if proc.DomainRef != nil {
			domains[proc.DomainRef.ID] = append(domains[proc.DomainRef.ID], proc.ID)
		}
		procs = append(procs, mp)
	})
	if err != nil {
		return accountable.OperatingMap{}, err
	}
	erows, err := tx.Query(ctx, handoffEdgesQuery+` ORDER BY 1, 2`, workspaceID)
	if err != nil {
		return accountable.OperatingMap{}, mapError(err)
	}
	edges, err := pgx.CollectRows(erows, func(row pgx.CollectableRow) (accountable.HandoffEdge, error) {
		var e accountable.HandoffEdge
		return e, scanHandoffEdge(row, &e)
	})
	if err != nil {
		return accountable.OperatingMap{}, mapError(err)
	}
	return assembleOperatingMap(procs, recipients, domains, edges), nil
}

// handoffEdgesQuery aggregates the workspace's ($1) handoffs into edges by their stage keys
// (scanHandoffEdge reads a row); the caller orders them. A fulfilled handoff is final: its
// updatedAt is when it was fulfilled.
const handoffEdgesQuery = `SELECT doc->>'fromStageKey', doc->>'toStageKey', count(*),
		count(*) FILTER (WHERE status NOT IN ('fulfilled', 'cancelled')), count(sla_breached_at),
		count(*) FILTER (WHERE status = 'fulfilled'),
		round(percentile_cont(0.5) WITHIN GROUP (ORDER BY greatest(0, extract(epoch FROM (doc->>'updatedAt')::timestamptz - created_at)))
			FILTER (WHERE status = 'fulfilled'))::bigint
	FROM handoffs WHERE workspace_id = $1 GROUP BY 1, 2`

// scanHandoffEdge reads the columns of handoffEdgesQuery (more may follow them, in dest).
func scanHandoffEdge(row pgx.Row, e *accountable.HandoffEdge, dest ...any) error {
	return row.Scan(append([]any{&e.FromStageKey, &e.ToStageKey, &e.Handoffs, &e.Open, &e.Breached, &e.Fulfilled, &e.MedianFulfilmentSeconds}, dest...)...)
}

// scanMapProcesses reads rows of (process doc, current revision doc or '{}', episode count)
// into map processes, handing each to add with its process; it closes rows.
func scanMapProcesses(rows pgx.Rows, add func(accountable.OperatingProcess, accountable.MapProcess)) error {
	defer rows.Close()
	for rows.Next() {
		var pdoc, rdoc string
		var episodes int
		if err := rows.Scan(&pdoc, &rdoc, &episodes); err != nil {
			return mapError(err)
		}
		var proc accountable.OperatingProcess
		var rev accountable.ProcessSpecRevision
		if err := errors.Join(decodeStored([]byte(pdoc), &proc), decodeStored([]byte(rdoc), &rev)); err != nil {
			return err
		}
		mp := accountable.MapProcess{ID: proc.ID, Name: proc.Name, LifecycleState: proc.LifecycleState, ProvenanceMode: proc.ProvenanceMode,
			DomainRef: proc.DomainRef, Stages: []accountable.CandidateStage{}, Episodes: episodes}
		for _, s := range rev.Stages {
			mp.Stages = append(mp.Stages, accountable.CandidateStage{Key: s.Key, Name: s.Name})
		}
		add(proc, mp)
	}
	return mapError(rows.Err())
}

// assembleOperatingMap assembles the map from the workspace's processes (with the stages of
// their current revisions), episode counts per process and handoff edges; everything in a
// stable order.
func assembleOperatingMap(procs []accountable.MapProcess, recipients map[string][]string, domains map[string][]string, edges []accountable.HandoffEdge) accountable.OperatingMap {
	m := accountable.OperatingMap{Processes: procs, ValueRecipients: mapRefs(recipients), Domains: mapRefs(domains), HandoffEdges: edges,
		Limitations: []string{accountable.HandoffEdgesByStageKeys}}
	if m.Processes == nil {
		m.Processes = []accountable.MapProcess{}
	}
	if m.HandoffEdges == nil {
		m.HandoffEdges = []accountable.HandoffEdge{}
	}
	return m
}

// mapRefs lists the value recipients or domains with their processes, sorted.
func mapRefs(by map[string][]string) []accountable.MapRef {
	out := make([]accountable.MapRef, 0, len(by))
	for id, procs := range by {
		sort.Strings(procs)
		out = append(out, accountable.MapRef{ID: id, ProcessIDs: procs})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
