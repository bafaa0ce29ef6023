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

// keysChannel is the NOTIFY channel on which key changes (creations, revocations) are
// announced, with the key's prefix as payload.
const keysChannel = "accountable_api_keys"

// membersChannel is the NOTIFY channel on which membership changes (a member added or
// removed) are announced, with the user's id as payload: a key is held with the
// workspaces its user may act in, and acts nowhere once its user left its own workspace.
const membersChannel = "accountable_workspace_members"

// DefaultUnknownKeyTTL is how long, by default, a prefix that no key has is answered
// from memory: long enough that a client repeating a wrong key costs a query every few
// seconds rather than every request, short enough to bound a missed notification.
const DefaultUnknownKeyTTL = 5 * time.Second

// maxUnknownKeys bounds the remembered unknown prefixes (random keys are almost all
// distinct: the table must not grow with a flood of them).
const maxUnknownKeys = 10_000

// KeyCache is the DB with authentication lookups served from memory, so a request costs
// no database round trip to authenticate. It holds the keys it found (for ttl), each with
// the workspaces its user is a member of, and the prefixes it found no key for (for
// UnknownTTL). Every process LISTENs for key changes and drops the changed prefix at
// once, so a revoked key is refused and a new key is accepted at once; and for membership
// changes, dropping the user's keys (and the unknown prefixes, among which may be the
// keys of a user who left their workspace and is back), so a member removed is refused at
// once in every process; while the listener is down the cache is bypassed.
type KeyCache struct {
	*DB
	ttl time.Duration
	// UnknownTTL is how long a prefix no key has is remembered (DefaultUnknownKeyTTL);
	// set it before the cache is used.
	UnknownTTL time.Duration
	log        *slog.Logger

	mu      sync.Mutex
	entries map[string]keyEntry
	unknown map[string]time.Time // prefixes no key had, and when that was read
	// prefixes holds the prefix of every key that exists (revoked ones included), read
	// when the listener starts and added to by each announcement, so that authentication
	// tells a real key's prefix from a forged one without a query (KnownPrefix). About 60
	// bytes a key.
	prefixes   map[string]struct{}
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
	return &KeyCache{DB: db, ttl: ttl, UnknownTTL: DefaultUnknownKeyTTL, log: log,
		entries: map[string]keyEntry{}, unknown: map[string]time.Time{}, prefixes: map[string]struct{}{}}
}

// memoryState is what the cache holds for a prefix.
type memoryState int

const (
	notInMemory memoryState = iota
	keyInMemory
	unknownInMemory
)

// lookupMemory returns what the cache holds for prefix at now, and the generation to
// compare with after a database read.
func (c *KeyCache) lookupMemory(prefix string, now time.Time) (keyEntry, memoryState, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.listening {
		return keyEntry{}, notInMemory, c.generation
	}
	if e, ok := c.entries[prefix]; ok && now.Sub(e.fetched) < c.ttl {
		return e, keyInMemory, c.generation
	}
	if seen, ok := c.unknown[prefix]; ok && now.Sub(seen) < c.UnknownTTL {
		return keyEntry{}, unknownInMemory, c.generation
	}
	return keyEntry{}, notInMemory, c.generation
}

// KnownKeyHash returns the stored hash of the key with prefix when the cache has found
// that key, fresh or not (a key's hash never changes, and a new key under a prefix is
// announced). Authentication checks a secret against it before any query, so only the
// holder of the key's secret can make its stale entry be read again.
func (c *KeyCache) KnownKeyHash(prefix string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[prefix]
	if !ok || !c.listening {
		return nil, false
	}
	return e.hash, true
}

// HeldKey returns the key with prefix and its hash when the cache holds it fresh, as
// KeyByPrefix would answer from memory (api.KeyHolder): authentication then makes no
// deadline for a lookup that does not happen.
func (c *KeyCache) HeldKey(prefix string) (accountable.APIKey, []byte, bool) {
	e, state, _ := c.lookupMemory(prefix, time.Now())
	return e.key, e.hash, state == keyInMemory
}

// KnownPrefix reports whether prefix is a key's (revoked or not) this process knows
// exists: only such a prefix's key is worth a lookup whatever its client's failures
// (api.KeyMemory). A key created a moment ago, whose announcement has not arrived, is not
// known yet.
func (c *KeyCache) KnownPrefix(prefix string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.prefixes[prefix]
	return ok && c.listening
}

// UnknownPrefix reports whether the cache found a moment ago that no key has prefix.
func (c *KeyCache) UnknownPrefix(prefix string) bool {
	_, state, _ := c.lookupMemory(prefix, time.Now())
	return state == unknownInMemory
}

// KeyByPrefix answers from memory when it can: a held key, or not_found for a prefix
// recently found to have none.
func (c *KeyCache) KeyByPrefix(ctx context.Context, prefix string) (accountable.APIKey, []byte, error) {
	now := time.Now()
	e, state, gen := c.lookupMemory(prefix, now)
	switch state {
	case keyInMemory:
		return e.key, e.hash, nil
	case unknownInMemory:
		return accountable.APIKey{}, nil, accountable.NotFound("API key")
	}
	k, hash, err := c.DB.KeyByPrefix(ctx, prefix)
	unknown := accountable.ErrorCode(err) == accountable.ECodeNotFound
	if err != nil && !unknown {
		return k, hash, err
	}
	// The caller's string may live in a buffer it reuses (Fiber's request strings do): the
	// maps keep their own copy.
	prefix = strings.Clone(prefix)
	c.mu.Lock()
	// A change announced while we read may not be in what we read: do not keep it.
	if c.listening && c.generation == gen {
		if unknown {
			c.rememberUnknown(prefix, now)
		} else {
			c.entries[prefix] = keyEntry{key: k, hash: hash, fetched: now}
		}
	}
	c.mu.Unlock()
	return k, hash, err
}

// rememberUnknown records that no key has prefix (c.mu held). When the table is full an
// arbitrary entry makes room: at worst that prefix costs one more query.
func (c *KeyCache) rememberUnknown(prefix string, now time.Time) {
	if len(c.unknown) >= maxUnknownKeys {
		for p := range c.unknown {
			delete(c.unknown, p)
			break
		}
	}
	c.unknown[prefix] = now
}

// Start begins listening for key changes in the background.
func (c *KeyCache) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel, c.done = cancel, make(chan struct{})
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			err := c.listen(ctx)
			c.setListening(false, nil)
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

// setListening records whether the listener listens, with, when it starts, the prefix of
// every key (read after LISTEN, so that no key is missing from both the read and the
// announcements).
func (c *KeyCache) setListening(on bool, prefixes map[string]struct{}) {
	c.mu.Lock()
	c.listening = on
	c.generation++
	clear(c.entries)
	clear(c.unknown)
	if prefixes == nil {
		prefixes = map[string]struct{}{}
	}
	c.prefixes = prefixes
	c.mu.Unlock()
}

// allPrefixes reads the prefix of every key.
func allPrefixes(ctx context.Context, conn *pgx.Conn) (map[string]struct{}, error) {
	rows, err := conn.Query(ctx, `SELECT prefix FROM api_keys`)
	if err != nil {
		return nil, err
	}
	out := map[string]struct{}{}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out[p] = struct{}{}
	}
	return out, rows.Err()
}

func (c *KeyCache) listen(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, c.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+keysChannel+"; LISTEN "+membersChannel); err != nil {
		return err
	}
	prefixes, err := allPrefixes(ctx, conn)
	if err != nil {
		return err
	}
	c.setListening(true, prefixes)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		c.mu.Lock()
		if n.Channel == membersChannel {
			c.dropUser(n.Payload)
		} else {
			delete(c.entries, n.Payload)
			delete(c.unknown, n.Payload)
			c.prefixes[strings.Clone(n.Payload)] = struct{}{} // created (or revoked: known already)
		}
		c.generation++
		c.mu.Unlock()
	}
}

// dropUser forgets the keys of the user (c.mu held), whose memberships changed, and
// every unknown prefix: a key whose user left its workspace was not found, and is found
// again once the user is back. Membership changes are rare: the scan and the few queries
// the unknown prefixes cost again are nothing beside a key that acts where it may not.
func (c *KeyCache) dropUser(userID string) {
	for prefix, e := range c.entries {
		if e.key.UserID == userID {
			delete(c.entries, prefix)
		}
	}
	clear(c.unknown)
}

// notifyKeyChanged announces, when tx commits, that the key with prefix changed (was
// created or revoked).
func notifyKeyChanged(b *batch, prefix string) {
	b.Queue(`SELECT pg_notify('`+keysChannel+`', $1)`, prefix)
}

// notifyMembershipChanged announces, when tx commits, that the workspaces the user is a
// member of changed.
func notifyMembershipChanged(b *batch, userID string) {
	b.Queue(`SELECT pg_notify('`+membersChannel+`', $1)`, userID)
}
