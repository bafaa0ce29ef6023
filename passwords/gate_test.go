package passwords_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/accountablework/accountable/passwords"
	"github.com/accountablework/accountable/store/storetest"
)

// holder takes a slot of g for client in a goroutine and reports when it has it; the slot
// is held until release is closed.
type holder struct {
	got     chan struct{}
	err     chan error
	release chan struct{}
}

func hold(ctx context.Context, g *passwords.Gate, client string) *holder {
	h := &holder{got: make(chan struct{}), err: make(chan error, 1), release: make(chan struct{})}
	go func() {
		rel, err := g.Acquire(ctx, client)
		if err != nil {
			h.err <- err
			return
		}
		close(h.got)
		<-h.release
		rel()
	}()
	return h
}

func (h *holder) waitGot(t *testing.T, what string) {
	t.Helper()
	select {
	case <-h.got:
	case err := <-h.err:
		t.Fatalf("%s: refused: %v", what, err)
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no slot within 5s", what)
	}
}

// notYet fails if h was given a slot (or refused). Call it after a hand-on that h must not
// have had (another holder's waitGot): the gate hands slots on under its lock, so waiting
// hashes are then exactly those still waiting, and h is to be among them.
func (h *holder) notYet(t *testing.T, g *passwords.Gate, waiting int, what string) {
	t.Helper()
	if n := g.Waiting(); n != waiting {
		t.Fatalf("%s: %d hashes wait, want %d", what, n, waiting)
	}
	select {
	case <-h.got:
		t.Fatalf("%s: given a slot out of turn", what)
	case err := <-h.err:
		t.Fatalf("%s: refused: %v", what, err)
	default:
	}
}

// settle waits until n hashes wait at the gate: the holders started so far have reached
// it, in order.
func settle(t *testing.T, g *passwords.Gate, n int) {
	t.Helper()
	storetest.WaitFor(t, 5*time.Second, fmt.Sprintf("%d hashes waiting at the gate", n), func() bool { return g.Waiting() == n })
}

// Turns go round the clients with waiters: a client that queued first and most is served
// one at a time, alternating with a client that came later.
func TestGateTakesTurnsAmongClients(t *testing.T) {
	g := passwords.NewGate(1, 4, 64)
	ctx := context.Background()
	first := hold(ctx, g, "flood")
	first.waitGot(t, "the first hash")
	var flood []*holder
	for i := range 3 {
		flood = append(flood, hold(ctx, g, "flood"))
		settle(t, g, i+1)
	}
	other := hold(ctx, g, "other")
	settle(t, g, 4)
	close(first.release)
	flood[0].waitGot(t, "the flood's oldest waiter") // the flood queued first
	other.notYet(t, g, 3, "the other client while the flood's hash runs")
	close(flood[0].release)
	other.waitGot(t, "the other client, next in turn") // not behind the flood's other two
	flood[1].notYet(t, g, 2, "the flood's second waiter")
	close(other.release)
	flood[1].waitGot(t, "the flood's second waiter")
	close(flood[1].release)
	flood[2].waitGot(t, "the flood's third waiter")
	close(flood[2].release)
}

// A client has at most perClient hashes running or waiting; the gate at most maxWaiting
// waiting: past either, ErrBusy at once. Other clients are not refused for the first.
func TestGateRefusesPastItsBounds(t *testing.T) {
	g := passwords.NewGate(1, 2, 3)
	ctx := context.Background()
	a1 := hold(ctx, g, "a")
	a1.waitGot(t, "a's first")
	a2 := hold(ctx, g, "a")
	settle(t, g, 1)
	start := time.Now()
	if _, err := g.Acquire(ctx, "a"); !errors.Is(err, passwords.ErrBusy) {
		t.Fatalf("a's third: %v, want ErrBusy", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the refusal took %v", d)
	}
	b := hold(ctx, g, "b")
	c := hold(ctx, g, "c")
	settle(t, g, 3) // waiting: a2, b, c: the gate is full
	if _, err := g.Acquire(ctx, "d"); !errors.Is(err, passwords.ErrBusy) {
		t.Fatalf("a fourth waiter: %v, want ErrBusy", err)
	}
	for _, h := range []*holder{a1, a2, b, c} {
		close(h.release)
	}
	a2.waitGot(t, "a's second")
	b.waitGot(t, "b")
	c.waitGot(t, "c")
}

// A waiter whose context ends leaves the queue with ErrBusy, and the slots it would have
// had go on to the others.
func TestGateWaitEndsWithItsContext(t *testing.T) {
	g := passwords.NewGate(1, 4, 64)
	first := hold(context.Background(), g, "a")
	first.waitGot(t, "the first")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := g.Acquire(ctx, "b"); !errors.Is(err, passwords.ErrBusy) {
		t.Fatalf("a wait past its deadline: %v", err)
	}
	next := hold(context.Background(), g, "c")
	settle(t, g, 1) // b, whose context ended, no longer waits
	close(first.release)
	next.waitGot(t, "the waiter after the one that gave up")
	close(next.release)
}

// Under many clients at once, never more than the slots run, and every hash runs.
func TestGateNeverRunsMoreThanItsSlots(t *testing.T) {
	g := passwords.NewGate(2, 4, 1000)
	var mu sync.Mutex
	running, most, done := 0, 0, 0
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rel, err := g.Acquire(context.Background(), string(rune('a'+i%50)))
			if err != nil {
				return // a client with four already: refused, as it should be
			}
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(time.Millisecond) // the hash's work: held on purpose, so that holders overlap
			mu.Lock()
			running--
			done++
			mu.Unlock()
			rel()
		}()
	}
	wg.Wait()
	if most > 2 || done == 0 {
		t.Fatalf("at most %d at once (slots 2), %d ran", most, done)
	}
	// Everything released: a new client gets a slot at once.
	rel, err := g.Acquire(context.Background(), "late")
	if err != nil {
		t.Fatalf("after the burst: %v", err)
	}
	rel()
}

// The gate verifies like Verify.
func TestGateVerify(t *testing.T) {
	h, err := passwords.Hash("correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	g := passwords.NewGate(0, 0, 0)
	if g.Slots() < 1 {
		t.Fatalf("default slots %d", g.Slots())
	}
	for pw, want := range map[string]bool{"correct horse battery staple": true, "wrong horse battery staple": false} {
		if ok, err := g.Verify(context.Background(), "c", h, pw); err != nil || ok != want {
			t.Errorf("%q: %v %v", pw, ok, err)
		}
	}
}
