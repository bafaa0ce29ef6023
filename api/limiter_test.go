package api

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/accountablework/accountable/store/storetest"
)

// A flood of distinct names cannot grow a limiter past its capacity, and cannot push out
// a client that is still limited: only buckets that are full again (the same as new ones)
// are forgotten.
func TestBucketsStayWithinCapacity(t *testing.T) {
	const capacity = 100
	b := newBuckets(1, 5, capacity) // full again 5s after it was emptied
	t0 := time.Unix(1_800_000_000, 0)

	// The victim spends its whole burst and is limited.
	for range 5 {
		if ok, _ := b.take("victim", t0); !ok {
			t.Fatal("the victim was limited within its burst")
		}
	}
	if ok, wait := b.take("victim", t0); ok || wait <= 0 {
		t.Fatalf("the victim was not limited: %v %v", ok, wait)
	}

	// A flood of new names over 3 seconds, each taking one token.
	refused := 0
	for i := range 50 * capacity {
		now := t0.Add(time.Duration(i) * 3 * time.Second / (50 * capacity))
		if ok, _ := b.take(fmt.Sprintf("flood-%d", i), now); !ok {
			refused++
		}
		if n := b.size(); n > capacity {
			t.Fatalf("%d buckets after %d names (capacity %d)", n, i+1, capacity)
		}
	}
	// Beyond the table the flood shared one bucket: it got about one bucket's worth.
	if refused < 40*capacity {
		t.Fatalf("the flood was refused only %d times of %d", refused, 50*capacity)
	}
	// The victim kept its debt: 3s later it has 3 tokens, not a fresh burst of 5.
	now := t0.Add(3 * time.Second)
	for range 3 {
		if ok, _ := b.take("victim", now); !ok {
			t.Fatal("the victim lost the tokens it had earned")
		}
	}
	if ok, _ := b.take("victim", now); ok {
		t.Fatal("the flood reset the victim's bucket")
	}

	// Once the flood's buckets are full again they are forgotten and new names get buckets
	// of their own.
	later := t0.Add(time.Minute)
	if ok, _ := b.take("newcomer", later); !ok {
		t.Fatal("a newcomer was refused after the flood")
	}
	if _, ok := b.table["newcomer"]; !ok || b.size() > 2 {
		t.Fatalf("after the sweep: %d buckets, newcomer tracked %v", b.size(), ok)
	}
}

// Without a rate, nothing is limited or kept.
func TestNoRateLimitsNothing(t *testing.T) {
	b := newBuckets(0, 0, 0)
	for i := range 1000 {
		if ok, _ := b.take("k", time.Now()); !ok {
			t.Fatalf("limited at %d", i)
		}
	}
}

// IPv4 clients have a budget each; IPv6 clients one per /64.
func TestClientAddressNamesABudget(t *testing.T) {
	for _, c := range []struct{ ip, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
	} {
		if got := clientAddress(net.ParseIP(c.ip)); got != c.want {
			t.Errorf("%s: %s, want %s", c.ip, got, c.want)
		}
	}
}

// Failures are checked before and charged after: requests admitted together leave the
// bucket in debt, which later requests wait out.
func TestChargesAfterTheFactRunIntoDebt(t *testing.T) {
	b := newBuckets(1, 2, 10)
	now := time.Unix(1_800_000_000, 0)
	for range 4 { // four admitted at once, while the bucket was full
		if ok, _ := b.available("a", now); !ok {
			t.Fatal("a full bucket has no token")
		}
	}
	for range 4 {
		b.charge("a", now)
	}
	if ok, wait := b.available("a", now); ok || wait != 3*time.Second {
		t.Fatalf("after 4 charges to a burst of 2: %v, wait %v", ok, wait)
	}
	if ok, _ := b.available("a", now.Add(3*time.Second)); !ok {
		t.Fatal("the debt was not paid after 3s")
	}
	if ok, _ := b.available("b", now); !ok {
		t.Fatal("another name was charged")
	}
}

// A workspace's writes past its bound wait for a slot, not beside it; one that waits
// longer than the wait is refused; another workspace's are not held up; and the map keeps
// only the workspaces writing now.
func TestWritesInFlightWaitTheirTurn(t *testing.T) {
	if newInFlight(0, time.Second) != nil {
		t.Fatal("a bound of 0 is no bound")
	}
	f := newInFlight(2, 200*time.Millisecond)
	r1, ok1 := f.acquire("noisy")
	r2, ok2 := f.acquire("noisy")
	if !ok1 || !ok2 {
		t.Fatal("the first two writes did not get a slot")
	}
	if r, ok := f.acquire("quiet"); !ok {
		t.Fatal("another workspace waited for the noisy one's slots")
	} else {
		r()
	}

	// A third waits until one of the two ends.
	got := make(chan time.Time, 1)
	go func() {
		r3, ok := f.acquire("noisy")
		if ok {
			got <- time.Now()
			r3()
		}
		close(got)
	}()
	// The third has counted itself in (it waits, or is about to, for one of the held slots).
	storetest.WaitFor(t, 5*time.Second, "the third write to ask for a slot", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.slots["noisy"].users == 3
	})
	released := time.Now()
	r1()
	at, ok := <-got
	if !ok {
		t.Fatal("the third write was refused though a slot freed within its wait")
	}
	if at.Before(released) {
		t.Fatal("the third write ran beside the two holding the slots")
	}

	// With both slots held past the wait, the next write is refused after the wait.
	r4, _ := f.acquire("noisy")
	start := time.Now()
	if _, ok := f.acquire("noisy"); ok {
		t.Fatal("a write got a third slot")
	}
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Fatalf("refused after %s, before its wait", waited)
	}
	r2()
	r4()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.slots) != 0 {
		t.Fatalf("slots kept for workspaces writing nothing: %v", f.slots)
	}
}

// A client address header is believed only from a configured proxy, read from the right,
// skipping the configured proxies.
func TestClientAddressFromATrustedProxyOnly(t *testing.T) {
	proxies, err := ParseTrustedProxies("10.0.0.0/8, 192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	xff := ClientAddresses{TrustedProxies: proxies}
	realIP := ClientAddresses{TrustedProxies: proxies, Header: "X-Real-IP"}
	for _, c := range []struct {
		a              ClientAddresses
		remote, header string
		want           string
	}{
		{ClientAddresses{}, "10.1.1.1", "203.0.113.9", "10.1.1.1"},          // no proxies configured: the header is ignored
		{xff, "198.51.100.4", "203.0.113.9", "198.51.100.4"},                // not from a trusted proxy
		{xff, "10.1.1.1", "203.0.113.9", "203.0.113.9"},                     // from one
		{xff, "192.0.2.1", "6.6.6.6, 203.0.113.9, 10.2.2.2", "203.0.113.9"}, // the client's own claim (6.6.6.6) is skipped past
		{xff, "10.1.1.1", "", "10.1.1.1"},                                   // a proxy that sent none is the client
		{xff, "10.1.1.1", "junk", "10.1.1.1"},
		{xff, "10.1.1.1", "10.3.3.3", "10.3.3.3"}, // only proxies: the farthest is the client
		{xff, "10.1.1.1", "2001:db8::1", "2001:db8::/64"},
		{realIP, "10.1.1.1", "203.0.113.9", "203.0.113.9"},
	} {
		header := func(name string) string {
			if c.a.Header == "" && name == "X-Forwarded-For" || name == c.a.Header {
				return c.header
			}
			return ""
		}
		if got := clientAddress(c.a.client(net.ParseIP(c.remote), header)); got != c.want {
			t.Errorf("%+v from %s with %q: %s, want %s", c.a.TrustedProxies, c.remote, c.header, got, c.want)
		}
	}
	if _, err := ParseTrustedProxies("10.0.0.0/8,nonsense"); err == nil {
		t.Error("a list with nonsense was accepted")
	}
}
