package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accountablework/accountable/passwords"
	"github.com/accountablework/accountable/store/storetest"
)

// The sign-in flood of issue 24, against `accountable serve` as its own process: signInFlooders
// connections from one address post forged sign-ins (the CSRF cookie and field set by the
// script itself, a new unknown email each time) as fast as they are answered, for
// signInFloodFor, twice. Before the hash gate this took the process from 82 MiB to 5.6 GiB
// resident and another client's read waited 18 s.
const (
	signInFlooders = 300
	signInFloodFor = 4 * time.Second
	// signInReadP99Bound bounds the p99 of another client's reads during the floods.
	signInReadP99Bound = 500 * time.Millisecond
)

// signInRSSBound is how much the process's peak resident memory may grow under both
// floods: the gate's slots of Argon2id memory (passwords.HashMemory each; one slot on two
// cores) and their garbage, which the collector lets grow to defaultGCPercent/100 times
// the live heap before it runs, plus 96 MiB for the buffers, goroutines and garbage of
// signInFlooders connections' answers. It does not grow with the number of attempts.
func signInRSSBound() int64 {
	return 96<<20 + (defaultGCPercent/100+1)*int64(passwords.DefaultGateSlots())*passwords.HashMemory
}

// clientFrom is an HTTP client whose connections come from ip (a loopback address), so
// that the server sees distinct clients; redirects are not followed.
func clientFrom(ip string, conns int) *http.Client {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return &http.Client{Timeout: 30 * time.Second,
		Transport:     &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// postSignIn posts a sign-in form with a CSRF cookie and field of the script's own making
// and returns the status.
func postSignIn(hc *http.Client, base, email, password string) (int, error) {
	form := url.Values{"csrf": {"forged-by-the-script"}, "email": {email}, "password": {password}}
	req, err := http.NewRequest(http.MethodPost, base+"/sign-in", strings.NewReader(form.Encode()))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Cookie", "__signin=forged-by-the-script")
	res, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, res.Body) //nolint:errcheck // only the status matters
	res.Body.Close()
	return res.StatusCode, nil
}

// procMemory returns a process's resident memory and its peak (VmRSS, VmHWM), in bytes.
func procMemory(t *testing.T, pid int) (rss, hwm int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			hwm = kb << 10
		}
	}
	return rss, hwm
}

func TestSignInFloodIsBounded(t *testing.T) {
	bin := buildBinary(t)
	db := storetest.Open(t)
	tenant := storetest.NewTenant(t, db)
	const password = "the real user's long password"
	storetest.NoteSecrets(password)
	hash, err := passwords.Hash(password)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetPassword(context.Background(), tenant.Principal.UserEmail, hash); err != nil {
		t.Fatal(err)
	}
	p := startServeProcess(t, bin, fmt.Sprintf("e2e-signin-%d", time.Now().UnixNano()))
	c := apiClient{t: t, base: p.base, key: tenant.Key}
	status, created := c.call("POST", "/work", "signin-flood-read", map[string]any{"title": "read during the flood"})
	if status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, created)
	}
	taskPath := p.base + "/api/v1/work/" + created["data"].(map[string]any)["taskId"].(string)

	flooder := clientFrom("127.0.0.1", signInFlooders)
	reader := clientFrom("127.0.0.2", 1)
	user := clientFrom("127.0.0.3", 1)
	defer flooder.CloseIdleConnections()
	read := func() (time.Duration, error) {
		req, _ := http.NewRequest(http.MethodGet, taskPath, nil)
		req.Header.Set("Authorization", "Bearer "+tenant.Key)
		start := time.Now()
		res, err := reader.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, res.Body) //nolint:errcheck // only the connection's reuse needs the body read
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("read: %d", res.StatusCode)
		}
		return time.Since(start), nil
	}
	for range 20 { // warm: the key cache, the pool, the read path
		if _, err := read(); err != nil {
			t.Fatal(err)
		}
	}
	rss0, hwm0 := procMemory(t, p.cmd.Process.Pid)
	t.Logf("before: VmRSS %d MiB, VmHWM %d MiB", rss0>>20, hwm0>>20)

	var seq atomic.Int64
	for round := 1; round <= 2; round++ {
		statuses := map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		ctx, cancel := context.WithTimeout(context.Background(), signInFloodFor)
		for range signInFlooders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					st, err := postSignIn(flooder, p.base, fmt.Sprintf("nobody-%d@flood.example", seq.Add(1)), "a wrong password, guessed")
					mu.Lock()
					if err != nil {
						statuses[-1]++
					} else {
						statuses[st]++
					}
					mu.Unlock()
				}
			}()
		}
		// Meanwhile another client reads, and the real user signs in from a third address.
		var lat []time.Duration
		var readErr error
		var userStatus int
		var userTook time.Duration
		var others sync.WaitGroup
		others.Add(2)
		go func() {
			defer others.Done()
			for ctx.Err() == nil {
				d, err := read()
				if err != nil {
					readErr = err
					return
				}
				lat = append(lat, d)
				time.Sleep(10 * time.Millisecond) // an ordinary client's pace during the flood, not a synchronisation
			}
		}()
		go func() {
			defer others.Done()
			time.Sleep(signInFloodFor / 2) // on purpose: the user signs in halfway through the flood
			start := time.Now()
			userStatus, _ = postSignIn(user, p.base, tenant.Principal.UserEmail, password)
			userTook = time.Since(start)
		}()
		wg.Wait()
		others.Wait()
		cancel()
		_, hwm := procMemory(t, p.cmd.Process.Pid)
		slices.Sort(lat)
		p99 := time.Duration(0)
		if len(lat) > 0 {
			p99 = lat[len(lat)*99/100]
		}
		t.Logf("flood %d: %v answers; another client's %d reads p50 %v p99 %v; the real user's sign-in %d in %v; VmHWM %d MiB (+%d MiB)",
			round, statuses, len(lat), lat[len(lat)/2], p99, userStatus, userTook.Round(time.Millisecond), hwm>>20, (hwm-hwm0)>>20)
		if readErr != nil {
			t.Fatalf("flood %d: another client's read failed: %v", round, readErr)
		}
		if statuses[-1] > 0 || statuses[http.StatusUnauthorized] == 0 || statuses[http.StatusTooManyRequests] == 0 {
			t.Fatalf("flood %d: answers %v: want 401s for the attempts checked, 429s for the rest, no connection errors", round, statuses)
		}
		if userStatus != http.StatusSeeOther {
			t.Fatalf("flood %d: the real user's sign-in from another address answered %d", round, userStatus)
		}
		if p99 > signInReadP99Bound {
			t.Fatalf("flood %d: another client's read p99 %v > %v", round, p99, signInReadP99Bound)
		}
		if hwm-hwm0 > signInRSSBound() {
			t.Fatalf("flood %d: the peak resident memory grew %d MiB > %d MiB", round, (hwm-hwm0)>>20, signInRSSBound()>>20)
		}
	}

	// After the floods, the real user signs in from the flooding address: its failures
	// were charged to the emails it tried, not to the address.
	if st, err := postSignIn(clientFrom("127.0.0.1", 1), p.base, tenant.Principal.UserEmail, password); err != nil || st != http.StatusSeeOther {
		t.Fatalf("the real user's sign-in from the flooding address after the floods: %d %v", st, err)
	}
	// A flood at the real user's own account from one address spends that address's share
	// of the account's budget, not the account's: the user signs in from elsewhere.
	limited := 0
	for range 15 {
		st, err := postSignIn(flooder, p.base, tenant.Principal.UserEmail, "a wrong password, guessed")
		if err != nil {
			t.Fatal(err)
		}
		if st == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("15 wrong passwords for one account from one address were not limited")
	}
	if st, err := postSignIn(user, p.base, tenant.Principal.UserEmail, password); err != nil || st != http.StatusSeeOther {
		t.Fatalf("the real user's sign-in from another address after a flood at the account: %d %v", st, err)
	}
}
