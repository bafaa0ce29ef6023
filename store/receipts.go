package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/receipt"
)

// Ledger verification compares these aggregates' rows with their chains (aggregateTables).
func init() {
	verifiesAggregateTable(accountable.AggregateReceipt, `SELECT id::text, aggregate_version FROM agent_work_receipts WHERE workspace_id = $1`)
}

// importedReceipt is a receipt the workspace has imported under an external receipt_id.
type importedReceipt struct {
	id, digest string
	importedAt accountable.Time
}

// findImportedReceipt reads the import of the external receipt_id, if there is one.
func findImportedReceipt(ctx context.Context, q querier, workspaceID, externalID string) (importedReceipt, bool, error) {
	var r importedReceipt
	err := q.QueryRow(ctx, `SELECT id::text, document_digest, imported_at FROM agent_work_receipts
		WHERE workspace_id = $1 AND external_receipt_id = $2`, workspaceID, externalID).Scan(&r.id, &r.digest, &r.importedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, false, nil
	}
	return r, err == nil, err
}

// answerExisting answers an import whose receipt_id the workspace has imported before:
// that import (idempotent, with its imported_at) when it was the same document, else 409
// idempotency_key_reused (a receipt_id names one document; an amended receipt takes a new
// receipt_id).
func answerExisting(in receipt.ImportReceipt, r importedReceipt) (receipt.ReceiptImport, error) {
	if r.digest != in.Digest {
		return receipt.ReceiptImport{}, accountable.Errorf(accountable.ECodeIdempotencyKeyReused,
			"A different document with receipt_id %q was imported into this workspace before (as receipt %s); a receipt_id names "+
				"one document: issue the amended receipt under a new receipt_id.", in.Receipt.ReceiptID, r.id).
			WithDetails(map[string]any{"external_receipt_id": in.Receipt.ReceiptID, "receipt_id": r.id})
	}
	return receipt.ReceiptImport{OK: true, ReceiptID: r.id, ExternalReceiptID: in.Receipt.ReceiptID,
		SchemaVersion: in.Receipt.SchemaVersion, Idempotent: true, ImportedAt: r.importedAt}, nil
}

// ImportReceipt imports a valid receipt into the principal's workspace as producer-reported
// claims: the document (canonical JSON) with the columns lists and projections read, and
// its receipt.imported event, in one transaction. A receipt_id the workspace has imported
// before is not imported again: the same document answers that import (idempotent, a
// replay: nothing is written), another document 409 idempotency_key_reused. That is
// looked up before the command, so that a replay writes nothing (not even an idempotency
// record under a new key), and again inside it: two first imports racing meet at the
// receipt_id's unique constraint, whose violation runCommand retries, and the retry finds
// the winner.
func (db *DB) ImportReceipt(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency,
	in receipt.ImportReceipt) (receipt.ReceiptImport, bool, error) {
	r := in.Receipt
	if found, ok, err := findImportedReceipt(ctx, db.pool, p.WorkspaceID, r.ReceiptID); err != nil {
		return receipt.ReceiptImport{}, false, mapError(err)
	} else if ok {
		res, err := answerExisting(in, found)
		return res, err == nil, err
	}
	cmd := commandOf[receipt.ReceiptImport](p, idem, accountable.Causation{})
	cmd.run = func(ctx context.Context, tx *tx) (receipt.ReceiptImport, error) {
		if found, ok, err := findImportedReceipt(ctx, tx, p.WorkspaceID, r.ReceiptID); err != nil || ok {
			if err != nil {
				return receipt.ReceiptImport{}, err
			}
			return answerExisting(in, found)
		}
		id := uuid.Must(uuid.NewV7()).String()
		payload := in.Imported(id)
		if _, err := tx.Append(aggregate(accountable.AggregateReceipt, id), accountable.EventReceiptImported, payload); err != nil {
			return receipt.ReceiptImport{}, err
		}
		var runtime *string
		if r.Actor.Runtime != nil {
			runtime = &r.Actor.Runtime.Name
		}
		ts := payload.Timestamps
		tx.Queue(`INSERT INTO agent_work_receipts (workspace_id, id, external_receipt_id, schema_version, document_digest, actor_type,
				actor_id, runtime, outcome_status, verification_status, content_hash_state, cost_currency, cost_total, started_at,
				completed_at, issued_at, imported_at, aggregate_version, document)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, 1, $18)`,
			p.WorkspaceID, id, r.ReceiptID, r.SchemaVersion, in.Digest, r.Actor.Type, r.Actor.ID, runtime, r.Outcome.Status,
			r.Verification.Status, string(in.Integrity.ContentHash.State), r.Cost.Currency, r.Cost.Total, ts.StartedAt, ts.CompletedAt,
			ts.IssuedAt, tx.Now(), string(in.Document))
		return receipt.ReceiptImport{OK: true, ReceiptID: id, ExternalReceiptID: r.ReceiptID, SchemaVersion: r.SchemaVersion,
			ImportedAt: accountable.TimeOf(tx.Now())}, nil
	}
	return runCommand(ctx, db, cmd)
}

// ImportedReceipt reads an imported receipt with the receipt.imported event that recorded
// it (not_found for an id the workspace has not imported).
func (db *DB) ImportedReceipt(ctx context.Context, workspaceID, id string) (receipt.ImportedReceipt, error) {
	var r receipt.ImportedReceipt
	var doc, payload string
	var imported time.Time
	err := db.pool.QueryRow(ctx, `SELECT r.id::text, r.external_receipt_id, r.schema_version, r.imported_at, r.document::text,
			e.id::text, e.event_hash, e.payload::text
		FROM agent_work_receipts r JOIN ledger_events e ON e.workspace_id = r.workspace_id
			AND e.aggregate_type = $3 AND e.aggregate_id = r.id::text AND e.aggregate_version = 1
		WHERE r.workspace_id = $1 AND r.id = $2`, workspaceID, id, accountable.AggregateReceipt).Scan(
		&r.ReceiptID, &r.ExternalReceiptID, &r.SchemaVersion, &imported, &doc, &r.EventID, &r.EventHash, &payload)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, accountable.Errorf(accountable.ECodeNotFound, "No imported receipt has this id in the workspace.")
	}
	if err != nil {
		return r, mapError(err)
	}
	r.ImportedAt, r.Document, r.Payload = accountable.TimeOf(imported), accountable.Object(doc), accountable.Object(payload)
	return r, nil
}
