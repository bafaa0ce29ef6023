package worker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/ledgerlog"
	"github.com/accountablework/accountable/ledgerlog/ledgerlogtest"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/worker"
)

// sealerCounts records what the sealer counted.
type sealerCounts struct {
	mu       sync.Mutex
	refused  []string
	witness  []string
	signedAt []time.Duration
}

func (c *sealerCounts) LedgerCheckpointSigned(lag time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.signedAt = append(c.signedAt, lag)
}

func (c *sealerCounts) LedgerLogRefused(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refused = append(c.refused, reason)
}

func (c *sealerCounts) LedgerWitnessRefused(witness, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.witness = append(c.witness, witness+":"+reason)
}

func (c *sealerCounts) witnessRefusals() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.witness...)
}

const witnessLogName = "accountable.test"

// witnessedSealer is a sealer of db signing with key, submitting to lw.
func witnessedSealer(t *testing.T, db *store.DB, key *ledgerlog.Key, lw *ledgerlogtest.Litewitness, counts *sealerCounts) *worker.LedgerSealer {
	t.Helper()
	s := worker.NewLedgerSealer(db, key, witnessLogName, time.Hour, nil, counts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.UseWitnesses([]ledgerlog.Witness{lw.Witness}, db, &http.Client{Timeout: 10 * time.Second}, counts)
	return s
}

// sealAndWitness integrates the workspace's events until its log has at least want
// leaves, signs a checkpoint and has it witnessed; it returns the newest checkpoint.
func sealAndWitness(t *testing.T, db *store.DB, s *worker.LedgerSealer, workspaceID string, want int64) (accountable.LedgerCheckpoint, error) {
	t.Helper()
	ctx := context.Background()
	storetest.WaitFor(t, 20*time.Second, fmt.Sprintf("the log to reach %d leaves", want), func() bool {
		if _, err := s.Seal(ctx, workspaceID); err != nil {
			t.Fatalf("Seal: %v", err)
		}
		tree, err := db.LedgerLogTree(ctx, workspaceID)
		if err != nil {
			t.Fatal(err)
		}
		return tree.N >= want
	})
	werr := s.Witness(ctx, workspaceID)
	c, err := db.LedgerCheckpoint(ctx, workspaceID)
	if err != nil {
		t.Fatal(err)
	}
	return c, werr
}

func createWorkItems(t *testing.T, db *store.DB, p accountable.Principal, n int, title string) {
	t.Helper()
	for i := range n {
		if _, _, err := db.CreateWork(context.Background(), p, nil, accountable.CreateWork{Title: fmt.Sprintf("%s %d", title, i)}); err != nil {
			t.Fatalf("CreateWork: %v", err)
		}
	}
}

// TestWitnessCosignsEachCheckpointAndCatchesARollback runs a real witness (litewitness, a
// process of its own): it cosigns the log's checkpoints as the log grows, each from the
// size it cosigned before with a consistency proof, and the cosignatures verify with its
// key on the published checkpoint. Then the database's owner rolls the log back to an
// earlier checkpoint and writes another history (the sealer, restarted, has only the
// database's word for what it signed): the witness refuses, which is an alert, a recorded
// refusal and an error, never a silent skip.
func TestWitnessCosignsEachCheckpointAndCatchesARollback(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	lw := ledgerlogtest.StartLitewitness(t, "witness.test/w1")
	skey, err := ledgerlog.GenerateKey(witnessLogName)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ledgerlog.ParseKey(skey)
	if err != nil {
		t.Fatal(err)
	}

	for _, longer := range []bool{true, false} {
		t.Run(fmt.Sprintf("another history, longer=%v", longer), func(t *testing.T) {
			p := storetest.NewTenant(t, db).Principal
			origin := ledgerlog.Origin(witnessLogName, p.WorkspaceID)
			lw.AddLog(t, origin, key.VerifierKey)
			counts := &sealerCounts{}
			s := witnessedSealer(t, db, key, lw, counts)

			createWorkItems(t, db, p, 2, "first")
			c1, err := sealAndWitness(t, db, s, p.WorkspaceID, storetest.TenantEvents+2)
			if err != nil {
				t.Fatalf("witnessing the first checkpoint: %v", err)
			}
			openCosigned(t, c1, key, lw, origin)

			createWorkItems(t, db, p, 3, "second")
			c2, err := sealAndWitness(t, db, s, p.WorkspaceID, c1.TreeSize+3)
			if err != nil {
				t.Fatalf("witnessing the second checkpoint: %v", err)
			}
			openCosigned(t, c2, key, lw, origin)
			status, err := db.LedgerWitnessStatus(ctx, p.WorkspaceID)
			if err != nil || len(status) != 1 || status[0].CosignedTreeSize != c2.TreeSize || status[0].Refusal != nil {
				t.Fatalf("witness status %+v, %v; want cosigned at %d", status, err, c2.TreeSize)
			}

			// The owner rolls the log back to c1: the events after it, their leaves and
			// stored hashes, the later checkpoint and the witness's status go.
			rollBack(t, p.WorkspaceID, c1.TreeSize)
			extra := 1
			if longer {
				extra = int(c2.TreeSize-c1.TreeSize) + 2
			}
			createWorkItems(t, db, p, extra, "rewritten")
			fresh := witnessedSealer(t, db, key, lw, counts)
			_, err = sealAndWitness(t, db, fresh, p.WorkspaceID, c1.TreeSize+int64(extra))
			var refusal *worker.RefusalError
			if !errors.As(err, &refusal) {
				t.Fatalf("the witness was shown another history and the sealer said %v", err)
			}
			want := "witness.test/w1:" + worker.WitnessAhead
			if longer {
				want = "witness.test/w1:" + worker.WitnessInconsistent
			}
			if got := counts.witnessRefusals(); len(got) != 1 || got[0] != want {
				t.Fatalf("witness refusals counted: %v, want [%s]", got, want)
			}
			status, err = db.LedgerWitnessStatus(ctx, p.WorkspaceID)
			if err != nil || len(status) != 1 || status[0].Refusal == nil || status[0].RefusedAt == nil {
				t.Fatalf("witness status %+v, %v; want its refusal recorded", status, err)
			}
			t.Logf("recorded refusal: %s", *status[0].Refusal)
			if c, err := db.LedgerCheckpoint(ctx, p.WorkspaceID); err != nil || len(c.Cosignatures) != 0 {
				t.Fatalf("the rewritten history's checkpoint carries cosignatures %v (%v)", c.Cosignatures, err)
			}
		})
	}
}

// openCosigned checks that the checkpoint with its cosignatures opens under the log's key
// and the witness's.
func openCosigned(t *testing.T, c accountable.LedgerCheckpoint, key *ledgerlog.Key, lw *ledgerlogtest.Litewitness, origin string) {
	t.Helper()
	if len(c.Cosignatures) != 1 || !strings.HasPrefix(c.Cosignatures[0], "— "+lw.Name+" ") {
		t.Fatalf("checkpoint %d has cosignatures %q, want one of %s", c.TreeSize, c.Cosignatures, lw.Name)
	}
	signed := ledgerlog.WithCosignatures([]byte(c.SignedNote), c.Cosignatures...)
	if _, _, err := ledgerlog.OpenCheckpoint(signed, origin, key.Verifier()); err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(signed, note.VerifierList(key.Verifier(), lw.Witness.Verifier))
	if err != nil || len(n.Sigs) != 2 {
		t.Fatalf("the cosigned checkpoint: %v (%d signatures verified)", err, len(n.Sigs))
	}
}

// rollBack is the owner's rollback of a workspace's log to size: everything of the log
// and the stream after it is deleted, with the append-only triggers off.
func rollBack(t *testing.T, workspaceID string, size int64) {
	t.Helper()
	ctx := context.Background()
	conn := storetest.Conn(t)
	if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err != nil {
		t.Fatal(err)
	}
	ws, to := workspaceID, size
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM ledger_events e USING ledger_log_leaves l
			WHERE e.workspace_id = $1 AND l.workspace_id = $1 AND l.event_id = e.id AND l.leaf_index >= $2`, []any{ws, to}},
		{`DELETE FROM ledger_log_leaves WHERE workspace_id = $1 AND leaf_index >= $2`, []any{ws, to}},
		// The stored hashes written from leaf size on: tlog writes them in index order.
		{`DELETE FROM ledger_log_hashes WHERE workspace_id = $1 AND hash_index >= $2`, []any{ws, tlog.StoredHashIndex(0, to)}},
		{`DELETE FROM ledger_checkpoints WHERE workspace_id = $1 AND tree_size > $2`, []any{ws, to}},
		{`DELETE FROM ledger_cosignatures WHERE workspace_id = $1 AND tree_size > $2`, []any{ws, to}},
		{`DELETE FROM ledger_witness_status WHERE workspace_id = $1`, []any{ws}},
		{`UPDATE ledger_logs SET tree_size = $2::bigint,
			(last_position, last_seq) = (SELECT e.stream_position, e.seq FROM ledger_log_leaves l
				JOIN ledger_events e ON e.workspace_id = l.workspace_id AND e.id = l.event_id
				WHERE l.workspace_id = $1 AND l.leaf_index = $2::bigint - 1)
			WHERE workspace_id = $1`, []any{ws, to}},
	} {
		if _, err := conn.Exec(ctx, st.sql, st.args...); err != nil {
			t.Fatalf("%s: %v", st.sql, err)
		}
	}
}
