package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/ledgerlog"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/worker"
)

// The ledger's transparency log against the owner of the database (issue 27): whoever
// can connect as the schema's owner can turn the append-only triggers off and rewrite
// anything the database holds, events, hashes, anchors and the tree alike; ledger
// verification (VerifyLedger) then checks a history that agrees with itself. What it
// cannot rewrite is a checkpoint the sealer signed with a key the database never holds,
// once the sealer or a client has it: these tests hold the sealer's refusals and the
// clients' checks (ledgerlog.Auditor) to every such rewrite.

const testLogName = "accountable.test"

// fixtureEvents is how many events newLogFixture writes: the tenant's, three tasks
// created and two of them completed.
const fixtureEvents = storetest.TenantEvents + 5

// sealerMetrics is the sealer's metrics, keeping its refusals' reasons.
type sealerMetrics struct {
	mu      sync.Mutex
	refused []string
}

func (m *sealerMetrics) LedgerCheckpointSigned(time.Duration) {}

func (m *sealerMetrics) LedgerLogRefused(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refused = append(m.refused, reason)
}

func (m *sealerMetrics) refusals() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.refused)
}

// logFixture is a workspace with events, its log's key and sealer, and a client's
// auditor of it.
type logFixture struct {
	db        *store.DB
	p         accountable.Principal
	key       *ledgerlog.Key
	origin    string
	metrics   *sealerMetrics
	sealer    *worker.LedgerSealer
	auditor   *ledgerlog.Auditor
	completed []accountable.WorkCompletion // of the first two tasks
}

func newLogFixture(t *testing.T, db *store.DB) *logFixture {
	t.Helper()
	ctx := context.Background()
	skey, err := ledgerlog.GenerateKey(testLogName)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ledgerlog.ParseKey(skey)
	if err != nil {
		t.Fatal(err)
	}
	f := &logFixture{db: db, p: storetest.NewTenant(t, db).Principal, key: key, metrics: &sealerMetrics{}}
	f.origin = ledgerlog.Origin(testLogName, f.p.WorkspaceID)
	f.sealer = f.newSealer()
	// The client knows the log's public key and the workspace, nothing of the database.
	if f.auditor, err = ledgerlog.NewAuditor(key.VerifierKey, f.origin); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		task := f.createTask(t, fmt.Sprintf("task %d", i)).Task
		if i == 2 {
			break
		}
		res, _, err := db.CompleteWork(ctx, f.p, nil, accountable.CompleteWork{TaskID: task.ID,
			VersionToken: new(task.Version().Token()), Summary: new("done")})
		if err != nil {
			t.Fatalf("CompleteWork: %v", err)
		}
		f.completed = append(f.completed, res)
	}
	return f
}

// newSealer is a sealer process of the fixture's log: the same key, no memory of what
// another one signed.
func (f *logFixture) newSealer() *worker.LedgerSealer {
	return worker.NewLedgerSealer(f.db, f.key, testLogName, time.Second, nil, f.metrics, slog.New(slog.DiscardHandler))
}

func (f *logFixture) createTask(t *testing.T, title string) accountable.WorkCreated {
	t.Helper()
	res, _, err := f.db.CreateWork(context.Background(), f.p, nil, accountable.CreateWork{Title: title})
	if err != nil {
		t.Fatalf("CreateWork: %v", err)
	}
	return res
}

// sealTo seals with s until the newest checkpoint has size leaves, and returns it. The
// stream holds back events behind transactions still running anywhere on the server
// (other test packages'), so one seal may cover only part of the new events.
func (f *logFixture) sealTo(t *testing.T, s *worker.LedgerSealer, size int64) []byte {
	t.Helper()
	var c accountable.LedgerCheckpoint
	storetest.WaitFor(t, 20*time.Second, fmt.Sprintf("a checkpoint of size %d", size), func() bool {
		if _, err := s.Seal(context.Background(), f.p.WorkspaceID); err != nil {
			t.Fatalf("Seal: %v", err)
		}
		c = f.checkpoint(t)
		return c.TreeSize >= size
	})
	if c.TreeSize != size {
		t.Fatalf("the newest checkpoint has size %d, want %d", c.TreeSize, size)
	}
	return []byte(c.SignedNote)
}

// integrateTo runs the log's integrator (as Seal does first) until the tree has size
// leaves, and returns it.
func (f *logFixture) integrateTo(t *testing.T, size int64) tlog.Tree {
	t.Helper()
	ctx := context.Background()
	var tree tlog.Tree
	storetest.WaitFor(t, 20*time.Second, fmt.Sprintf("a tree of size %d", size), func() bool {
		if _, err := f.db.IntegrateLedgerLog(ctx, f.p.WorkspaceID, 100); err != nil {
			t.Fatalf("IntegrateLedgerLog: %v", err)
		}
		var err error
		if tree, err = f.db.LedgerLogTree(ctx, f.p.WorkspaceID); err != nil {
			t.Fatal(err)
		}
		return tree.N >= size
	})
	if tree.N != size {
		t.Fatalf("the tree has size %d, want %d", tree.N, size)
	}
	return tree
}

func (f *logFixture) checkpoint(t *testing.T) accountable.LedgerCheckpoint {
	t.Helper()
	c, err := f.db.LedgerCheckpoint(context.Background(), f.p.WorkspaceID)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wantRefused seals with s and wants a refusal for reason, counted, and no checkpoint
// signed.
func (f *logFixture) wantRefused(t *testing.T, s *worker.LedgerSealer, reason string) {
	t.Helper()
	before := f.checkpoint(t)
	counted := len(f.metrics.refusals())
	signed, err := s.Seal(context.Background(), f.p.WorkspaceID)
	var refusal *worker.RefusalError
	if !errors.As(err, &refusal) || refusal.Reason != reason || signed {
		t.Fatalf("Seal: signed %v, %v; want a refusal (%s)", signed, err, reason)
	}
	t.Log(err)
	if got := f.metrics.refusals(); len(got) != counted+1 || got[counted] != reason {
		t.Fatalf("refusals counted: %v, want one more, %s", got, reason)
	}
	if after := f.checkpoint(t); after.TreeSize != before.TreeSize || after.SignedNote != before.SignedNote {
		t.Fatalf("the refused seal left a checkpoint of size %d (was %d)", after.TreeSize, before.TreeSize)
	}
}

// sign signs a checkpoint of tree with the log's key as someone who stole it would,
// without the sealer and its checks.
func (f *logFixture) sign(t *testing.T, tree tlog.Tree) []byte {
	t.Helper()
	signed, err := f.key.SignCheckpoint(f.origin, tree)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

// wantNotConsistent asserts a client's consistency check failed for a history that is not
// the one it kept, naming both sizes.
func wantNotConsistent(t *testing.T, err error, kept, shown int64, says string) {
	t.Helper()
	if !errors.Is(err, ledgerlog.ErrNotConsistent) {
		t.Fatalf("the client's check: %v; want %v", err, ledgerlog.ErrNotConsistent)
	}
	t.Log(err)
	for _, s := range []string{fmt.Sprintf("size %d", kept), fmt.Sprintf("size %d", shown), says} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("the client's check: %v; it does not say %q", err, s)
		}
	}
}

// tamperConn connects to the test database as the owner role with the append-only
// triggers off for its session (session_replication_role = replica skips ordinary
// triggers): the attacker's connection.
func tamperConn(t *testing.T) *pgx.Conn {
	t.Helper()
	conn := storetest.Conn(t)
	if _, err := conn.Exec(context.Background(), `SET session_replication_role = replica`); err != nil {
		t.Fatalf("disable triggers: %v", err)
	}
	return conn
}

// execN runs a statement that must change exactly n rows (n < 0: at least one).
func execN(t *testing.T, conn *pgx.Conn, n int64, sql string, args ...any) {
	t.Helper()
	tag, err := conn.Exec(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if got := tag.RowsAffected(); (n >= 0 && got != n) || (n < 0 && got == 0) {
		t.Fatalf("%s: %d rows affected, want %d", sql, got, n)
	}
}

// streamed reads the workspace's whole stream (want events of it).
func (f *logFixture) streamed(t *testing.T, want int) []accountable.Event {
	t.Helper()
	page, err := f.db.StreamEvents(context.Background(), f.p.WorkspaceID, accountable.EventFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != want || page.HasMore {
		t.Fatalf("the stream has %d events (more: %v), want %d", len(page.Events), page.HasMore, want)
	}
	return page.Events
}

// memoryTree is a tree computed from entries alone, as the attacker rebuilding the
// database's tree computes it (tlog.HashReader).
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

// TestLedgerSealerSignsWhatChanged: the sealer signs a checkpoint that opens under the
// log's public key and the workspace's origin, signs nothing while nothing changes, and
// signs a checkpoint covering the events of a new command that extends the first; a client
// checks both, and a new event's inclusion as its receipt names it.
func TestLedgerSealerSignsWhatChanged(t *testing.T) {
	ctx := context.Background()
	f := newLogFixture(t, storetest.Open(t))
	c1 := f.sealTo(t, f.sealer, fixtureEvents)
	cp, _, err := ledgerlog.OpenCheckpoint(c1, f.origin, f.key.Verifier())
	if err != nil {
		t.Fatal(err)
	}
	if tree := f.integrateTo(t, fixtureEvents); cp.Tree != tree {
		t.Fatalf("the checkpoint is of %v, the log's tree %v", cp.Tree, tree)
	}
	if _, err := f.auditor.Open(c1); err != nil {
		t.Fatalf("the client cannot open the checkpoint: %v", err)
	}

	for range 2 {
		if signed, err := f.sealer.Seal(ctx, f.p.WorkspaceID); signed || err != nil {
			t.Fatalf("sealing an unchanged log: signed %v, %v", signed, err)
		}
	}
	if c := f.checkpoint(t); c.TreeSize != fixtureEvents || c.SignedNote != string(c1) {
		t.Fatalf("sealing an unchanged log left a checkpoint of size %d", c.TreeSize)
	}

	created := f.createTask(t, "after the first checkpoint")
	c2 := f.sealTo(t, f.sealer, fixtureEvents+1)
	proof, err := f.db.ProveLedgerConsistency(ctx, f.p.WorkspaceID, fixtureEvents, fixtureEvents+1)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := f.auditor.CheckConsistency(c1, c2, proof)
	if err != nil || tree.N != fixtureEvents+1 {
		t.Fatalf("the client's check of the grown log: %v, %v", tree, err)
	}
	leaf, err := f.db.LedgerLeafOf(ctx, f.p.WorkspaceID, created.EventID)
	if err != nil {
		t.Fatal(err)
	}
	if leaf.Index != fixtureEvents {
		t.Fatalf("the new event is leaf %d, want %d", leaf.Index, fixtureEvents)
	}
	inclusion, err := f.db.ProveLedgerInclusion(ctx, f.p.WorkspaceID, leaf.Index, tree.N)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.auditor.CheckInclusion(ledgerlog.Inclusion{Entry: leaf.Entry, Index: leaf.Index, Checkpoint: c2,
		Proof: inclusion, EventHash: created.EventHash}); err != nil {
		t.Fatalf("the client's check of the new event: %v", err)
	}
	if signed, err := f.sealer.Seal(ctx, f.p.WorkspaceID); signed || err != nil {
		t.Fatalf("sealing again: signed %v, %v", signed, err)
	}
	if r := f.metrics.refusals(); len(r) != 0 {
		t.Fatalf("refusals on an honest log: %v", r)
	}
}

// TestLedgerLogCatchesTheOwner: the database's owner rewrites the workspace's history in
// each way it can; the sealer that signed the log before refuses to sign the result, and
// a client holding a checkpoint from before detects it even when the result is signed
// with the log's key (a stolen key, or a sealer process that remembers nothing).
func TestLedgerLogCatchesTheOwner(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	const n = fixtureEvents

	t.Run("an old event rewritten with every hash, anchor and tree node recomputed", func(t *testing.T) {
		f := newLogFixture(t, db)
		c1 := f.sealTo(t, f.sealer, n)
		var created, completed accountable.Event
		for _, e := range f.streamed(t, n) {
			if e.AggregateID == f.completed[0].TaskID {
				if e.AggregateVersion == 1 {
					created = e
				} else {
					completed = e
				}
			}
		}

		// The first task's creation says another title; its digest, its hash, the link
		// and hash of the task's completion after it, and the task's anchored head all
		// follow, as the store would have written them.
		conn := tamperConn(t)
		var rewritten string
		if err := conn.QueryRow(ctx, `UPDATE ledger_events SET payload = jsonb_set(payload, '{task,title}', '"rewritten"')
			WHERE workspace_id = $1 AND id = $2 RETURNING payload::text`, f.p.WorkspaceID, created.ID).Scan(&rewritten); err != nil {
			t.Fatal(err)
		}
		digest, err := canonical.DigestOf(accountable.Object(rewritten))
		if err != nil {
			t.Fatal(err)
		}
		created.PayloadDigest = digest
		created.EventHash = eventHash(t, created.EventHeader)
		completed.PreviousHash = &created.EventHash
		completed.EventHash = eventHash(t, completed.EventHeader)
		execN(t, conn, 1, `UPDATE ledger_events SET payload_digest = $3, event_hash = $4 WHERE workspace_id = $1 AND id = $2`,
			f.p.WorkspaceID, created.ID, created.PayloadDigest, created.EventHash)
		execN(t, conn, 1, `UPDATE ledger_events SET previous_hash = $3, event_hash = $4 WHERE workspace_id = $1 AND id = $2`,
			f.p.WorkspaceID, completed.ID, completed.PreviousHash, completed.EventHash)
		execN(t, conn, 1, `UPDATE ledger_heads SET event_hash = $3 WHERE workspace_id = $1 AND aggregate_type = 'task' AND aggregate_id = $2`,
			f.p.WorkspaceID, completed.AggregateID, completed.EventHash)

		// The whole tree rebuilt from the rewritten entries, every stored hash replaced.
		entries, err := db.LedgerLogEntries(ctx, f.p.WorkspaceID, 0, n)
		if err != nil {
			t.Fatal(err)
		}
		hashes, forged := memoryTreeOf(t, entries)
		execN(t, conn, -1, `DELETE FROM ledger_log_hashes WHERE workspace_id = $1`, f.p.WorkspaceID)
		for i, h := range hashes {
			execN(t, conn, 1, `INSERT INTO ledger_log_hashes (workspace_id, hash_index, hash) VALUES ($1, $2, $3)`,
				f.p.WorkspaceID, i, h[:])
		}
		if tree := f.integrateTo(t, n); tree != forged {
			t.Fatalf("the database's tree is %v after the rebuild, want %v", tree, forged)
		}

		// The gap the log closes: ledger verification finds nothing wrong, since every
		// hash, link and anchor it checks agrees with the rewritten history.
		if v, err := db.VerifyLedger(ctx, f.p.WorkspaceID, accountable.LedgerScope{}); err != nil || !v.Verified || v.EventCount != n {
			t.Fatalf("VerifyLedger: %+v, %v; want a verified ledger of %d events", v, err, n)
		}

		// The sealer refuses to sign the rewritten tree of c1's size, and when the service
		// goes on (a new command, a new leaf on the rewritten tree) it refuses again, and
		// so does a new sealer process: c1 is in the database.
		f.wantRefused(t, f.sealer, worker.RefusedInconsistent)
		f.createTask(t, "after the rewrite")
		tree := f.integrateTo(t, n+1)
		f.wantRefused(t, f.sealer, worker.RefusedInconsistent)
		f.wantRefused(t, f.newSealer(), worker.RefusedInconsistent)

		// With the key stolen, the rewritten tree can be signed; the client holding c1
		// asks for the proof from c1's size, and no proof the database can give holds.
		proof, err := db.ProveLedgerConsistency(ctx, f.p.WorkspaceID, n, n+1)
		if err != nil {
			t.Fatal(err)
		}
		forgedCheckpoint := f.sign(t, tree)
		_, err = f.auditor.CheckConsistency(c1, forgedCheckpoint, proof)
		wantNotConsistent(t, err, n, n+1, "does not extend")

		// A client holding the completion's receipt (its eventHash, from before) and no
		// checkpoint: the database proves the rewritten completion in the forged tree,
		// and its entry is not the receipt's event.
		leaf, err := db.LedgerLeafOf(ctx, f.p.WorkspaceID, completed.ID)
		if err != nil {
			t.Fatal(err)
		}
		inclusion, err := db.ProveLedgerInclusion(ctx, f.p.WorkspaceID, leaf.Index, tree.N)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.auditor.CheckInclusion(ledgerlog.Inclusion{Entry: leaf.Entry, Index: leaf.Index, Checkpoint: forgedCheckpoint,
			Proof: inclusion, EventHash: f.completed[0].EventHash})
		if !errors.Is(err, ledgerlog.ErrNotIncluded) || !strings.Contains(err.Error(), "event "+completed.ID) {
			t.Fatalf("the receipt's check: %v; want %v naming event %s", err, ledgerlog.ErrNotIncluded, completed.ID)
		}
		t.Log(err)
	})

	t.Run("the newest events deleted", func(t *testing.T) {
		f := newLogFixture(t, db)
		f.sealTo(t, f.sealer, n)
		f.createTask(t, "deleted 1")
		f.createTask(t, "deleted 2")
		c2 := f.sealTo(t, f.sealer, n+2) // what the client keeps

		// The log rolled back to size n: the two events, their leaves and stored hashes
		// gone, the integrator's cursor back at the last event left, and every checkpoint
		// after size n deleted.
		conn := tamperConn(t)
		var pos accountable.StreamPosition
		if err := conn.QueryRow(ctx, `SELECT e.stream_position, e.seq FROM ledger_log_leaves l
			JOIN ledger_events e ON e.workspace_id = l.workspace_id AND e.id = l.event_id
			WHERE l.workspace_id = $1 AND l.leaf_index = $2`, f.p.WorkspaceID, n-1).Scan(&pos.Position, &pos.Seq); err != nil {
			t.Fatal(err)
		}
		execN(t, conn, 2, `DELETE FROM ledger_events WHERE workspace_id = $1
			AND id IN (SELECT event_id FROM ledger_log_leaves WHERE workspace_id = $1 AND leaf_index >= $2)`, f.p.WorkspaceID, n)
		execN(t, conn, 2, `DELETE FROM ledger_log_leaves WHERE workspace_id = $1 AND leaf_index >= $2`, f.p.WorkspaceID, n)
		execN(t, conn, -1, `DELETE FROM ledger_log_hashes WHERE workspace_id = $1 AND hash_index >= $2`,
			f.p.WorkspaceID, tlog.StoredHashIndex(0, n))
		execN(t, conn, 1, `UPDATE ledger_logs SET tree_size = $2, last_position = $3, last_seq = $4 WHERE workspace_id = $1`,
			f.p.WorkspaceID, n, pos.Position, pos.Seq)
		execN(t, conn, -1, `DELETE FROM ledger_checkpoints WHERE workspace_id = $1 AND tree_size > $2`, f.p.WorkspaceID, n)

		// The sealer that signed size n+2 remembers it.
		f.wantRefused(t, f.sealer, worker.RefusedShrunk)

		// A new sealer process has nothing but the database's checkpoints, the newest of
		// size n: it finds nothing to sign, and signs the rolled-back history once it
		// grows. Only a record of the checkpoints outside the database (a witness, item 5
		// of the issue) catches that at the service; the client holding c2 catches it,
		// shown the newest checkpoint the database has, then the one signed after.
		fresh := f.newSealer()
		if signed, err := fresh.Seal(ctx, f.p.WorkspaceID); signed || err != nil {
			t.Fatalf("a new sealer on the rolled-back log: signed %v, %v", signed, err)
		}
		_, err := f.auditor.CheckConsistency(c2, []byte(f.checkpoint(t).SignedNote), nil)
		wantNotConsistent(t, err, n+2, n, "truncated")

		f.createTask(t, "after the rollback")
		c3 := f.sealTo(t, fresh, n+1)
		_, err = f.auditor.CheckConsistency(c2, c3, nil)
		wantNotConsistent(t, err, n+2, n+1, "truncated")
		f.wantRefused(t, f.sealer, worker.RefusedShrunk)
	})

	t.Run("the history replaced by another as long or longer", func(t *testing.T) {
		f := newLogFixture(t, db)
		c1 := f.sealTo(t, f.sealer, n)

		// Every event and every row of the log gone; the service, none the wiser, writes
		// a different history that outgrows the old one, and the integrator builds its
		// tree from nothing.
		conn := tamperConn(t)
		execN(t, conn, n, `DELETE FROM ledger_events WHERE workspace_id = $1`, f.p.WorkspaceID)
		for _, table := range []string{"ledger_log_leaves", "ledger_log_hashes", "ledger_checkpoints", "ledger_logs"} {
			execN(t, conn, -1, `DELETE FROM `+table+` WHERE workspace_id = $1`, f.p.WorkspaceID)
		}
		for i := range n + 2 {
			f.createTask(t, fmt.Sprintf("replayed %d", i))
		}
		tree := f.integrateTo(t, n+2)

		// The sealer that signed c1 refuses; a new process, with no checkpoint in the
		// database to compare with, signs the new history, and the client holding c1
		// detects it.
		f.wantRefused(t, f.sealer, worker.RefusedInconsistent)
		replayed := f.sealTo(t, f.newSealer(), n+2)
		proof, err := db.ProveLedgerConsistency(ctx, f.p.WorkspaceID, n, tree.N)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.auditor.CheckConsistency(c1, replayed, proof)
		wantNotConsistent(t, err, n, n+2, "does not extend")
	})

	t.Run("a fork: two clients shown two trees", func(t *testing.T) {
		f := newLogFixture(t, db)
		a := f.sealTo(t, f.sealer, n) // client A's

		// With the key, the attacker signs for client B a tree of the same size whose
		// newest event is another.
		entries, err := db.LedgerLogEntries(ctx, f.p.WorkspaceID, 0, n)
		if err != nil {
			t.Fatal(err)
		}
		events := f.streamed(t, n)
		other := events[n-1].EventHeader
		other.ActorID = "someone else"
		branch := slices.Clone(entries)
		branch[n-1] = entryOf(t, other)
		_, forkTree := memoryTreeOf(t, branch)
		b := f.sign(t, forkTree)

		// Either client shown the other's checkpoint detects the fork.
		_, err = f.auditor.CheckConsistency(a, b, nil)
		wantNotConsistent(t, err, n, n, "fork")
		_, err = f.auditor.CheckConsistency(b, a, nil)
		wantNotConsistent(t, err, n, n, "fork")

		// Each shown only its own branch, grown, finds it consistent: catching a fork the
		// clients never compare takes witnesses (item 5 of the issue).
		f.createTask(t, "on A's branch")
		a2 := f.sealTo(t, f.sealer, n+1)
		proof, err := db.ProveLedgerConsistency(ctx, f.p.WorkspaceID, n, n+1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.auditor.CheckConsistency(a, a2, proof); err != nil {
			t.Fatalf("client A on its branch: %v", err)
		}
		other.ID, other.ActorID = "0190f7b4-5d1e-7c3a-9a4e-3f1d2c5b6a70", "on B's branch"
		branch = append(branch, entryOf(t, other))
		hashes, forkTree2 := memoryTreeOf(t, branch)
		proof, err = tlog.ProveTree(n+1, n, hashes)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.auditor.CheckConsistency(b, f.sign(t, forkTree2), proof); err != nil {
			t.Fatalf("client B on its branch: %v", err)
		}
	})
}

func entryOf(t *testing.T, h accountable.EventHeader) []byte {
	t.Helper()
	e, err := ledgerlog.Entry(h)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// eventHash is the eventHash of a header, as the store computes it.
func eventHash(t *testing.T, h accountable.EventHeader) string {
	t.Helper()
	return ledgerlog.EventHashOf(entryOf(t, h))
}
