package store

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/payload"
)

// Ledger verification compares these aggregates' rows with their chains (aggregateTables).
func init() {
	verifiesAggregateTable(accountable.AggregateInitiative, `SELECT id::text, aggregate_version FROM initiatives WHERE workspace_id = $1`)
	verifiesAggregateTable(accountable.AggregateWorkstream, `SELECT id::text, aggregate_version FROM workstreams WHERE workspace_id = $1`)
	verifiesAggregateTable(accountable.AggregateMilestone, `SELECT id::text, aggregate_version FROM milestones WHERE workspace_id = $1`)
}

// CommitInitiative creates an initiative in one transaction: from a proposal (locked, so
// that two commits of one proposal have one winner; its digest must match, and it must be
// neither expired nor committed) with every workstream, milestone and task of its plan, or
// from a starter title. Every part gets its ledger event; the tasks are ordinary work items.
func (db *DB) CommitInitiative(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency,
	in accountable.CommitInitiative) (accountable.InitiativeCommitted, bool, error) {
	cmd := commandOf[accountable.InitiativeCommitted](p, idem, in.Causation)
	var proposalRef aggregateRef
	if in.ProposalID != nil {
		proposalRef = aggregate(accountable.AggregateInitiativeProposal, accountable.NormalizeUUID(*in.ProposalID))
		cmd.locks = []aggregateRef{proposalRef}
	}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.InitiativeCommitted, error) {
		now := accountable.TimeOf(tx.Now())
		var res accountable.InitiativeCommitted
		var plan accountable.Plan
		title, summary := "", ""
		if in.Title != nil {
			title = *in.Title
		}
		if in.Summary != nil {
			summary = *in.Summary
		}
		if in.ProposalID != nil {
			prop, err := scanProposal(tx.QueryRow(ctx, `SELECT `+proposalColumns+` FROM initiative_proposals
				WHERE workspace_id = $1 AND id = $2`, p.WorkspaceID, proposalRef.ID))
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				return res, accountable.NotFound("proposal")
			case err != nil:
				return res, err
			case prop.ProposalDigest != *in.ProposalDigest:
				return res, accountable.Errorf(accountable.ECodeProposalDigestMismatch,
					"The proposal_digest does not match proposal %s; read the proposal again.", prop.ProposalID)
			case prop.Status == accountable.ProposalInstantiated:
				return res, accountable.Errorf(accountable.ECodeProposalCommitted, "Proposal %s was already committed.", prop.ProposalID)
			case prop.StatusAt(tx.Now()) == accountable.ProposalExpired:
				return res, accountable.Errorf(accountable.ECodeProposalExpired, "Proposal %s expired at %s.", prop.ProposalID, prop.ExpiresAt)
			}
			plan = prop.Plan
			if title == "" {
				title = plan.Initiative.Title
			}
			if summary == "" {
				summary = plan.Initiative.Summary
			}
			if err := tx.Exec(ctx, `UPDATE initiative_proposals SET status = $3, aggregate_version = aggregate_version + 1
				WHERE workspace_id = $1 AND id = $2`, p.WorkspaceID, prop.ProposalID, string(accountable.ProposalInstantiated)); err != nil {
				return res, err
			}
			res.ProposalID = &prop.ProposalID
		}
		initiativeID := uuid.Must(uuid.NewV7()).String()
		receiptID := uuid.Must(uuid.NewV7()).String()
		ev, err := tx.Append(aggregate(accountable.AggregateInitiative, initiativeID), accountable.EventInitiativeCreated,
			payload.InitiativeCreated{InitiativeID: initiativeID, Title: title, Summary: summary, ProposalID: res.ProposalID,
				ProposalDigest: in.ProposalDigest, ReceiptID: receiptID, CommandID: in.Causation.CommandID})
		if err != nil {
			return res, err
		}
		tx.Queue(`INSERT INTO initiatives (workspace_id, id, title, summary, status, proposal_id, receipt_id, created_at,
			updated_at, aggregate_version) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, 1)`,
			p.WorkspaceID, initiativeID, title, summary, string(accountable.InitiativeActive), res.ProposalID, receiptID, now)
		if res.ProposalID != nil {
			if _, err := tx.Append(proposalRef, accountable.EventProposalInstantiated,
				payload.ProposalInstantiated{ProposalID: *res.ProposalID, InitiativeID: initiativeID}); err != nil {
				return res, err
			}
		}
		if res.Created, err = createPlanParts(tx, p.WorkspaceID, initiativeID, plan, now, in.Causation.CommandID); err != nil {
			return res, err
		}
		res.Initiative = accountable.InitiativeRef{ID: initiativeID, Title: title, Status: accountable.InitiativeActive, AggregateVersion: 1}
		res.Receipt = accountable.CommitReceipt{ReceiptID: receiptID, EventID: ev.ID}
		return res, nil
	}
	return runCommand(ctx, db, cmd)
}

// createPlanParts creates the workstreams, milestones and tasks of plan under the
// initiative, each with its event.
func createPlanParts(tx *tx, workspaceID, initiativeID string, plan accountable.Plan, now accountable.Time,
	commandID *string) (accountable.CreatedCounts, error) {
	var n accountable.CreatedCounts
	for i, w := range plan.Workstreams {
		wsID := uuid.Must(uuid.NewV7()).String()
		if _, err := tx.Append(aggregate(accountable.AggregateWorkstream, wsID), accountable.EventWorkstreamCreated,
			payload.WorkstreamCreated{WorkstreamID: wsID, InitiativeID: initiativeID, Position: i, Workstream: w}); err != nil {
			return n, err
		}
		dependsOn, _ := json.Marshal(w.DependsOn)
		deliverables, _ := json.Marshal(w.Deliverables)
		tx.Queue(`INSERT INTO workstreams (workspace_id, id, initiative_id, position, name, goal, domain, agent_id, agent_name,
				confidence, rationale, expected_tokens, expected_duration_hours, expected_budget_usd, depends_on, deliverables,
				created_at, aggregate_version)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, 1)`,
			workspaceID, wsID, initiativeID, i, w.Name, w.Goal, string(w.Domain), w.AgentID, w.AgentName, w.Confidence,
			w.Rationale, w.ExpectedTokens, w.ExpectedDurationHours, w.ExpectedBudgetUSD, string(dependsOn), string(deliverables), now)
		n.Workstreams++
		for j, m := range w.Milestones {
			msID := uuid.Must(uuid.NewV7()).String()
			if _, err := tx.Append(aggregate(accountable.AggregateMilestone, msID), accountable.EventMilestoneCreated,
				payload.MilestoneCreated{MilestoneID: msID, InitiativeID: initiativeID, WorkstreamID: wsID, Position: j, Title: m.Title}); err != nil {
				return n, err
			}
			tx.Queue(`INSERT INTO milestones (workspace_id, id, initiative_id, workstream_id, position, title, created_at,
				aggregate_version) VALUES ($1, $2, $3, $4, $5, $6, $7, 1)`, workspaceID, msID, initiativeID, wsID, j, m.Title, now)
			n.Milestones++
			for _, pt := range m.Tasks {
				t := plannedTask(workspaceID, initiativeID, wsID, msID, pt, now)
				if _, err := appendTask(tx, t, commandID); err != nil {
					return n, err
				}
				n.Tasks++
			}
		}
	}
	return n, nil
}

// plannedTask is the work item of a planned task.
func plannedTask(workspaceID, initiativeID, workstreamID, milestoneID string, pt accountable.PlannedTask, now accountable.Time) accountable.Task {
	var desc *string
	if pt.Description != "" {
		d := pt.Description
		desc = &d
	}
	metadata, _ := json.Marshal(map[string]any{"source": "proposal", "estimated_hours": pt.EstimatedHours})
	canonical, err := canonical.Transform(metadata)
	if err != nil {
		canonical = []byte("{}")
	}
	return accountable.Task{
		ID: uuid.Must(uuid.NewV7()).String(), WorkspaceID: workspaceID, Title: pt.Title, Description: desc,
		Status: accountable.TaskTodo, Priority: pt.Priority, InitiativeID: &initiativeID, WorkstreamID: &workstreamID,
		MilestoneID: &milestoneID, Metadata: accountable.Object(canonical), CreatedAt: now, UpdatedAt: now, AggregateVersion: 1,
	}
}

const initiativeColumns = `id, title, summary, status, proposal_id, created_at, updated_at, aggregate_version`

func scanInitiative(row pgx.Row) (accountable.Initiative, error) {
	var in accountable.Initiative
	var status string
	err := row.Scan(&in.ID, &in.Title, &in.Summary, &status, &in.ProposalID, &in.CreatedAt, &in.UpdatedAt, &in.AggregateVersion)
	in.Status = accountable.InitiativeStatus(status)
	return in, err
}

// GetInitiative reads an initiative of the workspace, with its tree (workstreams,
// milestones, tasks) when tree is set.
func (db *DB) GetInitiative(ctx context.Context, workspaceID, id string, tree bool) (accountable.Initiative, error) {
	if !tree {
		return getInitiative(ctx, db.pool, workspaceID, id, false)
	}
	var in accountable.Initiative
	err := db.snapshot(ctx, func(q pgx.Tx) error {
		var err error
		in, err = getInitiative(ctx, q, workspaceID, id, true)
		return err
	})
	return in, err
}

func getInitiative(ctx context.Context, q querier, workspaceID, id string, tree bool) (accountable.Initiative, error) {
	in, err := scanInitiative(q.QueryRow(ctx, `SELECT `+initiativeColumns+` FROM initiatives WHERE workspace_id = $1 AND id = $2`,
		workspaceID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return in, accountable.NotFound("initiative")
	}
	if err != nil || !tree {
		return in, mapError(err)
	}
	in.Tree, err = initiativeTree(ctx, q, workspaceID, id)
	return in, mapError(err)
}

func initiativeTree(ctx context.Context, q querier, workspaceID, id string) (*accountable.InitiativeTree, error) {
	tree := &accountable.InitiativeTree{Workstreams: []accountable.Workstream{}}
	rows, err := q.Query(ctx, `SELECT id, name, goal, domain, agent_id, agent_name, confidence, rationale, expected_tokens,
			expected_duration_hours, expected_budget_usd, position
		FROM workstreams WHERE workspace_id = $1 AND initiative_id = $2 ORDER BY position`, workspaceID, id)
	if err != nil {
		return nil, err
	}
	streams, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (accountable.Workstream, error) {
		var w accountable.Workstream
		var domain string
		err := row.Scan(&w.ID, &w.Name, &w.Goal, &domain, &w.AgentID, &w.AgentName, &w.Confidence, &w.Rationale,
			&w.ExpectedTokens, &w.ExpectedDurationHours, &w.ExpectedBudgetUSD, &w.Position)
		w.Domain, w.Milestones = accountable.Domain(domain), []accountable.Milestone{}
		return w, err
	})
	if err != nil {
		return nil, err
	}
	index := map[string]*accountable.Workstream{}
	for i := range streams {
		index[streams[i].ID] = &streams[i]
	}
	rows, err = q.Query(ctx, `SELECT id, workstream_id, title, position FROM milestones
		WHERE workspace_id = $1 AND initiative_id = $2 ORDER BY workstream_id, position`, workspaceID, id)
	if err != nil {
		return nil, err
	}
	type msRow struct {
		m  accountable.Milestone
		ws string
	}
	ms, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (msRow, error) {
		var r msRow
		err := row.Scan(&r.m.ID, &r.ws, &r.m.Title, &r.m.Position)
		r.m.Tasks = []accountable.Task{}
		return r, err
	})
	if err != nil {
		return nil, err
	}
	rows, err = q.Query(ctx, `SELECT `+taskColumns+` FROM tasks WHERE workspace_id = $1 AND initiative_id = $2
		ORDER BY created_at, id`, workspaceID, id)
	if err != nil {
		return nil, err
	}
	tasks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (accountable.Task, error) { return scanTask(row) })
	if err != nil {
		return nil, err
	}
	byMilestone := map[string][]accountable.Task{}
	for _, t := range tasks {
		if t.MilestoneID != nil {
			byMilestone[*t.MilestoneID] = append(byMilestone[*t.MilestoneID], t)
		}
	}
	for _, r := range ms {
		if t := byMilestone[r.m.ID]; t != nil {
			r.m.Tasks = t
		}
		if w := index[r.ws]; w != nil {
			w.Milestones = append(w.Milestones, r.m)
		}
	}
	tree.Workstreams = streams
	return tree, nil
}

// ListInitiatives reads a page of the workspace's initiatives, newest first, by offset; it
// reads one more than limit to tell whether there are more.
func (db *DB) ListInitiatives(ctx context.Context, workspaceID string, limit, offset int) ([]accountable.Initiative, bool, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+initiativeColumns+` FROM initiatives WHERE workspace_id = $1
		ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, workspaceID, limit+1, offset)
	if err != nil {
		return nil, false, mapError(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (accountable.Initiative, error) { return scanInitiative(row) })
	if err != nil {
		return nil, false, mapError(err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}
