package api

import (
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// defaultMaxBuckets bounds each limiter's table (about 200 bytes a bucket: ~10 MB).
const defaultMaxBuckets = 50_000

// sweepEvery spaces the sweeps of a full table, so that a flood of new names costs each
// request a map lookup, not a walk over the table.
const sweepEvery = time.Second

// buckets is a token bucket per name (an API key, a client address) with at most max of
// them in memory. A nil *buckets limits nothing.
//
// A bucket that has refilled to its burst is indistinguishable from a new one, so it is
// dropped when room is needed: forgetting it gives nobody anything. A bucket still
// refilling is kept, so a limited client cannot shed its debt by having others crowd it
// out. While every bucket of a full table is still refilling, names without a bucket
// share one overflow bucket: a flood of new names neither grows the table nor gets more
// than one bucket's worth between them.
type buckets struct {
	limit rate.Limit
	burst int
	max   int

	mu       sync.Mutex
	table    map[string]*rate.Limiter
	overflow *rate.Limiter
	swept    time.Time
}

// newBuckets returns buckets refilling at perSecond up to burst (default: 2×perSecond,
// at least 1), at most capacity of them (default defaultMaxBuckets), or nil (no limit)
// when perSecond is 0.
func newBuckets(perSecond float64, burst, capacity int) *buckets {
	if perSecond <= 0 {
		return nil
	}
	if burst <= 0 {
		burst = int(max(1, perSecond*2))
	}
	if capacity <= 0 {
		capacity = defaultMaxBuckets
	}
	return &buckets{limit: rate.Limit(perSecond), burst: burst, max: capacity, table: map[string]*rate.Limiter{},
		overflow: rate.NewLimiter(rate.Limit(perSecond), burst)}
}

// take takes a token from name's bucket, or says how long until one is available.
func (b *buckets) take(name string, now time.Time) (bool, time.Duration) {
	return b.takeN(name, 1, now)
}

// takeN takes n tokens from name's bucket (at most its burst, which a larger n could
// never have), or says how long until they are available.
func (b *buckets) takeN(name string, n int, now time.Time) (bool, time.Duration) {
	if b == nil {
		return true, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.bucket(name, now).ReserveN(now, min(n, b.burst))
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// available says whether name's bucket holds a token, without taking it, or how long
// until it does.
func (b *buckets) available(name string, now time.Time) (bool, time.Duration) {
	if b == nil {
		return true, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	lim := b.table[name]
	if lim == nil {
		if len(b.table) < b.max {
			return true, 0 // a new bucket is full
		}
		lim = b.overflow
	}
	tokens := lim.TokensAt(now)
	if tokens >= 1 {
		return true, 0
	}
	return false, time.Duration((1 - tokens) / float64(b.limit) * float64(time.Second))
}

// charge takes a token from name's bucket after the fact, into debt when it has none
// (for requests admitted while it had one, which ran concurrently).
func (b *buckets) charge(name string, now time.Time) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bucket(name, now).ReserveN(now, 1)
}

// refund gives back a token taken from name's bucket (by take, before work whose
// success is not charged), up to its burst.
func (b *buckets) refund(name string, now time.Time) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if lim, ok := b.table[name]; ok {
		lim.ReserveN(now, -1) // a negative reservation adds a token; refills stop at the burst
	}
}

// bucket returns name's bucket, making one when there is room (b.mu held).
func (b *buckets) bucket(name string, now time.Time) *rate.Limiter {
	if lim, ok := b.table[name]; ok {
		return lim
	}
	if len(b.table) >= b.max && now.Sub(b.swept) >= sweepEvery {
		b.sweep(now)
	}
	if len(b.table) >= b.max {
		return b.overflow
	}
	lim := rate.NewLimiter(b.limit, b.burst)
	b.table[strings.Clone(name)] = lim
	return lim
}

// sweep drops the buckets that are full again (b.mu held).
func (b *buckets) sweep(now time.Time) {
	b.swept = now
	for name, lim := range b.table {
		if lim.TokensAt(now) >= float64(b.burst) {
			delete(b.table, name)
		}
	}
}

// size is the number of buckets in memory.
func (b *buckets) size() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.table)
}
