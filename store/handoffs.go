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
	"github.com/accountablework/accountable/payload"
)

// Ledger verification compares these aggregates' rows with their chains (aggregateTables).
func init() {
	verifiesAggregateTable(accountable.AggregateHandoff, `SELECT id::text, aggregate_version FROM handoffs WHERE workspace_id = $1`)
}

func queueHandoff(tx *tx, h accountable.Handoff, insert bool) error {
	doc, err := json.Marshal(h)
	if err != nil {
		return err
	}
	var due any
	if h.DueAt != nil {
		due = *h.DueAt
	}
	if insert {
		tx.Queue(`INSERT INTO handoffs (workspace_id, id, status, due_at, created_at, aggregate_version, doc) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			h.WorkspaceID, h.ID, string(h.Status), due, h.CreatedAt, h.AggregateVersion, string(doc))
		return nil
	}
	tx.Queue(`UPDATE handoffs SET status = $3, aggregate_version = $4, doc = $5 WHERE workspace_id = $1 AND id = $2`,
		h.WorkspaceID, h.ID, string(h.Status), h.AggregateVersion, string(doc))
	return nil
}

func scanHandoff(row pgx.Row) (accountable.Handoff, error) {
	return scanDoc[accountable.Handoff](row, "handoff")
}

// CreateHandoff records a proposed handoff with its handoff.proposed event; a handoff that
// comes due also sends the message that starts its SLA timer (HandoffSLAStart), in the
// same transaction, so none lacks its timer.
func (db *DB) CreateHandoff(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.CreateHandoff) (accountable.Handoff, bool, error) {
	cmd := commandOf[accountable.Handoff](p, idem, in.Causation)
	cmd.blind = true
	cmd.run = func(ctx context.Context, tx *tx) (accountable.Handoff, error) {
		now := accountable.TimeOf(tx.Now())
		h := accountable.Handoff{SchemaVersion: accountable.SchemaVersion, ID: uuid.Must(uuid.NewV7()).String(), WorkspaceID: p.WorkspaceID,
			HandoffKey: in.HandoffKey, FromStageKey: in.FromStageKey, ToStageKey: in.ToStageKey, Title: in.Title,
			Priority: accountable.DefaultHandoffPriority, CurrentActor: p.Actor(), ProofRequirements: in.ProofRequirements,
			Result: accountable.Object("{}"), Status: accountable.HandoffProposed, AggregateVersion: 1, CreatedAt: now, UpdatedAt: now,
			SourceProcessRef: normalizeUUID(in.SourceProcessRef), SourceRevisionRef: normalizeUUID(in.SourceRevisionRef)}
		if in.Summary != nil {
			h.Summary = *in.Summary
		}
		if in.Priority != nil {
			h.Priority = *in.Priority
		}
		if h.ProofRequirements == nil {
			h.ProofRequirements = []accountable.ProofRequirement{}
		}
		h.DueAt, h.SLAMinutes = in.Schedule(now.Time)
		if _, err := tx.Append(aggregate(accountable.AggregateHandoff, h.ID), accountable.EventHandoffProposed, payload.HandoffProposed(h)); err != nil {
			return h, err
		}
		if err := queueHandoff(tx, h, true); err != nil {
			return h, err
		}
		if h.HasSLA() {
			msg, err := tx.Messages().HandoffSLAStart(h)
			if err != nil {
				return h, err
			}
			tx.Send(msg)
		}
		return h, nil
	}
	return runCommand(ctx, db, cmd)
}

// ActOnHandoff claims, fulfils, returns, escalates or cancels a handoff (at the expected
// version when given). A fulfilment needs a claimed handoff and every required proof kind
// in its result (409 invalid_state_transition naming the missing kinds otherwise). A
// handoff that ends (fulfilled or cancelled) tells its SLA timer (HandoffClosed), in the
// same transaction: the timer then escalates nothing.
func (db *DB) ActOnHandoff(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.ActOnHandoff) (accountable.Handoff, bool, error) {
	ref := aggregate(accountable.AggregateHandoff, in.HandoffID)
	cmd := commandOf[accountable.Handoff](p, idem, in.Causation)
	cmd.locks = []aggregateRef{ref}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.Handoff, error) {
		h, err := scanHandoff(tx.QueryRow(ctx, `SELECT doc::text FROM handoffs WHERE workspace_id = $1 AND id = $2`, p.WorkspaceID, in.HandoffID))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return h, accountable.NotFound("handoff")
		case err != nil:
			return h, err
		case in.ExpectedAggregateVersion != nil && *in.ExpectedAggregateVersion != h.AggregateVersion:
			return h, accountable.Errorf(accountable.ECodeVersionConflict, "Handoff %s is at version %d, not %d.", h.ID, h.AggregateVersion,
				*in.ExpectedAggregateVersion).WithDetails(map[string]any{"current_aggregate_version": h.AggregateVersion})
		}
		to, err := in.Action.Apply(h.Status)
		if err != nil {
			return h, err
		}
		change := payload.HandoffChanged{HandoffID: h.ID, Action: in.Action, From: h.Status, To: to, Reason: in.Reason,
			CommandID: in.Causation.CommandID}
		switch in.Action {
		case accountable.HandoffClaim:
			h.CurrentActor = p.Actor()
		case accountable.HandoffFulfill:
			proofs, err := in.AllProofs()
			if err != nil {
				return h, accountable.ValidationError(accountable.Issue{Path: "/result/proofs", Message: err.Error()})
			}
			if missing := accountable.MissingProofs(h.ProofRequirements, proofs); len(missing) > 0 {
				return h, accountable.Errorf(accountable.ECodeInvalidStateTransition,
					"Handoff %s cannot be fulfilled without its required proof: %v (in result.proofs).", h.ID, missing).
					WithDetails(map[string]any{"missing_proof_kinds": missing})
			}
			result, err := in.FulfilmentResult()
			if err != nil {
				return h, err
			}
			if h.Result, err = canonical.Transform(result); err != nil {
				return h, err
			}
			change.Result = h.Result
		}
		h.Status, h.UpdatedAt = to, accountable.TimeOf(tx.Now())
		h.AggregateVersion++
		change.CurrentActor = h.CurrentActor
		if _, err := tx.Append(ref, in.Action.Event(), change); err != nil {
			return h, err
		}
		if err := queueHandoff(tx, h, false); err != nil {
			return h, err
		}
		if h.Status.Final() && h.HasSLA() {
			msg, err := tx.Messages().HandoffClosed(h)
			if err != nil {
				return h, err
			}
			tx.Send(msg)
		}
		return h, nil
	}
	return runCommand(ctx, db, cmd)
}

// BreachHandoffSLA is what a handoff's SLA timer does when the handoff comes due: unless
// it has ended (or was breached before: an activity retry), it records handoff.sla_breached,
// escalates the handoff and asks for an escalation decision, in one transaction. It returns
// the handoff as it is after.
func (db *DB) BreachHandoffSLA(ctx context.Context, workspaceID, handoffID string) (accountable.Handoff, error) {
	ref := aggregate(accountable.AggregateHandoff, handoffID)
	cmd := command[accountable.Handoff]{workspaceID: workspaceID, actor: worker, locks: []aggregateRef{ref}}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.Handoff, error) {
		var doc string
		var breached *accountable.Time
		if err := tx.QueryRow(ctx, `SELECT doc::text, sla_breached_at FROM handoffs WHERE workspace_id = $1 AND id = $2`,
			workspaceID, handoffID).Scan(&doc, &breached); err != nil {
			return accountable.Handoff{}, err
		}
		var h accountable.Handoff
		if err := decodeStored([]byte(doc), &h); err != nil {
			return h, fmt.Errorf("store: decode handoff: %w", err)
		}
		if h.Status.Final() || breached != nil || h.DueAt == nil {
			return h, nil
		}
		now := accountable.TimeOf(tx.Now())
		summary := fmt.Sprintf("Handoff %q (%s → %s) was due at %s and is %s.", h.Title, h.FromStageKey, h.ToStageKey,
			accountable.FormatTime(h.DueAt.Time), h.Status)
		context, err := json.Marshal(map[string]any{"handoff_id": h.ID, "handoff_key": h.HandoffKey, "due_at": h.DueAt,
			"status": h.Status, "priority": h.Priority})
		if err != nil {
			return h, err
		}
		d := accountable.Decision{ID: uuid.Must(uuid.NewV7()).String(), Title: "Escalated: an overdue handoff", Summary: &summary,
			Shape: accountable.ShapeEscalation, Urgency: accountable.UrgencyUrgent, Status: accountable.DecisionPending,
			Options: []accountable.DecisionOption{}, Context: accountable.Object(context), RequestedBy: worker,
			CreatedAt: now, UpdatedAt: now, AggregateVersion: 1}
		if err := proposeDecision(tx, workspaceID, d); err != nil {
			return h, err
		}
		h.Status, h.UpdatedAt = accountable.HandoffEscalated, now
		h.AggregateVersion++
		if _, err := tx.Append(ref, accountable.EventHandoffSLABreached, payload.HandoffSLABreached{HandoffID: h.ID,
			DueAt: *h.DueAt, DecisionID: d.ID, Status: h.Status}); err != nil {
			return h, err
		}
		if err := queueHandoff(tx, h, false); err != nil {
			return h, err
		}
		tx.Queue(`UPDATE handoffs SET sla_breached_at = $3 WHERE workspace_id = $1 AND id = $2`, workspaceID, h.ID, now)
		return h, nil
	}
	h, _, err := runCommand(ctx, db, cmd)
	return h, err
}

// GetHandoff reads a handoff of the workspace.
func (db *DB) GetHandoff(ctx context.Context, workspaceID, id string) (accountable.Handoff, error) {
	h, err := scanHandoff(db.pool.QueryRow(ctx, `SELECT doc::text FROM handoffs WHERE workspace_id = $1 AND id = $2`, workspaceID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return h, accountable.NotFound("handoff")
	}
	return h, mapError(err)
}

// ListHandoffs reads a page of the workspace's handoffs, newest first.
func (db *DB) ListHandoffs(ctx context.Context, workspaceID string, f accountable.HandoffFilter) ([]accountable.Handoff, *accountable.WorkCursor, error) {
	limit := pageLimit(f.Limit)
	afterAt, afterID := keysetAfter(f.After)
	rows, err := db.pool.Query(ctx, `SELECT doc::text FROM handoffs
		WHERE workspace_id = $1 AND ($2::text IS NULL OR status = $2)
		  AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4::uuid))
		ORDER BY created_at DESC, id DESC LIMIT $5`, workspaceID, optionalString(f.Status), afterAt, afterID, limit+1)
	if err != nil {
		return nil, nil, mapError(err)
	}
	return keysetPage(rows, limit, scanHandoff, func(h accountable.Handoff) (time.Time, string) { return h.CreatedAt.Time, h.ID })
}
