package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/payload"
)

// Ledger verification compares these aggregates' rows with their chains (aggregateTables).
func init() {
	verifiesAggregateTable(accountable.AggregateDecision, `SELECT id::text, aggregate_version FROM decisions WHERE workspace_id = $1`)
}

const decisionColumns = `id, title, summary, shape, urgency, status, options::text, selected_option, initiative_id, launch_id,
	job_id, context::text, due_at, requested_by_type, requested_by_id, decided_by_type, decided_by_id, decided_at, note,
	created_at, updated_at, aggregate_version`

func scanDecision(row pgx.Row) (accountable.Decision, error) {
	var d accountable.Decision
	var shape, urgency, status, options, context, reqType string
	var decType, decID *string
	if err := row.Scan(&d.ID, &d.Title, &d.Summary, &shape, &urgency, &status, &options, &d.SelectedOption, &d.InitiativeID,
		&d.LaunchID, &d.JobID, &context, &d.DueAt, &reqType, &d.RequestedBy.ID, &decType, &decID, &d.DecidedAt, &d.Note,
		&d.CreatedAt, &d.UpdatedAt, &d.AggregateVersion); err != nil {
		return d, err
	}
	d.Shape, d.Urgency, d.Status = accountable.DecisionShape(shape), accountable.DecisionUrgency(urgency), accountable.DecisionStatus(status)
	d.RequestedBy.Type, d.Context = accountable.ActorType(reqType), accountable.Object(context)
	if decType != nil && decID != nil {
		d.DecidedBy = &accountable.Actor{Type: accountable.ActorType(*decType), ID: *decID}
	}
	if err := decodeStored([]byte(options), &d.Options); err != nil {
		return d, fmt.Errorf("store: decode decision options: %w", err)
	}
	return d, nil
}

// CreateDecision records a pending decision with its decision.proposed event.
func (db *DB) CreateDecision(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency,
	in accountable.CreateDecision) (accountable.DecisionEnvelope, bool, error) {
	cmd := commandOf[accountable.DecisionEnvelope](p, idem, in.Causation)
	cmd.blind = true
	cmd.run = func(ctx context.Context, tx *tx) (accountable.DecisionEnvelope, error) {
		now := accountable.TimeOf(tx.Now())
		d := accountable.Decision{
			ID: uuid.Must(uuid.NewV7()).String(), Title: in.Title, Summary: in.Summary, Shape: accountable.ShapeGeneric,
			Urgency: accountable.UrgencyStandard, Status: accountable.DecisionPending, Options: in.Options,
			InitiativeID: normalizeUUID(in.InitiativeID), Context: in.Context, DueAt: in.DueAt, RequestedBy: p.Actor(),
			CreatedAt: now, UpdatedAt: now, AggregateVersion: 1,
		}
		if in.Shape != nil {
			d.Shape = *in.Shape
		}
		if in.Urgency != nil {
			d.Urgency = *in.Urgency
		}
		if d.Options == nil {
			d.Options = []accountable.DecisionOption{}
		}
		if len(d.Context) == 0 {
			d.Context = accountable.Object("{}")
		}
		if err := proposeDecision(tx, p.WorkspaceID, d); err != nil {
			return accountable.DecisionEnvelope{}, err
		}
		return accountable.DecisionEnvelope{Decision: d}, nil
	}
	return runCommand(ctx, db, cmd)
}

// proposeDecision writes a new pending decision with its decision.proposed event (the
// decision is the event's payload).
func proposeDecision(tx *tx, workspaceID string, d accountable.Decision) error {
	if _, err := tx.Append(aggregate(accountable.AggregateDecision, d.ID), accountable.EventDecisionProposed, payload.DecisionProposed(d)); err != nil {
		return err
	}
	options, err := json.Marshal(d.Options)
	if err != nil {
		return err
	}
	tx.Queue(`INSERT INTO decisions (workspace_id, id, title, summary, shape, urgency, status, options, initiative_id, launch_id,
			job_id, context, due_at, requested_by_type, requested_by_id, created_at, updated_at, aggregate_version)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $16, 1)`,
		workspaceID, d.ID, d.Title, d.Summary, string(d.Shape), string(d.Urgency), string(d.Status), string(options),
		d.InitiativeID, d.LaunchID, d.JobID, string(d.Context), d.DueAt, string(d.RequestedBy.Type), d.RequestedBy.ID, d.CreatedAt)
	return nil
}

// DecideDecision approves or declines a pending decision, once: any other status is 409
// invalid_state_transition; an expected_aggregate_version that is not the current one is
// 409 version_conflict; an option_select decision is approved with one of its options.
//
// A decision that blocks a launch job reaches its launch: its signal (DecisionDecided) is
// sent once the decision has committed.
func (db *DB) DecideDecision(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency,
	in accountable.DecideDecision, to accountable.DecisionStatus) (accountable.DecisionEnvelope, bool, error) {
	ref := aggregate(accountable.AggregateDecision, in.DecisionID)
	cmd := commandOf[accountable.DecisionEnvelope](p, idem, in.Causation)
	cmd.locks = []aggregateRef{ref}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.DecisionEnvelope, error) {
		d, err := scanDecision(tx.QueryRow(ctx, `SELECT `+decisionColumns+` FROM decisions WHERE workspace_id = $1 AND id = $2`,
			p.WorkspaceID, in.DecisionID))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return accountable.DecisionEnvelope{}, accountable.NotFound("decision")
		case err != nil:
			return accountable.DecisionEnvelope{}, err
		case in.ExpectedAggregateVersion != nil && *in.ExpectedAggregateVersion != d.AggregateVersion:
			return accountable.DecisionEnvelope{}, accountable.Errorf(accountable.ECodeVersionConflict,
				"Decision %s is at version %d, not %d.", d.ID, d.AggregateVersion, *in.ExpectedAggregateVersion).
				WithDetails(map[string]any{"current_aggregate_version": d.AggregateVersion})
		case d.Status != accountable.DecisionPending:
			return accountable.DecisionEnvelope{}, accountable.Errorf(accountable.ECodeInvalidStateTransition,
				"Decision %s is %s: only a pending decision is approved or declined.", d.ID, d.Status)
		}
		if to == accountable.DecisionApproved && d.Shape == accountable.ShapeOptionSelect {
			if in.OptionID == nil || !slices.ContainsFunc(d.Options, func(o accountable.DecisionOption) bool { return o.ID == *in.OptionID }) {
				return accountable.DecisionEnvelope{}, accountable.ValidationError(accountable.Issue{Path: "/option_id",
					Message: "must be the id of one of the decision's options"})
			}
			d.SelectedOption = in.OptionID
		} else if in.OptionID != nil {
			return accountable.DecisionEnvelope{}, accountable.ValidationError(accountable.Issue{Path: "/option_id",
				Message: "is given only to approve an option_select decision"})
		}
		now := accountable.TimeOf(tx.Now())
		actor := p.Actor()
		d.Status, d.DecidedBy, d.DecidedAt, d.Note, d.UpdatedAt = to, &actor, &now, in.Note, now
		d.AggregateVersion++
		event := accountable.EventDecisionApproved
		if to == accountable.DecisionDeclined {
			event = accountable.EventDecisionDeclined
		}
		if _, err := tx.Append(ref, event, payload.DecisionDecided{DecisionID: d.ID, Status: to, SelectedOption: d.SelectedOption,
			Note: in.Note, CommandID: in.Causation.CommandID}); err != nil {
			return accountable.DecisionEnvelope{}, err
		}
		tx.Queue(`UPDATE decisions SET status = $3, selected_option = $4, decided_by_type = $5, decided_by_id = $6,
				decided_at = $7, note = $8, updated_at = $7, aggregate_version = $9
			WHERE workspace_id = $1 AND id = $2`,
			p.WorkspaceID, d.ID, string(to), d.SelectedOption, string(actor.Type), actor.ID, now, d.Note, d.AggregateVersion)
		if d.LaunchID != nil && d.JobID != nil {
			msg, err := tx.Messages().DecisionDecided(p.WorkspaceID, *d.LaunchID, accountable.DecisionDecided{DecisionID: d.ID, JobID: *d.JobID, Status: to})
			if err != nil {
				return accountable.DecisionEnvelope{}, err
			}
			tx.Send(msg)
		}
		return accountable.DecisionEnvelope{Decision: d}, nil
	}
	return runCommand(ctx, db, cmd)
}

// GetDecision reads a decision of the workspace.
func (db *DB) GetDecision(ctx context.Context, workspaceID, id string) (accountable.Decision, error) {
	d, err := scanDecision(db.pool.QueryRow(ctx, `SELECT `+decisionColumns+` FROM decisions WHERE workspace_id = $1 AND id = $2`,
		workspaceID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return d, accountable.NotFound("decision")
	}
	return d, mapError(err)
}

// ListDecisions reads a page of the workspace's decisions, newest first.
func (db *DB) ListDecisions(ctx context.Context, workspaceID string, f accountable.DecisionFilter) ([]accountable.Decision, *accountable.WorkCursor, error) {
	limit := pageLimit(f.Limit)
	afterAt, afterID := keysetAfter(f.After)
	rows, err := db.pool.Query(ctx, `SELECT `+decisionColumns+` FROM decisions
		WHERE workspace_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::uuid IS NULL OR initiative_id = $3)
		  AND ($4::timestamptz IS NULL OR (created_at, id) < ($4, $5::uuid))
		ORDER BY created_at DESC, id DESC LIMIT $6`, workspaceID, optionalString(f.Status), f.InitiativeID, afterAt, afterID, limit+1)
	if err != nil {
		return nil, nil, mapError(err)
	}
	return keysetPage(rows, limit, scanDecision, func(d accountable.Decision) (time.Time, string) { return d.CreatedAt.Time, d.ID })
}
