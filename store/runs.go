package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/payload"
)

// Ledger verification compares these aggregates' rows with their chains (aggregateTables).
func init() {
	verifiesAggregateTable(accountable.AggregateRun, `SELECT id::text, aggregate_version FROM runs WHERE workspace_id = $1`)
}

const runColumns = `id::text, launch_id::text, job_id::text, initiative_id::text, workstream_id::text, agent_id, status,
	outcome_kind, cost_cents, summary, evidence::text, created_at, updated_at, finalized_at, aggregate_version`

func scanRun(row pgx.Row) (accountable.Run, error) {
	var r accountable.Run
	var status, evidence string
	var outcome *string
	err := row.Scan(&r.ID, &r.LaunchID, &r.JobID, &r.InitiativeID, &r.WorkstreamID, &r.AgentID, &status, &outcome, &r.CostCents,
		&r.Summary, &evidence, &r.CreatedAt, &r.UpdatedAt, &r.FinalizedAt, &r.AggregateVersion)
	r.Status, r.Evidence = accountable.RunStatus(status), accountable.Object(evidence)
	if outcome != nil {
		o := accountable.OutcomeKind(*outcome)
		r.OutcomeKind = &o
	}
	return r, err
}

// FinalizeRun records the end of a running run as its agent reports it, with its event and
// the signal that tells the run's launch (RunChanged), once: a run that has ended is 409
// invalid_state_transition.
func (db *DB) FinalizeRun(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.FinalizeRun) (accountable.Run, bool, error) {
	cmd := commandOf[accountable.Run](p, idem, in.Causation)
	ref := aggregate(accountable.AggregateRun, in.RunID)
	cmd.locks = []aggregateRef{ref}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.Run, error) {
		r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE workspace_id = $1 AND id = $2`, p.WorkspaceID, in.RunID))
		if errors.Is(err, pgx.ErrNoRows) {
			return r, accountable.NotFound("run")
		}
		if err != nil {
			return r, err
		}
		if r.Status.Final() {
			return r, accountable.Errorf(accountable.ECodeInvalidStateTransition, "Run %s has ended (%s).", r.ID, r.Status)
		}
		return endRun(tx, p.WorkspaceID, r, in, true)
	}
	return runCommand(ctx, db, cmd)
}

// endRun moves run r to the status of in, with its event and, when signal is set, the
// launch's signal (RunChanged).
func endRun(tx *tx, workspaceID string, r accountable.Run, in accountable.FinalizeRun, signal bool) (accountable.Run, error) {
	now := accountable.TimeOf(tx.Now())
	r.Status, r.OutcomeKind, r.Summary, r.UpdatedAt, r.FinalizedAt = in.Status, in.OutcomeKind, in.Summary, now, &now
	if in.CostCents != nil {
		r.CostCents = *in.CostCents
	}
	if len(in.Evidence) > 0 {
		r.Evidence = in.Evidence
	}
	r.AggregateVersion++
	if _, err := tx.Append(aggregate(accountable.AggregateRun, r.ID), accountable.EventRunFinalized, payload.RunChanged{RunID: r.ID,
		LaunchID: r.LaunchID, JobID: r.JobID, Status: r.Status, OutcomeKind: r.OutcomeKind, CostCents: r.CostCents,
		CommandID: in.Causation.CommandID}); err != nil {
		return r, err
	}
	var outcome *string
	if r.OutcomeKind != nil {
		o := string(*r.OutcomeKind)
		outcome = &o
	}
	tx.Queue(`UPDATE runs SET status = $3, outcome_kind = $4, cost_cents = $5, summary = $6, evidence = $7, updated_at = $8,
			finalized_at = $8, aggregate_version = $9 WHERE workspace_id = $1 AND id = $2`,
		workspaceID, r.ID, string(r.Status), outcome, r.CostCents, r.Summary, string(r.Evidence), now, r.AggregateVersion)
	if !signal {
		return r, nil
	}
	msg, err := tx.Messages().RunChanged(workspaceID, r.LaunchID, accountable.RunChanged{RunID: r.ID, JobID: r.JobID, Status: r.Status, CostCents: r.CostCents})
	if err != nil {
		return r, err
	}
	tx.Send(msg)
	return r, nil
}

// TimeOutRun fails a run its agent did not finalise in time (outcome abandoned, no cost),
// once; it returns the run as it ended (or had ended). With sparePaused a paused run is
// left paused (and returned as it is): its launch waits for it to be resumed.
func (db *DB) TimeOutRun(ctx context.Context, workspaceID, runID string, sparePaused bool) (accountable.Run, error) {
	ref := aggregate(accountable.AggregateRun, runID)
	cmd := command[accountable.Run]{workspaceID: workspaceID, actor: worker, locks: []aggregateRef{ref}}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.Run, error) {
		r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE workspace_id = $1 AND id = $2`, workspaceID, runID))
		if err != nil || r.Status.Final() || (sparePaused && r.Status == accountable.RunPaused) {
			return r, err
		}
		abandoned, summary := accountable.OutcomeAbandoned, "The run was not finalised before its timeout."
		// The workflow that timed it out settles it itself: the signal would only repeat that.
		return endRun(tx, workspaceID, r, accountable.FinalizeRun{Status: accountable.RunFailed, OutcomeKind: &abandoned, Summary: &summary}, false)
	}
	r, _, err := runCommand(ctx, db, cmd)
	return r, err
}

// GetRun reads a run of the workspace.
func (db *DB) GetRun(ctx context.Context, workspaceID, id string) (accountable.Run, error) {
	r, err := scanRun(db.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE workspace_id = $1 AND id = $2`, workspaceID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, accountable.NotFound("run")
	}
	return r, mapError(err)
}

// ListRuns reads a page of the workspace's runs, newest first (of one launch when launchID
// is set).
func (db *DB) ListRuns(ctx context.Context, workspaceID string, launchID *string, limit int, after *accountable.WorkCursor) ([]accountable.Run, *accountable.WorkCursor, error) {
	limit = pageLimit(limit)
	afterAt, afterID := keysetAfter(after)
	rows, err := db.pool.Query(ctx, `SELECT `+runColumns+` FROM runs WHERE workspace_id = $1 AND ($2::uuid IS NULL OR launch_id = $2)
		  AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4::uuid))
		ORDER BY created_at DESC, id DESC LIMIT $5`, workspaceID, launchID, afterAt, afterID, limit+1)
	if err != nil {
		return nil, nil, mapError(err)
	}
	return keysetPage(rows, limit, scanRun, func(r accountable.Run) (time.Time, string) { return r.CreatedAt.Time, r.ID })
}

// ActOnRun pauses, resumes, cancels or rolls back a run; an action its status does not
// allow is 409 invalid_state_transition. Cancelling ends the run like a finalisation (its
// launch settles it, told by RunChanged); the others are recorded with a run.actioned
// event, and a pause or a resumption is signalled to the launch too (it does not time out
// a paused run).
func (db *DB) ActOnRun(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, runID string, action accountable.RunAction,
	in accountable.RunActionRequest) (accountable.Run, bool, error) {
	cmd := commandOf[accountable.Run](p, idem, in.Causation)
	ref := aggregate(accountable.AggregateRun, runID)
	cmd.locks = []aggregateRef{ref}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.Run, error) {
		return actOnRun(ctx, tx, p.WorkspaceID, runID, action, in)
	}
	return runCommand(ctx, db, cmd)
}

// actOnRun is ActOnRun inside a command that locked the run's head.
func actOnRun(ctx context.Context, tx *tx, workspaceID, runID string, action accountable.RunAction, in accountable.RunActionRequest) (accountable.Run, error) {
	ref := aggregate(accountable.AggregateRun, runID)
	p := accountable.Principal{WorkspaceID: workspaceID}
	{
		r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE workspace_id = $1 AND id = $2`, p.WorkspaceID, runID))
		if errors.Is(err, pgx.ErrNoRows) {
			return r, accountable.NotFound("run")
		}
		if err != nil {
			return r, err
		}
		refuse := accountable.Errorf(accountable.ECodeInvalidStateTransition, "A %s run cannot be %s.", r.Status, map[accountable.RunAction]string{
			accountable.RunPause: "paused", accountable.RunResume: "resumed", accountable.RunCancel: "cancelled", accountable.RunRollback: "rolled back"}[action])
		var next accountable.RunStatus
		outcome := r.OutcomeKind
		switch action {
		case accountable.RunPause:
			if r.Status != accountable.RunRunning {
				return r, refuse
			}
			next = accountable.RunPaused
		case accountable.RunResume:
			if r.Status != accountable.RunPaused {
				return r, refuse
			}
			next = accountable.RunRunning
		case accountable.RunCancel:
			if r.Status.Final() {
				return r, refuse
			}
			abandoned := accountable.OutcomeAbandoned
			return endRun(tx, p.WorkspaceID, r, accountable.FinalizeRun{Status: accountable.RunCancelled, OutcomeKind: &abandoned,
				Summary: in.Reason, Causation: in.Causation}, true)
		case accountable.RunRollback:
			if !r.Status.Final() || (r.OutcomeKind != nil && *r.OutcomeKind == accountable.OutcomeAbandoned) {
				return r, refuse
			}
			next = r.Status
			abandoned := accountable.OutcomeAbandoned
			outcome = &abandoned
		}
		now := accountable.TimeOf(tx.Now())
		r.Status, r.OutcomeKind, r.UpdatedAt = next, outcome, now
		r.AggregateVersion++
		if _, err := tx.Append(ref, accountable.EventRunActioned, payload.RunActioned{RunID: r.ID, Action: action, Status: next,
			Reason: in.Reason, CommandID: in.Causation.CommandID}); err != nil {
			return r, err
		}
		var o *string
		if outcome != nil {
			s := string(*outcome)
			o = &s
		}
		tx.Queue(`UPDATE runs SET status = $3, outcome_kind = $4, updated_at = $5, aggregate_version = $6 WHERE workspace_id = $1 AND id = $2`,
			p.WorkspaceID, r.ID, string(next), o, now, r.AggregateVersion)
		if action == accountable.RunPause || action == accountable.RunResume {
			msg, err := tx.Messages().RunChanged(p.WorkspaceID, r.LaunchID, accountable.RunChanged{RunID: r.ID, JobID: r.JobID, Status: next, CostCents: r.CostCents})
			if err != nil {
				return r, err
			}
			tx.Send(msg)
		}
		return r, nil
	}
}
