package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/ledgerlog"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/worker"
)

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
