package api

import (
	"sync"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
)

// A live event stream (GET /events/stream?transport=sse) holds a connection, a goroutine
// and its buffers for as long as its lease (up to a minute), and a client may open as
// many as it likes: one key opening thousands would take the memory and the connections
// every other client needs. streamLeases bounds the leases open at once per credential
// (Config.MaxSSELeasesPerKey) and per workspace (Config.MaxSSELeasesPerWorkspace); past
// either a new lease is refused 429 rate_limited, with retryAfter the time until one of
// the leases that fill the bound ends at the latest. A lease is counted from its start
// until its stream ends: its lease or limit runs out, its client goes away (seen within
// a second, clientCheckEvery) or the server shuts down.

// streamLeases counts the open leases per key and per workspace (nil: no bound).
type streamLeases struct {
	perKey, perWorkspace int

	mu         sync.Mutex
	next       uint64
	keys       map[string]map[uint64]time.Time // open leases by id, with the time each ends at the latest
	workspaces map[string]map[uint64]time.Time
}

// newStreamLeases returns the bounds (0: none), or nil when there is neither.
func newStreamLeases(perKey, perWorkspace int) *streamLeases {
	if perKey <= 0 && perWorkspace <= 0 {
		return nil
	}
	return &streamLeases{perKey: max(perKey, 0), perWorkspace: max(perWorkspace, 0),
		keys: map[string]map[uint64]time.Time{}, workspaces: map[string]map[uint64]time.Time{}}
}

// Refusals of a lease over a bound.
const (
	msgTooManyKeyStreams       = "Too many live event streams open for this credential; retry after error.retryAfter seconds, or end one."
	msgTooManyWorkspaceStreams = "Too many live event streams open in this workspace; retry after error.retryAfter seconds, or end one."
)

// open counts a lease of key in workspace that ends at the latest at end, and returns
// its release (safe to call more than once), or the 429 when key or workspace holds as
// many leases as it may.
func (l *streamLeases) open(key, workspace string, now, end time.Time) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if wait, full := fullUntil(l.keys[key], l.perKey, now); full {
		return nil, RateLimited(accountable.ECodeRateLimited, msgTooManyKeyStreams, wait)
	}
	if wait, full := fullUntil(l.workspaces[workspace], l.perWorkspace, now); full {
		return nil, RateLimited(accountable.ECodeRateLimited, msgTooManyWorkspaceStreams, wait)
	}
	l.next++
	id := l.next
	addLease(l.keys, key, id, end)
	addLease(l.workspaces, workspace, id, end)
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			dropLease(l.keys, key, id)
			dropLease(l.workspaces, workspace, id)
		})
	}, nil
}

// count is the number of leases key and workspace hold.
func (l *streamLeases) count(key, workspace string) (byKey, byWorkspace int) {
	if l == nil {
		return 0, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys[key]), len(l.workspaces[workspace])
}

// fullUntil reports whether leases reach bound (0: none), and how long until the first of
// them ends at the latest.
func fullUntil(leases map[uint64]time.Time, bound int, now time.Time) (time.Duration, bool) {
	if bound == 0 || len(leases) < bound {
		return 0, false
	}
	var first time.Time
	for _, end := range leases {
		if first.IsZero() || end.Before(first) {
			first = end
		}
	}
	return max(first.Sub(now), time.Second), true
}

func addLease(m map[string]map[uint64]time.Time, name string, id uint64, end time.Time) {
	if m[name] == nil {
		m[name] = map[uint64]time.Time{}
	}
	m[name][id] = end
}

// dropLease forgets a lease, and the name once it holds none (the maps hold the names
// streaming now, not every name that ever streamed).
func dropLease(m map[string]map[uint64]time.Time, name string, id uint64) {
	delete(m[name], id)
	if len(m[name]) == 0 {
		delete(m, name)
	}
}

// clientCheckEvery is how often a live stream waiting for events checks that its client
// is still connected.
const clientCheckEvery = time.Second

// clientGone returns whether fc's client has closed its connection (peerClosed), or nil
// when the connection cannot tell.
func clientGone(fc *fiber.Ctx) func() bool {
	sc, ok := fc.Context().Conn().(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return func() bool { return peerClosed(raw) }
}
