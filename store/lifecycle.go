package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/payload"
)

// ApplyLifecycle pauses, resumes, retries or cancels work, in one transaction: a run (as
// its actions do), a task, or every task of a milestone, a workstream or an initiative
// (and the initiative itself), each change with its event. An action that changes nothing
// is blocked: the result says why, with ok false, and nothing is written.
func (db *DB) ApplyLifecycle(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.ApplyLifecycle) (accountable.LifecycleResult, bool, error) {
	res := in.Result()
	cmd := commandOf[accountable.LifecycleResult](p, idem, in.Causation)
	// A blocked action is a refusal: its transaction is rolled back and no idempotency
	// record is kept (a retry may reuse the key), like any failed command's.
	var refused *accountable.LifecycleResult
	run := func(cmd command[accountable.LifecycleResult]) (accountable.LifecycleResult, bool, error) {
		inner := cmd.run
		cmd.run = func(ctx context.Context, tx *tx) (accountable.LifecycleResult, error) {
			out, err := inner(ctx, tx)
			if err == nil && !out.OK {
				refused = &out
				return out, errLifecycleBlocked
			}
			return out, err
		}
		out, dup, err := runCommand(ctx, db, cmd)
		if errors.Is(err, errLifecycleBlocked) {
			return *refused, false, nil
		}
		return out, dup, err
	}
	if in.Level == accountable.LevelRun {
		cmd.locks = []aggregateRef{aggregate(accountable.AggregateRun, in.ID)}
		cmd.run = func(ctx context.Context, tx *tx) (accountable.LifecycleResult, error) {
			action, refusal := in.Action.OnRun()
			if action == "" {
				return res.Blocked(refusal), nil
			}
			_, err := actOnRun(ctx, tx, p.WorkspaceID, in.ID, action, accountable.RunActionRequest{Reason: in.Reason, Causation: in.Causation})
			if accountable.ErrorCode(err) == accountable.ECodeInvalidStateTransition {
				return res.Blocked(err.(*accountable.Error).Message), nil
			}
			res.Affected.Runs = 1
			return res, err
		}
		return run(cmd)
	}

	// The tasks in scope are found first, to lock their heads in the command.
	column := map[accountable.LifecycleLevel]string{accountable.LevelTask: "id", accountable.LevelMilestone: "milestone_id",
		accountable.LevelWorkstream: "workstream_id", accountable.LevelInitiative: "initiative_id"}[in.Level]
	exists := map[accountable.LifecycleLevel]string{accountable.LevelTask: "tasks", accountable.LevelMilestone: "milestones",
		accountable.LevelWorkstream: "workstreams", accountable.LevelInitiative: "initiatives"}[in.Level]
	var found bool
	if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+exists+` WHERE workspace_id = $1 AND id = $2)`,
		p.WorkspaceID, in.ID).Scan(&found); err != nil {
		return res, false, mapError(err)
	}
	if !found {
		return res, false, accountable.NotFound(string(in.Level))
	}
	rows, err := db.pool.Query(ctx, `SELECT id::text FROM tasks WHERE workspace_id = $1 AND `+column+` = $2`, p.WorkspaceID, in.ID)
	if err != nil {
		return res, false, mapError(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return res, false, mapError(err)
	}
	for _, id := range ids {
		cmd.locks = append(cmd.locks, aggregate(accountable.AggregateTask, id))
	}
	if in.Level == accountable.LevelInitiative {
		cmd.locks = append(cmd.locks, aggregate(accountable.AggregateInitiative, in.ID))
	}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.LifecycleResult, error) {
		now := tx.Now()
		var initiative *accountable.InitiativeStatus
		if in.Level == accountable.LevelInitiative {
			var status accountable.InitiativeStatus
			if err := tx.QueryRow(ctx, `SELECT status FROM initiatives WHERE workspace_id = $1 AND id = $2`, p.WorkspaceID, in.ID).Scan(&status); err != nil {
				return res, err
			}
			initiative = &status
		}
		rows, err := tx.Query(ctx, `SELECT id::text, status FROM tasks WHERE workspace_id = $1 AND id = ANY ($2) ORDER BY id`, p.WorkspaceID, ids)
		if err != nil {
			return res, err
		}
		tasks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (accountable.TaskState, error) {
			var t accountable.TaskState
			return t, row.Scan(&t.ID, &t.Status)
		})
		if err != nil {
			return res, err
		}
		plan := in.Plan(initiative, tasks)
		if plan.Initiative != nil {
			tx.Queue(`UPDATE initiatives SET status = $3, updated_at = $4, aggregate_version = aggregate_version + 1
				WHERE workspace_id = $1 AND id = $2`, p.WorkspaceID, in.ID, string(*plan.Initiative), now)
			if _, err := tx.Append(aggregate(accountable.AggregateInitiative, in.ID), accountable.EventInitiativeStatusChanged,
				payload.StatusChanged{ID: in.ID, From: string(*initiative), To: string(*plan.Initiative), Action: in.Action, Reason: in.Reason,
					CommandID: in.Causation.CommandID}); err != nil {
				return res, err
			}
		}
		for _, t := range plan.Tasks {
			tx.Queue(`UPDATE tasks SET status = $3, updated_at = $4, aggregate_version = aggregate_version + 1
				WHERE workspace_id = $1 AND id = $2`, p.WorkspaceID, t.ID, string(t.To), now)
			if _, err := tx.Append(aggregate(accountable.AggregateTask, t.ID), accountable.EventTaskStatusChanged,
				payload.StatusChanged{ID: t.ID, From: string(t.From), To: string(t.To), Action: in.Action, Reason: in.Reason, CommandID: in.Causation.CommandID}); err != nil {
				return res, err
			}
		}
		// A blocked plan changes nothing: nothing is queued or appended.
		return plan.Result, nil
	}
	return run(cmd)
}

var errLifecycleBlocked = errors.New("store: the lifecycle action is blocked")
