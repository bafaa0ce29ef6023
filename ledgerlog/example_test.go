package ledgerlog_test

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/ledgerlog"
)

// memoryLog stands in for the service in the examples: a workspace's log kept in memory
// (its stored hashes, as the database keeps them), which proves what it holds.
type memoryLog struct {
	hashes []tlog.Hash
	n      int64
}

func (m *memoryLog) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		out[i] = m.hashes[x]
	}
	return out, nil
}

func (m *memoryLog) append(entry []byte) {
	hs, err := tlog.StoredHashes(m.n, entry, m)
	if err != nil {
		panic(err)
	}
	m.hashes, m.n = append(m.hashes, hs...), m.n+1
}

func (m *memoryLog) tree() tlog.Tree {
	h, err := tlog.TreeHash(m.n, m)
	if err != nil {
		panic(err)
	}
	return tlog.Tree{N: m.n, Hash: h}
}

const workspaceID = "0190f7b4-5d1e-7c3a-9a4e-3f1d2c5b6a70"

// entryOf is the log entry of the workspace's i-th event (a task created, or rewritten).
func entryOf(i int, title string) []byte {
	at := accountable.TimeOf(time.Date(2026, 1, 2, 3, 4, i, 0, time.UTC))
	entry, err := ledgerlog.Entry(accountable.EventHeader{
		ID: fmt.Sprintf("0190f7b4-5d1e-7c3a-9a4e-%012d", i), WorkspaceID: workspaceID,
		AggregateType: "task", AggregateID: fmt.Sprintf("0190f7b4-0000-7000-8000-%012d", i), AggregateVersion: 1,
		EventType: "work.created", SchemaVersion: accountable.SchemaVersion, ActorType: accountable.ActorHuman, ActorID: "ada",
		PayloadDigest: ledgerlog.EventHashOf([]byte(title)), OccurredAt: at, RecordedAt: at,
	})
	if err != nil {
		panic(err)
	}
	return entry
}

// A client keeps the newest checkpoint it has checked; shown a newer one, it asks for the
// consistency proof from the kept one's size. A history rewritten after it kept its
// checkpoint fails the check even when signed with the log's own key.
func ExampleAuditor_CheckConsistency() {
	// The service: its key, and the workspace's log of three events.
	skey, _ := ledgerlog.GenerateKey("accountable.example")
	key, _ := ledgerlog.ParseKey(skey)
	origin := ledgerlog.Origin(key.Name(), workspaceID)
	log := &memoryLog{}
	for i := range 3 {
		log.append(entryOf(i, "task"))
	}
	kept, _ := key.SignCheckpoint(origin, log.tree())

	// The client: the log's public key and the workspace's origin are all it needs.
	auditor, err := ledgerlog.NewAuditor(key.VerifierKey, origin)
	if err != nil {
		panic(err)
	}

	// Two more events, a new checkpoint and the proof from size 3.
	log.append(entryOf(3, "task"))
	log.append(entryOf(4, "task"))
	newer, _ := key.SignCheckpoint(origin, log.tree())
	proof, _ := tlog.ProveTree(5, 3, log)
	tree, err := auditor.CheckConsistency(kept, newer, proof)
	fmt.Println("grown to", tree.N, err)

	// The same size of history with event 1 rewritten, signed with the same key.
	forged := &memoryLog{}
	for i := range 5 {
		title := "task"
		if i == 1 {
			title = "rewritten"
		}
		forged.append(entryOf(i, title))
	}
	rewritten, _ := key.SignCheckpoint(origin, forged.tree())
	proof, _ = tlog.ProveTree(5, 3, forged)
	_, err = auditor.CheckConsistency(kept, rewritten, proof)
	fmt.Println(errors.Is(err, ledgerlog.ErrNotConsistent))

	// Shown the older, shorter tree as the newest: a truncation.
	_, err = auditor.CheckConsistency(newer, kept, nil)
	fmt.Println(err)
	// Output:
	// grown to 5 <nil>
	// true
	// ledgerlog: the trees are not consistent: truncated: the tree of size 3 is smaller than the earlier one of size 5
}

// A receipt names an event (its eventHash); the service proves it in the log with the
// event's entry, its leaf index, a signed checkpoint and an inclusion proof.
func ExampleAuditor_CheckInclusion() {
	skey, _ := ledgerlog.GenerateKey("accountable.example")
	key, _ := ledgerlog.ParseKey(skey)
	origin := ledgerlog.Origin(key.Name(), workspaceID)
	log := &memoryLog{}
	for i := range 4 {
		log.append(entryOf(i, "task"))
	}
	checkpoint, _ := key.SignCheckpoint(origin, log.tree())
	proof, _ := tlog.ProveRecord(4, 2, log)
	receiptHash := ledgerlog.EventHashOf(entryOf(2, "task")) // what the receipt says

	auditor, err := ledgerlog.NewAuditor(key.VerifierKey, origin)
	if err != nil {
		panic(err)
	}
	tree, err := auditor.CheckInclusion(ledgerlog.Inclusion{
		Entry: entryOf(2, "task"), Index: 2, Checkpoint: checkpoint, Proof: proof, EventHash: receiptHash})
	fmt.Println("in the tree of size", tree.N, err)

	// The entry of another event does not stand for the receipt's, whatever its proof.
	other, _ := tlog.ProveRecord(4, 3, log)
	_, err = auditor.CheckInclusion(ledgerlog.Inclusion{
		Entry: entryOf(3, "task"), Index: 3, Checkpoint: checkpoint, Proof: other, EventHash: receiptHash})
	fmt.Println(errors.Is(err, ledgerlog.ErrNotIncluded))
	// Output:
	// in the tree of size 4 <nil>
	// true
}
