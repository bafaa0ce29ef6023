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
	verifiesAggregateTable(accountable.AggregateProcess, `SELECT id::text, aggregate_version FROM operating_processes WHERE workspace_id = $1`)
}

func ledgerResult(ev accountable.Event) accountable.ProcessLedgerResult {
	return accountable.ProcessLedgerResult{EventID: ev.ID, AggregateVersion: ev.AggregateVersion, EventHash: ev.EventHash,
		PayloadDigest: ev.PayloadDigest}
}

// newRevision makes revision number n of process in the workspace, by author.
func newRevision(workspaceID, processID string, n int64, author accountable.Actor, content accountable.RevisionContent) (accountable.ProcessSpecRevision, error) {
	digest, err := canonical.DigestOf(content)
	if err != nil {
		return accountable.ProcessSpecRevision{}, err
	}
	return accountable.ProcessSpecRevision{SchemaVersion: accountable.SchemaVersion, ID: uuid.Must(uuid.NewV7()).String(),
		ProcessID: processID, WorkspaceID: workspaceID, RevisionNumber: n, ContentDigest: digest, AuthoredBy: author,
		RevisionContent: content}, nil
}

// createProcess writes a new process with its first revision and its creation event.
func createProcess(tx *tx, workspaceID string, proc accountable.OperatingProcess, rev accountable.ProcessSpecRevision, event string,
	created payload.ProcessCreated) (accountable.ProcessChanged, error) {
	proc.CurrentRevisionRef = &accountable.ProcessRef{ID: rev.ID, WorkspaceID: workspaceID}
	created.Process, created.Revision = proc, rev
	ev, err := tx.Append(aggregate(accountable.AggregateProcess, proc.ID), event, created)
	if err != nil {
		return accountable.ProcessChanged{}, err
	}
	if err := queueProcess(tx, proc, 1, true); err != nil {
		return accountable.ProcessChanged{}, err
	}
	if err := queueRevision(tx, rev); err != nil {
		return accountable.ProcessChanged{}, err
	}
	return accountable.ProcessChanged{Process: proc, Revision: rev, AggregateVersion: 1, Ledger: ledgerResult(ev)}, nil
}

// ProposeDiscoveredProcess turns a candidate of a finished discovery run into a process in
// state discovered (provenance observed, the candidate's confidence) with revision 1 of its
// stages and an operating_process.discovered event citing the run. A candidate of another
// run or workspace is a 404; a candidate proposed before is 409 invalid_state_transition
// naming its process.
func (db *DB) ProposeDiscoveredProcess(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency,
	in accountable.ProposeDiscoveredProcess) (accountable.DiscoveredProcessProposal, bool, error) {
	runRef := aggregate(accountable.AggregateDiscoveryRun, in.RunID)
	cmd := commandOf[accountable.DiscoveredProcessProposal](p, idem, accountable.Causation{})
	cmd.locks = []aggregateRef{runRef} // proposals of one run, one at a time
	cmd.run = func(ctx context.Context, tx *tx) (accountable.DiscoveredProcessProposal, error) {
		var zero accountable.DiscoveredProcessProposal
		var cards string
		err := tx.QueryRow(ctx, `SELECT cards::text FROM discovery_runs WHERE workspace_id = $1 AND id = $2`, p.WorkspaceID, in.RunID).Scan(&cards)
		if errors.Is(err, pgx.ErrNoRows) {
			return zero, accountable.NotFound("discovery run")
		}
		if err != nil {
			return zero, err
		}
		var list []accountable.ProcessCard
		if err := decodeStored([]byte(cards), &list); err != nil {
			return zero, fmt.Errorf("store: decode discovery candidates: %w", err)
		}
		var card *accountable.ProcessCard
		for i := range list {
			if list[i].ID == in.ProcessCandidateID {
				card = &list[i]
			}
		}
		if card == nil {
			return zero, accountable.NotFound("process candidate")
		}
		var existing string
		err = tx.QueryRow(ctx, `SELECT id::text FROM operating_processes WHERE workspace_id = $1 AND discovery_candidate_id = $2`,
			p.WorkspaceID, card.ID).Scan(&existing)
		if err == nil {
			return zero, accountable.Errorf(accountable.ECodeInvalidStateTransition, "Candidate %s was proposed before, as operating process %s.",
				card.ID, existing).WithDetails(map[string]any{"process_id": existing})
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return zero, err
		}
		now := accountable.TimeOf(tx.Now())
		proc := accountable.OperatingProcess{SchemaVersion: accountable.SchemaVersion, ID: uuid.Must(uuid.NewV7()).String(),
			WorkspaceID: p.WorkspaceID, Name: card.Name, Purpose: card.Purpose, ValueRecipientRefs: []accountable.ProcessRef{},
			LifecycleState: accountable.ProcessDiscovered, ProvenanceMode: accountable.ProvenanceObserved, Confidence: card.Confidence,
			Tags: []string{"discovered"}, CreatedAt: now, UpdatedAt: now}
		stages := make([]accountable.ProcessStage, len(card.Stages))
		for i, s := range card.Stages {
			stages[i] = accountable.ProcessStage{Key: s.Key, Name: s.Name}
		}
		provenance, err := json.Marshal(map[string]any{"discoveryRunId": in.RunID, "processCandidateId": card.ID, "support": card.Support,
			"technique": accountable.DiscoveryTechnique, "citations": card.Citations})
		if err != nil {
			return zero, err
		}
		content := accountable.RevisionContent{Stages: stages, Limitations: card.Limitations}
		if content.Provenance, err = canonical.Transform(provenance); err != nil {
			return zero, err
		}
		rev, err := newRevision(p.WorkspaceID, proc.ID, 1, p.Actor(), content)
		if err != nil {
			return zero, err
		}
		change, err := createProcess(tx, p.WorkspaceID, proc, rev, accountable.EventProcessDiscovered,
			payload.ProcessCreated{DiscoveryRunID: &in.RunID, ProcessCandidate: &card.ID})
		if err != nil {
			return zero, err
		}
		tx.Queue(`UPDATE operating_processes SET discovery_run_id = $3, discovery_candidate_id = $4 WHERE workspace_id = $1 AND id = $2`,
			p.WorkspaceID, proc.ID, in.RunID, card.ID)
		return accountable.DiscoveredProcessProposal{Process: change.Process, Revision: change.Revision, DiscoveryRunID: in.RunID,
			ProcessCandidateID: card.ID, Ledger: change.Ledger}, nil
	}
	return runCommand(ctx, db, cmd)
}

func queueProcess(tx *tx, proc accountable.OperatingProcess, version int64, insert bool) error {
	doc, err := json.Marshal(proc)
	if err != nil {
		return err
	}
	if insert {
		tx.Queue(`INSERT INTO operating_processes (workspace_id, id, lifecycle_state, provenance_mode, created_at, aggregate_version, doc)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, proc.WorkspaceID, proc.ID, string(proc.LifecycleState), string(proc.ProvenanceMode),
			proc.CreatedAt, version, string(doc))
		return nil
	}
	tx.Queue(`UPDATE operating_processes SET lifecycle_state = $3, aggregate_version = $4, doc = $5 WHERE workspace_id = $1 AND id = $2`,
		proc.WorkspaceID, proc.ID, string(proc.LifecycleState), version, string(doc))
	return nil
}

func queueRevision(tx *tx, rev accountable.ProcessSpecRevision) error {
	doc, err := json.Marshal(rev)
	if err != nil {
		return err
	}
	tx.Queue(`INSERT INTO process_revisions (workspace_id, id, process_id, revision_number, doc) VALUES ($1, $2, $3, $4, $5)`,
		rev.WorkspaceID, rev.ID, rev.ProcessID, rev.RevisionNumber, string(doc))
	return nil
}

// DeclareProcess records a process people declare: state proposed, provenance declared,
// revision 1 of the given content, with its operating_process.declared event.
func (db *DB) DeclareProcess(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency,
	in accountable.DeclareProcess) (accountable.ProcessChanged, bool, error) {
	cmd := commandOf[accountable.ProcessChanged](p, idem, in.Causation)
	cmd.blind = true
	cmd.run = func(ctx context.Context, tx *tx) (accountable.ProcessChanged, error) {
		now := accountable.TimeOf(tx.Now())
		proc := accountable.OperatingProcess{SchemaVersion: accountable.SchemaVersion, ID: uuid.Must(uuid.NewV7()).String(),
			WorkspaceID: p.WorkspaceID, Name: in.Name, Purpose: in.Purpose, ValueRecipientRefs: accountable.Refs(p.WorkspaceID, in.ValueRecipientRefs),
			LifecycleState: accountable.ProcessProposed, ProvenanceMode: accountable.ProvenanceDeclared, Confidence: 1,
			Tags: in.Tags, CreatedAt: now, UpdatedAt: now}
		if in.DomainRef != nil {
			proc.DomainRef = &accountable.ProcessRef{ID: in.DomainRef.ID, WorkspaceID: p.WorkspaceID}
		}
		if in.Confidence != nil {
			proc.Confidence = *in.Confidence
		}
		if proc.Tags == nil {
			proc.Tags = []string{}
		}
		rev, err := newRevision(p.WorkspaceID, proc.ID, 1, p.Actor(), in.RevisionInput.Content(p.WorkspaceID))
		if err != nil {
			return accountable.ProcessChanged{}, err
		}
		return createProcess(tx, p.WorkspaceID, proc, rev, accountable.EventProcessDeclared,
			payload.ProcessCreated{CommandID: in.Causation.CommandID})
	}
	return runCommand(ctx, db, cmd)
}

// lockedProcess reads a process in a command that locked its head; expected, when given,
// must be its aggregate version (409 version_conflict otherwise).
func lockedProcess(ctx context.Context, tx *tx, workspaceID, id string, expected *int64) (accountable.OperatingProcess, int64, error) {
	proc, version, err := scanProcess(tx.QueryRow(ctx, `SELECT doc::text, aggregate_version FROM operating_processes WHERE workspace_id = $1 AND id = $2`,
		workspaceID, id))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return proc, 0, accountable.NotFound("operating process")
	case err != nil:
		return proc, 0, err
	case expected != nil && *expected != version:
		return proc, version, accountable.ProcessVersionConflict(id, version, *expected)
	}
	return proc, version, nil
}

func scanProcess(row pgx.Row) (accountable.OperatingProcess, int64, error) {
	var doc string
	var version int64
	var proc accountable.OperatingProcess
	if err := row.Scan(&doc, &version); err != nil {
		return proc, 0, err
	}
	if err := decodeStored([]byte(doc), &proc); err != nil {
		return proc, 0, fmt.Errorf("store: decode operating process: %w", err)
	}
	return proc, version, nil
}

func scanRevision(row pgx.Row) (accountable.ProcessSpecRevision, error) {
	return scanDoc[accountable.ProcessSpecRevision](row, "process revision")
}

func currentRevision(ctx context.Context, q querier, proc accountable.OperatingProcess) (accountable.ProcessSpecRevision, error) {
	if proc.CurrentRevisionRef == nil {
		return accountable.ProcessSpecRevision{}, fmt.Errorf("store: operating process %s has no current revision", proc.ID)
	}
	return scanRevision(q.QueryRow(ctx, `SELECT doc::text FROM process_revisions WHERE workspace_id = $1 AND id = $2`,
		proc.WorkspaceID, proc.CurrentRevisionRef.ID))
}

// ReviseProcess adds the next revision of a process, which becomes its current one, with
// an operating_process.revised event. A retired process is not revised.
func (db *DB) ReviseProcess(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency,
	in accountable.ReviseProcess) (accountable.ProcessChanged, bool, error) {
	ref := aggregate(accountable.AggregateProcess, in.ProcessID)
	cmd := commandOf[accountable.ProcessChanged](p, idem, in.Causation)
	cmd.locks = []aggregateRef{ref}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.ProcessChanged, error) {
		proc, version, err := lockedProcess(ctx, tx, p.WorkspaceID, in.ProcessID, in.ExpectedAggregateVersion)
		if err != nil {
			return accountable.ProcessChanged{}, err
		}
		if proc.LifecycleState == accountable.ProcessRetired {
			return accountable.ProcessChanged{}, accountable.Errorf(accountable.ECodeInvalidStateTransition,
				"Operating process %s is retired: it takes no new revisions.", proc.ID)
		}
		var last int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(revision_number), 0) FROM process_revisions WHERE workspace_id = $1 AND process_id = $2`,
			p.WorkspaceID, proc.ID).Scan(&last); err != nil {
			return accountable.ProcessChanged{}, err
		}
		rev, err := newRevision(p.WorkspaceID, proc.ID, last+1, p.Actor(), in.RevisionInput.Content(p.WorkspaceID))
		if err != nil {
			return accountable.ProcessChanged{}, err
		}
		ev, err := tx.Append(ref, accountable.EventProcessRevised, payload.ProcessRevised{ProcessID: proc.ID, Revision: rev,
			CommandID: in.Causation.CommandID})
		if err != nil {
			return accountable.ProcessChanged{}, err
		}
		proc.CurrentRevisionRef = &accountable.ProcessRef{ID: rev.ID, WorkspaceID: p.WorkspaceID}
		proc.UpdatedAt = accountable.TimeOf(tx.Now())
		version++
		if err := queueProcess(tx, proc, version, false); err != nil {
			return accountable.ProcessChanged{}, err
		}
		if err := queueRevision(tx, rev); err != nil {
			return accountable.ProcessChanged{}, err
		}
		return accountable.ProcessChanged{Process: proc, Revision: rev, AggregateVersion: version, Ledger: ledgerResult(ev)}, nil
	}
	return runCommand(ctx, db, cmd)
}

// TransitionProcess moves a process through its lifecycle at the expected version, with
// the transition's event; a transition its state does not allow is 409
// invalid_state_transition.
func (db *DB) TransitionProcess(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency,
	in accountable.TransitionProcess) (accountable.ProcessChanged, bool, error) {
	ref := aggregate(accountable.AggregateProcess, in.ProcessID)
	cmd := commandOf[accountable.ProcessChanged](p, idem, in.Causation)
	cmd.locks = []aggregateRef{ref}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.ProcessChanged, error) {
		proc, version, err := lockedProcess(ctx, tx, p.WorkspaceID, in.ProcessID, &in.ExpectedAggregateVersion)
		if err != nil {
			return accountable.ProcessChanged{}, err
		}
		to, err := in.Action.Apply(proc.LifecycleState)
		if err != nil {
			return accountable.ProcessChanged{}, err
		}
		rev, err := currentRevision(ctx, tx, proc)
		if err != nil {
			return accountable.ProcessChanged{}, err
		}
		ev, err := tx.Append(ref, in.Action.Event(), payload.ProcessTransitioned{ProcessID: proc.ID, Action: in.Action,
			From: proc.LifecycleState, To: to, Reason: in.Reason, CommandID: in.Causation.CommandID})
		if err != nil {
			return accountable.ProcessChanged{}, err
		}
		proc.LifecycleState, proc.UpdatedAt = to, accountable.TimeOf(tx.Now())
		version++
		if err := queueProcess(tx, proc, version, false); err != nil {
			return accountable.ProcessChanged{}, err
		}
		return accountable.ProcessChanged{Process: proc, Revision: rev, AggregateVersion: version, Ledger: ledgerResult(ev)}, nil
	}
	return runCommand(ctx, db, cmd)
}

// GetProcess reads a process of the workspace with every revision, oldest first.
func (db *DB) GetProcess(ctx context.Context, workspaceID, id string) (accountable.ProcessDetail, error) {
	var d accountable.ProcessDetail
	err := db.snapshot(ctx, func(q pgx.Tx) error {
		var err error
		d, err = getProcess(ctx, q, workspaceID, id)
		return err
	})
	return d, err
}

func getProcess(ctx context.Context, q pgx.Tx, workspaceID, id string) (accountable.ProcessDetail, error) {
	proc, version, err := scanProcess(q.QueryRow(ctx, `SELECT doc::text, aggregate_version FROM operating_processes
		WHERE workspace_id = $1 AND id = $2`, workspaceID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return accountable.ProcessDetail{}, accountable.NotFound("operating process")
	}
	if err != nil {
		return accountable.ProcessDetail{}, mapError(err)
	}
	rows, err := q.Query(ctx, `SELECT doc::text FROM process_revisions WHERE workspace_id = $1 AND process_id = $2
		ORDER BY revision_number`, workspaceID, id)
	if err != nil {
		return accountable.ProcessDetail{}, mapError(err)
	}
	revs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (accountable.ProcessSpecRevision, error) { return scanRevision(row) })
	if err != nil {
		return accountable.ProcessDetail{}, mapError(err)
	}
	return accountable.ProcessDetail{Process: proc, Revisions: revs, AggregateVersion: version}, nil
}

// ListProcesses reads a page of the workspace's processes, newest first.
func (db *DB) ListProcesses(ctx context.Context, workspaceID string, f accountable.ProcessFilter) ([]accountable.OperatingProcess, *accountable.WorkCursor, error) {
	limit := pageLimit(f.Limit)
	afterAt, afterID := keysetAfter(f.After)
	rows, err := db.pool.Query(ctx, `SELECT doc::text, aggregate_version FROM operating_processes
		WHERE workspace_id = $1 AND ($2::text IS NULL OR lifecycle_state = $2) AND ($3::text IS NULL OR provenance_mode = $3)
		  AND ($4::timestamptz IS NULL OR (created_at, id) < ($4, $5::uuid))
		ORDER BY created_at DESC, id DESC LIMIT $6`, workspaceID, optionalString(f.LifecycleState), optionalString(f.ProvenanceMode),
		afterAt, afterID, limit+1)
	if err != nil {
		return nil, nil, mapError(err)
	}
	scan := func(row pgx.Row) (accountable.OperatingProcess, error) {
		proc, _, err := scanProcess(row)
		return proc, err
	}
	return keysetPage(rows, limit, scan, func(p accountable.OperatingProcess) (time.Time, string) { return p.CreatedAt.Time, p.ID })
}
