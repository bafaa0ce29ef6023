package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// A closed-loop HTTP load generator: N client goroutines, each with its own keep-alive
// connection (fasthttp's client: no allocation per request, so the generator takes as
// little of the machine as it can), each sending its next request as soon as the previous
// one was answered. Requests are numbered from one shared counter, so every request gets
// its own body (its own work item, version token and Idempotency-Key). A run is bounded in
// time (warm-up, then the measured window) and in count (the workload may run out).

// workload is what one run sends.
type workload struct {
	// prepare fills req (already reset) for request number i; false: no requests are left.
	prepare func(i int, req *fasthttp.Request) bool
	// ok reports whether status answers the request successfully.
	ok func(status int) bool
	// onResponse, when set, sees the body of every successful response (warm-up too).
	onResponse func(i int, body []byte)
	// onHTTP, when set, sees every successful response whole (its headers too).
	onHTTP func(i int, resp *fasthttp.Response)
}

// sample is the outcome of one bounded run of one side of a line.
type sample struct {
	Rate      float64       // operations (requests, transactions, events) per second in the window
	Count     int           // operations completed in the measured window
	Errors    int           // failed operations in the measured window
	FirstErr  string        // the first failure, for the report
	P50, P99  time.Duration // latency of the operation (per request, transaction or page)
	Window    time.Duration // the measured window (shorter than asked when the workload ran out)
	Exhausted bool          // the workload ran out before the end of the window
	Issued    int           // requests sent (warm-up included): the work items used
}

func (s sample) String() string {
	ex := ""
	if s.Exhausted {
		ex = " (ran out of work items)"
	}
	errs := ""
	if s.Errors > 0 {
		errs = fmt.Sprintf(", %d errors (first: %s)", s.Errors, s.FirstErr)
	}
	return fmt.Sprintf("%s/s over %.1fs, p50 %s, p99 %s%s%s", rate(s.Rate), s.Window.Seconds(), ms(s.P50), ms(s.P99), errs, ex)
}

// runLoad drives addr with clients concurrent clients: warmup, then the measured window.
func runLoad(ctx context.Context, addr string, clients int, warmup, window time.Duration, w workload) sample {
	hc := &fasthttp.HostClient{
		Addr: addr, MaxConns: clients, ReadTimeout: time.Minute, WriteTimeout: time.Minute,
		MaxIdleConnDuration: time.Minute, NoDefaultUserAgentHeader: true, DisablePathNormalizing: true,
		MaxConnWaitTimeout: time.Minute,
	}
	defer hc.CloseIdleConnections()
	var next atomic.Int64
	var exhausted, cancelled atomic.Bool
	stopWatch := context.AfterFunc(ctx, func() { cancelled.Store(true) })
	defer stopWatch()
	start := time.Now()
	from, end := start.Add(warmup), start.Add(warmup+window)
	type clientResult struct {
		lat      []time.Duration
		errors   int
		firstErr string
		last     time.Time
	}
	results := make([]clientResult, clients)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[c]
			r.lat = make([]time.Duration, 0, 4096)
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for !exhausted.Load() && !cancelled.Load() {
				t0 := time.Now()
				if !t0.Before(end) {
					return
				}
				i := int(next.Add(1) - 1)
				req.Reset()
				if !w.prepare(i, req) {
					exhausted.Store(true)
					return
				}
				err := hc.Do(req, resp)
				t1 := time.Now()
				status := resp.StatusCode()
				good := err == nil && w.ok(status)
				if good && w.onResponse != nil {
					w.onResponse(i, resp.Body())
				}
				if good && w.onHTTP != nil {
					w.onHTTP(i, resp)
				}
				if t1.Before(from) || t1.After(end) {
					continue
				}
				r.last = t1
				if !good {
					if r.errors == 0 {
						if err != nil {
							r.firstErr = err.Error()
						} else {
							r.firstErr = fmt.Sprintf("%d %s", status, truncate(string(resp.Body()), 300))
						}
					}
					r.errors++
					continue
				}
				r.lat = append(r.lat, t1.Sub(t0))
			}
		}()
	}
	wg.Wait()
	var s sample
	var lat []time.Duration
	last := from
	for _, r := range results {
		lat = append(lat, r.lat...)
		s.Errors += r.errors
		if s.FirstErr == "" {
			s.FirstErr = r.firstErr
		}
		if r.last.After(last) {
			last = r.last
		}
	}
	s.Exhausted = exhausted.Load()
	s.Issued = int(next.Load())
	s.Window = window
	if s.Exhausted {
		s.Window = last.Sub(from)
	}
	s.Count = len(lat)
	if s.Window > 0 {
		s.Rate = float64(s.Count) / s.Window.Seconds()
	}
	s.P50, s.P99 = percentiles(lat)
	return s
}

// percentiles returns the 50th and 99th percentiles (nearest rank) of lat, which it sorts.
func percentiles(lat []time.Duration) (p50, p99 time.Duration) {
	if len(lat) == 0 {
		return 0, 0
	}
	slices.Sort(lat)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(lat)))) - 1
		return lat[max(0, min(i, len(lat)-1))]
	}
	return rank(0.50), rank(0.99)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000)
}
