package store

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
)

// keysChannel is the NOTIFY channel on which key changes (revocations) are announced.
const keysChannel = "accountable_api_keys"

// KeyCache is the DB with authentication lookups served from memory, so a request costs
// no database round trip to authenticate. Every process LISTENs for key changes and drops
// the changed key at once; while the listener is down the cache is bypassed, and entries
// expire after ttl in any case.
type KeyCache struct {
	*DB
	ttl time.Duration
	log *slog.Logger

	mu         sync.Mutex
	entries    map[string]keyEntry
	listening  bool
	generation uint64 // bumped by every change notification and listener restart

	cancel context.CancelFunc
	done   chan struct{}
}

type keyEntry struct {
	key     accountable.APIKey
	hash    []byte
	fetched time.Time
}

// NewKeyCache wraps db; call Start to begin listening.
func NewKeyCache(db *DB, ttl time.Duration, log *slog.Logger) *KeyCache {
	return &KeyCache{DB: db, ttl: ttl, log: log, entries: map[string]keyEntry{}}
}

// KeyByPrefix answers from memory when it can.
func (c *KeyCache) KeyByPrefix(ctx context.Context, prefix string) (accountable.APIKey, []byte, error) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.entries[prefix]
	listening, gen := c.listening, c.generation
	c.mu.Unlock()
	if ok && listening && now.Sub(e.fetched) < c.ttl {
		return e.key, e.hash, nil
	}
	k, hash, err := c.DB.KeyByPrefix(ctx, prefix)
	if err != nil {
		return k, hash, err
	}
	// The caller's string may live in a buffer it reuses (Fiber's request strings do): the
	// map keeps its own copy.
	prefix = strings.Clone(prefix)
	c.mu.Lock()
	// A change announced while we read may not be in what we read: do not keep it.
	if c.listening && c.generation == gen {
		c.entries[prefix] = keyEntry{key: k, hash: hash, fetched: now}
	}
	c.mu.Unlock()
	return k, hash, nil
}

// Start begins listening for key changes in the background.
func (c *KeyCache) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel, c.done = cancel, make(chan struct{})
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			err := c.listen(ctx)
			c.setListening(false)
			if ctx.Err() != nil {
				return
			}
			c.log.Warn("API key change listener stopped; authenticating from the database until it reconnects", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
}

// Stop ends listening.
func (c *KeyCache) Stop() {
	if c.cancel != nil {
		c.cancel()
		<-c.done
	}
}

func (c *KeyCache) setListening(on bool) {
	c.mu.Lock()
	c.listening = on
	c.generation++
	clear(c.entries)
	c.mu.Unlock()
}

func (c *KeyCache) listen(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, c.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+keysChannel); err != nil {
		return err
	}
	c.setListening(true)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		c.mu.Lock()
		delete(c.entries, n.Payload)
		c.generation++
		c.mu.Unlock()
	}
}

// notifyKeyChanged announces, when tx commits, that the key with prefix changed.
func notifyKeyChanged(b *pgx.Batch, prefix string) {
	b.Queue(`SELECT pg_notify('`+keysChannel+`', $1)`, prefix)
}
