package api

import "time"

// ContextBases is the store of the capsule texts served, as the tests see it.
type ContextBases struct{ b *contextBases }

// NewContextBases is a store of at most maxBytes, each text kept for ttl by the clock now.
func NewContextBases(maxBytes int, ttl time.Duration, now func() time.Time) ContextBases {
	return ContextBases{newContextBasesWithin(maxBytes, ttl, now)}
}

func (c ContextBases) Add(scopeKey, version, text string) { c.b.add(scopeKey, version, text) }

func (c ContextBases) Get(scopeKey, version string) (string, bool) { return c.b.get(scopeKey, version) }

func (c ContextBases) Bytes() int {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	return c.b.bytes
}
