package store

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/payload"
)

// Ledger verification compares these aggregates' rows with their chains (aggregateTables).
func init() {
	verifiesAggregateTable(accountable.AggregateLaunch, `SELECT id::text, aggregate_version FROM launches WHERE workspace_id = $1`)
}

// LaunchInitiative records a launch of the initiative with one queued job per workstream
// in scope and the message that starts its LaunchDispatch workflow (LaunchDispatchStart),
// in one transaction.
func (db *DB) LaunchInitiative(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.LaunchInitiative) (accountable.Launch, bool, error) {
	cmd := commandOf[accountable.Launch](p, idem, in.Causation)
	cmd.run = func(ctx context.Context, tx *tx) (accountable.Launch, error) {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM initiatives WHERE workspace_id = $1 AND id = $2)`,
			p.WorkspaceID, in.InitiativeID).Scan(&exists); err != nil {
			return accountable.Launch{}, err
		}
		if !exists {
			return accountable.Launch{}, accountable.NotFound("initiative")
		}
		rows, err := tx.Query(ctx, `SELECT w.id::text, w.agent_id, w.expected_budget_usd,
				(SELECT count(*) FROM tasks t WHERE t.workspace_id = w.workspace_id AND t.workstream_id = w.id)
			FROM workstreams w WHERE w.workspace_id = $1 AND w.initiative_id = $2 ORDER BY w.position`, p.WorkspaceID, in.InitiativeID)
		if err != nil {
			return accountable.Launch{}, err
		}
		streams, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (accountable.LaunchWorkstream, error) {
			var s accountable.LaunchWorkstream
			return s, row.Scan(&s.ID, &s.AgentID, &s.ExpectedBudgetUSD, &s.Tasks)
		})
		if err != nil {
			return accountable.Launch{}, err
		}
		var taskWorkstreamID *string
		if in.TaskID != nil {
			err := tx.QueryRow(ctx, `SELECT workstream_id::text FROM tasks WHERE workspace_id = $1 AND id = $2 AND initiative_id = $3`,
				p.WorkspaceID, *in.TaskID, in.InitiativeID).Scan(&taskWorkstreamID)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return accountable.Launch{}, err
			}
		}
		plan, err := in.Plan(streams, taskWorkstreamID)
		if err != nil {
			return accountable.Launch{}, err
		}
		launchID := uuid.Must(uuid.NewV7()).String()
		jobIDs := make([]string, len(plan.Jobs))
		for i := range jobIDs {
			jobIDs[i] = uuid.Must(uuid.NewV7()).String()
		}
		l := plan.Launch(launchID, in.InitiativeID, jobIDs, accountable.TimeOf(tx.Now()))
		for i, j := range plan.Jobs {
			tx.Queue(`INSERT INTO launch_jobs (workspace_id, id, launch_id, position, workstream_id, task_id, agent_id, status, estimate_cents)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
				p.WorkspaceID, l.Jobs[i].JobID, l.LaunchID, i, j.WorkstreamID, j.TaskID, j.AgentID, string(l.Jobs[i].Status), j.EstimateCents)
		}
		msg, err := tx.Messages().LaunchDispatchStart(p.WorkspaceID, l.LaunchID)
		if err != nil {
			return l, err
		}
		if _, err := tx.Append(aggregate(accountable.AggregateLaunch, l.LaunchID), accountable.EventLaunchCreated, payload.LaunchCreated{
			LaunchID: l.LaunchID, InitiativeID: l.InitiativeID, Scope: l.Scope, Cost: l.Cost, Jobs: l.Jobs, CommandID: in.Causation.CommandID,
		}); err != nil {
			return l, err
		}
		tx.Queue(`INSERT INTO launches (workspace_id, id, initiative_id, state, model_tier, autonomy, effective_autonomy,
				scope_workstream_id, scope_task_id, server_estimate_cents, cost_ceiling_cents, workflow_id, created_at, updated_at,
				aggregate_version)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13, 1)`,
			p.WorkspaceID, l.LaunchID, l.InitiativeID, string(l.State), string(l.ModelTier), string(l.EffectiveAutonomy),
			string(l.EffectiveAutonomy), l.Scope.WorkstreamID, l.Scope.TaskID, l.Cost.ServerEstimateCents, l.Cost.CostCeilingCents,
			msg.WorkflowID, l.CreatedAt)
		tx.Send(msg)
		return l, nil
	}
	return runCommand(ctx, db, cmd)
}

// GetLaunch reads a launch of the workspace with its jobs, runs, receipts and the decision
// blocking it.
func (db *DB) GetLaunch(ctx context.Context, workspaceID, id string) (accountable.Launch, error) {
	var l accountable.Launch
	err := db.snapshot(ctx, func(q pgx.Tx) error {
		var err error
		l, err = getLaunch(ctx, q, workspaceID, id)
		return err
	})
	return l, err
}

func getLaunch(ctx context.Context, q pgx.Tx, workspaceID, id string) (accountable.Launch, error) {
	var l accountable.Launch
	var state, tier, autonomy string
	var blocking *string
	err := q.QueryRow(ctx, `SELECT id::text, initiative_id::text, state, aggregate_version, created_at, model_tier,
			effective_autonomy, scope_workstream_id::text, scope_task_id::text, server_estimate_cents, cost_ceiling_cents,
			reserved_cents, settled_cents, blocking_decision_id::text
		FROM launches WHERE workspace_id = $1 AND id = $2`, workspaceID, id).Scan(&l.LaunchID, &l.InitiativeID, &state,
		&l.AggregateVersion, &l.CreatedAt, &tier, &autonomy, &l.Scope.WorkstreamID, &l.Scope.TaskID, &l.Cost.ServerEstimateCents,
		&l.Cost.CostCeilingCents, &l.Cost.ReservedCents, &l.Cost.SettledCents, &blocking)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, accountable.NotFound("launch")
	}
	if err != nil {
		return l, mapError(err)
	}
	l.State, l.ModelTier, l.EffectiveAutonomy = accountable.LaunchState(state), accountable.ModelTier(tier), accountable.Autonomy(autonomy)
	rows, err := q.Query(ctx, `SELECT workstream_id::text, id::text, status, block_code FROM launch_jobs
		WHERE workspace_id = $1 AND launch_id = $2 ORDER BY position`, workspaceID, id)
	if err != nil {
		return l, mapError(err)
	}
	if l.Jobs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (accountable.LaunchJob, error) {
		var j accountable.LaunchJob
		var status string
		var code *string
		err := row.Scan(&j.WorkstreamID, &j.JobID, &status, &code)
		j.Status = accountable.JobStatus(status)
		if code != nil {
			c := accountable.BlockCode(*code)
			j.BlockCode = &c
		}
		return j, err
	}); err != nil {
		return l, mapError(err)
	}
	rows, err = q.Query(ctx, `SELECT id::text, status, outcome_kind, cost_cents, job_id::text, created_at, finalized_at FROM runs
		WHERE workspace_id = $1 AND launch_id = $2 ORDER BY created_at, id`, workspaceID, id)
	if err != nil {
		return l, mapError(err)
	}
	if l.Runs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (accountable.LaunchRun, error) {
		var r accountable.LaunchRun
		var status string
		var outcome *string
		err := row.Scan(&r.ID, &status, &outcome, &r.CostCents, &r.JobID, &r.CreatedAt, &r.FinalizedAt)
		r.Status = accountable.RunStatus(status)
		if outcome != nil {
			o := accountable.OutcomeKind(*outcome)
			r.OutcomeKind = &o
		}
		return r, err
	}); err != nil {
		return l, mapError(err)
	}
	// A reservation changes once after it is made, when it is settled (or released, or
	// overrun): its updated_at is then when.
	rows, err = q.Query(ctx, `SELECT id::text, cost_estimate_cents, settlement_status, job_id::text, created_at,
			CASE WHEN settlement_status <> 'reserved' THEN updated_at END, settled_cents FROM reservations
		WHERE workspace_id = $1 AND launch_id = $2 ORDER BY created_at, id`, workspaceID, id)
	if err != nil {
		return l, mapError(err)
	}
	if l.Receipts, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (accountable.ReservationReceipt, error) {
		var r accountable.ReservationReceipt
		var status string
		err := row.Scan(&r.ID, &r.CostEstimateCents, &status, &r.JobID, &r.CreatedAt, &r.SettledAt, &r.SettledCents)
		r.SettlementStatus = accountable.SettlementStatus(status)
		return r, err
	}); err != nil {
		return l, mapError(err)
	}
	if blocking != nil {
		d, err := scanDecision(q.QueryRow(ctx, `SELECT `+decisionColumns+` FROM decisions WHERE workspace_id = $1 AND id = $2`, workspaceID, *blocking))
		if err != nil {
			return l, mapError(err)
		}
		l.BlockingDecision = &d
	}
	return l, nil
}

// launchJob is a job as the launch's activities see it.
type launchJob struct {
	id, workstream                  string
	task, agent, decision, run      *string
	status                          accountable.JobStatus
	estimate                        int64
	reserved, ceiling, settledSoFar int64
	initiative                      string
}

// lockedJob reads a job of a launch inside a command that locked the launch's head.
func lockedJob(ctx context.Context, tx *tx, workspaceID, launchID, jobID string) (launchJob, error) {
	var j launchJob
	var status string
	err := tx.QueryRow(ctx, `SELECT j.id::text, j.workstream_id::text, j.task_id::text, j.agent_id, j.decision_id::text,
			j.run_id::text, j.status, j.estimate_cents, l.reserved_cents, l.cost_ceiling_cents, l.settled_cents, l.initiative_id::text
		FROM launch_jobs j JOIN launches l ON l.workspace_id = j.workspace_id AND l.id = j.launch_id
		WHERE j.workspace_id = $1 AND j.launch_id = $2 AND j.id = $3`, workspaceID, launchID, jobID).
		Scan(&j.id, &j.workstream, &j.task, &j.agent, &j.decision, &j.run, &status, &j.estimate, &j.reserved, &j.ceiling,
			&j.settledSoFar, &j.initiative)
	if errors.Is(err, pgx.ErrNoRows) {
		return j, accountable.NotFound("launch job")
	}
	j.status = accountable.JobStatus(status)
	return j, err
}

// LaunchJobIDs lists the jobs of a launch in order.
func (db *DB) LaunchJobIDs(ctx context.Context, workspaceID, launchID string) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT id::text FROM launch_jobs WHERE workspace_id = $1 AND launch_id = $2 ORDER BY position`,
		workspaceID, launchID)
	if err != nil {
		return nil, mapError(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, mapError(err)
}

// ReserveJob reserves a job's estimated cost against the launch's ceiling, once (one
// reservation per job, a constraint). When the reservation would pass the ceiling and
// approved is false, the job is blocked on a pending budget_approval decision (made once)
// instead; approved reserves it past the ceiling (the decision was approved).
func (db *DB) ReserveJob(ctx context.Context, workspaceID, launchID, jobID string, approved bool) (accountable.JobReservation, error) {
	ref := aggregate(accountable.AggregateLaunch, launchID)
	cmd := command[accountable.JobReservation]{workspaceID: workspaceID, actor: worker, locks: []aggregateRef{ref}}
	cmd.constraints = map[string]error{"reservations_one_per_job": errAlreadyReserved}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.JobReservation, error) {
		j, err := lockedJob(ctx, tx, workspaceID, launchID, jobID)
		if err != nil {
			return accountable.JobReservation{}, err
		}
		budget := accountable.JobBudget{Status: j.status, DecisionID: j.decision, EstimateCents: j.estimate, ReservedCents: j.reserved,
			CeilingCents: j.ceiling}
		step, answer := budget.Reserve(approved)
		if step == accountable.ReservationAnswered {
			return answer, nil
		}
		now := tx.Now()
		if step == accountable.ReservationBlocks {
			decisionID := uuid.Must(uuid.NewV7()).String()
			code := accountable.BlockBudgetCeiling
			title, summary, decisionContext := budget.BudgetApproval()
			d := accountable.Decision{ID: decisionID, Title: title, Summary: &summary,
				Shape: accountable.ShapeBudgetApproval, Urgency: accountable.UrgencyStandard, Status: accountable.DecisionPending,
				Options: []accountable.DecisionOption{}, InitiativeID: &j.initiative, LaunchID: &launchID, JobID: &jobID,
				Context:     decisionContext,
				RequestedBy: worker, CreatedAt: accountable.TimeOf(now), UpdatedAt: accountable.TimeOf(now), AggregateVersion: 1}
			if err := proposeDecision(tx, workspaceID, d); err != nil {
				return accountable.JobReservation{}, err
			}
			tx.Queue(`UPDATE launch_jobs SET status = 'blocked', block_code = $4, decision_id = $5 WHERE workspace_id = $1 AND launch_id = $2 AND id = $3`,
				workspaceID, launchID, jobID, string(code), decisionID)
			tx.Queue(`UPDATE launches SET state = 'blocked', blocking_decision_id = $3, updated_at = $4, aggregate_version = aggregate_version + 1
				WHERE workspace_id = $1 AND id = $2`, workspaceID, launchID, decisionID, now)
			_, err := tx.Append(ref, accountable.EventLaunchJobChanged, payload.LaunchJobChanged{JobID: jobID, Status: accountable.JobBlocked,
				BlockCode: &code, DecisionID: &decisionID, ReservedCents: j.reserved, SettledCents: j.settledSoFar})
			return accountable.JobReservation{DecisionID: decisionID}, err
		}
		resID := uuid.Must(uuid.NewV7()).String()
		st := accountable.SettlementReserved
		tx.Queue(`INSERT INTO reservations (workspace_id, id, launch_id, job_id, cost_estimate_cents, settlement_status, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`, workspaceID, resID, launchID, jobID, j.estimate, string(st), now)
		tx.Queue(`UPDATE launch_jobs SET status = 'reserved', block_code = NULL WHERE workspace_id = $1 AND launch_id = $2 AND id = $3`,
			workspaceID, launchID, jobID)
		tx.Queue(`UPDATE launches SET reserved_cents = reserved_cents + $3, blocking_decision_id = NULL,
				state = CASE WHEN state IN ('pending', 'blocked') THEN 'dispatched' ELSE state END,
				updated_at = $4, aggregate_version = aggregate_version + 1
			WHERE workspace_id = $1 AND id = $2`, workspaceID, launchID, j.estimate, now)
		_, err = tx.Append(ref, accountable.EventLaunchJobChanged, payload.LaunchJobChanged{JobID: jobID, Status: accountable.JobReserved,
			ReservationID: &resID, SettlementStatus: &st, ReservedCents: j.reserved + j.estimate, SettledCents: j.settledSoFar})
		return answer, err
	}
	res, _, err := runCommand(ctx, db, cmd)
	if errors.Is(err, errAlreadyReserved) {
		return accountable.JobReservation{Reserved: true}, nil
	}
	return res, err
}

var errAlreadyReserved = errors.New("store: the job has its reservation")

// CancelJob cancels a job whose budget decision was declined, once.
func (db *DB) CancelJob(ctx context.Context, workspaceID, launchID, jobID string) error {
	ref := aggregate(accountable.AggregateLaunch, launchID)
	cmd := command[struct{}]{workspaceID: workspaceID, actor: worker, locks: []aggregateRef{ref}}
	cmd.run = func(ctx context.Context, tx *tx) (struct{}, error) {
		j, err := lockedJob(ctx, tx, workspaceID, launchID, jobID)
		if err != nil || j.status != accountable.JobBlocked {
			return struct{}{}, err
		}
		tx.Queue(`UPDATE launch_jobs SET status = 'cancelled' WHERE workspace_id = $1 AND launch_id = $2 AND id = $3`, workspaceID, launchID, jobID)
		tx.Queue(`UPDATE launches SET blocking_decision_id = NULL, updated_at = $3, aggregate_version = aggregate_version + 1
			WHERE workspace_id = $1 AND id = $2`, workspaceID, launchID, tx.Now())
		_, err = tx.Append(ref, accountable.EventLaunchJobChanged, payload.LaunchJobChanged{JobID: jobID, Status: accountable.JobCancelled,
			BlockCode: nil, DecisionID: j.decision, ReservedCents: j.reserved, SettledCents: j.settledSoFar})
		return struct{}{}, err
	}
	_, _, err := runCommand(ctx, db, cmd)
	return err
}

// DispatchJob dispatches the run of a reserved job, once, and returns its id.
func (db *DB) DispatchJob(ctx context.Context, workspaceID, launchID, jobID string) (string, error) {
	ref := aggregate(accountable.AggregateLaunch, launchID)
	cmd := command[string]{workspaceID: workspaceID, actor: worker, locks: []aggregateRef{ref}}
	cmd.run = func(ctx context.Context, tx *tx) (string, error) {
		j, err := lockedJob(ctx, tx, workspaceID, launchID, jobID)
		if err != nil {
			return "", err
		}
		if j.run != nil {
			return *j.run, nil // dispatched before (an activity retry)
		}
		if j.status != accountable.JobReserved {
			return "", accountable.Errorf(accountable.ECodeInvalidStateTransition, "Job %s is %s, not reserved.", jobID, j.status)
		}
		now := tx.Now()
		runID := uuid.Must(uuid.NewV7()).String()
		if _, err := tx.Append(aggregate(accountable.AggregateRun, runID), accountable.EventRunDispatched, payload.RunChanged{
			RunID: runID, LaunchID: launchID, JobID: jobID, Status: accountable.RunRunning}); err != nil {
			return "", err
		}
		tx.Queue(`INSERT INTO runs (workspace_id, id, launch_id, job_id, initiative_id, workstream_id, agent_id, status, created_at,
				updated_at, aggregate_version) VALUES ($1, $2, $3, $4, $5, $6, $7, 'running', $8, $8, 1)`,
			workspaceID, runID, launchID, jobID, j.initiative, j.workstream, j.agent, now)
		tx.Queue(`UPDATE launch_jobs SET status = 'running', run_id = $4 WHERE workspace_id = $1 AND launch_id = $2 AND id = $3`,
			workspaceID, launchID, jobID, runID)
		tx.Queue(`UPDATE launches SET state = 'running', updated_at = $3, aggregate_version = aggregate_version + 1
			WHERE workspace_id = $1 AND id = $2`, workspaceID, launchID, now)
		_, err = tx.Append(ref, accountable.EventLaunchJobChanged, payload.LaunchJobChanged{JobID: jobID, Status: accountable.JobRunning,
			RunID: &runID, ReservedCents: j.reserved, SettledCents: j.settledSoFar})
		return runID, err
	}
	runID, _, err := runCommand(ctx, db, cmd)
	return runID, err
}

// SettleJob settles a job's reservation against the cost its run reported, once: settled
// when the cost fits the reservation, overrun when it does not, released when an unfinished
// run cost nothing. The launch's settled total moves by the cost in the same transaction.
func (db *DB) SettleJob(ctx context.Context, workspaceID, launchID, jobID string, status accountable.RunStatus, cost int64) error {
	ref := aggregate(accountable.AggregateLaunch, launchID)
	cmd := command[struct{}]{workspaceID: workspaceID, actor: worker, locks: []aggregateRef{ref}}
	cmd.run = func(ctx context.Context, tx *tx) (struct{}, error) {
		j, err := lockedJob(ctx, tx, workspaceID, launchID, jobID)
		if err != nil {
			return struct{}{}, err
		}
		if j.status != accountable.JobRunning {
			return struct{}{}, nil // settled before (a retry, a duplicate signal)
		}
		st := accountable.SettlementSettled
		switch {
		case cost == 0 && status != accountable.RunSucceeded:
			st = accountable.SettlementReleased
		case cost > j.estimate:
			st = accountable.SettlementOverrun
		}
		jobStatus := accountable.JobSucceeded
		switch status {
		case accountable.RunFailed:
			jobStatus = accountable.JobFailed
		case accountable.RunCancelled:
			jobStatus = accountable.JobCancelled
		}
		now := tx.Now()
		tx.Queue(`UPDATE reservations SET settlement_status = $4, settled_cents = $5, updated_at = $6
			WHERE workspace_id = $1 AND launch_id = $2 AND job_id = $3`, workspaceID, launchID, jobID, string(st), cost, now)
		tx.Queue(`UPDATE launch_jobs SET status = $4 WHERE workspace_id = $1 AND launch_id = $2 AND id = $3`,
			workspaceID, launchID, jobID, string(jobStatus))
		tx.Queue(`UPDATE launches SET settled_cents = settled_cents + $3, state = 'settling', updated_at = $4,
				aggregate_version = aggregate_version + 1 WHERE workspace_id = $1 AND id = $2`, workspaceID, launchID, cost, now)
		_, err = tx.Append(ref, accountable.EventLaunchJobChanged, payload.LaunchJobChanged{JobID: jobID, Status: jobStatus, RunID: j.run,
			SettlementStatus: &st, ReservedCents: j.reserved, SettledCents: j.settledSoFar + cost})
		return struct{}{}, err
	}
	_, _, err := runCommand(ctx, db, cmd)
	return err
}

// EndLaunch ends a launch whose jobs have all ended: completed when any succeeded (or
// there were none), cancelled when all were cancelled, failed otherwise. Once.
func (db *DB) EndLaunch(ctx context.Context, workspaceID, launchID string) (accountable.LaunchState, error) {
	ref := aggregate(accountable.AggregateLaunch, launchID)
	cmd := command[accountable.LaunchState]{workspaceID: workspaceID, actor: worker, locks: []aggregateRef{ref}}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.LaunchState, error) {
		var state string
		var jobs, succeeded, cancelled int
		if err := tx.QueryRow(ctx, `SELECT l.state, count(j.id), count(j.id) FILTER (WHERE j.status = 'succeeded'),
				count(j.id) FILTER (WHERE j.status = 'cancelled')
			FROM launches l LEFT JOIN launch_jobs j ON j.workspace_id = l.workspace_id AND j.launch_id = l.id
			WHERE l.workspace_id = $1 AND l.id = $2 GROUP BY l.state`, workspaceID, launchID).Scan(&state, &jobs, &succeeded, &cancelled); err != nil {
			return "", err
		}
		switch accountable.LaunchState(state) {
		case accountable.LaunchCompleted, accountable.LaunchFailed, accountable.LaunchCancelled:
			return accountable.LaunchState(state), nil
		}
		end := accountable.LaunchFailed
		switch {
		case jobs == 0 || succeeded > 0:
			end = accountable.LaunchCompleted
		case cancelled == jobs:
			end = accountable.LaunchCancelled
		}
		tx.Queue(`UPDATE launches SET state = $3, blocking_decision_id = NULL, updated_at = $4, aggregate_version = aggregate_version + 1
			WHERE workspace_id = $1 AND id = $2`, workspaceID, launchID, string(end), tx.Now())
		_, err := tx.Append(ref, accountable.EventLaunchEnded, payload.LaunchEnded{LaunchID: launchID, State: end})
		return end, err
	}
	state, _, err := runCommand(ctx, db, cmd)
	return state, err
}
