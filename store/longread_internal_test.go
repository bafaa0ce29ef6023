package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accountablework/accountable"
)

// The scheduler of long reads, without a database: runs are functions the test controls.

// gatedRun is a verification run that counts its starts and waits for the test to let it
// finish (or for its context to end).
type gatedRun struct {
	starts  atomic.Int32
	started chan int32 // each start's number
	finish  chan struct{}
	ctxErr  chan error // why a run's context ended, when it did before finish
}

func newGatedRun() *gatedRun {
	return &gatedRun{started: make(chan int32, 16), finish: make(chan struct{}), ctxErr: make(chan error, 16)}
}

func (g *gatedRun) run(ctx context.Context) (accountable.LedgerVerification, error) {
	n := g.starts.Add(1)
	g.started <- n
	select {
	case <-g.finish:
		return accountable.LedgerVerification{Verified: true, EventCount: int64(n)}, nil
	case <-ctx.Done():
		g.ctxErr <- ctx.Err()
		return accountable.LedgerVerification{}, ctx.Err()
	}
}

func waitStart(t *testing.T, g *gatedRun) int32 {
	t.Helper()
	select {
	case n := <-g.started:
		return n
	case <-time.After(5 * time.Second):
		t.Fatal("no run started")
		return 0
	}
}

// noStart fails if a run of g has started. Call it once the scheduler's state shows the
// read waiting (queued, joinedBy): a read still in the queue has not been admitted, so
// its run cannot start later on its own; no waiting is needed, nor would prove more.
func noStart(t *testing.T, g *gatedRun) {
	t.Helper()
	select {
	case n := <-g.started:
		t.Fatalf("run %d started", n)
	default:
	}
}

type verifyAnswer struct {
	res    accountable.LedgerVerification
	joined bool
	err    error
}

func verifyAsync(ctx context.Context, g *longReads, ws, key string, r *gatedRun) chan verifyAnswer {
	out := make(chan verifyAnswer, 1)
	go func() {
		res, joined, err := g.shared(ctx, ws, key, r.run)
		out <- verifyAnswer{res, joined, err}
	}()
	return out
}

func answer(t *testing.T, ch chan verifyAnswer) verifyAnswer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(5 * time.Second):
		t.Fatal("no answer")
		return verifyAnswer{}
	}
}

// queued waits until the scheduler holds n waiting reads. (It and joinedBy poll as
// storetest.WaitFor does, which this internal test of package store cannot import:
// storetest imports store.)
func queued(t *testing.T, g *longReads, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		g.mu.Lock()
		have := len(g.queue)
		g.mu.Unlock()
		if have == n {
			return
		}
	}
	t.Fatalf("the queue never held %d reads", n)
}

// joinedBy waits until the first waiting read has n requests waiting for it.
func joinedBy(t *testing.T, g *longReads, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		g.mu.Lock()
		have := 0
		if len(g.queue) > 0 {
			have = g.queue[0].waiters
		}
		g.mu.Unlock()
		if have == n {
			return
		}
	}
	t.Fatalf("the first waiting read never had %d requests", n)
}

// Verifications asked for while one of the same scope runs wait for it to end, then share
// one run that starts after all of them were asked for; none shares the run already going.
func TestLongReadsShareTheNextRunNotTheRunningOne(t *testing.T) {
	g := newLongReads(2, 5*time.Second)
	r := newGatedRun()
	ctx := context.Background()
	first := verifyAsync(ctx, g, "ws", "", r)
	if n := waitStart(t, r); n != 1 {
		t.Fatalf("first run %d", n)
	}
	var waiting []chan verifyAnswer
	for range 5 {
		waiting = append(waiting, verifyAsync(ctx, g, "ws", "", r))
	}
	queued(t, g, 1) // the five wait together, as one read
	joinedBy(t, g, 5)
	noStart(t, r) // and not beside the running one
	r.finish <- struct{}{}
	if a := answer(t, first); a.err != nil || a.res.EventCount != 1 || a.joined {
		t.Fatalf("first answer %+v", a)
	}
	if n := waitStart(t, r); n != 2 {
		t.Fatalf("second run %d", n)
	}
	close(r.finish)
	joined := 0
	for _, w := range waiting {
		a := answer(t, w)
		if a.err != nil || a.res.EventCount != 2 {
			t.Fatalf("a waiter's answer %+v, want the second run's", a)
		}
		if a.joined {
			joined++
		}
	}
	if joined != 4 || r.starts.Load() != 2 {
		t.Fatalf("%d of 5 joined, %d runs; want 4 and 2", joined, r.starts.Load())
	}
}

// A workspace runs one long read at a time, whatever its kind or scope, and at most
// maxRunning run at once; the others are admitted in arrival order as reads end.
func TestLongReadsOnePerWorkspaceAndAtMostMaxRunning(t *testing.T) {
	g := newLongReads(2, 5*time.Second)
	ctx := context.Background()
	releaseA, err := g.solo(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	// A second read of workspace a (a verification of one aggregate) waits behind the first.
	ra := newGatedRun()
	aAnswer := verifyAsync(ctx, g, "a", "task\x00x", ra)
	queued(t, g, 1)
	noStart(t, ra)
	// Workspace b takes the second connection; c waits for a free one.
	releaseB, err := g.solo(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	var cGot atomic.Bool
	cDone := make(chan func())
	go func() {
		release, err := g.solo(ctx, "c")
		if err != nil {
			t.Error(err)
		}
		cGot.Store(true)
		cDone <- release
	}()
	queued(t, g, 2)
	if cGot.Load() {
		t.Fatal("c ran beside a and b")
	}
	// b ends: c (not a's second read, whose workspace is still busy) gets the connection.
	releaseB()
	releaseC := <-cDone
	queued(t, g, 1) // a's second read still waits
	noStart(t, ra)
	// a's first ends: its second read runs.
	releaseA()
	waitStart(t, ra)
	close(ra.finish)
	if a := answer(t, aAnswer); a.err != nil {
		t.Fatal(a.err)
	}
	releaseC()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running != 0 || len(g.busy) != 0 || len(g.queue) != 0 {
		t.Fatalf("left behind: running %d, busy %v, queue %d", g.running, g.busy, len(g.queue))
	}
}

// A read whose turn does not come within the wait is refused with 429 rate_limited and a
// retryAfter, and leaves the queue; a request that ends first gets its own end.
func TestLongReadsRefuseAfterTheWait(t *testing.T) {
	g := newLongReads(1, 100*time.Millisecond)
	ctx := context.Background()
	release, err := g.solo(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = g.solo(ctx, "a")
	var ae *accountable.Error
	if !errors.As(err, &ae) || ae.Code != accountable.ECodeRateLimited || ae.RetryAfter <= 0 || !errors.Is(err, errWorkspaceLongRead) {
		t.Fatalf("same workspace: %v, want rate_limited (this workspace's long read)", err)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond || waited > 2*time.Second {
		t.Fatalf("refused after %s, want the 100ms wait", waited)
	}
	if _, _, err := g.shared(ctx, "b", "", newGatedRun().run); !errors.Is(err, errLongReadsBusy) {
		t.Fatalf("other workspace: %v, want rate_limited (every long-read connection in use)", err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := g.solo(short, "c"); accountable.ErrorCode(err) != accountable.ECodeDeadlineExceeded {
		t.Fatalf("a request that ended while waiting: %v, want deadline_exceeded", err)
	}
	release()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running != 0 || len(g.queue) != 0 {
		t.Fatalf("left behind: running %d, queue %d", g.running, len(g.queue))
	}
}

// A shared run lasts while one of its requests waits for it: the last to leave cancels it,
// and its connection goes to the next read.
func TestLongReadsCancelARunNobodyWaitsFor(t *testing.T) {
	g := newLongReads(1, 5*time.Second)
	r := newGatedRun()
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	release, err := g.solo(context.Background(), "ws")
	if err != nil {
		t.Fatal(err)
	}
	a1, a2 := verifyAsync(ctx1, g, "ws", "", r), verifyAsync(ctx2, g, "ws", "", r)
	joinedBy(t, g, 2)
	release()
	waitStart(t, r)
	cancel1()
	if a := answer(t, a1); !errors.Is(a.err, context.Canceled) {
		t.Fatalf("the first to leave: %v", a.err)
	}
	select {
	case err := <-r.ctxErr:
		t.Fatalf("the run was cancelled (%v) while a request still waited for it", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel2()
	answer(t, a2)
	select {
	case err := <-r.ctxErr:
		t.Logf("the run ended: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the run went on after every request left")
	}
	next, err := g.solo(context.Background(), "other")
	if err != nil {
		t.Fatalf("the connection was not given back: %v", err)
	}
	next()
}

// Under concurrent use the scheduler never runs two reads of a workspace at once nor more
// than maxRunning, and ends with nothing held.
func TestLongReadsUnderConcurrentUse(t *testing.T) {
	g := newLongReads(2, time.Second)
	var mu sync.Mutex
	running, perWS := 0, map[string]int{}
	enter := func(ws string) {
		mu.Lock()
		defer mu.Unlock()
		running++
		perWS[ws]++
		if running > 2 || perWS[ws] > 1 {
			t.Errorf("%d running, %d of %s", running, perWS[ws], ws)
		}
	}
	exit := func(ws string) {
		mu.Lock()
		defer mu.Unlock()
		running--
		perWS[ws]--
	}
	var wg sync.WaitGroup
	for i := range 60 {
		ws := []string{"a", "b", "c"}[i%3]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				release, err := g.solo(context.Background(), ws)
				if err != nil {
					return // refused: counted below by what is left
				}
				enter(ws)
				time.Sleep(time.Millisecond) // the read's work: held on purpose, so that reads overlap
				exit(ws)
				release()
				return
			}
			g.shared(context.Background(), ws, "", func(context.Context) (accountable.LedgerVerification, error) { //nolint:errcheck // the run is cancelled; its result is not the point
				enter(ws)
				time.Sleep(time.Millisecond) // the read's work: held on purpose, so that reads overlap
				exit(ws)
				return accountable.LedgerVerification{}, nil
			})
		}()
	}
	wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running != 0 || len(g.busy) != 0 || len(g.queue) != 0 {
		t.Fatalf("left behind: running %d, busy %v, queue %d", g.running, g.busy, len(g.queue))
	}
}
