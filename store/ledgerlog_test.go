package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/ledgerlog"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// integrateAll integrates the workspace's log until it has want leaves (the stream holds
// back events behind transactions still running anywhere on the server).
func integrateAll(t *testing.T, db *store.DB, workspaceID string, want int64) tlog.Tree {
	t.Helper()
	ctx := context.Background()
	var tree tlog.Tree
	storetest.WaitFor(t, 20*time.Second, "the log to integrate the stream", func() bool {
		if _, err := db.IntegrateLedgerLog(ctx, workspaceID, 2); err != nil {
			t.Fatalf("IntegrateLedgerLog: %v", err)
		}
		var err error
		if tree, err = db.LedgerLogTree(ctx, workspaceID); err != nil {
			t.Fatalf("LedgerLogTree: %v", err)
		}
		return tree.N >= want
	})
	return tree
}

// memoryTree is the tree of the given entries computed in memory, from nothing but them.
type memoryTree []tlog.Hash

func (m memoryTree) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		out[i] = m[x]
	}
	return out, nil
}

func memoryTreeOf(t *testing.T, entries [][]byte) (memoryTree, tlog.Tree) {
	t.Helper()
	var m memoryTree
	for i, e := range entries {
		hs, err := tlog.StoredHashes(int64(i), e, m)
		if err != nil {
			t.Fatal(err)
		}
		m = append(m, hs...)
	}
	h, err := tlog.TreeHash(int64(len(entries)), m)
	if err != nil {
		t.Fatal(err)
	}
	return m, tlog.Tree{N: int64(len(entries)), Hash: h}
}

// TestLedgerLogIsTheStreamAsAMerkleTree: the log's leaves are the stream's events in
// order (their entries hash to their eventHash), its root is the one computed from the
// entries alone, integrating in batches of two gives the same tree as in one, and its
// proofs check.
func TestLedgerLogIsTheStreamAsAMerkleTree(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	f := newLedgerFixture(t, db)
	tree := integrateAll(t, db, f.p.WorkspaceID, fixtureEvents)
	if tree.N != fixtureEvents {
		t.Fatalf("tree size %d, want %d", tree.N, fixtureEvents)
	}
	var entries [][]byte
	for _, e := range f.events {
		entry, err := ledgerlog.Entry(e.EventHeader)
		if err != nil {
			t.Fatal(err)
		}
		if ledgerlog.EventHashOf(entry) != e.EventHash {
			t.Fatalf("the entry of %s hashes to %s, its eventHash is %s", e.ID, ledgerlog.EventHashOf(entry), e.EventHash)
		}
		entries = append(entries, entry)
	}
	_, want := memoryTreeOf(t, entries)
	if tree != want {
		t.Fatalf("the log's tree is %v, the entries' %v", tree, want)
	}
	got, err := db.LedgerLogEntries(ctx, f.p.WorkspaceID, 0, tree.N)
	if err != nil {
		t.Fatal(err)
	}
	for i := range entries {
		if string(got[i]) != string(entries[i]) {
			t.Fatalf("entry %d is %s, want %s", i, got[i], entries[i])
		}
	}
	for i, e := range f.events {
		leaf, err := db.LedgerLeafOf(ctx, f.p.WorkspaceID, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if leaf.Index != int64(i) {
			t.Fatalf("event %d is leaf %d", i, leaf.Index)
		}
		proof, err := db.ProveLedgerInclusion(ctx, f.p.WorkspaceID, leaf.Index, tree.N)
		if err != nil {
			t.Fatal(err)
		}
		if err := ledgerlog.VerifyInclusion(tree, leaf.Index, leaf.Entry, proof); err != nil {
			t.Fatal(err)
		}
		if err := ledgerlog.VerifyInclusion(tree, leaf.Index, []byte("another entry"), proof); !errors.Is(err, ledgerlog.ErrNotIncluded) {
			t.Fatalf("a wrong entry: %v", err)
		}
	}
	_, small := memoryTreeOf(t, entries[:3])
	proof, err := db.ProveLedgerConsistency(ctx, f.p.WorkspaceID, 3, tree.N)
	if err != nil {
		t.Fatal(err)
	}
	if err := ledgerlog.VerifyConsistency(small, tree, proof); err != nil {
		t.Fatal(err)
	}
	forked := small
	forked.Hash[0] ^= 1
	if err := ledgerlog.VerifyConsistency(forked, tree, proof); !errors.Is(err, ledgerlog.ErrNotConsistent) {
		t.Fatalf("a fork: %v", err)
	}
	if n, err := db.IntegrateLedgerLog(ctx, f.p.WorkspaceID, 100); err != nil || n != 0 {
		t.Fatalf("integrating again: %d, %v", n, err)
	}
	if _, err := db.ProveLedgerInclusion(ctx, f.p.WorkspaceID, 0, tree.N+1); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("a proof in a tree the log has not reached: %v", err)
	}
}

// TestLedgerLogRefusesABrokenEvent: an event changed after it was written never becomes a
// leaf; the integrator says which.
func TestLedgerLogRefusesABrokenEvent(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	f := newLedgerFixture(t, db)
	execOne(t, tamperConn(t), `UPDATE ledger_events SET payload = jsonb_set(payload, '{title}', '"rewritten"')
		WHERE workspace_id = $1 AND id = $2`, f.p.WorkspaceID, f.created.ID)
	var broken *accountable.LedgerLogBrokenError
	storetest.WaitFor(t, 20*time.Second, "the integrator to reach the rewritten event", func() bool {
		_, err := db.IntegrateLedgerLog(ctx, f.p.WorkspaceID, 100)
		return errors.As(err, &broken)
	})
	if broken.EventID != f.created.ID {
		t.Fatalf("the integrator refused %s, want %s", broken.EventID, f.created.ID)
	}
	tree, err := db.LedgerLogTree(ctx, f.p.WorkspaceID)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range f.events {
		if e.ID == f.created.ID && tree.N > int64(i) {
			t.Fatalf("the tree has %d leaves, the rewritten event is %d", tree.N, i)
		}
	}
}
