package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
)

// statusChangedPayload is the payload of work.status_changed and initiative.status_changed.
type statusChangedPayload struct {
	ID        string                      `json:"id"`
	From      string                      `json:"from"`
	To        string                      `json:"to"`
	Action    accountable.LifecycleAction `json:"action"`
	Reason    *string                     `json:"reason"`
	CommandID *string                     `json:"command_id"`
}

// ApplyLifecycle pauses, resumes, retries or cancels work, in one transaction: a run (as
// its actions do), a task, or every task of a milestone, a workstream or an initiative
// (and the initiative itself), each change with its event. An action that changes nothing
// is blocked: the result says why, with ok false, and nothing is written.
func (db *DB) ApplyLifecycle(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.ApplyLifecycle,
	signal func(launchID string, f accountable.RunChanged) (accountable.WorkflowMessage, error)) (accountable.LifecycleResult, bool, error) {
	res := accountable.LifecycleResult{OK: true, Action: in.Action, Level: in.Level, ID: in.ID, BlockReasons: []string{}}
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
			action := map[accountable.LifecycleAction]accountable.RunAction{accountable.LifecyclePause: accountable.RunPause,
				accountable.LifecycleResume: accountable.RunResume, accountable.LifecycleCancel: accountable.RunCancel}[in.Action]
			if action == "" {
				return blocked(res, "a run is not retried: launch its workstream again"), nil
			}
			_, err := actOnRun(ctx, tx, p.WorkspaceID, in.ID, action, accountable.RunActionRequest{Reason: in.Reason, Causation: in.Causation}, signal)
			if accountable.ErrorCode(err) == accountable.ECodeInvalidStateTransition {
				return blocked(res, err.(*accountable.Error).Message), nil
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
		out := res
		now := tx.Now()
		if in.Level == accountable.LevelInitiative {
			var status string
			if err := tx.QueryRow(ctx, `SELECT status FROM initiatives WHERE workspace_id = $1 AND id = $2`, p.WorkspaceID, in.ID).Scan(&status); err != nil {
				return out, err
			}
			if to, ok := accountable.InitiativeLifecycle(accountable.InitiativeStatus(status), in.Action); ok {
				tx.Queue(`UPDATE initiatives SET status = $3, updated_at = $4, aggregate_version = aggregate_version + 1
					WHERE workspace_id = $1 AND id = $2`, p.WorkspaceID, in.ID, string(to), now)
				if _, err := tx.Append(aggregate(accountable.AggregateInitiative, in.ID), accountable.EventInitiativeStatusChanged,
					statusChangedPayload{ID: in.ID, From: status, To: string(to), Action: in.Action, Reason: in.Reason, CommandID: in.Causation.CommandID}); err != nil {
					return out, err
				}
				out.Affected.Initiatives = 1
			} else {
				out.BlockReasons = append(out.BlockReasons, fmt.Sprintf("the initiative is %s", status))
			}
		}
		rows, err := tx.Query(ctx, `SELECT id::text, status FROM tasks WHERE workspace_id = $1 AND id = ANY ($2) ORDER BY id`, p.WorkspaceID, ids)
		if err != nil {
			return out, err
		}
		type taskState struct{ id, status string }
		tasks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (taskState, error) {
			var t taskState
			return t, row.Scan(&t.id, &t.status)
		})
		if err != nil {
			return out, err
		}
		unchanged := 0
		for _, t := range tasks {
			to, ok := accountable.TaskLifecycle(accountable.TaskStatus(t.status), in.Action)
			if !ok {
				unchanged++
				continue
			}
			tx.Queue(`UPDATE tasks SET status = $3, updated_at = $4, aggregate_version = aggregate_version + 1
				WHERE workspace_id = $1 AND id = $2`, p.WorkspaceID, t.id, string(to), now)
			if _, err := tx.Append(aggregate(accountable.AggregateTask, t.id), accountable.EventTaskStatusChanged,
				statusChangedPayload{ID: t.id, From: t.status, To: string(to), Action: in.Action, Reason: in.Reason, CommandID: in.Causation.CommandID}); err != nil {
				return out, err
			}
			out.Affected.Tasks++
		}
		if unchanged > 0 {
			out.BlockReasons = append(out.BlockReasons, fmt.Sprintf("%d task(s) cannot be %s in their status", unchanged, pastTense(in.Action)))
		}
		if out.Affected.Tasks == 0 && out.Affected.Initiatives == 0 {
			if len(tasks) == 0 && in.Level != accountable.LevelInitiative {
				out.BlockReasons = append(out.BlockReasons, fmt.Sprintf("the %s has no tasks", in.Level))
			}
			// Nothing to change: nothing is written (the queued statements are none).
			return blocked(out), nil
		}
		out.BlockReasons = []string{}
		return out, nil
	}
	return run(cmd)
}

var errLifecycleBlocked = errors.New("store: the lifecycle action is blocked")

// blocked marks a result as blocked with the reasons given (and those it has).
func blocked(res accountable.LifecycleResult, reasons ...string) accountable.LifecycleResult {
	res.OK = false
	res.BlockReasons = append(res.BlockReasons, reasons...)
	res.Affected = accountable.LifecycleAffected{}
	return res
}

func pastTense(a accountable.LifecycleAction) string {
	return map[accountable.LifecycleAction]string{accountable.LifecyclePause: "paused", accountable.LifecycleResume: "resumed",
		accountable.LifecycleRetry: "retried", accountable.LifecycleCancel: "cancelled"}[a]
}
