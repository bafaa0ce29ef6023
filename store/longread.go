package store

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
)

// Long reads are the reads whose cost grows with a workspace's whole ledger: verification
// (every event of the workspace, recomputed) and the projections (aggregates over every
// event of their types in the period, all of history when the period is open). They run on
// a pool of their own (Config.LongReadMaxConns connections, beside the pool of everything
// else), so that however many of them are asked for, the other requests of every
// workspace keep the shared pool; and one workspace runs one long read at a time, so that
// its long reads queue behind each other instead of taking the long-read pool from the
// other workspaces.
const (
	// DefaultLongReadMaxConns is the long-read pool's size when Config.LongReadMaxConns is 0.
	DefaultLongReadMaxConns = 2
	// DefaultLongReadWait is how long a long read waits for its turn, by default, before it
	// is refused with 429 rate_limited.
	DefaultLongReadWait = 5 * time.Second
)

// Long reads by kind and outcome (Metrics.LongRead).
const (
	longReadVerification = "verification"
	longReadProjection   = "projection"
	longReadRan          = "ran"     // a read ran (a verification's run, however many requests it answered)
	longReadShared       = "shared"  // a verification answered by a run another request asked for first
	longReadRefused      = "refused" // a read whose turn did not come within the wait: 429
)

// longReads schedules the long reads of a process: at most maxRunning at once (one per
// long-read connection, so a read admitted never waits for the pool), at most one per
// workspace, the others waiting in arrival order, each at most maxWait.
//
// Verifications of the same workspace and scope that wait together share one run: the run
// starts after every one of them was asked for, so its snapshot is one each of them could
// have read itself, and its answer is the answer each would have computed (it is a
// recomputation within each request, not a remembered result). A run asked for while
// another of the same scope is already running does not share that one (its snapshot may
// be older than the request): it waits for the next. So n verifications of one workspace
// asked for at once cost at most two runs, and none answers from a snapshot taken before
// it was asked.
type longReads struct {
	maxRunning int
	maxWait    time.Duration
	mu         sync.Mutex
	running    int
	busy       map[string]bool // the workspaces with a long read running
	queue      []*longRead     // waiting for their turn, oldest first
}

// longRead is one read waiting for its turn, or running. A shared verification (run set)
// is run once, in a goroutine of its own, for every request waiting for it; another read
// runs in its requester's goroutine.
type longRead struct {
	workspaceID string
	turn        chan struct{} // closed when it is admitted
	admitted    bool
	// A shared verification: its scope (key), its run, how many requests wait for it, the
	// latest of their deadlines (none if one has none), its end and its result.
	key        string
	run        func(context.Context) (accountable.LedgerVerification, error)
	waiters    int
	deadline   time.Time
	noDeadline bool
	cancel     context.CancelFunc
	done       chan struct{}
	res        accountable.LedgerVerification
	err        error
}

func newLongReads(maxRunning int, maxWait time.Duration) *longReads {
	if maxRunning <= 0 {
		maxRunning = DefaultLongReadMaxConns
	}
	if maxWait <= 0 {
		maxWait = DefaultLongReadWait
	}
	return &longReads{maxRunning: maxRunning, maxWait: maxWait, busy: map[string]bool{}}
}

// admit starts the waiting reads that may run: in arrival order, each whose workspace has
// none running, while a long-read connection is free. Called with g.mu held.
func (g *longReads) admit() {
	for i := 0; i < len(g.queue) && g.running < g.maxRunning; {
		r := g.queue[i]
		if g.busy[r.workspaceID] {
			i++
			continue
		}
		g.queue = slices.Delete(g.queue, i, i+1)
		g.running++
		g.busy[r.workspaceID] = true
		r.admitted = true
		if r.run != nil {
			g.start(r)
		}
		close(r.turn)
	}
}

// finish ends a running read and admits the next. Called with g.mu held.
func (g *longReads) finish(r *longRead) {
	g.running--
	delete(g.busy, r.workspaceID)
	g.admit()
}

// start runs a shared verification for its waiters: under the latest of their deadlines,
// cancelled when the last of them leaves. Called with g.mu held.
func (g *longReads) start(r *longRead) {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	if !r.noDeadline {
		var stop context.CancelFunc
		ctx, stop = context.WithDeadline(ctx, r.deadline)
		r.cancel = func() { stop(); cancel() }
	}
	go func() {
		res, err := r.run(ctx)
		r.cancel()
		g.mu.Lock()
		defer g.mu.Unlock()
		r.res, r.err = res, err
		close(r.done)
		g.finish(r)
	}()
}

// solo waits for the turn of a long read of the workspace that is not shared; the caller
// runs it, then calls release.
func (g *longReads) solo(ctx context.Context, workspaceID string) (release func(), err error) {
	r := &longRead{workspaceID: workspaceID, turn: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, r)
	g.admit()
	g.mu.Unlock()
	if err := g.waitTurn(ctx, r); err != nil {
		return nil, err
	}
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.finish(r)
	}, nil
}

// shared answers a verification of the workspace's scope key with run: the run of the
// verifications of that scope waiting for their turn now, joined, or a new one. joined
// says that the answer is a run another request asked for first.
func (g *longReads) shared(ctx context.Context, workspaceID, key string,
	run func(context.Context) (accountable.LedgerVerification, error)) (res accountable.LedgerVerification, joined bool, err error) {
	g.mu.Lock()
	var r *longRead
	for _, q := range g.queue {
		if q.run != nil && q.workspaceID == workspaceID && q.key == key {
			r, joined = q, true
			break
		}
	}
	if r == nil {
		r = &longRead{workspaceID: workspaceID, key: key, run: run, turn: make(chan struct{}), done: make(chan struct{})}
		g.queue = append(g.queue, r)
	}
	r.waiters++
	if d, ok := ctx.Deadline(); !ok {
		r.noDeadline = true
	} else if d.After(r.deadline) {
		r.deadline = d
	}
	g.admit()
	g.mu.Unlock()
	if err := g.waitTurn(ctx, r); err != nil {
		return res, joined, err
	}
	select {
	case <-r.done:
		return r.res, joined, r.err
	case <-ctx.Done():
		g.mu.Lock()
		g.leave(r)
		g.mu.Unlock()
		return res, joined, mapError(ctx.Err())
	}
}

// leave counts out a waiter of a shared verification: the last one to leave one that runs
// cancels it; one that waits is dropped from the queue. Called with g.mu held.
func (g *longReads) leave(r *longRead) {
	if r.waiters--; r.waiters > 0 {
		return
	}
	if r.admitted {
		r.cancel()
		return
	}
	g.queue = slices.DeleteFunc(g.queue, func(q *longRead) bool { return q == r })
}

// waitTurn waits until r is admitted, at most maxWait and while ctx lasts. A read that
// gives up leaves the queue (or, admitted as it gave up, gives its turn back).
func (g *longReads) waitTurn(ctx context.Context, r *longRead) error {
	select {
	case <-r.turn:
		return nil
	default:
	}
	t := time.NewTimer(g.maxWait)
	defer t.Stop()
	var err error
	select {
	case <-r.turn:
		return nil
	case <-t.C:
	case <-ctx.Done():
		err = mapError(ctx.Err())
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if r.admitted && err == nil {
		return nil // its turn came as the wait ended: take it
	}
	if err == nil {
		err = g.refusal(r.workspaceID)
	}
	switch {
	case r.run != nil:
		g.leave(r)
	case r.admitted:
		g.finish(r)
	default:
		g.queue = slices.DeleteFunc(g.queue, func(q *longRead) bool { return q == r })
	}
	return err
}

// refusal says why a long read of the workspace did not get its turn in time. Called with
// g.mu held.
func (g *longReads) refusal(workspaceID string) error {
	if g.busy[workspaceID] {
		return errWorkspaceLongRead
	}
	return errLongReadsBusy
}

var (
	errWorkspaceLongRead = &accountable.Error{Code: accountable.ECodeRateLimited, RetryAfter: time.Second,
		Message: "Another long read of this workspace (a ledger verification or a projection) is still running; they run one at a time. Retry after error.retryAfter seconds."}
	errLongReadsBusy = &accountable.Error{Code: accountable.ECodeRateLimited, RetryAfter: time.Second,
		Message: "Every connection for long reads (ledger verifications and projections) is in use. Retry after error.retryAfter seconds."}
)

// projectionSnapshot runs a projection's read as a long read of the workspace: its turn,
// then one snapshot on the long-read pool.
func (db *DB) projectionSnapshot(ctx context.Context, workspaceID string, read func(q pgx.Tx) error) error {
	release, err := db.long.solo(ctx, workspaceID)
	if err != nil {
		if errors.Is(err, errWorkspaceLongRead) || errors.Is(err, errLongReadsBusy) {
			db.metrics.longRead(longReadProjection, longReadRefused)
		}
		return err
	}
	defer release()
	db.metrics.longRead(longReadProjection, longReadRan)
	return db.ledgerSnapshot(ctx, true, read)
}
