// Package sizedlru is a least-recently-used cache bounded by the bytes of what it holds
// (github.com/hashicorp/golang-lru/v2 bounds a count only), with an optional time to live.
// The service keeps two such things in memory: the context-capsule texts served (the
// bases of the next deltas) and the operating-map pictures drawn.
package sizedlru

import (
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Cache holds values of K by V within maxBytes in all (the least recently used go first),
// each for ttl after it was added (0: until it is evicted). It is safe for concurrent use.
type Cache[K comparable, V any] struct {
	mu       sync.Mutex
	entries  *lru.Cache[K, entry[V]]
	bytes    int
	maxBytes int
	ttl      time.Duration
	size     func(V) int
	now      func() time.Time
}

type entry[V any] struct {
	v    V
	size int
	at   time.Time
}

// New makes a cache of maxBytes, measuring a value with size; now is the clock of ttl
// (time.Now unless a test's).
func New[K comparable, V any](maxBytes int, ttl time.Duration, size func(V) int, now func() time.Time) *Cache[K, V] {
	c := &Cache[K, V]{maxBytes: maxBytes, ttl: ttl, size: size, now: now}
	// Bounded in bytes by Add, not in count; the callback runs inside the calls c.mu holds.
	c.entries, _ = lru.NewWithEvict(1<<20, func(_ K, e entry[V]) { c.bytes -= e.size }) // errors only for a size <= 0
	return c
}

// Get is the value of k, if it is held and has not expired; it becomes the most recently used.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries.Get(k)
	if !ok {
		var zero V
		return zero, false
	}
	if c.ttl > 0 && c.now().Sub(e.at) > c.ttl {
		c.entries.Remove(k)
		var zero V
		return zero, false
	}
	return e.v, true
}

// Add holds v as k's value (its time to live starts again), evicting the least recently
// used until the bytes fit. A value over an eighth of the cache is not held: one may not
// take the room of many.
func (c *Cache[K, V]) Add(k K, v V) {
	n := c.size(v)
	if n > c.maxBytes/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries.Remove(k) // renewed, and its old size given back
	c.entries.Add(k, entry[V]{v: v, size: n, at: c.now()})
	c.bytes += n
	for c.bytes > c.maxBytes {
		if _, _, ok := c.entries.RemoveOldest(); !ok {
			break
		}
	}
}

// Bytes is the size of what the cache holds.
func (c *Cache[K, V]) Bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}
