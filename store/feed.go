package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// LedgerFeed tells a process's live-stream subscribers that their workspace has new
// events, so that an idle subscriber costs no query. One per process:
//
//   - Commands committed by this process wake the subscribers of their workspace at once
//     (DB.OnAppended), and are announced to the other processes with a NOTIFY on the
//     channel ledger_events, sent after the commit and outside the command's transaction:
//     a NOTIFY inside the transaction would serialise the commits of every writer on
//     PostgreSQL's notification lock. Announcements coalesce: while one is being sent,
//     the workspaces of later commits gather for the next, so a busy process sends a few
//     NOTIFYs, not one per command.
//   - One connection per process LISTENs and wakes the subscribers of the workspaces
//     other processes announce (a worker's launch settlement, an SLA escalation).
//
// A wake-up says only "read again": subscribers read the stream with its horizon rule,
// so an event that commits late is read on a later wake-up, never skipped. While the
// listening connection is down, Listening is false and subscribers poll.
type LedgerFeed struct {
	db   *DB
	log  *slog.Logger
	self string // this process's tag: its own announcements are not woken twice

	mu      sync.Mutex
	subs    map[string]map[chan struct{}]struct{}
	pending map[string]struct{}
	kick    chan struct{}

	listening atomic.Bool

	watchers []func(workspaceID string) // told of every wake-up (Watch)
}

// ledgerChannel is the NOTIFY channel of the feed; a payload is the announcing process's
// tag and the workspace ids, separated by spaces.
const ledgerChannel = "ledger_events"

// maxNotifyPayload keeps a payload under PostgreSQL's 8000-byte limit.
const maxNotifyPayload = 7900

// NewLedgerFeed returns the feed of db; Run starts it. It registers itself with db, so
// the commands of this process wake their workspace's subscribers.
func NewLedgerFeed(db *DB, log *slog.Logger) *LedgerFeed {
	tag := make([]byte, 8)
	rand.Read(tag) // never fails (crypto/rand)
	f := &LedgerFeed{db: db, log: log, self: hex.EncodeToString(tag), subs: map[string]map[chan struct{}]struct{}{},
		pending: map[string]struct{}{}, kick: make(chan struct{}, 1)}
	db.onAppended = f.appended
	return f
}

// Subscribe returns a channel that receives a value (at most one pending) whenever the
// workspace may have new events, and the function that ends the subscription.
func (f *LedgerFeed) Subscribe(workspaceID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	set := f.subs[workspaceID]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		f.subs[workspaceID] = set
	}
	set[ch] = struct{}{}
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		delete(f.subs[workspaceID], ch)
		if len(f.subs[workspaceID]) == 0 {
			delete(f.subs, workspaceID)
		}
		f.mu.Unlock()
	}
}

// Watch has fn told of every wake-up, whatever the workspace ("" when it may be any: the
// listening connection came back). fn runs under the feed's lock: it must not block.
func (f *LedgerFeed) Watch(fn func(workspaceID string)) {
	f.mu.Lock()
	f.watchers = append(f.watchers, fn)
	f.mu.Unlock()
}

// Listening reports whether announcements of other processes arrive (else subscribers
// poll).
func (f *LedgerFeed) Listening() bool { return f.listening.Load() }

// Subscribers returns the number of subscriptions (for metrics and tests).
func (f *LedgerFeed) Subscribers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, set := range f.subs {
		n += len(set)
	}
	return n
}

// appended is called after a command of this process committed events of workspaceID.
func (f *LedgerFeed) appended(workspaceID string) {
	f.wake(workspaceID)
	f.mu.Lock()
	f.pending[workspaceID] = struct{}{}
	f.mu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// wake signals every subscriber of workspaceID ("" wakes all of them).
func (f *LedgerFeed) wake(workspaceID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fn := range f.watchers {
		fn(workspaceID)
	}
	signal := func(set map[chan struct{}]struct{}) {
		for ch := range set {
			select {
			case ch <- struct{}{}:
			default: // a wake-up is pending already
			}
		}
	}
	if workspaceID != "" {
		signal(f.subs[workspaceID])
		return
	}
	for _, set := range f.subs {
		signal(set)
	}
}

// Run listens and announces until ctx ends.
func (f *LedgerFeed) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); f.listen(ctx) }()
	go func() { defer wg.Done(); f.announce(ctx) }()
	wg.Wait()
}

// listen holds the LISTEN connection, reconnecting after a failure; after each
// (re)connection every subscriber is woken, since announcements may have been missed.
func (f *LedgerFeed) listen(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := f.listenOnce(ctx)
		f.listening.Store(false)
		if ctx.Err() != nil {
			return
		}
		f.log.Debug("the ledger feed's listening connection failed; subscribers poll until it is back", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 3*time.Second)
	}
}

func (f *LedgerFeed) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, f.db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+ledgerChannel); err != nil {
		return err
	}
	f.listening.Store(true)
	f.wake("")
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		from, workspaces, _ := strings.Cut(n.Payload, " ")
		if from == f.self {
			continue
		}
		for _, ws := range strings.Fields(workspaces) {
			f.wake(ws)
		}
	}
}

// announceGap is the least time between two announcements of a process: under load its
// commits gather into at most one NOTIFY per gap (a NOTIFY is a transaction that takes
// PostgreSQL's notification lock), so announcing costs the same at any write rate; other
// processes' streams hear of a commit at most this much later.
const announceGap = 5 * time.Millisecond

// announce sends the pending workspaces in as few NOTIFYs as fit.
func (f *LedgerFeed) announce(ctx context.Context) {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.kick:
		}
		if wait := announceGap - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		f.mu.Lock()
		pending := f.pending
		f.pending = map[string]struct{}{}
		f.mu.Unlock()
		payload := f.self
		for ws := range pending {
			if len(payload)+1+len(ws) > maxNotifyPayload {
				f.notify(ctx, payload)
				payload = f.self
			}
			payload += " " + ws
		}
		if payload != f.self {
			f.notify(ctx, payload)
		}
	}
}

func (f *LedgerFeed) notify(ctx context.Context, payload string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := f.db.pool.Exec(ctx, "SELECT pg_notify($1, $2)", ledgerChannel, payload); err != nil {
		f.log.Debug("announcing new ledger events", "err", err)
	}
}
