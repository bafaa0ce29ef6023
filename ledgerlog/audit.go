package ledgerlog

import (
	"encoding/json"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Auditor checks, for a client, what the service hands out about one workspace's log,
// with nothing but the log's public key and the workspace's origin: it trusts neither the
// service nor its database. It does no I/O; whoever fetches the checkpoints and proofs
// (over HTTP, from a file) hands them to it.
//
// A client keeps the newest signed checkpoint it has checked and, shown a newer one,
// asks for the consistency proof from the kept one's size and calls CheckConsistency: a
// history rewritten, truncated or forked after the client saw it fails there, even when
// whoever rewrote it holds the signing key. What no single client can see alone, two
// clients shown two different histories that each extend consistently, takes comparing
// checkpoints (witnesses).
type Auditor struct {
	origin string
	log    note.Verifier
}

// NewAuditor returns the auditor of the log origin (Origin(logName, workspaceID)) signed
// by the key verifierKey (a signed-note verifier key, "<name>+<hash>+<base64>", as the
// service publishes it).
func NewAuditor(verifierKey, origin string) (*Auditor, error) {
	if origin == "" {
		// Every workspace's log is signed by the same key: without its origin a checkpoint
		// of one workspace would pass for another's.
		return nil, errors.New("ledgerlog: an auditor needs the log's origin")
	}
	v, err := note.NewVerifier(verifierKey)
	if err != nil {
		return nil, fmt.Errorf("ledgerlog: the log's public key: %w", err)
	}
	return &Auditor{origin: origin, log: v}, nil
}

// Open checks a signed checkpoint (the log's signature and origin) and returns its tree.
func (a *Auditor) Open(signed []byte) (tlog.Tree, error) {
	cp, _, err := OpenCheckpoint(signed, a.origin, a.log)
	if err != nil {
		return tlog.Tree{}, err
	}
	return cp.Tree, nil
}

// CheckConsistency checks that the signed checkpoint later is the same history as kept,
// one the client checked before, grown or not: both signed by the log's key for its
// origin, and proof (the consistency proof from kept's size to later's) showing that
// later's tree extends kept's. It returns later's tree, the one to keep next.
//
// A later tree that does not extend the kept one (a rewrite, or one branch of a fork), a
// different tree of the same size (a fork) and a smaller one (a truncation, or a rollback
// to an older state) are errors wrapping ErrNotConsistent that name both sizes. A bad
// signature or origin is an error that does not: it proves nothing about the log.
func (a *Auditor) CheckConsistency(kept, later []byte, proof tlog.TreeProof) (tlog.Tree, error) {
	earlier, err := a.Open(kept)
	if err != nil {
		return tlog.Tree{}, fmt.Errorf("the checkpoint kept: %w", err)
	}
	tree, err := a.Open(later)
	if err != nil {
		return tlog.Tree{}, fmt.Errorf("the newer checkpoint: %w", err)
	}
	if err := VerifyConsistency(earlier, tree, proof); err != nil {
		return tlog.Tree{}, err
	}
	return tree, nil
}

// Inclusion is what proves that an event is in a workspace's log, as a receipt carries
// it: the event's entry (Entry of its header), its leaf index, a signed checkpoint and the
// inclusion proof of the leaf in that checkpoint's tree.
type Inclusion struct {
	Entry      []byte
	Index      int64
	Checkpoint []byte
	Proof      tlog.RecordProof
	// EventHash is the eventHash the client holds for the event (a receipt's, a command's
	// answer), "" when it holds none: the entry must hash to it, or the proof would be of
	// another event.
	EventHash string
}

// CheckInclusion checks that in.Entry is leaf in.Index of the tree of the signed
// checkpoint in.Checkpoint (its signature and origin checked) and, when in.EventHash is
// set, that it is the entry of that event. It returns the checkpoint's tree (to check for
// consistency with the one the client keeps). Failures wrap ErrNotIncluded (a bad
// checkpoint excepted) and name the leaf and the event.
func (a *Auditor) CheckInclusion(in Inclusion) (tlog.Tree, error) {
	tree, err := a.Open(in.Checkpoint)
	if err != nil {
		return tlog.Tree{}, err
	}
	got := EventHashOf(in.Entry)
	if in.EventHash != "" && got != in.EventHash {
		return tlog.Tree{}, fmt.Errorf("%w: leaf %d (%s) hashes to %s, not the eventHash %s",
			ErrNotIncluded, in.Index, eventOf(in.Entry), got, in.EventHash)
	}
	if err := VerifyInclusion(tree, in.Index, in.Entry, in.Proof); err != nil {
		return tlog.Tree{}, fmt.Errorf("%s (eventHash %s): %w", eventOf(in.Entry), got, err)
	}
	return tree, nil
}

// eventOf names the event of an entry in errors: its id as the entry says (the entry is
// not trusted, but a message naming it helps whoever looks into the failure).
func eventOf(entry []byte) string {
	var h struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(entry, &h) != nil || h.ID == "" {
		return "an entry that is not an event header"
	}
	return "event " + h.ID
}
