// Package ledgerlog makes each workspace's ledger a transparency log in the standard
// formats, so that anyone holding the log's public key can check it without trusting the
// service or its database:
//
//   - each event is a leaf (RFC 6962 / C2SP tlog-tiles hashing, golang.org/x/mod/sumdb/tlog),
//     in stream order; its entry is the canonical JSON of the event's header, the bytes
//     whose SHA-256 is the event's eventHash (and which commit to the payload through
//     payloadDigest);
//   - the log's state is a C2SP tlog-checkpoint (origin, tree size, root hash) signed as a
//     C2SP signed note with an Ed25519 key that lives outside the database;
//   - proofs are tlog's inclusion (record) and consistency (tree) proofs.
//
// The functions a client needs to check what the service hands out (Verify*) need only
// the public key. The package imports no part of the service beyond the domain types and
// canonical JSON.
package ledgerlog

import (
	"errors"
	"fmt"
	"strings"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// Entry is the log entry of an event: the canonical JSON of its header, whose SHA-256 is
// the event's eventHash.
func Entry(h accountable.EventHeader) ([]byte, error) {
	return canonical.JSON(h)
}

// LeafHash is the RFC 6962 leaf hash of an entry (tlog's record hash).
func LeafHash(entry []byte) tlog.Hash { return tlog.RecordHash(entry) }

// EventHashOf is the eventHash an entry stands for ("sha256:" and lower-case hex).
func EventHashOf(entry []byte) string { return canonical.Digest(entry) }

// Origin is the checkpoint origin of a workspace's log: the log name (a schema-less URL
// naming the service) and the workspace. Each workspace is a log of its own, so that a
// workspace's members can audit it without seeing another's entries.
func Origin(logName, workspaceID string) string {
	return strings.TrimSuffix(logName, "/") + "/workspaces/" + workspaceID
}

// ErrNotConsistent means two trees are not one history: the later one does not extend the
// earlier one (a fork, a rewrite or a truncation).
var ErrNotConsistent = errors.New("ledgerlog: the trees are not consistent")

// ErrNotIncluded means an inclusion proof does not prove the entry in the tree.
var ErrNotIncluded = errors.New("ledgerlog: the entry is not included in the tree")

// OpenCheckpoint checks a signed checkpoint's signature by the log's key (verifier) and
// its origin, and returns the checkpoint and the note (with any cosignatures it carries,
// as unverified signatures).
func OpenCheckpoint(signed []byte, origin string, log note.Verifier) (torchwood.Checkpoint, *note.Note, error) {
	n, err := note.Open(signed, note.VerifierList(log))
	if err != nil {
		return torchwood.Checkpoint{}, nil, fmt.Errorf("ledgerlog: the checkpoint is not signed by %s: %w", log.Name(), err)
	}
	cp, err := torchwood.ParseCheckpoint(n.Text)
	if err != nil {
		return torchwood.Checkpoint{}, nil, fmt.Errorf("ledgerlog: %w", err)
	}
	if origin != "" && cp.Origin != origin {
		return torchwood.Checkpoint{}, nil, fmt.Errorf("ledgerlog: the checkpoint is of log %q, not %q", cp.Origin, origin)
	}
	return cp, n, nil
}

// VerifyInclusion checks that entry is leaf index of tree.
func VerifyInclusion(tree tlog.Tree, index int64, entry []byte, proof tlog.RecordProof) error {
	if index < 0 || index >= tree.N {
		return fmt.Errorf("%w: leaf %d is outside a tree of size %d", ErrNotIncluded, index, tree.N)
	}
	if err := tlog.CheckRecord(proof, tree.N, tree.Hash, index, LeafHash(entry)); err != nil {
		return fmt.Errorf("%w: leaf %d in the tree of size %d: %v", ErrNotIncluded, index, tree.N, err)
	}
	return nil
}

// VerifyConsistency checks that later extends earlier (proof: the consistency proof from
// earlier's size to later's).
func VerifyConsistency(earlier, later tlog.Tree, proof tlog.TreeProof) error {
	switch {
	case later.N < earlier.N:
		return fmt.Errorf("%w: truncated: the tree of size %d is smaller than the earlier one of size %d", ErrNotConsistent, later.N, earlier.N)
	case earlier.N == 0: // every tree extends the empty one
		return nil
	case later.N == earlier.N:
		if later.Hash != earlier.Hash {
			return fmt.Errorf("%w: a fork: two different trees of size %d", ErrNotConsistent, later.N)
		}
		return nil
	}
	if err := tlog.CheckTree(proof, later.N, later.Hash, earlier.N, earlier.Hash); err != nil {
		return fmt.Errorf("%w: the tree of size %d does not extend the one of size %d: %v", ErrNotConsistent, later.N, earlier.N, err)
	}
	return nil
}
