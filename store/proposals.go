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
	"github.com/accountablework/accountable/payload"
)

// Ledger verification compares these aggregates' rows with their chains (aggregateTables).
func init() {
	verifiesAggregateTable(accountable.AggregateInitiativeProposal, `SELECT id::text, aggregate_version FROM initiative_proposals WHERE workspace_id = $1`)
}

// Proposal generation is limited per workspace, across every API replica: at most a
// number of requests in any minute (the caller's; the specification says 6).
const generationWindow = time.Minute

// ClaimProposalGeneration claims the request's idempotency key (nil: none) for a
// generation run by workflowID and admits it under the workspace's rate limit (429
// rate_limited with the wait when the last minute holds perMinute requests).
// A replay or an attachment costs no slot.
func (db *DB) ClaimProposalGeneration(ctx context.Context, workspaceID string, idem *accountable.Idempotency,
	workflowID string, perMinute int) (accountable.ProposalClaim, error) {
	var out accountable.ProposalClaim
	claim, err := claimWorkflowOperation[accountable.InitiativeProposal](ctx, db, workspaceID, idem, workflowID,
		func(ctx context.Context, tx pgx.Tx, now time.Time) error {
			slot, err := admitGeneration(ctx, tx, workspaceID, now, perMinute)
			out.Slot = slot
			return err
		})
	if err != nil {
		return accountable.ProposalClaim{}, err
	}
	out.Replay, out.Attach = claim.replay, claim.attach
	if out.Replay != nil || out.Attach != nil {
		out.Slot = ""
	}
	return out, nil
}

// admitGeneration takes a rate slot of the workspace, under a per-workspace lock so that
// replicas count together.
func admitGeneration(ctx context.Context, tx pgx.Tx, workspaceID string, now time.Time, perMinute int) (string, error) {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1::text || '/proposal-generation-rate', 0))`,
		workspaceID); err != nil {
		return "", err
	}
	since := now.Add(-generationWindow)
	if _, err := tx.Exec(ctx, `DELETE FROM generation_requests WHERE workspace_id = $1 AND requested_at <= $2`,
		workspaceID, since); err != nil {
		return "", err
	}
	var n int
	var oldest *time.Time
	if err := tx.QueryRow(ctx, `SELECT count(*), min(requested_at) FROM generation_requests WHERE workspace_id = $1`,
		workspaceID).Scan(&n, &oldest); err != nil {
		return "", err
	}
	if n >= perMinute && oldest != nil {
		wait := oldest.Add(generationWindow).Sub(now)
		return "", &accountable.Error{Code: accountable.ECodeRateLimited, RetryAfter: max(wait, time.Second),
			Message: fmt.Sprintf("At most %d proposal generations a minute per workspace; retry after error.retryAfter seconds.", perMinute)}
	}
	slot := uuid.Must(uuid.NewV7()).String()
	_, err := tx.Exec(ctx, `INSERT INTO generation_requests (workspace_id, id, requested_at) VALUES ($1, $2, $3)`, workspaceID, slot, now)
	return slot, err
}

// ReleaseProposalGeneration gives back what a claim took when its generation did not
// start (Temporal refused it, or another generation of the workspace was running) or ended
// without a proposal: the pending record, so a retry starts afresh, and (when given) the
// rate slot, which a generation that never started should not cost. runID is the run
// whose claim is released ("" for a start that failed; see releaseWorkflowOperation).
func (db *DB) ReleaseProposalGeneration(ctx context.Context, workspaceID string, idem *accountable.Idempotency, runID, slot string) error {
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if err := releaseWorkflowOperation(ctx, tx, workspaceID, idem, runID); err != nil {
			return err
		}
		if slot == "" {
			return nil
		}
		_, err := tx.Exec(ctx, `DELETE FROM generation_requests WHERE workspace_id = $1 AND id = $2`, workspaceID, slot)
		return err
	})
	return mapError(err)
}

// StoreProposal stores a generated proposal with its ledger event and completes the
// request's pending idempotency record with it, in one transaction. It is idempotent: a
// retry after success returns the stored proposal (by its record, or by its id).
func (db *DB) StoreProposal(ctx context.Context, workspaceID string, actor accountable.Actor, idem *accountable.Idempotency,
	causation accountable.Causation, p accountable.InitiativeProposal, title string) (accountable.InitiativeProposal, error) {
	cmd := command[accountable.InitiativeProposal]{workspaceID: workspaceID, actor: actor, idempotency: idem, causation: causation,
		completesPending: true}
	ref := aggregate(accountable.AggregateInitiativeProposal, p.ProposalID)
	cmd.locks = []aggregateRef{ref}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.InitiativeProposal, error) {
		if _, exists := tx.Head(ref); exists {
			return scanProposal(tx.QueryRow(ctx, `SELECT `+proposalColumns+` FROM initiative_proposals WHERE workspace_id = $1 AND id = $2`,
				workspaceID, p.ProposalID))
		}
		plan, err := json.Marshal(p.Plan)
		if err != nil {
			return p, err
		}
		economics, err := json.Marshal(p.Economics)
		if err != nil {
			return p, err
		}
		receipt, err := json.Marshal(p.GenerationReceipt)
		if err != nil {
			return p, err
		}
		if _, err := tx.Append(ref, accountable.EventProposalGenerated, payload.ProposalGenerated{
			ProposalID: p.ProposalID, ProposalDigest: p.ProposalDigest, Title: title, AssignmentSource: p.AssignmentSource,
			Workstreams: len(p.Plan.Workstreams), ExpiresAt: p.ExpiresAt, CommandID: causation.CommandID,
			Economics: &p.Economics, GenerationReceipt: &p.GenerationReceipt,
		}); err != nil {
			return p, err
		}
		tx.Queue(`INSERT INTO initiative_proposals (workspace_id, id, digest, status, expires_at, plan, assignment_source,
				economics, generation_receipt, request_title, created_at, aggregate_version)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 1)`,
			workspaceID, p.ProposalID, p.ProposalDigest, string(p.Status), p.ExpiresAt, string(plan), string(p.AssignmentSource),
			string(economics), string(receipt), title, tx.Now())
		return p, nil
	}
	res, _, err := runCommand(ctx, db, cmd)
	return res, err
}

const proposalColumns = `id, digest, status, expires_at, plan, assignment_source, economics, generation_receipt`

func scanProposal(row pgx.Row) (accountable.InitiativeProposal, error) {
	var p accountable.InitiativeProposal
	var status, source string
	var plan, economics, receipt []byte
	if err := row.Scan(&p.ProposalID, &p.ProposalDigest, &status, &p.ExpiresAt, &plan, &source, &economics, &receipt); err != nil {
		return p, err
	}
	p.Status, p.AssignmentSource = accountable.ProposalStatus(status), accountable.AssignmentSource(source)
	for _, f := range []struct {
		raw []byte
		dst any
	}{{plan, &p.Plan}, {economics, &p.Economics}, {receipt, &p.GenerationReceipt}} {
		if err := decodeStored(f.raw, f.dst); err != nil {
			return p, fmt.Errorf("store: decode a stored proposal: %w", err)
		}
	}
	return p, nil
}

// GetProposal reads a proposal of the workspace; a proposed one past its expiry reads as
// expired.
func (db *DB) GetProposal(ctx context.Context, workspaceID, id string) (accountable.InitiativeProposal, error) {
	p, err := scanProposal(db.pool.QueryRow(ctx, `SELECT `+proposalColumns+` FROM initiative_proposals
		WHERE workspace_id = $1 AND id = $2`, workspaceID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return p, accountable.NotFound("proposal")
	}
	if err != nil {
		return p, mapError(err)
	}
	p.Status = p.StatusAt(time.Now())
	return p, nil
}
