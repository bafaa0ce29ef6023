package worker_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/worker"
	"github.com/accountablework/accountable/workflows"
)

// fakeFeed wakes the subscribers of a workspace when told.
type fakeFeed struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

func (f *fakeFeed) Subscribe(ws string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[string]map[chan struct{}]struct{}{}
	}
	if f.subs[ws] == nil {
		f.subs[ws] = map[chan struct{}]struct{}{}
	}
	f.subs[ws][ch] = struct{}{}
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs[ws], ch)
	}
}

func (f *fakeFeed) commit(ws string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs[ws] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (f *fakeFeed) subscribers(ws string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs[ws])
}

// fakeSignals records the wake signals; the workflows in failing answer an error (those
// in failTimes that many times), those in ended NotFound.
type fakeSignals struct {
	mu        sync.Mutex
	got       []string
	failing   map[string]bool
	failTimes map[string]int
	ended     map[string]bool
}

func (s *fakeSignals) SignalWorkflow(_ context.Context, workflowID, runID, signalName string, arg any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if signalName != workflows.WebhookWakeSignal || runID != "" || arg != nil {
		return errors.New("not a wake signal")
	}
	switch {
	case s.failing[workflowID]:
		return errors.New("temporal unreachable")
	case s.failTimes[workflowID] > 0:
		s.failTimes[workflowID]--
		return errors.New("context deadline exceeded")
	case s.ended[workflowID]:
		return serviceerror.NewNotFound("workflow execution already completed")
	}
	s.got = append(s.got, workflowID)
	return nil
}

// take returns the signals sent so far (sorted) and forgets them.
func (s *fakeSignals) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.got
	s.got = nil
	slices.Sort(out)
	return out
}

type fakeEndpoints map[string][]string

func (e fakeEndpoints) ActiveWebhooks(context.Context) (map[string][]string, error) { return e, nil }

// none fails if a signal was sent. Call it after a proof that whatever could have sent one
// has run (a later signal, a watcher that has stopped, nothing parked), not after a sleep.
func none(t *testing.T, s *fakeSignals, what string) {
	t.Helper()
	if got := s.take(); len(got) != 0 {
		t.Fatalf("%s: signalled %v", what, got)
	}
}

// A parked endpoint gets one wake signal at its workspace's next commit, and no more
// until it parks again; a commit of another workspace wakes nothing; a workspace with
// nothing parked is no longer watched after its next commit. A signal that fails is
// retried at the next commit; an ended workflow is forgotten.
func TestWebhookWakerSignalsParkedEndpointsOnce(t *testing.T) {
	feed, signals := &fakeFeed{}, &fakeSignals{failing: map[string]bool{}, ended: map[string]bool{}}
	w := worker.NewWebhookWaker(feed, signals, fakeEndpoints{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(w.Stop)
	a1, a2, b1 := workflows.WebhookDeliveryID("A", "1"), workflows.WebhookDeliveryID("A", "2"), workflows.WebhookDeliveryID("B", "1")

	w.Park("A", "1")
	w.Park("A", "2")
	w.Park("A", "2") // a second read before a commit: still one signal
	w.Park("B", "1")
	// B's commit wakes B's endpoint alone: its signal is the proof that the waker has
	// processed a commit, and A's endpoints, parked before it, got nothing.
	feed.commit("B")
	storetest.WaitFor(t, 5*time.Second, "B's endpoint woken", func() bool { return w.Signals() == 1 })
	if got := signals.take(); !slices.Equal(got, []string{b1}) {
		t.Fatalf("signals %v", got)
	}
	feed.commit("A")
	storetest.WaitFor(t, 5*time.Second, "A's endpoints woken", func() bool { return w.Signals() == 3 })
	if got := signals.take(); !slices.Equal(got, []string{a1, a2}) {
		t.Fatalf("signals %v", got)
	}
	// A second commit before the endpoints read again: A's watcher finds nothing parked and
	// stops watching (after it would have signalled), and signals nothing.
	feed.commit("A")
	storetest.WaitFor(t, 5*time.Second, "A unwatched", func() bool { return feed.subscribers("A") == 0 })
	none(t, signals, "a second commit before the endpoints read again")

	// Temporal refuses the signal: the endpoint stays parked, and the next commit retries.
	signals.mu.Lock()
	signals.failing[a1], signals.ended[a2] = true, true
	signals.mu.Unlock()
	w.Park("A", "1")
	w.Park("A", "2")
	feed.commit("A")
	storetest.WaitFor(t, 5*time.Second, "the failed signal parked again", func() bool { return w.Parked() == 1 })
	signals.mu.Lock()
	signals.failing[a1] = false
	signals.mu.Unlock()
	feed.commit("A")
	storetest.WaitFor(t, 5*time.Second, "the failed signal retried", func() bool { return w.Signals() == 4 })
	if got := signals.take(); !slices.Equal(got, []string{a1}) || w.Parked() != 0 {
		t.Fatalf("signals %v, %d parked", got, w.Parked())
	}
}

// A waker that starts wakes every active endpoint (the parks of a worker that died went
// with it); one that stops wakes those parked with it, so they read again elsewhere, and
// parks nothing more.
func TestWebhookWakerStartAndStop(t *testing.T) {
	feed, signals := &fakeFeed{}, &fakeSignals{}
	w := worker.NewWebhookWaker(feed, signals, fakeEndpoints{"A": {"1", "2"}, "B": {"3"}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	w.Start()
	storetest.WaitFor(t, 5*time.Second, "every endpoint woken", func() bool { return w.Signals() == 3 })
	want := []string{workflows.WebhookDeliveryID("A", "1"), workflows.WebhookDeliveryID("A", "2"), workflows.WebhookDeliveryID("B", "3")}
	slices.Sort(want)
	if got := signals.take(); !slices.Equal(got, want) {
		t.Fatalf("signals %v, want %v", got, want)
	}
	w.Park("A", "1")
	w.Park("B", "3")
	w.Stop()
	if got := signals.take(); !slices.Equal(got, []string{workflows.WebhookDeliveryID("A", "1"), workflows.WebhookDeliveryID("B", "3")}) {
		t.Fatalf("signals at stop %v", got)
	}
	if feed.subscribers("A") != 0 || feed.subscribers("B") != 0 {
		t.Fatal("still watching after Stop")
	}
	// Stop has waited for its goroutines; a Park after it watches nothing, so no commit can
	// reach it.
	w.Park("A", "2")
	if feed.subscribers("A") != 0 || w.Parked() != 0 {
		t.Fatalf("parked after Stop: %d watching, %d parked", feed.subscribers("A"), w.Parked())
	}
	feed.commit("A")
	none(t, signals, "parked after Stop")
}

// A wake signal that fails (Temporal slow or down) is retried with a backoff, without
// waiting for another commit: the wake is owed for a commit that happened, and none may
// follow.
func TestWebhookWakerRetriesFailedSignals(t *testing.T) {
	feed := &fakeFeed{}
	a1 := workflows.WebhookDeliveryID("A", "1")
	signals := &fakeSignals{failTimes: map[string]int{a1: 2}}
	w := worker.NewWebhookWaker(feed, signals, fakeEndpoints{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(w.Stop)
	w.Park("A", "1")
	started := time.Now()
	feed.commit("A")
	storetest.WaitFor(t, 5*time.Second, "the failed wake retried", func() bool { return w.Signals() == 1 })
	if got, took := signals.take(), time.Since(started); !slices.Equal(got, []string{a1}) || took < 3*time.Second || w.Parked() != 0 {
		t.Fatalf("signals %v after %s (want after the 1 s and 2 s backoffs), %d parked", got, took, w.Parked())
	}
	// Nothing is parked any more, and a retry signals only an endpoint still parked: no
	// second signal can follow.
	none(t, signals, "after the retried wake")
}
