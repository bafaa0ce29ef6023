package store_test

import (
	"context"
	"errors"
	"fmt"
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
	// Before the log has a leaf, no tree of it can be proved, even one whose proof reads
	// no stored hash.
	if _, err := db.ProveLedgerInclusion(ctx, f.p.WorkspaceID, 0, 1); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("a proof in the one-leaf tree of an empty log: %v", err)
	}
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
	if _, err := db.ProveLedgerConsistency(ctx, f.p.WorkspaceID, 3, tree.N+1); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("a consistency proof to a tree the log has not reached: %v", err)
	}
	if _, err := db.LedgerLogTile(ctx, f.p.WorkspaceID, tlog.Tile{H: 8, L: 0, N: 0, W: int(tree.N)}, tree.N+1); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("a tile of a tree the log has not reached: %v", err)
	}
}

// TestLedgerLeafAndCheckpointsReadTogether: the reads an inclusion or consistency proof
// starts from, each in one round trip, say what they found: the leaf (not_found for an
// event that is none of the log's), and each checkpoint asked for, the newest or one of a
// size, with its cosignatures in the witnesses' order; one that is not there is of size 0.
func TestLedgerLeafAndCheckpointsReadTogether(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	f := newLedgerFixture(t, db)
	ws := f.p.WorkspaceID
	if cps, err := db.LedgerCheckpointsAt(ctx, ws, -1, 3); err != nil || len(cps) != 2 || cps[0].TreeSize != 0 || cps[1].TreeSize != 0 {
		t.Fatalf("the checkpoints of a log never signed: %+v, %v", cps, err)
	}
	tree := integrateAll(t, db, ws, fixtureEvents)
	small, err := db.LedgerLogTreeAt(ctx, ws, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range []tlog.Tree{small, tree} {
		if err := db.SaveLedgerCheckpoint(ctx, ws, tr, []byte(fmt.Sprintf("note of %d\n\n— log sig\n", tr.N))); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []string{"witness.b", "witness.a"} {
		if err := db.SaveLedgerCosignature(ctx, ws, tree.N, w, "— "+w+" sig\n"); err != nil {
			t.Fatal(err)
		}
	}
	want := func(c accountable.LedgerCheckpoint, tr tlog.Tree, cosignatures ...string) {
		t.Helper()
		if c.TreeSize != tr.N || string(c.RootHash) != string(tr.Hash[:]) || c.SignedNote != fmt.Sprintf("note of %d\n\n— log sig\n", tr.N) ||
			c.SignedAt == (accountable.Time{}) || fmt.Sprint(c.Cosignatures) != fmt.Sprint(cosignatures) {
			t.Fatalf("checkpoint %+v, want the tree %d with the cosignatures %q", c, tr.N, cosignatures)
		}
	}
	cps, err := db.LedgerCheckpointsAt(ctx, ws, -1, 3, 4)
	if err != nil || len(cps) != 3 {
		t.Fatalf("%+v, %v", cps, err)
	}
	want(cps[0], tree, "— witness.a sig\n", "— witness.b sig\n")
	want(cps[1], small)
	if cps[2].TreeSize != 0 {
		t.Fatalf("a size never signed: %+v", cps[2])
	}
	if c, err := db.LedgerCheckpointAt(ctx, ws, 4); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("LedgerCheckpointAt a size never signed: %+v, %v", c, err)
	}
	for i, e := range f.events {
		entry, err := ledgerlog.Entry(e.EventHeader)
		if err != nil {
			t.Fatal(err)
		}
		leaf, c, err := db.LedgerLeafIn(ctx, ws, e.ID, -1)
		if err != nil || leaf.Index != int64(i) || string(leaf.Entry) != string(entry) {
			t.Fatalf("event %d: leaf %d %s, %v", i, leaf.Index, leaf.Entry, err)
		}
		want(c, tree, "— witness.a sig\n", "— witness.b sig\n")
		if _, c, err = db.LedgerLeafIn(ctx, ws, e.ID, 3); err != nil {
			t.Fatal(err)
		}
		want(c, small)
		if _, c, err = db.LedgerLeafIn(ctx, ws, e.ID, 4); err != nil || c.TreeSize != 0 {
			t.Fatalf("event %d in a size never signed: %+v, %v", i, c, err)
		}
	}
	if _, _, err := db.LedgerLeafIn(ctx, ws, "0190c0de-0000-7000-8000-000000000001", -1); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("an event that is none of the log's: %v", err)
	}
	other := newLedgerFixture(t, db)
	if _, _, err := db.LedgerLeafIn(ctx, other.p.WorkspaceID, f.events[0].ID, -1); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("another workspace's event: %v", err)
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
