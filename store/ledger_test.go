package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// allEvents reads the workspace's whole stream from the zero position through the store.
// The stream serves only events older than the oldest transaction still running anywhere
// on the server (another test package's, too), so committed events may be held back for a
// moment: it reads until it has at least want of them, failing the test after 20 s.
// It returns the events and the position after the last one.
func allEvents(t *testing.T, db *store.DB, workspaceID string, want int) ([]accountable.Event, accountable.StreamPosition) {
	t.Helper()
	var out []accountable.Event
	var pos accountable.StreamPosition
	storetest.WaitFor(t, 20*time.Second, fmt.Sprintf("the stream to serve %d events", want), func() bool {
		out, pos = nil, accountable.StreamPosition{}
		for {
			page, err := db.StreamEvents(context.Background(), workspaceID, accountable.EventFilter{After: pos, Limit: 1000})
			if err != nil {
				t.Fatalf("StreamEvents: %v", err)
			}
			out = append(out, page.Events...)
			pos = page.Next
			if !page.HasMore {
				break
			}
		}
		return len(out) >= want
	})
	return out, pos
}

// countFromZero counts the events the stream serves from the zero position now.
func countFromZero(ctx context.Context, db *store.DB, workspaceID string) (int, error) {
	var pos accountable.StreamPosition
	n := 0
	for {
		page, err := db.StreamEvents(ctx, workspaceID, accountable.EventFilter{After: pos, Limit: 1000})
		if err != nil {
			return n, err
		}
		n += len(page.Events)
		pos = page.Next
		if !page.HasMore {
			return n, nil
		}
	}
}

// tamperConn connects straight to the test database with the append-only trigger disabled
// for its session (session_replication_role = replica skips ordinary triggers).
func tamperConn(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn := storetest.Conn(t)
	if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err != nil {
		t.Fatalf("disable triggers: %v", err)
	}
	return conn
}

// execOne runs a statement that must change exactly one row.
func execOne(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	tag, err := conn.Exec(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("%s: %d rows affected, want 1", sql, tag.RowsAffected())
	}
}

func TestStreamNeverSkipsOrRepeatsUnderConcurrentWriters(t *testing.T) {
	streamNeverSkipsOrRepeats(t, storetest.Open(t))
}

// streamNeverSkipsOrRepeats reads a new workspace's stream in small pages while 8 writers
// create and complete work in it, and checks that the reader saw every event once, in the
// order of the stream read afterwards.
func streamNeverSkipsOrRepeats(t *testing.T, db *store.DB) {
	const (
		writers = 8
		perW    = 60
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := storetest.NewTenant(t, db).Principal
	want := storetest.TenantEvents + writers*perW + writers*perW/2 // the tenant, creates, completions

	var writersDone atomic.Bool
	type readResult struct {
		events []accountable.Event
		end    accountable.StreamPosition
		pages  int
		err    error
	}
	readerOut := make(chan readResult, 1)
	go func() {
		var r readResult
		var pos accountable.StreamPosition
		seen := 0
		deadline := time.Now().Add(30 * time.Second)
		for {
			// Observed before the read: when true, every writer had committed before
			// this read's snapshot was taken.
			done := writersDone.Load()
			page, err := db.StreamEvents(ctx, p.WorkspaceID, accountable.EventFilter{After: pos, Limit: 7})
			if err != nil {
				r.err = err
				break
			}
			r.pages++
			if len(page.Events) > 7 {
				r.err = fmt.Errorf("page of %d events with limit 7", len(page.Events))
				break
			}
			if len(page.Events) == 0 && page.Next != pos {
				r.err = fmt.Errorf("empty page moved the cursor from %+v to %+v", pos, page.Next)
				break
			}
			r.events = append(r.events, page.Events...)
			seen += len(page.Events)
			pos = page.Next
			if len(page.Events) == 0 {
				// Caught up, once the writers are done. A transaction of another test
				// package holding the cluster's xmin back could make a page empty early,
				// so stop only when the reader has them all or when a read from the zero
				// position sees them all (then the reader skipped some: reported below).
				if done && seen >= want {
					break
				}
				if done {
					n, err := countFromZero(ctx, db, p.WorkspaceID)
					if err != nil {
						r.err = err
						break
					}
					if n >= want {
						break
					}
				}
				if time.Now().After(deadline) {
					r.err = fmt.Errorf("reader gave up with %d of %d events", seen, want)
					break
				}
				// The pace of a reader caught up with the writers, on its own goroutine while
				// they run (not a wait of the test's; the test needs its every page): it reads
				// again a millisecond later.
				time.Sleep(time.Millisecond)
			}
		}
		r.end = pos
		readerOut <- r
	}()

	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perW {
				res, _, err := db.CreateWork(ctx, p, nil, accountable.CreateWork{Title: fmt.Sprintf("w%d-%d", w, i)})
				if err != nil {
					errs <- fmt.Errorf("create w%d-%d: %w", w, i, err)
					return
				}
				if i%2 == 1 {
					continue
				}
				if _, _, err := db.CompleteWork(ctx, p, nil, accountable.CompleteWork{
					TaskID: res.Task.ID, VersionToken: ptr(res.Task.Version().Token()), Summary: ptr("done"),
				}); err != nil {
					errs <- fmt.Errorf("complete w%d-%d: %w", w, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	writersDone.Store(true)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	r := <-readerOut
	if r.err != nil {
		t.Fatalf("reader: %v (after %d pages, %d events)", r.err, r.pages, len(r.events))
	}
	if t.Failed() {
		t.FailNow()
	}

	// Every event exactly once.
	count := map[string]int{}
	for _, e := range r.events {
		count[e.ID]++
		if e.WorkspaceID != p.WorkspaceID {
			t.Errorf("event %s of workspace %s in the stream of %s", e.ID, e.WorkspaceID, p.WorkspaceID)
		}
	}
	for id, n := range count {
		if n != 1 {
			t.Errorf("event %s read %d times", id, n)
		}
	}
	if len(r.events) != want || len(count) != want {
		t.Errorf("read %d events (%d distinct), want %d", len(r.events), len(count), want)
	}

	// The set read while writing equals the ledger read afterwards.
	ledger, end := allEvents(t, db, p.WorkspaceID, want)
	if len(ledger) != want {
		t.Errorf("ledger has %d events, want %d", len(ledger), want)
	}
	inLedger := map[string]bool{}
	skipped := 0
	for _, e := range ledger {
		inLedger[e.ID] = true
		if count[e.ID] == 0 {
			if skipped++; skipped <= 5 {
				t.Errorf("event %s (%s %s v%d) was skipped by the concurrent reader", e.ID, e.EventType, e.AggregateID, e.AggregateVersion)
			}
		}
	}
	if skipped > 0 {
		t.Errorf("the concurrent reader skipped %d events", skipped)
	}
	for id := range count {
		if !inLedger[id] {
			t.Errorf("event %s read concurrently is not in the ledger", id)
		}
	}
	// The stream read afterwards is in the same order as the one read concurrently.
	if len(ledger) == len(r.events) {
		for i := range ledger {
			if ledger[i].ID != r.events[i].ID {
				t.Errorf("stream order differs at %d: concurrent %s, afterwards %s", i, r.events[i].ID, ledger[i].ID)
				break
			}
		}
	}
	// VerifyLedger reads the table without the stream's horizon: same count, intact chains.
	v, err := db.VerifyLedger(ctx, p.WorkspaceID, accountable.LedgerScope{})
	if err != nil || !v.Verified || v.EventCount != int64(want) {
		t.Errorf("VerifyLedger: %+v %v, want verified with %d events", v, err, want)
	}

	// Per aggregate, versions appear in the stream as 1, 2, ... and each task has the
	// events it should.
	lastVersion := map[string]int64{}
	types := map[string]int{}
	for _, e := range r.events {
		types[e.EventType]++
		key := e.AggregateType + "/" + e.AggregateID
		if e.AggregateVersion != lastVersion[key]+1 {
			t.Errorf("%s: version %d follows %d in the stream", key, e.AggregateVersion, lastVersion[key])
		}
		lastVersion[key] = e.AggregateVersion
	}
	tasks, completed := 0, 0
	for key, v := range lastVersion {
		if strings.HasPrefix(key, accountable.AggregateTask+"/") {
			tasks++
			if v == 2 {
				completed++
			}
		}
	}
	if tasks != writers*perW || completed != writers*perW/2 {
		t.Errorf("%d tasks, %d completed; want %d, %d", tasks, completed, writers*perW, writers*perW/2)
	}
	if types[accountable.EventWorkCreated] != writers*perW || types[accountable.EventWorkCompleted] != writers*perW/2 ||
		types["workspace.created"] != 1 || types["api_key.created"] != 1 {
		t.Errorf("event types %v", types)
	}

	// Caught up: both readers end at the same position, and a read from it is empty and
	// keeps it.
	if end != r.end {
		t.Errorf("concurrent reader ended at %+v, the full read at %+v", r.end, end)
	}
	page, err := db.StreamEvents(ctx, p.WorkspaceID, accountable.EventFilter{After: end, Limit: 7})
	if err != nil || len(page.Events) != 0 || page.HasMore || page.Next != end {
		t.Errorf("read after the end: %d events, hasMore=%v, next=%+v, err=%v", len(page.Events), page.HasMore, page.Next, err)
	}
}

// handMadeEvent builds a valid event, digest and hash included, as the store would.
func handMadeEvent(t *testing.T, workspaceID, aggregateType, aggregateID string, version int64, previousHash *string) accountable.Event {
	t.Helper()
	now := accountable.Now()
	e := accountable.Event{EventHeader: accountable.EventHeader{
		ID: uuid.NewString(), WorkspaceID: workspaceID, AggregateType: aggregateType, AggregateID: aggregateID,
		AggregateVersion: version, EventType: "test.annotated", SchemaVersion: accountable.SchemaVersion,
		ActorType: accountable.ActorSystem, ActorID: "ledger-test",
		OccurredAt: accountable.TimeOf(now), RecordedAt: accountable.TimeOf(now), PreviousHash: previousHash,
	}, Payload: accountable.Object(`{"note":"hand-made"}`)}
	var err error
	if e.PayloadDigest, err = canonical.DigestOf(e.Payload); err != nil {
		t.Fatal(err)
	}
	if e.EventHash, err = canonical.DigestOf(e.EventHeader); err != nil {
		t.Fatal(err)
	}
	return e
}

// insertEvent appends e with raw SQL as a command would: the event (inserts pass the
// append-only trigger) and its aggregate's anchored head.
func insertEvent(t *testing.T, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, e accountable.Event) {
	t.Helper()
	tag, err := q.Exec(context.Background(), `INSERT INTO ledger_events (workspace_id, id, aggregate_type, aggregate_id,
		aggregate_version, event_type, schema_version, actor_type, actor_id, payload, payload_digest, occurred_at,
		recorded_at, previous_hash, event_hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12, $13, $14, $15)`,
		e.WorkspaceID, e.ID, e.AggregateType, e.AggregateID, e.AggregateVersion, e.EventType, e.SchemaVersion,
		string(e.ActorType), e.ActorID, string(e.Payload), e.PayloadDigest, e.OccurredAt.Time, e.RecordedAt.Time, e.PreviousHash, e.EventHash)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("insert event: %v (%d rows)", err, tag.RowsAffected())
	}
	if _, err := q.Exec(context.Background(), `INSERT INTO ledger_heads (workspace_id, aggregate_type, aggregate_id, version, event_id, event_hash, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (workspace_id, aggregate_type, aggregate_id)
		DO UPDATE SET version = excluded.version, event_id = excluded.event_id, event_hash = excluded.event_hash`,
		e.WorkspaceID, e.AggregateType, e.AggregateID, e.AggregateVersion, e.ID, e.EventHash, e.RecordedAt.Time); err != nil {
		t.Fatalf("move the head: %v", err)
	}
}

func TestStreamHoldsBackEventsBehindAnInFlightTransaction(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	p := storetest.NewTenant(t, db).Principal
	setup, end := allEvents(t, db, p.WorkspaceID, storetest.TenantEvents)
	if len(setup) != storetest.TenantEvents {
		t.Fatalf("setup events: %d, want %d", len(setup), storetest.TenantEvents)
	}

	// A writer that takes its transaction id first and commits last...
	conn := storetest.Conn(t)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	late := handMadeEvent(t, p.WorkspaceID, "test_aggregate", uuid.NewString(), 1, nil)
	insertEvent(t, tx, late)
	// ...and one that starts after it and commits first.
	early := createTask(t, db, p, "early")

	// While the late writer is in flight, the early commit must not be served: a reader
	// would move its cursor past the late event and never see it.
	for range 3 {
		page, err := db.StreamEvents(ctx, p.WorkspaceID, accountable.EventFilter{After: end, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) != 0 || page.Next != end || page.HasMore {
			var ids []string
			for _, e := range page.Events {
				ids = append(ids, e.EventType+" "+e.ID)
			}
			t.Fatalf("served %v behind an in-flight transaction; next %+v, want %+v", ids, page.Next, end)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	// Now both are served from the old cursor, in transaction order: the late one first.
	var got []accountable.Event
	pos := end
	storetest.WaitFor(t, 20*time.Second, "both events served from the old cursor", func() bool {
		page, err := db.StreamEvents(ctx, p.WorkspaceID, accountable.EventFilter{After: pos, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page.Events...)
		pos = page.Next
		return len(got) >= 2
	})
	if len(got) != 2 || got[0].ID != late.ID || got[1].AggregateID != early.ID || got[1].EventType != accountable.EventWorkCreated {
		var ids []string
		for _, e := range got {
			ids = append(ids, e.EventType+" "+e.ID)
		}
		t.Fatalf("after the late commit the stream served %v; want the late event %s, then the creation of %s", ids, late.ID, early.ID)
	}
	if got[0].EventHash != late.EventHash || got[0].PayloadDigest != late.PayloadDigest {
		t.Errorf("late event read back with hash %s digest %s, written with %s %s", got[0].EventHash, got[0].PayloadDigest, late.EventHash, late.PayloadDigest)
	}
	v := verify(t, db, p.WorkspaceID, accountable.LedgerScope{})
	if !v.Verified || v.EventCount != storetest.TenantEvents+2 {
		t.Errorf("verification %+v", v)
	}
}

// ledgerFixture is a workspace with three tasks, two of them completed.
type ledgerFixture struct {
	p         accountable.Principal
	events    []accountable.Event // the whole stream
	created   accountable.Event   // version 1 of a completed task
	completed accountable.Event   // version 2 of that task
	other     accountable.Event   // version 1 of another completed task
	result    accountable.WorkCompletion
}

const fixtureEvents = storetest.TenantEvents + 5 // the tenant, 3 x work.created, 2 x work.completed

func newLedgerFixture(t *testing.T, db *store.DB) ledgerFixture {
	t.Helper()
	ctx := context.Background()
	f := ledgerFixture{p: storetest.NewTenant(t, db).Principal}
	var done []accountable.WorkCompletion
	for i := range 3 {
		task := createTask(t, db, f.p, fmt.Sprintf("task %d", i))
		if i == 2 {
			break
		}
		res, _, err := db.CompleteWork(ctx, f.p, nil, accountable.CompleteWork{TaskID: task.ID, VersionToken: ptr(task.Version().Token()), Summary: ptr("done")})
		if err != nil {
			t.Fatalf("CompleteWork: %v", err)
		}
		done = append(done, res)
	}
	f.result = done[0]
	f.events, _ = allEvents(t, db, f.p.WorkspaceID, fixtureEvents)
	if len(f.events) != fixtureEvents {
		t.Fatalf("fixture has %d events, want %d", len(f.events), fixtureEvents)
	}
	for _, e := range f.events {
		switch {
		case e.AggregateID == done[0].Task.ID && e.AggregateVersion == 1:
			f.created = e
		case e.AggregateID == done[0].Task.ID && e.AggregateVersion == 2:
			f.completed = e
		case e.AggregateID == done[1].Task.ID && e.AggregateVersion == 1:
			f.other = e
		}
	}
	if f.created.ID == "" || f.completed.ID == "" || f.other.ID == "" {
		t.Fatalf("fixture events not found in %+v", f.events)
	}
	return f
}

func verify(t *testing.T, db *store.DB, workspaceID string, scope accountable.LedgerScope) accountable.LedgerVerification {
	t.Helper()
	v, err := db.VerifyLedger(context.Background(), workspaceID, scope)
	if err != nil {
		t.Fatalf("VerifyLedger: %v", err)
	}
	return v
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// wantIntact asserts v reports an unbroken ledger of n events whose head is head.
func wantIntact(t *testing.T, v accountable.LedgerVerification, n int64, head string) {
	t.Helper()
	if !v.Verified || v.EventCount != n || v.FirstBrokenEventID != nil || v.FirstBrokenReason != nil || str(v.HeadHash) != head {
		t.Fatalf("verification %+v (head %s, broken %s: %s); want verified, %d events, head %s",
			v, str(v.HeadHash), str(v.FirstBrokenEventID), str(v.FirstBrokenReason), n, head)
	}
}

// wantBroken asserts v reports event id as the first broken one, for a reason containing reason.
func wantBroken(t *testing.T, v accountable.LedgerVerification, n int64, id, reason string) {
	t.Helper()
	if v.Verified || v.EventCount != n || str(v.FirstBrokenEventID) != id || !strings.Contains(str(v.FirstBrokenReason), reason) {
		t.Fatalf("verification %+v (broken %s: %q); want broken at %s for %q with %d events",
			v, str(v.FirstBrokenEventID), str(v.FirstBrokenReason), id, reason, n)
	}
}

func TestVerifyLedgerDetectsTampering(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)

	// A bystander workspace that must stay verified whatever happens to the others.
	bystander := newLedgerFixture(t, db)
	bystanderHead := bystander.events[len(bystander.events)-1].EventHash
	wantIntact(t, verify(t, db, bystander.p.WorkspaceID, accountable.LedgerScope{}), fixtureEvents, bystanderHead)

	t.Run("intact", func(t *testing.T) {
		f := newLedgerFixture(t, db)
		wantIntact(t, verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{}), fixtureEvents, f.events[len(f.events)-1].EventHash)
		v := verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{AggregateType: accountable.AggregateTask, AggregateID: f.created.AggregateID})
		wantIntact(t, v, 2, f.completed.EventHash)
	})

	t.Run("append-only trigger", func(t *testing.T) {
		// The service role may not update or delete events at all (roles_test.go); the
		// trigger stops even the owner.
		f := newLedgerFixture(t, db)
		conn, err := pgx.Connect(ctx, storetest.OwnerURL(t))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		for _, sql := range []string{
			`UPDATE ledger_events SET payload = '{"tampered":true}' WHERE workspace_id = $1 AND id = $2`,
			`DELETE FROM ledger_events WHERE workspace_id = $1 AND id = $2`,
		} {
			_, err := conn.Exec(ctx, sql, f.p.WorkspaceID, f.created.ID)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "42501" || !strings.Contains(pgErr.Message, "append-only") {
				t.Fatalf("%s: err = %v, want the append-only trigger's insufficient_privilege", sql, err)
			}
		}
		wantIntact(t, verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{}), fixtureEvents, f.events[len(f.events)-1].EventHash)
	})

	t.Run("payload changed", func(t *testing.T) {
		f := newLedgerFixture(t, db)
		execOne(t, tamperConn(t), `UPDATE ledger_events SET payload = jsonb_set(payload, '{task,title}', '"tampered"')
			WHERE workspace_id = $1 AND id = $2`, f.p.WorkspaceID, f.created.ID)
		wantBroken(t, verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{}), fixtureEvents, f.created.ID, "payloadDigest")
		// Scoped to the tampered task: broken; to another task: intact.
		v := verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{AggregateType: accountable.AggregateTask, AggregateID: f.created.AggregateID})
		wantBroken(t, v, 2, f.created.ID, "payloadDigest")
		v = verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{AggregateType: accountable.AggregateTask, AggregateID: f.other.AggregateID})
		if !v.Verified || v.EventCount != 2 {
			t.Fatalf("other task: %+v", v)
		}
	})

	t.Run("payload digest changed to match", func(t *testing.T) {
		// Rewriting the payload and its digest consistently still breaks the event hash.
		f := newLedgerFixture(t, db)
		forged := accountable.Object(`{"task":{"title":"forged"}}`)
		digest, err := canonical.DigestOf(forged)
		if err != nil {
			t.Fatal(err)
		}
		execOne(t, tamperConn(t), `UPDATE ledger_events SET payload = $3::jsonb, payload_digest = $4
			WHERE workspace_id = $1 AND id = $2`, f.p.WorkspaceID, f.created.ID, string(forged), digest)
		wantBroken(t, verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{}), fixtureEvents, f.created.ID, "eventHash")
	})

	t.Run("event hash changed", func(t *testing.T) {
		// The head of a chain: nothing links to it, so only recomputing its hash finds it.
		f := newLedgerFixture(t, db)
		execOne(t, tamperConn(t), `UPDATE ledger_events SET event_hash = 'sha256:' || repeat('0', 64)
			WHERE workspace_id = $1 AND id = $2`, f.p.WorkspaceID, f.completed.ID)
		wantBroken(t, verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{}), fixtureEvents, f.completed.ID, "eventHash")
	})

	t.Run("event hash of a linked event changed", func(t *testing.T) {
		// Version 1 and the link of version 2 both break; version 1 comes first.
		f := newLedgerFixture(t, db)
		execOne(t, tamperConn(t), `UPDATE ledger_events SET event_hash = 'sha256:' || repeat('0', 64)
			WHERE workspace_id = $1 AND id = $2`, f.p.WorkspaceID, f.created.ID)
		wantBroken(t, verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{}), fixtureEvents, f.created.ID, "eventHash")
	})

	t.Run("previous hash changed", func(t *testing.T) {
		f := newLedgerFixture(t, db)
		execOne(t, tamperConn(t), `UPDATE ledger_events SET previous_hash = $3 WHERE workspace_id = $1 AND id = $2`,
			f.p.WorkspaceID, f.completed.ID, f.other.EventHash)
		wantBroken(t, verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{}), fixtureEvents, f.completed.ID, "")
	})

	t.Run("previous hash changed and event rehashed", func(t *testing.T) {
		// A forger who recomputes the event hash is caught by the chain link.
		f := newLedgerFixture(t, db)
		forged := f.completed
		forged.PreviousHash = &f.other.EventHash
		h, err := canonical.DigestOf(forged.EventHeader)
		if err != nil {
			t.Fatal(err)
		}
		execOne(t, tamperConn(t), `UPDATE ledger_events SET previous_hash = $3, event_hash = $4 WHERE workspace_id = $1 AND id = $2`,
			f.p.WorkspaceID, f.completed.ID, f.other.EventHash, h)
		wantBroken(t, verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{}), fixtureEvents, f.completed.ID, "previousHash does not link")
	})

	t.Run("first event of a chain deleted", func(t *testing.T) {
		f := newLedgerFixture(t, db)
		execOne(t, tamperConn(t), `DELETE FROM ledger_events WHERE workspace_id = $1 AND id = $2`, f.p.WorkspaceID, f.created.ID)
		wantBroken(t, verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{}), fixtureEvents-1, f.completed.ID, "starts at version 2")
	})

	t.Run("middle event of a chain deleted", func(t *testing.T) {
		// No command writes a third version of one aggregate yet, so append a valid
		// version 3 to the completed task first, as a command would (inserts pass the
		// append-only trigger).
		f := newLedgerFixture(t, db)
		third := handMadeEvent(t, f.p.WorkspaceID, f.completed.AggregateType, f.completed.AggregateID, 3, &f.completed.EventHash)
		conn := tamperConn(t)
		insertEvent(t, conn, third)
		execOne(t, conn, `UPDATE tasks SET aggregate_version = 3 WHERE workspace_id = $1 AND id = $2`, f.p.WorkspaceID, f.completed.AggregateID)
		wantIntact(t, verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{}), fixtureEvents+1, third.EventHash)

		execOne(t, conn, `DELETE FROM ledger_events WHERE workspace_id = $1 AND id = $2`, f.p.WorkspaceID, f.completed.ID)
		wantBroken(t, verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{}), fixtureEvents, third.ID, "version 3 follows 1")
	})

	t.Run("newest event of a chain deleted", func(t *testing.T) {
		// Nothing links to the newest event; its anchored head does.
		f := newLedgerFixture(t, db)
		execOne(t, tamperConn(t), `DELETE FROM ledger_events WHERE workspace_id = $1 AND id = $2`, f.p.WorkspaceID, f.completed.ID)
		wantBroken(t, verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{}), fixtureEvents-1, f.completed.ID, "newest events of task")
		scoped := verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{AggregateType: accountable.AggregateTask, AggregateID: f.completed.AggregateID})
		wantBroken(t, scoped, 1, f.completed.ID, "newest events of task")
	})

	t.Run("newest event and its head rewound", func(t *testing.T) {
		// A forger who also moves the anchor back is caught by the task's own version.
		f := newLedgerFixture(t, db)
		conn := tamperConn(t)
		execOne(t, conn, `DELETE FROM ledger_events WHERE workspace_id = $1 AND id = $2`, f.p.WorkspaceID, f.completed.ID)
		execOne(t, conn, `UPDATE ledger_heads SET version = 1, event_id = $3, event_hash = $4
			WHERE workspace_id = $1 AND aggregate_type = 'task' AND aggregate_id = $2`,
			f.p.WorkspaceID, f.completed.AggregateID, f.created.ID, f.created.EventHash)
		wantBroken(t, verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{}), fixtureEvents-1, f.created.ID, "is at version 2 but its chain at version 1")
	})

	t.Run("ledger truncated", func(t *testing.T) {
		// Every event of the workspace gone (TRUNCATE, as far as one workspace can tell).
		f := newLedgerFixture(t, db)
		if _, err := tamperConn(t).Exec(ctx, `DELETE FROM ledger_events WHERE workspace_id = $1`, f.p.WorkspaceID); err != nil {
			t.Fatal(err)
		}
		v := verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{})
		if v.Verified || v.EventCount != 0 || !strings.Contains(str(v.FirstBrokenReason), "missing from the ledger") {
			t.Fatalf("truncated ledger: %+v (%s)", v, str(v.FirstBrokenReason))
		}
	})

	t.Run("whole aggregate removed", func(t *testing.T) {
		// All events of one task and its head gone: the task's own row still says it exists.
		f := newLedgerFixture(t, db)
		conn := tamperConn(t)
		if _, err := conn.Exec(ctx, `DELETE FROM ledger_events WHERE workspace_id = $1 AND aggregate_id = $2`, f.p.WorkspaceID, f.created.AggregateID); err != nil {
			t.Fatal(err)
		}
		execOne(t, conn, `DELETE FROM ledger_heads WHERE workspace_id = $1 AND aggregate_id = $2`, f.p.WorkspaceID, f.created.AggregateID)
		v := verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{})
		if v.Verified || v.EventCount != fixtureEvents-2 || !strings.Contains(str(v.FirstBrokenReason), "task "+f.created.AggregateID+" exists but has no events") {
			t.Fatalf("removed aggregate: %+v (%s)", v, str(v.FirstBrokenReason))
		}
	})

	t.Run("event inserted behind the store", func(t *testing.T) {
		// A well-formed chain the service never anchored.
		f := newLedgerFixture(t, db)
		stray := handMadeEvent(t, f.p.WorkspaceID, "note", uuid.NewString(), 1, nil)
		execOne(t, tamperConn(t), `INSERT INTO ledger_events (workspace_id, id, aggregate_type, aggregate_id,
			aggregate_version, event_type, schema_version, actor_type, actor_id, payload, payload_digest, occurred_at,
			recorded_at, previous_hash, event_hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12, $13, $14, $15)`,
			stray.WorkspaceID, stray.ID, stray.AggregateType, stray.AggregateID, stray.AggregateVersion, stray.EventType, stray.SchemaVersion,
			string(stray.ActorType), stray.ActorID, string(stray.Payload), stray.PayloadDigest, stray.OccurredAt.Time, stray.RecordedAt.Time,
			stray.PreviousHash, stray.EventHash)
		wantBroken(t, verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{}), fixtureEvents+1, stray.ID, "has no anchored head")
	})

	// Nothing done to the other workspaces touched the bystander.
	wantIntact(t, verify(t, db, bystander.p.WorkspaceID, accountable.LedgerScope{}), fixtureEvents, bystanderHead)
}

func TestEventHashCanBeRecomputedFromStreamItems(t *testing.T) {
	db := storetest.Open(t)
	f := newLedgerFixture(t, db)
	for _, e := range f.events {
		digest, err := canonical.DigestOf(e.Payload)
		if err != nil || digest != e.PayloadDigest {
			t.Errorf("%s %s: payload digest recomputed %s (%v), stored %s", e.EventType, e.ID, digest, err, e.PayloadDigest)
		}
		h, err := canonical.DigestOf(e.EventHeader)
		if err != nil || h != e.EventHash {
			t.Errorf("%s %s: event hash recomputed %s (%v), stored %s", e.EventType, e.ID, h, err, e.EventHash)
		}
		if !strings.HasPrefix(e.EventHash, "sha256:") || len(e.EventHash) != len("sha256:")+64 {
			t.Errorf("%s: event hash %q", e.ID, e.EventHash)
		}
		if (e.AggregateVersion == 1) != (e.PreviousHash == nil) {
			t.Errorf("%s v%d: previousHash %s", e.ID, e.AggregateVersion, str(e.PreviousHash))
		}
	}
	// The completion links to the creation, and the stream item is what the command returned.
	if str(f.completed.PreviousHash) != f.created.EventHash {
		t.Errorf("work.completed previousHash %s, want work.created eventHash %s", str(f.completed.PreviousHash), f.created.EventHash)
	}
	if f.completed.EventType != accountable.EventWorkCompleted || f.created.EventType != accountable.EventWorkCreated {
		t.Errorf("event types %s, %s", f.created.EventType, f.completed.EventType)
	}
	if f.result.EventRef != f.completed.Ref() {
		t.Errorf("command returned %+v, stream has %+v", f.result.EventRef, f.completed.Ref())
	}
	// The hash covers the envelope: changing any hashed field changes it.
	for name, mutate := range map[string]func(*accountable.Event){
		"actorId":       func(e *accountable.Event) { e.ActorID += "x" },
		"previousHash":  func(e *accountable.Event) { e.PreviousHash = nil },
		"payloadDigest": func(e *accountable.Event) { e.PayloadDigest = f.created.PayloadDigest },
		"recordedAt":    func(e *accountable.Event) { e.RecordedAt = accountable.TimeOf(e.RecordedAt.Add(time.Microsecond)) },
		"version":       func(e *accountable.Event) { e.AggregateVersion++ },
	} {
		e := f.completed
		mutate(&e)
		if h, err := canonical.DigestOf(e.EventHeader); err != nil || h == f.completed.EventHash {
			t.Errorf("changing %s left the event hash %s (%v)", name, h, err)
		}
	}
	// The payload is not in the hash (its digest is), so it can be recomputed from the item.
	e := f.completed
	e.Payload = []byte(`{}`)
	if h, _ := canonical.DigestOf(e.EventHeader); h != f.completed.EventHash {
		t.Errorf("the event hash depends on the payload itself, not only on its digest")
	}
}

// Stream positions are ordered as numbers, not as text: 99 comes before 100.
func TestStreamOrdersPositionsNumerically(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	p := storetest.NewTenant(t, db).Principal
	conn := tamperConn(t)
	// Events of (pretend) old transactions whose ids cross digit boundaries; all far below
	// the horizon of running transactions even on a new cluster, so all are served.
	for _, tx := range []string{"8", "9", "10", "11", "99", "100"} {
		e := handMadeEvent(t, p.WorkspaceID, "probe", "tx-"+tx, 1, nil)
		insertEvent(t, conn, e)
		execOne(t, conn, `UPDATE ledger_events SET stream_position = $1::text::bigint WHERE id = $2`, tx, e.ID)
	}
	var got []string
	var pos accountable.StreamPosition
	for {
		page, err := db.StreamEvents(ctx, p.WorkspaceID, accountable.EventFilter{After: pos, Limit: 1, AggregateTypes: []string{"probe"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Events {
			got = append(got, strings.TrimPrefix(e.AggregateID, "tx-"))
		}
		pos = page.Next
		if !page.HasMore {
			break
		}
	}
	if strings.Join(got, ",") != "8,9,10,11,99,100" {
		t.Fatalf("stream order %v", got)
	}
}

// A verification while commands commit sees one snapshot: read one query at a time, a
// task committed between its events and its heads looked like a chain missing from the
// ledger (found with two API processes running verifications side by side).
func TestVerifyLedgerWhileCommandsCommit(t *testing.T) {
	db := storetest.Open(t)
	p := storetest.NewTenant(t, db).Principal
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for n := range 150 {
				createTask(t, db, p, fmt.Sprintf("written during verification %d-%d", w, n))
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	for verifications := 0; ; verifications++ {
		select {
		case <-done:
			if verifications < 5 {
				t.Fatalf("only %d verifications ran while the commands committed", verifications)
			}
			return
		default:
		}
		v, err := db.VerifyLedger(context.Background(), p.WorkspaceID, accountable.LedgerScope{})
		if err != nil {
			t.Fatal(err)
		}
		if !v.Verified {
			t.Fatalf("a verification while commands commit: %s", *v.FirstBrokenReason)
		}
	}
}
