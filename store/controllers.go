package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/cursors"
	"github.com/accountablework/accountable/payload"
)

// Ledger verification compares these aggregates' rows with their chains (aggregateTables).
func init() {
	verifiesAggregateTable(accountable.AggregateController, `SELECT domain, NULL::bigint FROM controller_runs WHERE workspace_id = $1 GROUP BY domain`)
}

// signalQueries read each domain controller's signal: the records it finds, newest first,
// at most $2 of them.
var signalQueries = map[accountable.Domain]string{
	accountable.DomainEngineering: `SELECT id::text, 'work_item', title,
			CASE WHEN status = 'blocked' THEN 'blocked' ELSE 'overdue' END, updated_at
		FROM tasks WHERE workspace_id = $1
		  AND (status = 'blocked' OR (due_date < now() AND status NOT IN ('completed', 'cancelled')))
		ORDER BY updated_at DESC, id LIMIT $2`,
	accountable.DomainOperations: `SELECT id::text, 'handoff', doc->>'title',
			CASE WHEN sla_breached_at IS NOT NULL THEN 'sla_breached' ELSE 'stalled' END, (doc->>'updatedAt')::timestamptz
		FROM handoffs WHERE workspace_id = $1 AND status NOT IN ('fulfilled', 'cancelled')
		  AND (sla_breached_at IS NOT NULL OR (doc->>'updatedAt')::timestamptz < now() - interval '24 hours')
		ORDER BY 5 DESC, id LIMIT $2`,
	accountable.DomainProduct: `SELECT id::text, 'initiative_proposal', request_title, 'expires_soon', created_at
		FROM initiative_proposals WHERE workspace_id = $1 AND status = 'proposed'
		  AND expires_at BETWEEN now() AND now() + interval '48 hours'
		ORDER BY created_at DESC, id LIMIT $2`,
	accountable.DomainGrowth: `SELECT j.id::text, 'launch_job', coalesce(d.title, 'a launch job'), 'budget_blocked', coalesce(d.created_at, now())
		FROM launch_jobs j LEFT JOIN decisions d ON d.workspace_id = j.workspace_id AND d.id = j.decision_id
		WHERE j.workspace_id = $1 AND j.status = 'blocked' AND j.block_code = 'budget_ceiling_exceeded'
		ORDER BY 5 DESC, 1 LIMIT $2`,
	accountable.DomainSales: `SELECT id::text, 'decision', title, 'overdue', updated_at
		FROM decisions WHERE workspace_id = $1 AND status = 'pending' AND due_at < now()
		ORDER BY updated_at DESC, id LIMIT $2`,
	accountable.DomainDesign: `SELECT id::text, 'operating_process', doc->>'name', 'awaiting_confirmation', created_at
		FROM operating_processes WHERE workspace_id = $1 AND lifecycle_state = 'discovered'
		ORDER BY created_at DESC, id LIMIT $2`,
}

func (db *DB) lastControllerRun(ctx context.Context, q querier, workspaceID string, d accountable.Domain) (*accountable.ControllerResult, error) {
	var raw string
	err := q.QueryRow(ctx, `SELECT result::text FROM controller_runs WHERE workspace_id = $1 AND domain = $2
		ORDER BY created_at DESC, run_id DESC LIMIT 1`, workspaceID, string(d)).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r accountable.ControllerResult
	if err := decodeStored([]byte(raw), &r); err != nil {
		return nil, fmt.Errorf("store: decode controller run: %w", err)
	}
	return &r, nil
}

// ControllerState reads a domain controller of the workspace: its spec and its last run.
func (db *DB) ControllerState(ctx context.Context, workspaceID string, d accountable.Domain) (accountable.ControllerState, error) {
	spec := accountable.ControllerSpecs[d]
	st := accountable.ControllerState{ControllerID: accountable.ControllerID(d), Domain: d, Status: accountable.ControllerNeverRun,
		SpecRevision: specRevision(spec), Spec: spec, ProtocolVersion: accountable.ControllerProtocol, Mode: accountable.ControllerModeShadow}
	last, err := db.lastControllerRun(ctx, db.pool, workspaceID, d)
	if err != nil || last == nil {
		return st, mapError(err)
	}
	var at time.Time
	if err := db.pool.QueryRow(ctx, `SELECT created_at FROM controller_runs WHERE workspace_id = $1 AND run_id = $2`, workspaceID, last.RunID).Scan(&at); err != nil {
		return st, mapError(err)
	}
	runAt := accountable.TimeOf(at)
	st.Status, st.LastRunID, st.LastResult, st.LastSignalID, st.LastSignalState = last.Status, &last.RunID, &last.Result, last.LastSignalID, last.LastSignalState
	st.LastErrorCode, st.LastReceiptID, st.LastRunAt = last.LastErrorCode, last.LastReceiptID, &runAt
	return st, nil
}

// Reconcile runs a domain controller once in shadow mode: it reads its signal, and either
// admits a proposal as a pending human decision (decision.proposed) with a neutral
// receipt, or records a no-op with its reason; either way a controller.reconciled event,
// all in one transaction. The same request (the same idempotency_key) answers the same
// result again, with duplicate true.
func (db *DB) Reconcile(ctx context.Context, p accountable.Principal, in accountable.Reconcile) (accountable.ControllerResult, error) {
	spec := accountable.ControllerSpecs[in.Domain]
	runID := digestID(accountable.RunIDPrefix, in.RunContent(p.WorkspaceID))
	revision := specRevision(spec)
	ref := aggregate(accountable.AggregateController, string(in.Domain))
	cmd := command[accountable.ControllerResult]{workspaceID: p.WorkspaceID, actor: accountable.Actor{Type: accountable.ActorService,
		ID: accountable.ControllerID(in.Domain)}, locks: []aggregateRef{ref}}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.ControllerResult, error) {
		var stored string
		err := tx.QueryRow(ctx, `SELECT result::text FROM controller_runs WHERE workspace_id = $1 AND run_id = $2`, p.WorkspaceID, runID).Scan(&stored)
		if err == nil {
			var r accountable.ControllerResult
			if err := decodeStored([]byte(stored), &r); err != nil {
				return r, fmt.Errorf("store: decode controller run: %w", err)
			}
			r.Duplicate = true
			return r, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return accountable.ControllerResult{}, err
		}
		if err := spec.CheckSpecRevision(revision, in.SpecRevision); err != nil {
			return accountable.ControllerResult{}, err
		}
		last, err := db.lastControllerRun(ctx, tx, p.WorkspaceID, in.Domain)
		if err != nil {
			return accountable.ControllerResult{}, err
		}
		now := accountable.TimeOf(tx.Now())
		res := accountable.ControllerResult{ControllerID: accountable.ControllerID(in.Domain), Domain: in.Domain, SpecRevision: revision,
			RunID: runID, LastRunID: runID, ProtocolVersion: accountable.ControllerProtocol,
			Mode: accountable.ControllerModeShadow, EventIDs: []string{},
			Limitations: []string{"Shadow mode: the proposal grants no execution or policy authority; nothing is dispatched."}}
		if last != nil {
			res.LastReceiptID = last.LastReceiptID
		}

		// The input: where the ledger is, how fresh, and the signal's records.
		reading := accountable.SignalReading{Now: now, MaxInputAgeSeconds: in.MaxInputAgeSeconds, SourceCursor: in.InputCursor, Last: last}
		var pos, seq int64
		var newest time.Time
		err = tx.QueryRow(ctx, `SELECT stream_position, seq, recorded_at FROM ledger_events WHERE workspace_id = $1
			ORDER BY stream_position DESC, seq DESC LIMIT 1`, p.WorkspaceID).Scan(&pos, &seq, &newest)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return res, err
		default:
			w := accountable.TimeOf(newest)
			reading.Watermark = &w
		}
		res.ProjectionCursor = cursors.EncodeStream(accountable.StreamPosition{Position: pos, Seq: seq})
		rows, err := tx.Query(ctx, signalQueries[in.Domain], p.WorkspaceID, spec.MaxRecords+1)
		if err != nil {
			return res, err
		}
		reading.Records, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (accountable.SignalRecord, error) {
			var r accountable.SignalRecord
			var at time.Time
			err := row.Scan(&r.ID, &r.Kind, &r.Title, &r.Reason, &at)
			r.UpdatedAt = accountable.TimeOf(at)
			return r, err
		})
		if err != nil {
			return res, err
		}
		verdict, err := spec.Assess(reading, canonical.DigestOf, func(signalID string) (bool, error) {
			var pending string
			err := tx.QueryRow(ctx, `SELECT id::text FROM decisions WHERE workspace_id = $1 AND status = 'pending'
				AND context->>'signal_id' = $2 LIMIT 1`, p.WorkspaceID, signalID).Scan(&pending)
			if errors.Is(err, pgx.ErrNoRows) {
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			return res, err
		}
		res.Status, res.SourceHealth, res.LastSignalID, res.LastSignalState = verdict.Status, verdict.SourceHealth, verdict.SignalID, &verdict.SignalState

		if verdict.Proposes() {
			proposal, title, summary := spec.Propose(*verdict.SignalID, reading.Records)
			raw, err := json.Marshal(proposal)
			if err != nil {
				return res, err
			}
			canon, err := canonical.Transform(raw)
			if err != nil {
				return res, err
			}
			obj := accountable.Object(canon)
			res.Proposal = &obj
			decisionContext, err := json.Marshal(map[string]any{"controller_id": res.ControllerID, "run_id": runID, "signal_id": *verdict.SignalID,
				"spec_revision": res.SpecRevision, "proposal": json.RawMessage(canon)})
			if err != nil {
				return res, err
			}
			d := accountable.Decision{ID: uuid.Must(uuid.NewV7()).String(), Title: title, Summary: &summary,
				Shape: accountable.DecisionShape(spec.Shape), Urgency: accountable.UrgencyStandard, Status: accountable.DecisionPending,
				Options:     []accountable.DecisionOption{},
				RequestedBy: accountable.Actor{Type: accountable.ActorService, ID: res.ControllerID}, CreatedAt: now, UpdatedAt: now, AggregateVersion: 1}
			if d.Context, err = canonical.Transform(decisionContext); err != nil {
				return res, err
			}
			if err := proposeDecision(tx, p.WorkspaceID, d); err != nil {
				return res, err
			}
			ev := tx.events[len(tx.events)-1]
			receipt := uuid.Must(uuid.NewV7()).String()
			res.Result, res.DecisionID, res.DecisionEventID, res.ReceiptID, res.LastReceiptID = "proposal", &d.ID, &ev.ID, &receipt, &receipt
			res.EventIDs = append(res.EventIDs, ev.ID)
		} else {
			res.Result, res.NoopReason = "noop", string(verdict.Noop)
		}
		res.LastResult = res.Result
		ev, err := tx.Append(ref, accountable.EventControllerReconcile, payload.ControllerReconciled{RunID: runID, Domain: in.Domain,
			SpecRevision: res.SpecRevision, Result: res.Result, NoopReason: res.NoopReason, SignalID: verdict.SignalID, DecisionID: res.DecisionID,
			ReceiptID: res.ReceiptID, SourceHealth: verdict.SourceHealth})
		if err != nil {
			return res, err
		}
		res.EventIDs = append(res.EventIDs, ev.ID)
		doc, err := json.Marshal(res)
		if err != nil {
			return res, err
		}
		tx.Queue(`INSERT INTO controller_runs (workspace_id, run_id, domain, created_at, result) VALUES ($1, $2, $3, $4, $5)`,
			p.WorkspaceID, runID, string(in.Domain), now, string(doc))
		// As with the idempotency rail's record, the text kept for replays is the first
		// answer: the run and its replays are written from one encoding.
		res.RememberJSON(doc)
		return res, nil
	}
	// The controller's aggregate id is its domain, not an id the service made: two first
	// runs in a workspace both find no head to lock, and the loser runs again on the
	// winner's (errCreatedMeanwhile); the same idempotency_key then answers the stored run.
	res, _, err := runCommand(ctx, db, cmd)
	return res, err
}

// specRevision is the controller's spec_revision: SpecRevisionPrefix:<hex sha256 of the
// spec's canonical JSON>.
func specRevision(spec accountable.ControllerSpec) string {
	return digestID(accountable.SpecRevisionPrefix, spec)
}

// digestID is the id prefix:<hex sha256 of v's canonical JSON>. v is plain data (a spec,
// strings), which always has a canonical form.
func digestID(prefix string, v any) string {
	d, err := canonical.DigestOf(v)
	if err != nil {
		panic(err)
	}
	return accountable.DigestID(prefix, d)
}
