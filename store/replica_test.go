package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/projection"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// readCounter counts the store's ledger reads by where they ran (store.Metrics).
type readCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *readCounter) LedgerEventsAppended(int) {}
func (c *readCounter) CommandConflict(string)   {}
func (c *readCounter) LongRead(string, string)  {}
func (c *readCounter) LedgerRead(servedBy, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[servedBy+"/"+reason]++
}

// take returns the counts since the last take.
func (c *readCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

const onReplica = "replica/"

// replicaSetup is a private primary, migrated, with a streaming replica of it.
type replicaSetup struct {
	primary, standby *storetest.Cluster
	service          string // the service role's URL on the primary
}

func newReplicaSetup(t *testing.T) replicaSetup {
	t.Helper()
	primary, _, service := storetest.NewMigratedCluster(t)
	return replicaSetup{primary: primary, standby: primary.NewStandby(t), service: service}
}

// open opens a store on the primary reading the ledger from readURL, its reads counted.
func (s replicaSetup) open(t *testing.T, readURL string) (*store.DB, *readCounter) {
	t.Helper()
	db, err := store.Open(context.Background(), store.Config{URL: s.service, ReadURL: readURL, ReadMaxWait: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	c := &readCounter{n: map[string]int{}}
	db.Observe(c)
	return db, c
}

// exec runs sql as the superuser on the cluster.
func exec(t *testing.T, c *storetest.Cluster, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.URL("accountable", "accountable"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// DATABASE_READ_URL: the ledger's reads run on a streaming replica (a hot standby made
// with pg_basebackup, following the primary) and still see every write acknowledged
// before they began; a replica that lags, is down or is not a standby sends them to the
// primary, and they are never wrong or refused for it.
func TestLedgerReadsFromAStreamingReplica(t *testing.T) {
	ctx := context.Background()
	s := newReplicaSetup(t)
	replicaURL := s.standby.URL("accountable_service", "accountable")
	db, reads := s.open(t, replicaURL)
	p := storetest.NewTenant(t, db).Principal

	// created writes a task through the store (the primary) and returns its event's id.
	created := func(title string) accountable.WorkCreated {
		t.Helper()
		res, _, err := db.CreateWork(ctx, p, nil, accountable.CreateWork{Title: title})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// newestTask reads the stream to its end and returns the last event's aggregate.
	newestTask := func() string {
		t.Helper()
		var pos accountable.StreamPosition
		var last string
		for {
			page, err := db.StreamEvents(ctx, p.WorkspaceID, accountable.EventFilter{After: pos, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Events) > 0 {
				last = page.Events[len(page.Events)-1].AggregateID
			}
			pos = page.Next
			if !page.HasMore {
				return last
			}
		}
	}

	t.Run("reads its own writes from the replica", func(t *testing.T) {
		reads.take()
		for i := range 50 {
			res := created(fmt.Sprintf("read back %d", i))
			if got := newestTask(); got != res.Task.ID {
				t.Fatalf("write %d: the stream read right after it ends at task %q, want %q", i, got, res.Task.ID)
			}
		}
		last := created("completed")
		if _, _, err := db.CompleteWork(ctx, p, nil, accountable.CompleteWork{TaskID: last.Task.ID,
			VersionToken: ptr(last.Task.Version().Token()), Summary: ptr("done")}); err != nil {
			t.Fatal(err)
		}
		v, err := db.VerifyLedger(ctx, p.WorkspaceID, accountable.LedgerScope{})
		if err != nil || !v.Verified || v.EventCount != int64(storetest.TenantEvents+52) {
			t.Fatalf("VerifyLedger right after the writes: %+v %v", v, err)
		}
		w, err := projection.WorkLedgerQuery{Now: accountable.Now()}.Window()
		if err != nil {
			t.Fatal(err)
		}
		proj, err := db.WorkLedger(ctx, p.WorkspaceID, w)
		if err != nil {
			t.Fatal(err)
		}
		if proj.Totals.CompletionReceipts != 1 {
			t.Fatalf("the work-ledger projection right after the completion counts %d receipts, want 1", proj.Totals.CompletionReceipts)
		}
		n := reads.take()
		t.Logf("reads: %v", n)
		if n[onReplica] < 40 || n[onReplica]+n["primary/replica_lagging"] != 52 {
			t.Fatalf("reads %v: want 52, nearly all on the replica", n)
		}
	})

	t.Run("a lagging replica: the primary answers", func(t *testing.T) {
		exec(t, s.standby, "SELECT pg_wal_replay_pause()")
		res := created("written while the replica does not replay")
		reads.take()
		started := time.Now()
		if got := newestTask(); got != res.Task.ID {
			t.Fatalf("the stream ends at task %q, want %q", got, res.Task.ID)
		}
		waited := time.Since(started)
		if n := reads.take(); n["primary/replica_lagging"] != 1 || len(n) != 1 {
			t.Fatalf("reads %v: want one on the primary, the replica lagging", n)
		}
		if waited < 250*time.Millisecond || waited > 5*time.Second {
			t.Errorf("the read took %v: it waits about ReadMaxWait (300ms, less its last pause of at most 20ms) for the replica", waited)
		}
		// The replica really has not got it.
		if n := queryInt(t, replicaURL, fmt.Sprintf("SELECT count(*) FROM tasks WHERE id = '%s'", res.Task.ID)); n != 0 {
			t.Fatalf("the paused replica has the task")
		}
		exec(t, s.standby, "SELECT pg_wal_replay_resume()")
		if got := newestTask(); got != res.Task.ID {
			t.Fatalf("after the replica resumed, the stream ends at task %q, want %q", got, res.Task.ID)
		}
		if n := reads.take(); n[onReplica] != 1 {
			t.Fatalf("reads %v: want the read after resuming on the replica", n)
		}
	})

	t.Run("a replica down: the primary answers at once, then the replica again", func(t *testing.T) {
		s.standby.Crash()
		res := created("written while the replica is down")
		reads.take()
		for range 5 {
			started := time.Now()
			if got := newestTask(); got != res.Task.ID {
				t.Fatalf("the stream ends at task %q, want %q", got, res.Task.ID)
			}
			if d := time.Since(started); d > 2*time.Second {
				t.Errorf("a read with the replica down took %v", d)
			}
		}
		if n := reads.take(); n["primary/replica_failed"] != 5 {
			t.Fatalf("reads %v: want 5 on the primary, the replica failed", n)
		}
		s.standby.Start()
		storetest.WaitFor(t, 30*time.Second, "the replica to serve a read after it was started again", func() bool {
			if got := newestTask(); got != res.Task.ID {
				t.Fatalf("the stream ends at task %q, want %q", got, res.Task.ID)
			}
			return reads.take()[onReplica] == 1
		})
	})

	t.Run("the stream never skips or repeats on the replica", func(t *testing.T) {
		reads.take()
		streamNeverSkipsOrRepeats(t, db)
		n := reads.take()
		t.Logf("reads: %v", n)
		if n[onReplica] == 0 {
			t.Fatalf("reads %v: none on the replica", n)
		}
	})

	// What the fence costs a read: the primary's WAL position, then the replica's replay
	// position, before the page (figures for docs/scaling.md; the CPU of this one machine
	// serves both servers, so they show the added round trips, not the primary's relief).
	t.Run("the fence's cost", func(t *testing.T) {
		direct, _ := s.open(t, "")
		timeReads := func(db *store.DB) (p50, p99 time.Duration) {
			ds := make([]time.Duration, 0, 300)
			for range 300 {
				started := time.Now()
				if _, err := db.StreamEvents(ctx, p.WorkspaceID, accountable.EventFilter{Limit: 50}); err != nil {
					t.Fatal(err)
				}
				ds = append(ds, time.Since(started))
			}
			slices.Sort(ds)
			return ds[len(ds)/2], ds[len(ds)*99/100]
		}
		reads.take()
		p50p, p99p := timeReads(direct)
		p50r, p99r := timeReads(db)
		t.Logf("a page of 50 events, 300 reads: on the primary p50 %v p99 %v; through the replica p50 %v p99 %v; reads %v",
			p50p, p99p, p50r, p99r, reads.take())
	})

	t.Run("a server that is not a standby serves nothing", func(t *testing.T) {
		db, reads := s.open(t, s.service) // the primary itself
		if _, err := db.StreamEvents(ctx, p.WorkspaceID, accountable.EventFilter{}); err != nil {
			t.Fatal(err)
		}
		if n := reads.take(); n["primary/not_a_standby"] != 1 || len(n) != 1 {
			t.Fatalf("reads %v: want one on the primary, the read URL not a standby", n)
		}
	})
}
