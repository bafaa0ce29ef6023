package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/accountablework/accountable/workflows"
)

// WebhookFeed is what the waker needs of the process's ledger feed (store.LedgerFeed):
// a wake-up whenever a workspace may have new events, from this process's commits at once
// and from the others' through LISTEN/NOTIFY (and every subscriber after the listening
// connection reconnects, since announcements may have been missed meanwhile).
type WebhookFeed interface {
	Subscribe(workspaceID string) (<-chan struct{}, func())
}

// WebhookSignaler is the part of the Temporal client the waker uses.
type WebhookSignaler interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
}

// WebhookEndpoints lists the active endpoints by workspace (store.DB).
type WebhookEndpoints interface {
	ActiveWebhooks(ctx context.Context) (map[string][]string, error)
}

// WebhookWaker wakes the delivery workflows of idle webhook endpoints when their
// workspace commits events, so that an idle endpoint costs no workflow task and no read.
//
// An endpoint's read parks it (activities.Webhooks.NextWebhookDeliveries, before it
// queries): the waker of the process that ran the read watches the endpoint's workspace
// on the ledger feed and, at its next wake-up, sends the endpoint's workflow one wake
// signal (workflows.WebhookWakeSignal) and forgets it; the workflow's next read parks it
// again. So a workflow gets at most one signal per read, a busy one (delivering, not
// reading) none, and a workspace without parked endpoints is not watched at all; with
// several worker processes, only the one that ran an endpoint's last read signals it.
//
// Parks live in memory. Those of a worker that stops are woken as it stops, so their
// workflows read again (and park) on another worker; those of a worker that dies are lost,
// so a worker that starts wakes every active endpoint once. The workflows' fallback timer
// (workflows.WebhookIdleFallback) covers a worker that dies with none starting after it.
type WebhookWaker struct {
	feed      WebhookFeed
	signals   WebhookSignaler
	endpoints WebhookEndpoints
	log       *slog.Logger

	mu       sync.Mutex
	parked   map[string]map[string]struct{} // workspace -> endpoint ids
	watching map[string]bool                // workspaces with a watcher goroutine
	stopped  bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	sent atomic.Int64
}

// Waker tuning.
const (
	wakeSignalTimeout = 5 * time.Second
	// wakeAllConcurrency bounds the signals in flight when every endpoint is woken.
	wakeAllConcurrency = 8
)

// NewWebhookWaker returns a waker; Start begins its watch, Stop ends it.
func NewWebhookWaker(feed WebhookFeed, signals WebhookSignaler, endpoints WebhookEndpoints, log *slog.Logger) *WebhookWaker {
	ctx, cancel := context.WithCancel(context.Background())
	return &WebhookWaker{feed: feed, signals: signals, endpoints: endpoints, log: log,
		parked: map[string]map[string]struct{}{}, watching: map[string]bool{}, ctx: ctx, cancel: cancel}
}

// Start wakes every active endpoint once, in the background: the parks of a worker that
// died went with it.
func (w *WebhookWaker) Start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.wakeAll()
	}()
}

// Stop ends the watch and wakes the endpoints parked here, so that they read again on
// a worker that keeps running (or on this one's successor).
func (w *WebhookWaker) Stop() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.stopped = true
	parked := w.parked
	w.parked = map[string]map[string]struct{}{}
	w.mu.Unlock()
	w.cancel()
	w.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*wakeSignalTimeout)
	defer cancel()
	for ws, ids := range parked {
		w.signal(ctx, ws, ids, false)
	}
}

// Park asks for one wake signal to the endpoint's workflow at the next commit of events
// in its workspace (activities.WebhookWaker).
func (w *WebhookWaker) Park(workspaceID, webhookID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return // Stop has woken the parked endpoints; this one's workflow reads on elsewhere
	}
	set := w.parked[workspaceID]
	if set == nil {
		set = map[string]struct{}{}
		w.parked[workspaceID] = set
	}
	set[webhookID] = struct{}{}
	if w.watching[workspaceID] {
		return
	}
	// Subscribed under the lock, before Park returns: the read that follows cannot miss
	// a commit announced from now on.
	wake, unsubscribe := w.feed.Subscribe(workspaceID)
	w.watching[workspaceID] = true
	w.wg.Add(1)
	go w.watch(workspaceID, wake, unsubscribe)
}

// Parked returns the number of parked endpoints (metrics and tests).
func (w *WebhookWaker) Parked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, set := range w.parked {
		n += len(set)
	}
	return n
}

// Signals returns the number of wake signals sent (metrics and tests).
func (w *WebhookWaker) Signals() int64 { return w.sent.Load() }

// watch wakes the workspace's parked endpoints at each wake-up of the feed, until a
// wake-up finds none parked (the next Park watches again).
func (w *WebhookWaker) watch(workspaceID string, wake <-chan struct{}, unsubscribe func()) {
	defer w.wg.Done()
	defer unsubscribe()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-wake:
		}
		w.mu.Lock()
		ids := w.parked[workspaceID]
		delete(w.parked, workspaceID)
		if len(ids) == 0 {
			delete(w.watching, workspaceID)
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		// Not cancelled by Stop: these endpoints are no longer parked, so a wake dropped
		// here would be lost until their fallback timer.
		w.signal(context.Background(), workspaceID, ids, true)
	}
}

// signal sends each endpoint's workflow a wake signal, at once (a workspace has at most
// WEBHOOK_MAX_ENDPOINTS). A workflow that has ended (its endpoint deleted) is forgotten;
// one that could not be signalled (Temporal slow or unreachable) is retried when retry.
func (w *WebhookWaker) signal(ctx context.Context, workspaceID string, ids map[string]struct{}, retry bool) {
	var wg sync.WaitGroup
	for id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.signalOne(ctx, workspaceID, id); err != nil && retry {
				w.retryLater(workspaceID, id, 0)
			}
		}()
	}
	wg.Wait()
}

// retryLater parks an endpoint whose wake signal failed again and signals it once more
// after a backoff (1 s, doubling to 30 s) unless a commit has woken it meanwhile: the wake
// is owed for a commit that has happened, and none may follow for a long time.
func (w *WebhookWaker) retryLater(workspaceID, webhookID string, attempt int) {
	w.Park(workspaceID, webhookID)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return // Stop wakes it with the other parked endpoints
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		select {
		case <-w.ctx.Done():
			return
		case <-time.After(min(time.Second<<attempt, 30*time.Second)):
		}
		w.mu.Lock()
		_, parked := w.parked[workspaceID][webhookID]
		delete(w.parked[workspaceID], webhookID)
		w.mu.Unlock()
		if !parked {
			return // a commit's wake took it meanwhile
		}
		if err := w.signalOne(context.Background(), workspaceID, webhookID); err != nil {
			w.retryLater(workspaceID, webhookID, min(attempt+1, 5))
		}
	}()
}

func (w *WebhookWaker) signalOne(ctx context.Context, workspaceID, webhookID string) error {
	ctx, cancel := context.WithTimeout(ctx, wakeSignalTimeout)
	defer cancel()
	err := w.signals.SignalWorkflow(ctx, workflows.WebhookDeliveryID(workspaceID, webhookID), "", workflows.WebhookWakeSignal, nil)
	var notFound *serviceerror.NotFound
	switch {
	case err == nil:
		w.sent.Add(1)
	case errors.As(err, &notFound):
		return nil // ended: its endpoint was deleted
	case w.ctx.Err() == nil:
		w.log.Warn("waking a webhook endpoint's deliveries failed; retrying", "workspace_id", workspaceID, "webhook_id", webhookID, "err", err)
	}
	return err
}

// wakeAll signals every active endpoint, retrying the listing while the database is
// unreachable (until Stop).
func (w *WebhookWaker) wakeAll() {
	backoff := time.Second
	for {
		all, err := w.endpoints.ActiveWebhooks(w.ctx)
		if err == nil {
			sem := make(chan struct{}, wakeAllConcurrency)
			var wg sync.WaitGroup
			for ws, ids := range all {
				for _, id := range ids {
					sem <- struct{}{}
					wg.Add(1)
					go func() {
						defer func() { <-sem; wg.Done() }()
						if err := w.signalOne(w.ctx, ws, id); err != nil && w.ctx.Err() == nil {
							w.retryLater(ws, id, 0)
						}
					}()
				}
			}
			wg.Wait()
			return
		}
		if w.ctx.Err() != nil {
			return
		}
		w.log.Warn("listing webhook endpoints to wake them failed; retrying", "err", err, "retry_in", backoff)
		select {
		case <-w.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Minute)
	}
}
