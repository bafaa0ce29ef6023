package store_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// startFeed runs a feed of db until the test ends and waits until it listens.
func startFeed(t *testing.T, db *store.DB) *store.LedgerFeed {
	t.Helper()
	f := store.NewLedgerFeed(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	storetest.WaitFor(t, 10*time.Second, "the feed to listen", f.Listening)
	return f
}

func woken(ch <-chan struct{}, within time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(within):
		return false
	}
}

// A commit wakes the subscribers of its workspace in its own process at once and in
// another process (another DB and feed) through NOTIFY; other workspaces' subscribers
// sleep on, and an ended subscription hears nothing.
func TestLedgerFeedWakesTheWorkspacesSubscribers(t *testing.T) {
	db1, db2 := storetest.Open(t), storetest.Open(t)
	f1, f2 := startFeed(t, db1), startFeed(t, db2)
	a, b := storetest.NewTenant(t, db1), storetest.NewTenant(t, db1)

	here, endHere := f1.Subscribe(a.Principal.WorkspaceID)
	there, endThere := f2.Subscribe(a.Principal.WorkspaceID)
	bystander, endBystander := f2.Subscribe(b.Principal.WorkspaceID)
	defer endHere()
	defer endThere()
	defer endBystander()
	for _, ch := range []<-chan struct{}{here, there, bystander} { // the wake-ups of listening's start
		for woken(ch, 200*time.Millisecond) {
		}
	}

	createTask(t, db1, a.Principal, "announced")
	if !woken(here, 100*time.Millisecond) {
		t.Fatal("the committing process's subscriber was not woken at once")
	}
	if !woken(there, 5*time.Second) {
		t.Fatal("another process's subscriber was not woken")
	}
	if woken(bystander, 300*time.Millisecond) {
		t.Fatal("another workspace's subscriber was woken")
	}
	if woken(here, 300*time.Millisecond) {
		t.Fatal("the committing process woke its subscriber twice (its own NOTIFY)")
	}

	endThere()
	if n := f2.Subscribers(); n != 1 {
		t.Fatalf("%d subscriptions after one ended, want 1", n)
	}
	createTask(t, db1, a.Principal, "after the end")
	if woken(there, 500*time.Millisecond) {
		t.Fatal("an ended subscription was woken")
	}
}

// Many commits in a burst wake a subscriber of another process, however they coalesce.
func TestLedgerFeedCoalescesBursts(t *testing.T) {
	db1, db2 := storetest.Open(t), storetest.Open(t)
	startFeed(t, db1)
	f2 := startFeed(t, db2)
	tenants := make([]storetest.Tenant, 20)
	for i := range tenants {
		tenants[i] = storetest.NewTenant(t, db1)
	}
	last, end := f2.Subscribe(tenants[len(tenants)-1].Principal.WorkspaceID)
	defer end()
	for woken(last, 200*time.Millisecond) {
	}
	for _, ten := range tenants {
		createTask(t, db1, ten.Principal, "burst")
	}
	if !woken(last, 5*time.Second) {
		t.Fatal("the last workspace of a burst was not announced")
	}
}
