package ledgerlog

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// ErrReceiptNotProved means a receipt has no ledger proof yet (it was read before a
// checkpoint held its event): read it again.
var ErrReceiptNotProved = errors.New("ledgerlog: the receipt carries no ledger proof yet")

// receiptDocument is what GET /work/{taskId}/receipt answers (its data), as far as a
// check reads it.
type receiptDocument struct {
	Receipt     json.RawMessage `json:"receipt"`  // a completion's
	Document    json.RawMessage `json:"document"` // an import's
	EventID     string          `json:"event_id"`
	EventHash   string          `json:"event_hash"`
	Payload     json.RawMessage `json:"payload"`
	LedgerProof *struct {
		EventID    string   `json:"eventId"`
		LeafIndex  int64    `json:"leafIndex"`
		Entry      string   `json:"entry"`
		Proof      []string `json:"proof"`
		Checkpoint string   `json:"checkpoint"`
	} `json:"ledger_proof"`
}

// CheckReceipt checks a receipt as the service handed it out (the data, or the whole
// answer, of GET /work/{taskId}/receipt for a completion, GET
// /agent-work-receipts/{receiptId} for an import), offline: its proof holds the event's
// entry in a checkpoint signed by the log's key for the auditor's origin, the entry hashes
// to the receipt's event_hash, the canonical JSON of the payload has the digest the entry
// names, and the payload holds this very receipt (a completion's) or the digest of this
// very document (an import's). It returns the checkpoint's tree (to check
// for consistency with a newer one, CheckConsistency) and the event's header.
func (a *Auditor) CheckReceipt(doc []byte) (tlog.Tree, accountable.EventHeader, error) {
	var r receiptDocument
	var wrapped struct {
		Data *receiptDocument `json:"data"`
	}
	if err := json.Unmarshal(doc, &wrapped); err == nil && wrapped.Data != nil {
		r = *wrapped.Data
	} else if err := json.Unmarshal(doc, &r); err != nil {
		return tlog.Tree{}, accountable.EventHeader{}, fmt.Errorf("ledgerlog: the receipt is not JSON: %w", err)
	}
	var header accountable.EventHeader
	if r.LedgerProof == nil {
		return tlog.Tree{}, header, ErrReceiptNotProved
	}
	p := r.LedgerProof
	proof := make(tlog.RecordProof, len(p.Proof))
	for i, h := range p.Proof {
		b, err := base64.StdEncoding.DecodeString(h)
		if err != nil || len(b) != tlog.HashSize {
			return tlog.Tree{}, header, fmt.Errorf("%w: proof hash %d is not a base64 hash", ErrNotIncluded, i)
		}
		proof[i] = tlog.Hash(b)
	}
	tree, err := a.CheckInclusion(Inclusion{Entry: []byte(p.Entry), Index: p.LeafIndex, Checkpoint: []byte(p.Checkpoint),
		Proof: proof, EventHash: r.EventHash})
	if err != nil {
		return tlog.Tree{}, header, err
	}
	if err := json.Unmarshal([]byte(p.Entry), &header); err != nil {
		return tlog.Tree{}, header, fmt.Errorf("ledgerlog: the entry is not an event header: %w", err)
	}
	if header.ID != r.EventID || p.EventID != r.EventID {
		return tlog.Tree{}, header, fmt.Errorf("ledgerlog: the proof is of event %s, the receipt's is %s", header.ID, r.EventID)
	}
	canon, err := canonical.Transform(r.Payload)
	if err != nil || canonical.Digest(canon) != header.PayloadDigest {
		return tlog.Tree{}, header, fmt.Errorf("ledgerlog: the receipt's payload is not the one event %s recorded (its digest is not %s)",
			header.ID, header.PayloadDigest)
	}
	var payload struct {
		Receipt        json.RawMessage `json:"receipt"`
		DocumentDigest string          `json:"document_digest"`
	}
	if err := json.Unmarshal(r.Payload, &payload); err != nil {
		return tlog.Tree{}, header, fmt.Errorf("ledgerlog: the receipt's payload: %w", err)
	}
	switch {
	case r.Receipt != nil:
		if !sameJSON(payload.Receipt, r.Receipt) {
			return tlog.Tree{}, header, fmt.Errorf("ledgerlog: the receipt is not the one event %s recorded", header.ID)
		}
	case r.Document != nil:
		doc, err := canonical.Transform(r.Document)
		if err != nil || payload.DocumentDigest == "" || canonical.Digest(doc) != payload.DocumentDigest {
			return tlog.Tree{}, header, fmt.Errorf("ledgerlog: the document is not the one event %s recorded (its digest is not %s)",
				header.ID, payload.DocumentDigest)
		}
	default:
		return tlog.Tree{}, header, errors.New("ledgerlog: neither a completion's receipt nor an imported document")
	}
	return tree, header, nil
}

// sameJSON reports whether two JSON texts are the same value (their canonical forms).
func sameJSON(a, b []byte) bool {
	ca, err1 := canonical.Transform(a)
	cb, err2 := canonical.Transform(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}
