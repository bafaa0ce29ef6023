package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store/storetest"
)

// The attack: one address sends account-free diagnoses as fast as eight connections can.
// Its budget (a burst, then the rate) is served and the rest refused 429 rate_limited
// with Retry-After, in the diagnosis's own failure body; meanwhile another address is
// served every time. The budget is the address's across the metered account-free
// operations (receipt validation too), not the operations answered from memory; a tool
// call over MCP was charged to its key and is not charged to its address again. Clients
// are told apart by the X-Forwarded-For of a trusted proxy (the loopback here).
func TestAccountFreeOperationsAreLimitedPerAddress(t *testing.T) {
	// One token every 5 s: the test's checks after the flood end long before the next.
	const rate, burst = 0.2, 20
	e := newEnv(t, nil, func(c *api.Config, _ *api.Deps) {
		c.PublicRateLimit, c.PublicRateBurst = rate, burst
		c.ClientAddresses = api.ClientAddresses{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	})
	const attacker, other = "203.0.113.7", "198.51.100.9"
	from := func(addr string) map[string]string { return map[string]string{"X-Forwarded-For": addr} }
	diagnose := func(addr string) (int, time.Duration, error) {
		req, err := http.NewRequest(http.MethodPost, e.base+api.V1Root+"/doctor/workload", bytes.NewReader([]byte(workloadBody)))
		if err != nil {
			return 0, 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", addr)
		start := time.Now()
		res, err := e.client.Do(req)
		if err != nil {
			return 0, 0, err
		}
		res.Body.Close()
		return res.StatusCode, time.Since(start), nil
	}

	const senders, each = 8, 25
	var served, refused atomic.Int64
	var failure atomic.Value
	var othersMu sync.Mutex
	var others []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	for range senders {
		wg.Go(func() {
			for range each {
				status, _, err := diagnose(attacker)
				switch {
				case err != nil:
					failure.CompareAndSwap(nil, err.Error())
				case status == http.StatusOK:
					served.Add(1)
				case status == http.StatusTooManyRequests:
					refused.Add(1)
				default:
					failure.CompareAndSwap(nil, "the attacker's diagnosis answered "+strconv.Itoa(status))
				}
			}
		})
	}
	wg.Go(func() { // another client, meanwhile
		for range 10 {
			status, took, err := diagnose(other)
			if err != nil || status != http.StatusOK {
				failure.CompareAndSwap(nil, "another address's diagnosis answered "+strconv.Itoa(status))
				return
			}
			othersMu.Lock()
			others = append(others, took)
			othersMu.Unlock()
			time.Sleep(20 * time.Millisecond) // an ordinary client's pace beside the attacker, not a synchronisation
		}
	})
	wg.Wait()
	elapsed := time.Since(start)
	if f := failure.Load(); f != nil {
		t.Fatal(f)
	}
	most := burst + int(rate*elapsed.Seconds()) + 1
	if n := served.Load(); n > int64(most) || served.Load()+refused.Load() != senders*each {
		t.Fatalf("the attacker was served %d and refused %d of %d in %s; its budget allows %d", n, refused.Load(), senders*each, elapsed, most)
	}
	if len(others) != 10 {
		t.Fatalf("another address was served %d of 10", len(others))
	}

	// The refusal: the diagnosis's failure body, with Retry-After.
	r := e.do(request{method: "POST", path: "/doctor/workload", body: workloadBody, headers: from(attacker)})
	expect(t, r, http.StatusTooManyRequests, accountable.ECodeRateLimited)
	if after, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || after < 1 || r.body["ok"] != false || r.body["valid"] != false {
		t.Fatalf("refusal: Retry-After %q, %s", r.header.Get("Retry-After"), r.raw)
	}
	// One budget for the metered account-free operations: receipt validation is refused
	// too (the envelope, with retryAfter), what is answered from memory is not.
	receipt := receiptFixture(t, "codex.json")
	r = e.do(request{method: "POST", path: "/agent-work-receipts/validate", body: receipt, headers: from(attacker)})
	expect(t, r, http.StatusTooManyRequests, accountable.ECodeRateLimited)
	if r.errorObj()["retryAfter"] == nil {
		t.Fatalf("no retryAfter: %s", r.raw)
	}
	expect(t, e.do(request{method: "GET", path: "/agent-work-receipts/validate", headers: from(attacker)}), http.StatusTooManyRequests, accountable.ECodeRateLimited)
	expect(t, e.do(request{method: "GET", path: "/healthz", root: "/", headers: from(attacker)}), http.StatusOK, "")
	expect(t, e.do(request{method: "GET", path: "/errors", headers: from(attacker)}), http.StatusOK, "")
	// The other address is served by every one of them.
	expect(t, e.do(request{method: "POST", path: "/agent-work-receipts/validate", body: receipt, headers: from(other)}), http.StatusOK, "")
	expect(t, e.do(request{method: "GET", path: "/doctor/workload", headers: from(other)}), http.StatusOK, "")

	// A request costs a token per started 64 KiB of its body: a body just over 960 KiB spends 16 of
	// the burst's 20, so a second one is refused (until 12 more have come, a minute) while a
	// small request still fits.
	const large = "192.0.2.44"
	padded := []byte(`{"padding":"` + strings.Repeat("x", 960<<10) + `"}`)
	firstLarge := time.Now()
	expect(t, e.do(request{method: "POST", path: "/agent-work-receipts/validate", body: padded, headers: from(large)}), http.StatusUnprocessableEntity, "")
	r = e.do(request{method: "POST", path: "/agent-work-receipts/validate", body: padded, headers: from(large)})
	if took := time.Since(firstLarge); took >= 30*time.Second {
		t.Fatalf("two large validations took %s: the bucket may have refilled, which tells nothing", took)
	}
	expect(t, r, http.StatusTooManyRequests, accountable.ECodeRateLimited)
	expect(t, e.do(request{method: "GET", path: "/agent-work-receipts/validate", headers: from(large)}), http.StatusOK, "")

	// Over MCP, from an address over its budget: the /mcp request was charged to the key.
	for i := 0; ; i++ {
		if r := e.do(request{method: "GET", path: "/doctor/workload"}); r.status == http.StatusTooManyRequests {
			break
		} else if i > 10*burst {
			t.Fatalf("the loopback address was never refused: %d", r.status)
		}
	}
	tenant := storetest.NewTenant(t, e.db)
	var args map[string]any
	if err := json.Unmarshal([]byte(workloadBody), &args); err != nil {
		t.Fatal(err)
	}
	if res := mcpCall(t, mcpSession(t, e, tenant.Key, ""), "diagnose_workload", args); res.IsError {
		t.Fatalf("diagnose_workload from an address over its budget: %s", mcpText(t, res))
	}
	slices.Sort(others)
	t.Logf("one address, %d connections: %d diagnoses in %s, %d answered 200 (burst %d + %g/s), %d refused 429; "+
		"another address meanwhile: 10 of 10 answered 200, slowest %s",
		senders, senders*each, elapsed.Round(time.Millisecond), served.Load(), burst, rate, refused.Load(), others[len(others)-1].Round(time.Millisecond))
}
