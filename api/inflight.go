package api

import (
	"sync"
	"time"
)

// inFlight bounds the writes of one workspace that run at once. The per-workspace token
// bucket bounds a workspace's rate, but not how many of its admitted requests arrive
// together: clients refused at one instant come back at one instant (Retry-After is whole
// seconds), the refilled bucket admits them all, and a few dozen commits at once hold the
// cores and the database's commits while other workspaces' requests wait behind them
// (docs/scaling.md §5). Over the bound, a workspace's writes wait their turn behind each
// other, not beside other workspaces' requests; a write that waits longer than maxWait is
// refused with 429, as over the rate. The slot is taken by admitWorkspace (admit.go), for
// the workspace the request acts in.
type inFlight struct {
	max     int
	maxWait time.Duration
	mu      sync.Mutex
	slots   map[string]*workspaceSlots
}

// workspaceSlots are a workspace's slots (a buffered channel of max) and how many requests
// hold or wait for one: the entry is dropped when that falls to zero, so the map holds the
// workspaces writing now, not every workspace that ever wrote.
type workspaceSlots struct {
	held  chan struct{}
	users int
}

// newInFlight returns the bound, or nil (no bound) when max is 0 or less.
func newInFlight(max int, maxWait time.Duration) *inFlight {
	if max <= 0 {
		return nil
	}
	return &inFlight{max: max, maxWait: maxWait, slots: map[string]*workspaceSlots{}}
}

// acquire takes one of the workspace's slots, waiting at most maxWait; it returns the
// release, or false when no slot freed in time.
func (f *inFlight) acquire(workspaceID string) (release func(), ok bool) {
	f.mu.Lock()
	ws := f.slots[workspaceID]
	if ws == nil {
		ws = &workspaceSlots{held: make(chan struct{}, f.max)}
		f.slots[workspaceID] = ws
	}
	ws.users++
	f.mu.Unlock()
	select {
	case ws.held <- struct{}{}:
	default: // every slot is held: wait for one
		t := time.NewTimer(f.maxWait)
		defer t.Stop()
		select {
		case ws.held <- struct{}{}:
		case <-t.C:
			f.leave(workspaceID, ws)
			return nil, false
		}
	}
	return func() { <-ws.held; f.leave(workspaceID, ws) }, true
}

// leave counts out a request that held or waited for one of ws's slots.
func (f *inFlight) leave(workspaceID string, ws *workspaceSlots) {
	f.mu.Lock()
	if ws.users--; ws.users == 0 {
		delete(f.slots, workspaceID)
	}
	f.mu.Unlock()
}
