package activities

import (
	"context"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/discovery"
)

// DiscoveryStore is what the discovery activities need.
type DiscoveryStore interface {
	DiscoveryRequest(ctx context.Context, workspaceID, id string) (accountable.StartDiscoveryRun, accountable.DiscoveryStatus, error)
	StreamEvents(ctx context.Context, workspaceID string, f accountable.EventFilter) (accountable.EventPage, error)
	DiscoveryWork(ctx context.Context, workspaceID string, taskIDs []string) (map[string]accountable.WorkFacts, error)
	DiscoveryProgress(ctx context.Context, workspaceID, id string, counts accountable.DiscoveryCounts, cards []accountable.ProcessCard) error
	FinishDiscoveryRun(ctx context.Context, workspaceID, id string, status accountable.DiscoveryStatus, counts accountable.DiscoveryCounts,
		cards []accountable.ProcessCard, failure *string) (accountable.DiscoveryRun, error)
}

// Discovery holds the discovery activities.
type Discovery struct {
	Store DiscoveryStore
	// ProgressEvery is how often a run records its counts and candidates so far (default 2 s).
	ProgressEvery time.Duration
}

// DiscoveryRef names a discovery run.
type DiscoveryRef struct {
	WorkspaceID string `json:"workspaceId"`
	RunID       string `json:"runId"`
}

// Discovery bounds: the page of ledger events read at a time, and the events a
// bounded_sync run reads at most (beyond, it ends partial; deep_search reads them all).
const (
	discoveryPage       = 2000
	boundedSyncMaxEvent = 200000
	// requestHorizonWait bounds the wait for the run's own request event to reach the
	// stream (beyond, the run ends partial with what it read).
	requestHorizonWait = 30 * time.Second
)

// MineDiscoveryRun mines the run's sources and records its result (see discovery.Mine).
// It heartbeats after every page; a retry (a worker restarted) mines again from the
// start, which gives the same result. A run already finished is left as it is.
func (a *Discovery) MineDiscoveryRun(ctx context.Context, in DiscoveryRef) (accountable.DiscoveryStatus, error) {
	req, status, err := a.Store.DiscoveryRequest(ctx, in.WorkspaceID, in.RunID)
	if err != nil || status.Finished() {
		return status, retryable(err)
	}
	every := a.ProgressEvery
	if every <= 0 {
		every = 2 * time.Second
	}
	var events []accountable.TraceEvent
	var ordinary []accountable.CompletedWork // completed work without case metadata, for discovery.InferCases
	counts := accountable.DiscoveryCounts{Observations: len(req.Observations)}
	if req.Mines(accountable.SourceObservations) {
		events = discovery.ObservationEvents(req.Observations)
	}
	final := accountable.DiscoverySucceeded
	ledger := req.Mines(accountable.SourceWork) || req.Mines(accountable.SourceHandoffs) || req.Mines(accountable.SourceReceipts)
	last := time.Now()
	// The stream also gives the run's own request event: the run reads on until it has
	// passed it, so that it mines everything committed before it was requested. (The
	// stream stops below the oldest transaction still open in the cluster; an unrelated
	// open transaction can hold the newest events back for a moment.)
	f := accountable.EventFilter{EventTypes: append(slices.Clone(discovery.EventTypes), accountable.EventDiscoveryRunRequested),
		Limit: discoveryPage}
	reached, waitUntil := false, time.Now().Add(requestHorizonWait)
	for pos := int64(0); ledger; {
		page, err := a.Store.StreamEvents(ctx, in.WorkspaceID, f)
		if err != nil {
			return "", retryable(err)
		}
		var taskIDs []string
		requests := 0
		for _, e := range page.Events {
			switch e.EventType {
			case accountable.EventWorkCompleted:
				taskIDs = append(taskIDs, e.AggregateID)
			case accountable.EventDiscoveryRunRequested:
				requests++
				reached = reached || e.AggregateID == in.RunID
			}
		}
		work, err := a.Store.DiscoveryWork(ctx, in.WorkspaceID, taskIDs)
		if err != nil {
			return "", retryable(err)
		}
		events, ordinary = discovery.AppendTraceEvents(events, ordinary, page.Events, work, pos, req.Mines)
		pos += int64(len(page.Events))
		counts.EventsRead += len(page.Events) - requests
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, counts)
		}
		if len(page.Events) > 0 {
			f.After = page.Next
		}
		if !page.HasMore || len(page.Events) == 0 {
			if reached {
				break
			}
			if time.Now().After(waitUntil) { // held back too long: what was read is all this run mines
				final = accountable.DiscoveryPartial
				break
			}
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		if req.ModeOr() == accountable.DiscoveryBoundedSync && counts.EventsRead >= boundedSyncMaxEvent {
			final = accountable.DiscoveryPartial
			break
		}
		if time.Since(last) >= every {
			began := time.Now()
			cards, cases := mineHeartbeating(ctx, in.RunID, events, ordinary, counts)
			counts.Cases, counts.Candidates = cases, len(cards)
			if err := a.Store.DiscoveryProgress(ctx, in.WorkspaceID, in.RunID, counts, cards); err != nil {
				return "", retryable(err)
			}
			last = time.Now()
			// Mining what was read so far grows with it: progress takes at most a fifth of
			// the run's time.
			every = max(every, 5*last.Sub(began))
		}
	}
	cards, cases := mineHeartbeating(ctx, in.RunID, events, ordinary, counts)
	counts.Cases, counts.Candidates = cases, len(cards)
	run, err := a.Store.FinishDiscoveryRun(ctx, in.WorkspaceID, in.RunID, final, counts, cards, nil)
	return run.Status, retryable(err)
}

// mineHeartbeating mines (discovery.MineWork) while heartbeating every 2 s: mining a
// large run's events and inferring the cases of its ordinary work can outlast the
// heartbeat timeout.
func mineHeartbeating(ctx context.Context, runID string, events []accountable.TraceEvent, ordinary []accountable.CompletedWork,
	counts accountable.DiscoveryCounts) ([]accountable.ProcessCard, int) {
	type result struct {
		cards []accountable.ProcessCard
		cases int
	}
	done := make(chan result, 1)
	go func() {
		cards, cases := discovery.MineWork(runID, events, ordinary)
		done <- result{cards, cases}
	}()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			return r.cards, r.cases
		case <-tick.C:
			if activity.IsActivity(ctx) {
				activity.RecordHeartbeat(ctx, counts)
			}
		}
	}
}

// FailDiscoveryRun records that a run could not be mined.
func (a *Discovery) FailDiscoveryRun(ctx context.Context, in DiscoveryRef, reason string) error {
	_, err := a.Store.FinishDiscoveryRun(ctx, in.WorkspaceID, in.RunID, accountable.DiscoveryFailed, accountable.DiscoveryCounts{}, nil, &reason)
	return retryable(err)
}
