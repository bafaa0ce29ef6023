package api_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/tokens"
)

// countingKeys counts the key lookups that reach the key store.
type countingKeys struct {
	api.KeyStore
	lookups atomic.Int64
}

func (k *countingKeys) KeyByPrefix(ctx context.Context, prefix string) (accountable.APIKey, []byte, error) {
	k.lookups.Add(1)
	return k.KeyStore.KeyByPrefix(ctx, prefix)
}

// countingCache is countingKeys over a key cache, whose memory authentication consults
// before any lookup.
type countingCache struct {
	*countingKeys
	cache *store.KeyCache
}

func (c countingCache) KnownKeyHash(prefix string) ([]byte, bool) {
	return c.cache.KnownKeyHash(prefix)
}

func (c countingCache) UnknownPrefix(prefix string) bool { return c.cache.UnknownPrefix(prefix) }

func (c countingCache) KnownPrefix(prefix string) bool { return c.cache.KnownPrefix(prefix) }

// expectTooManyFailures fails unless r is the 429 of an address over its failure budget.
func expectTooManyFailures(t *testing.T, r response) {
	t.Helper()
	expect(t, r, http.StatusTooManyRequests, accountable.ECodeRateLimited)
	after, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || after < 1 || after > 5 || r.errorObj()["retryAfter"] != float64(after) {
		t.Fatalf("Retry-After %q: %s", r.header.Get("Retry-After"), r.raw)
	}
}

// Unknown keys from one address cost a bounded number of lookups: past the address's
// budget of failures it gets 429 before any lookup. Successes spend nothing.
func TestAuthFailuresAreLimitedPerAddressBeforeTheLookup(t *testing.T) {
	const rate, burst = 0.2, 3
	keys := &countingKeys{}
	e := newEnv(t, nil, func(c *api.Config, d *api.Deps) {
		keys.KeyStore, d.Keys = d.Keys, keys
		c.AuthFailureRate, c.AuthFailureBurst = rate, burst
	})
	tenant := storetest.NewTenant(t, e.db)
	for range 2 * burst {
		expect(t, e.do(request{method: "GET", path: "/work", key: tenant.Key}), http.StatusOK, "")
	}

	start, before := time.Now(), keys.lookups.Load()
	const n = 40
	refused, limited := 0, 0
	for range n {
		unknown, _ := tokens.NewAPIKey()
		r := e.do(request{method: "GET", path: "/work", key: unknown})
		switch r.status {
		case http.StatusUnauthorized:
			refused++
		default:
			expectTooManyFailures(t, r)
			limited++
		}
	}
	lookups := int(keys.lookups.Load() - before)
	allowed := burst + int(rate*time.Since(start).Seconds()) + 1
	if lookups > allowed || refused != lookups || limited < n-allowed {
		t.Fatalf("%d unknown keys: %d lookups (allowed %d), %d answered 401, %d answered 429", n, lookups, allowed, refused, limited)
	}

	// Over its budget, the address still gets the specification's 401 for failures that
	// cost no lookup (a missing or malformed credential), and 429 for any key that would
	// need one: with a key store that holds no keys in memory, a valid key too.
	before = keys.lookups.Load()
	expect(t, e.do(request{method: "GET", path: "/work", key: "svk_short"}), http.StatusUnauthorized, "")
	expect(t, e.do(request{method: "GET", path: "/work"}), http.StatusUnauthorized, "")
	expectTooManyFailures(t, e.do(request{method: "GET", path: "/work", key: tenant.Key}))
	if keys.lookups.Load() != before {
		t.Fatal("an address over its budget had a key looked up")
	}

	// Budgets are per address: another client is not affected.
	other := e.as(t)
	other.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	unknown, _ := tokens.NewAPIKey()
	expect(t, other.do(request{method: "GET", path: "/work", key: unknown}), http.StatusUnauthorized, "")
	expect(t, other.do(request{method: "GET", path: "/work", key: tenant.Key}), http.StatusOK, "")
}

// A key the key cache has found is looked up without the failure budget when the secret
// matches, so it keeps working from an address over its budget, even when its entry has
// gone stale; a wrong secret under its prefix is refused without a query.
func TestKnownKeyWorksFromAnAddressOverItsBudget(t *testing.T) {
	db := storetest.Open(t)
	// The key exists before the cache listens: the announcement of its creation could
	// otherwise reach the cache after the key was held, and drop it again.
	tenant := storetest.NewTenant(t, db)
	// Entries go stale at once: every use of the key is a query.
	kc := store.NewKeyCache(db, time.Nanosecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	kc.Start()
	t.Cleanup(kc.Stop)
	// With entries always stale, every lookup that reaches the cache is a query.
	keys := countingCache{&countingKeys{KeyStore: kc}, kc}
	e := newEnv(t, db, func(c *api.Config, d *api.Deps) {
		d.Keys = keys
		c.AuthFailureRate, c.AuthFailureBurst = 0.2, 3
	})
	storetest.WaitFor(t, 10*time.Second, "the key cache to hold the key", func() bool {
		expect(t, e.do(request{method: "GET", path: "/credential", key: tenant.Key}), http.StatusOK, "")
		_, ok := kc.KnownKeyHash(tenant.Principal.KeyPrefix)
		return ok
	})

	// Distinct unknown keys (the cache remembers a repeated one: it costs no lookup and no
	// budget) spend the address's budget.
	var r response
	var remembered string // an unknown key that was looked up
	for range 10 {
		unknown, _ := tokens.NewAPIKey()
		r = e.do(request{method: "GET", path: "/credential", key: unknown})
		if r.status != http.StatusUnauthorized {
			break
		}
		remembered = unknown
	}
	expectTooManyFailures(t, r)

	for range 3 {
		r = e.do(request{method: "GET", path: "/credential", key: tenant.Key})
		expect(t, r, http.StatusOK, "")
		if r.data()["key_prefix"] != tenant.Principal.KeyPrefix {
			t.Fatalf("the known key: %s", r.raw)
		}
	}
	// A wrong secret under the known key's prefix is found without a query: the 401,
	// whatever the budget.
	before := keys.lookups.Load()
	wrongSecret := tenant.Key[:12] + tenant.Key[13:] + "0"
	for range 5 {
		expect(t, e.do(request{method: "GET", path: "/credential", key: wrongSecret}), http.StatusUnauthorized, "")
	}
	if n := keys.lookups.Load() - before; n != 0 {
		t.Fatalf("wrong secrets under a known prefix cost %d lookups", n)
	}
	// So is a repeated unknown key: the cache remembers that its prefix has no key.
	expect(t, e.do(request{method: "GET", path: "/credential", key: remembered}), http.StatusUnauthorized, "")
	if n := keys.lookups.Load() - before; n != 0 {
		t.Fatalf("a remembered unknown key cost %d lookups", n)
	}
}
