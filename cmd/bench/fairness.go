package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/accountablework/accountable/store"
)

// The fairness line (issue 11): one workspace writing as fast as it can does not raise the
// p99 of the others, thanks to the per-workspace limit (WORKSPACE_RATE_LIMIT_RPS/BURST).
//
// BENCH_FAIRNESS_WORKSPACES workspaces (1,000), each with its own key and user, made with
// store.CreateKey (what `accountable keys create --new-workspace` runs, without starting a
// process per key), fairSetupWorkers at a time, and one task in each quiet workspace made
// through POST /work (what its reads read). The first workspace is the noisy one, the
// others (999) are quiet:
//
//   - quiet load: open loop, BENCH_FAIRNESS_QUIET_RPS requests a second in all (200, so 0.2
//     a second each), evenly spaced and dealt to the quiet workspaces in turn, each
//     workspace alternating POST /work and GET /work/{id} of its task; a request is sent
//     at its scheduled instant whether earlier ones were answered or not, and its latency
//     runs from that instant (so a late sender counts against the service, not for it);
//   - noisy load: closed loop, BENCH_FAIRNESS_NOISY_CLIENTS clients (32) sending POST /work
//     with the noisy workspace's key as fast as they are answered; in phases 2 and 3 a 429
//     is not waited out (Retry-After is ignored): the client sends again at once, the worst
//     case; in phase 4 each client waits the 429's Retry-After before its next request, as
//     a client following the protocol does (it still sends as fast as it is let).
//
// Four phases, each a run of warm-up + BENCH_DURATION, BENCH_RUNS rounds of the four in
// turn (the table gives medians): (1) the quiet load alone, (2) the quiet and the noisy load
// on the service without a per-workspace limit (the main `accountable serve`), (3) both on
// a second `accountable serve` (BENCH_FAIRNESS_PORT) with WORKSPACE_RATE_LIMIT_RPS =
// BENCH_FAIRNESS_WORKSPACE_RPS (50), _BURST = BENCH_FAIRNESS_WORKSPACE_BURST (100) and
// WORKSPACE_MAX_IN_FLIGHT = BENCH_FAIRNESS_WORKSPACE_IN_FLIGHT (2), (4) as 3 with the noisy
// clients following Retry-After.
// Before every phase: CHECKPOINT, and one GET per quiet workspace, unmeasured, so every
// key is in the serving process's key cache in every phase alike. The line meets its
// claim when the quiet p99 of phase 4 is within fairTolerance of phase 1's; phase 3 says
// what a client that ignores refusals still costs the others on the same cores.

// fairTolerance: phase 4's quiet p99 at most this many times phase 1's meets the claim.
const fairTolerance = 1.5

const (
	fairSetupWorkers = 8    // keys created at once
	fairQuietConns   = 512  // connections the open-loop sender may open
	fairMaxInFlight  = 4096 // open-loop requests in flight before the sender drops (and counts) one
	fairTimeout      = 30 * time.Second
)

// fairness is the line's state and results.
type fairness struct {
	keys     []keyInfo // keys[0] is the noisy workspace's
	tasks    []string  // tasks[i] is the task of quiet workspace i (keys[i+1])
	keysTook time.Duration
	setup    time.Duration // keys, tasks and VACUUM ANALYZE
	limited  string        // the limited process's address
	phases   []*fairPhase
	notes    []string
}

// fairPhase is one phase's runs.
type fairPhase struct {
	Name    string
	Noisy   bool // the noisy workspace writes
	Limited bool // on the process with the per-workspace limit
	Polite  bool // the noisy clients wait out a 429's Retry-After
	Quiet   []quietSample
	NoisyR  []noisySample
}

// quietSample is one run of the open-loop quiet load: sample's Count, Rate, P50 and P99
// are of the 2xx answers, Errors of every other outcome.
type quietSample struct {
	sample
	Sent    int           // requests scheduled in the measured window
	Dropped int           // not sent: fairMaxInFlight requests were in flight
	Status  map[int]int   // answers other than the expected 2xx, by status (0: no answer)
	LagP99  time.Duration // how late the sender sent (p99), included in the latencies
	// ReadP99 and WriteP99 are the p99 of the GETs and of the POSTs apart.
	ReadP99, WriteP99 time.Duration
}

// noisySample is one run of the noisy load: answers in the measured window.
type noisySample struct {
	OK, Limited, Other int // 201, 429, anything else (or no answer)
	FirstOther         string
	Window             time.Duration
}

func (n noisySample) okRate() float64      { return perSecond(n.OK, n.Window) }
func (n noisySample) limitedRate() float64 { return perSecond(n.Limited, n.Window) }

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func (q quietSample) String() string {
	s := q.sample.String()
	if q.Dropped > 0 {
		s += fmt.Sprintf(", %d dropped by the sender", q.Dropped)
	}
	return fmt.Sprintf("%s (GET p99 %s, POST p99 %s; %d sent, sender lag p99 %s)", s, ms(q.ReadP99), ms(q.WriteP99), q.Sent, ms(q.LagP99))
}

func (n noisySample) String() string {
	s := fmt.Sprintf("noisy %s 201/s, %s 429/s", rate(n.okRate()), rate(n.limitedRate()))
	if n.Other > 0 {
		s += fmt.Sprintf(", %d other (first: %s)", n.Other, n.FirstOther)
	}
	return s
}

// --- the schedule --------------------------------------------------------------------------

// openSchedule is the quiet load's plan: request i is sent at start + i/rate, to quiet
// workspace i mod n, as that workspace's (i div n)-th request; each workspace's requests
// are n/rate apart.
type openSchedule struct {
	start time.Time
	rate  float64 // requests a second, all workspaces together
	n     int     // quiet workspaces
}

// at is when request i is due.
func (o openSchedule) at(i int) time.Time {
	return o.start.Add(time.Duration(math.Round(float64(i) * float64(time.Second) / o.rate)))
}

// count is how many requests are due before end.
func (o openSchedule) count(end time.Time) int {
	n := int(math.Ceil(end.Sub(o.start).Seconds() * o.rate))
	for n > 0 && !o.at(n-1).Before(end) {
		n--
	}
	for o.at(n).Before(end) {
		n++
	}
	return n
}

// slot is the workspace of request i and the number of the request within it.
func (o openSchedule) slot(i int) (ws, k int) { return i % o.n, i / o.n }

// quietWrite says whether a quiet workspace's k-th request is a POST /work (or a GET):
// each workspace alternates, and neighbouring workspaces start on opposite ones, so
// any stretch of the schedule is half writes, half reads.
func quietWrite(ws, k int) bool { return (ws+k)%2 == 0 }

// --- the verdict ---------------------------------------------------------------------------

// fairRatio is a phase's quiet p99 over phase 1's (0 without both).
func fairRatio(base, p time.Duration) float64 {
	if base <= 0 || p <= 0 {
		return 0
	}
	return float64(p) / float64(base)
}

// fairMeets: the ratio is within fairTolerance.
func fairMeets(r float64) bool { return r > 0 && r <= fairTolerance }

func fairVerdict(r float64) string {
	switch {
	case r == 0:
		return "–"
	case fairMeets(r):
		return fmt.Sprintf("meets (≤ %.1fx)", fairTolerance)
	}
	return fmt.Sprintf("**above %.1fx**", fairTolerance)
}

// --- the line ------------------------------------------------------------------------------

func (b *bench) fairnessLine() error {
	f := &fairness{limited: "127.0.0.1:" + strconv.Itoa(b.s.FairPort)}
	b.fair = f
	if err := b.fairSetup(); err != nil {
		return err
	}
	env := append(slices.Clone(b.svcEnv), "HTTP_ADDR="+f.limited, "SITE_URL=http://"+f.limited, "PPROF_ADDR=",
		"WORKSPACE_RATE_LIMIT_RPS="+strconv.FormatFloat(b.s.FairWorkspaceRPS, 'f', -1, 64),
		"WORKSPACE_RATE_LIMIT_BURST="+strconv.Itoa(b.s.FairWorkspaceBurst), "WORKSPACE_MAX_IN_FLIGHT="+strconv.Itoa(b.s.FairInFlight),
		"RATE_LIMIT_HOLD="+b.s.FairHold.String())
	logf("fairness: starting accountable serve with the per-workspace limit (%s/s, burst %d, %d writes in flight, refusals held %s) on %s",
		rate(b.s.FairWorkspaceRPS), b.s.FairWorkspaceBurst, b.s.FairInFlight, b.s.FairHold, f.limited)
	var err error
	if b.fairSvc, err = startProc("accountable serve (fairness)", b.dir+"/serve-fairness.log", env, b.accountable, "serve"); err != nil {
		return err
	}
	defer func() { b.fairSvc.stop(); b.fairSvc = nil }()
	if err := b.fairSvc.waitReady("http://"+f.limited+"/readyz", 60*time.Second); err != nil {
		return err
	}
	f.phases = []*fairPhase{
		{Name: "1: quiet only"},
		{Name: "2: quiet + noisy, no per-workspace limit", Noisy: true},
		{Name: "3: quiet + noisy ignoring 429s, per-workspace limit", Noisy: true, Limited: true},
		{Name: "4: quiet + noisy following Retry-After, per-workspace limit", Noisy: true, Limited: true, Polite: true},
	}
	for r := 1; r <= b.s.Runs; r++ {
		for _, ph := range f.phases {
			if err := b.ctx.Err(); err != nil {
				return err
			}
			q, n, err := b.fairRun(ph)
			if err != nil {
				return fmt.Errorf("fairness phase %s: %w", ph.Name, err)
			}
			msg := "quiet " + q.String()
			if ph.Noisy {
				msg += "; " + n.String()
			}
			logf("  fairness %s run %d/%d: %s", ph.Name, r, b.s.Runs, msg)
			ph.Quiet = append(ph.Quiet, q)
			if ph.Noisy {
				ph.NoisyR = append(ph.NoisyR, n)
			}
		}
	}
	for _, ph := range f.phases[2:] {
		if median(ph.NoisyR, noisySample.limitedRate) == 0 {
			f.notes = append(f.notes, "the per-workspace limit refused none of the noisy workspace's requests in phase "+ph.Name+
				": it did not write faster than the limit")
		}
	}
	return nil
}

// fairSetup makes the workspaces, their keys and the quiet workspaces' tasks.
func (b *bench) fairSetup() error {
	f := b.fair
	n := b.s.FairWorkspaces
	start := time.Now()
	logf("fairness: creating %d workspaces, each with its own user and key (store.CreateKey, %d at a time)", n, fairSetupWorkers)
	db, err := store.Open(b.ctx, store.Config{URL: b.dbURL, MaxConns: fairSetupWorkers})
	if err != nil {
		return err
	}
	defer db.Close()
	f.keys = make([]keyInfo, n)
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range fairSetupWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || b.ctx.Err() != nil {
					return
				}
				k, err := db.CreateKey(b.ctx, store.CreateKeyRequest{Name: "bench", UserEmail: fmt.Sprintf("bench-fair-%04d@example.com", i),
					NewWorkspace: fmt.Sprintf("Bench fairness %04d", i)})
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("fairness: creating key %d: %w", i, err)
					}
					mu.Unlock()
					return
				}
				f.keys[i] = keyInfo{Key: k.Key, WorkspaceID: k.WorkspaceID, UserID: k.UserID}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	if err := b.ctx.Err(); err != nil {
		return err
	}
	f.keysTook = time.Since(start)
	logf("  %d keys in %s", n, f.keysTook.Round(time.Millisecond))

	quiet := f.keys[1:]
	f.tasks = make([]string, len(quiet))
	tag := b.nextTag("fair-seed")
	s := runLoad(b.ctx, b.svcAddr, seedClients, 0, 30*time.Minute, workload{
		prepare: func(i int, req *fasthttp.Request) bool {
			if i >= len(quiet) {
				return false
			}
			fairCreate(req, b.svcAddr, quiet[i].Key, tag, i)
			return true
		},
		ok:         func(status int) bool { return status == fasthttp.StatusCreated },
		onResponse: func(i int, body []byte) { f.tasks[i] = jsonString(body, "taskId") },
	})
	if s.Errors > 0 || s.Count < len(quiet) {
		return fmt.Errorf("fairness: a task per quiet workspace: %d of %d created, %d errors (first: %s)", s.Count, len(quiet), s.Errors, s.FirstErr)
	}
	for i, t := range f.tasks {
		if t == "" {
			return fmt.Errorf("fairness: no task id in the answer for quiet workspace %d", i)
		}
	}
	if err := b.analyze(); err != nil {
		return err
	}
	f.setup = time.Since(start)
	logf("  set up in %s (keys %s, then a task per quiet workspace through POST /work)", f.setup.Round(time.Millisecond), f.keysTook.Round(time.Millisecond))
	return nil
}

// fairCreate fills req with POST /work in key's workspace, Idempotency-Key tag-i.
func fairCreate(req *fasthttp.Request, addr, key, tag string, i int) {
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI("http://" + addr + "/api/v1/work")
	req.Header.Set(fasthttp.HeaderAuthorization, "Bearer "+key)
	req.Header.SetContentType("application/json")
	req.Header.Set("Idempotency-Key", tag+"-"+strconv.Itoa(i))
	req.SetBodyRaw(fmt.Appendf(nil, `{"title":"Prepare the quarterly report %s-%d","description":"Collect the figures, check them against the ledger and write the summary for the board.","priority":"high","metadata":{"source":"bench","batch":%q}}`, tag, i, tag))
}

// fairRead fills req with GET /work/{task} in key's workspace.
func fairRead(req *fasthttp.Request, addr, key, task string) {
	req.SetRequestURI("http://" + addr + "/api/v1/work/" + task)
	req.Header.Set(fasthttp.HeaderAuthorization, "Bearer "+key)
}

// fairPrime reads each quiet workspace's task once through addr (unmeasured): every key is
// then in that process's key cache, as in every phase.
func (b *bench) fairPrime(addr string) error {
	f := b.fair
	s := runLoad(b.ctx, addr, seedClients, 0, 10*time.Minute, workload{
		prepare: func(i int, req *fasthttp.Request) bool {
			if i >= len(f.tasks) {
				return false
			}
			fairRead(req, addr, f.keys[i+1].Key, f.tasks[i])
			return true
		},
		ok: func(status int) bool { return status == fasthttp.StatusOK },
	})
	if s.Errors > 0 || s.Count < len(f.tasks) {
		return fmt.Errorf("priming the key cache of %s: %d of %d read, %d errors (first: %s)", addr, s.Count, len(f.tasks), s.Errors, s.FirstErr)
	}
	return nil
}

// fairRun runs one phase once: the quiet load, and the noisy load beside it when the phase
// has one, over the same warm-up and window.
func (b *bench) fairRun(ph *fairPhase) (quietSample, noisySample, error) {
	f := b.fair
	addr := b.svcAddr
	if ph.Limited {
		addr = f.limited
	}
	b.prepareRun()
	if err := b.fairPrime(addr); err != nil {
		return quietSample{}, noisySample{}, err
	}
	start := time.Now().Add(10 * time.Millisecond)
	var n noisySample
	done := make(chan struct{})
	if ph.Noisy {
		tag, key := b.nextTag("fair-noisy"), f.keys[0].Key
		go func() {
			defer close(done)
			n = runClosed(b.ctx, addr, b.s.FairNoisyClients, start, b.s.Warmup, b.s.Duration, ph.Polite, func(i int, req *fasthttp.Request) {
				fairCreate(req, addr, key, tag, i)
			})
		}()
	} else {
		close(done)
	}
	sched := openSchedule{start: start, rate: b.s.FairQuietRPS, n: len(f.tasks)}
	tag := b.nextTag("fair-quiet")
	q := runOpen(b.ctx, addr, sched, b.s.Warmup, b.s.Duration, func(i int, req *fasthttp.Request) int {
		ws, k := sched.slot(i)
		key := f.keys[ws+1].Key
		if quietWrite(ws, k) {
			fairCreate(req, addr, key, tag, i)
			return fasthttp.StatusCreated
		}
		fairRead(req, addr, key, f.tasks[ws])
		return fasthttp.StatusOK
	})
	<-done
	if err := b.ctx.Err(); err != nil {
		return q, n, err
	}
	if q.Count == 0 {
		return q, n, fmt.Errorf("no quiet request answered 2xx in the window (%d errors, first: %s)", q.Errors, q.FirstErr)
	}
	if ph.Noisy && n.OK == 0 {
		return q, n, fmt.Errorf("the noisy workspace wrote nothing in the window (%d 429, %d other, first: %s)", n.Limited, n.Other, n.FirstOther)
	}
	return q, n, nil
}

// runOpen sends the schedule's requests due before start + warmup + window, each at its
// instant on its own goroutine, whether or not earlier ones were answered; prepare fills
// request i and returns the status that answers it successfully. The requests due in the
// window (from start + warmup) are measured, each from its due instant to its answer.
func runOpen(ctx context.Context, addr string, sched openSchedule, warmup, window time.Duration,
	prepare func(i int, req *fasthttp.Request) (want int)) quietSample {
	hc := &fasthttp.HostClient{
		Addr: addr, MaxConns: fairQuietConns, ReadTimeout: fairTimeout, WriteTimeout: fairTimeout,
		MaxIdleConnDuration: time.Minute, NoDefaultUserAgentHeader: true, DisablePathNormalizing: true,
		MaxConnWaitTimeout: fairTimeout,
	}
	defer hc.CloseIdleConnections()
	from, end := sched.start.Add(warmup), sched.start.Add(warmup+window)
	total := sched.count(end)
	type outcome struct {
		sent, done time.Time
		status     int
		want       int
		ok         bool
		dropped    bool
		err        string
	}
	out := make([]outcome, total)
	inflight := make(chan struct{}, fairMaxInFlight)
	var wg sync.WaitGroup
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
schedule:
	for i := range total {
		due := sched.at(i)
		if d := time.Until(due); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				break schedule
			}
		}
		select {
		case inflight <- struct{}{}:
		default:
			out[i].dropped = true
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-inflight; wg.Done() }()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			o := &out[i]
			o.want = prepare(i, req)
			o.sent = time.Now()
			err := hc.Do(req, resp)
			o.done = time.Now()
			if err != nil {
				o.err = err.Error()
				return
			}
			o.status = resp.StatusCode()
			o.ok = o.status == o.want
			if !o.ok {
				o.err = fmt.Sprintf("%d %s", o.status, truncate(string(resp.Body()), 300))
			}
		}()
	}
	wg.Wait()
	q := quietSample{Status: map[int]int{}}
	q.Window = window
	var lat, lag, reads, writes []time.Duration
	for i, o := range out {
		due := sched.at(i)
		if due.Before(from) || !due.Before(end) {
			continue
		}
		q.Sent++
		switch {
		case o.dropped:
			q.Dropped++
			q.Errors++
			q.Status[0]++
			if q.FirstErr == "" {
				q.FirstErr = "not sent: too many requests in flight"
			}
			continue
		case o.sent.IsZero(): // cancelled before it was due
			q.Sent--
			continue
		}
		lag = append(lag, o.sent.Sub(due))
		if !o.ok {
			q.Errors++
			q.Status[o.status]++
			if q.FirstErr == "" {
				q.FirstErr = o.err
			}
			continue
		}
		lat = append(lat, o.done.Sub(due))
		if o.want == fasthttp.StatusOK {
			reads = append(reads, o.done.Sub(due))
		} else {
			writes = append(writes, o.done.Sub(due))
		}
	}
	q.Count = len(lat)
	q.Rate = perSecond(q.Count, window)
	q.P50, q.P99 = percentiles(lat)
	_, q.LagP99 = percentiles(lag)
	_, q.ReadP99 = percentiles(reads)
	_, q.WriteP99 = percentiles(writes)
	return q
}

// runClosed is the noisy load: clients clients each sending its next request as soon as
// the previous one is answered, from start until start + warmup + window; the answers that
// arrive in the window (after the warm-up) are counted by kind.
func runClosed(ctx context.Context, addr string, clients int, start time.Time, warmup, window time.Duration,
	polite bool, prepare func(i int, req *fasthttp.Request)) noisySample {
	hc := &fasthttp.HostClient{
		Addr: addr, MaxConns: clients, ReadTimeout: fairTimeout, WriteTimeout: fairTimeout,
		MaxIdleConnDuration: time.Minute, NoDefaultUserAgentHeader: true, DisablePathNormalizing: true,
		MaxConnWaitTimeout: fairTimeout,
	}
	defer hc.CloseIdleConnections()
	from, end := start.Add(warmup), start.Add(warmup+window)
	var next atomic.Int64
	res := make([]noisySample, clients)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &res[c]
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for ctx.Err() == nil && time.Now().Before(end) {
				i := int(next.Add(1) - 1)
				req.Reset()
				prepare(i, req)
				err := hc.Do(req, resp)
				t := time.Now()
				if polite && err == nil && resp.StatusCode() == fasthttp.StatusTooManyRequests {
					waitOut(ctx, t.Add(retryAfter(resp)), end)
				}
				if t.Before(from) || !t.Before(end) {
					continue
				}
				switch {
				case err == nil && resp.StatusCode() == fasthttp.StatusCreated:
					r.OK++
				case err == nil && resp.StatusCode() == fasthttp.StatusTooManyRequests:
					r.Limited++
				default:
					if r.Other == 0 {
						if err != nil {
							r.FirstOther = err.Error()
						} else {
							r.FirstOther = fmt.Sprintf("%d %s", resp.StatusCode(), truncate(string(resp.Body()), 300))
						}
					}
					r.Other++
				}
			}
		}()
	}
	wg.Wait()
	n := noisySample{Window: window}
	for _, r := range res {
		n.OK += r.OK
		n.Limited += r.Limited
		n.Other += r.Other
		if n.FirstOther == "" {
			n.FirstOther = r.FirstOther
		}
	}
	return n
}

// retryAfter is a 429's Retry-After (whole seconds, as the service sends it); a second
// when it has none.
func retryAfter(resp *fasthttp.Response) time.Duration {
	if n, err := strconv.Atoi(string(resp.Header.Peek(fasthttp.HeaderRetryAfter))); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	return time.Second
}

// waitOut sleeps until t, or the run's end if that is sooner, or until ctx ends.
func waitOut(ctx context.Context, t, end time.Time) {
	if t.After(end) {
		t = end
	}
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// --- the report ----------------------------------------------------------------------------

func (ph *fairPhase) samples() []sample {
	out := make([]sample, len(ph.Quiet))
	for i, q := range ph.Quiet {
		out[i] = q.sample
	}
	return out
}

func (ph *fairPhase) p99() time.Duration { return median(ph.samples(), p99Of) }

// errorsCell is the quiet requests that were not answered 2xx, over all runs, by status.
func (ph *fairPhase) errorsCell() string {
	total := 0
	by := map[int]int{}
	for _, q := range ph.Quiet {
		total += q.Errors
		for s, n := range q.Status {
			by[s] += n
		}
	}
	if total == 0 {
		return "0"
	}
	codes := make([]int, 0, len(by))
	for s := range by {
		codes = append(codes, s)
	}
	sort.Ints(codes)
	parts := make([]string, len(codes))
	for i, s := range codes {
		name := strconv.Itoa(s)
		if s == 0 {
			name = "no answer"
		}
		parts[i] = fmt.Sprintf("%d× %s", by[s], name)
	}
	return fmt.Sprintf("**%d** (%s)", total, strings.Join(parts, ", "))
}

// measured are the phases with runs.
func (f *fairness) measured() bool {
	if f == nil || len(f.phases) != 4 {
		return false
	}
	for _, ph := range f.phases {
		if len(ph.Quiet) == 0 {
			return false
		}
	}
	return true
}

// ratios are the quiet p99 of phases 2, 3 and 4 over phase 1's.
func (f *fairness) ratios() (r2, r3, r4 float64) {
	base := f.phases[0].p99()
	return fairRatio(base, f.phases[1].p99()), fairRatio(base, f.phases[2].p99()), fairRatio(base, f.phases[3].p99())
}

// fairTable is the fairness line's results in Markdown.
func (b *bench) fairTable() string {
	f := b.fair
	if !f.measured() {
		return ""
	}
	var w strings.Builder
	w.WriteString("| phase | quiet requests / run | quiet 2xx req/s | quiet p50 / p99 (ms) | quiet p99 / phase 1 | quiet p99 GET / POST (ms) | quiet not 2xx (all runs) | sender lag p99 (ms) | noisy 201 req/s | noisy 429 req/s |\n")
	w.WriteString("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|\n")
	base := f.phases[0].p99()
	for _, ph := range f.phases {
		s := ph.samples()
		noisyOK, noisy429 := "–", "–"
		if ph.Noisy {
			noisyOK, noisy429 = rate(median(ph.NoisyR, noisySample.okRate)), rate(median(ph.NoisyR, noisySample.limitedRate))
		}
		ratio := "1.00x"
		if ph != f.phases[0] {
			ratio = fmt.Sprintf("%.2fx", fairRatio(base, ph.p99()))
		}
		fmt.Fprintf(&w, "| %s | %s | %s | %s / %s | %s | %s / %s | %s | %s | %s | %s |\n", ph.Name,
			rate(median(ph.Quiet, func(q quietSample) float64 { return float64(q.Sent) })), rate(median(s, rateOf)),
			msec(median(s, p50Of)), msec(ph.p99()), ratio,
			msec(time.Duration(median(ph.Quiet, func(q quietSample) float64 { return float64(q.ReadP99) }))),
			msec(time.Duration(median(ph.Quiet, func(q quietSample) float64 { return float64(q.WriteP99) }))), ph.errorsCell(),
			msec(time.Duration(median(ph.Quiet, func(q quietSample) float64 { return float64(q.LagP99) }))), noisyOK, noisy429)
	}
	r2, r3, r4 := f.ratios()
	fmt.Fprintf(&w, "\nQuiet p99, phase 4 / phase 1 (the limit, a noisy client following Retry-After): **%.2fx**, %s; "+
		"phase 3 / phase 1 (the limit, a noisy client ignoring 429s): **%.2fx**, %s; phase 2 / phase 1 (no limit): %.2fx.\n",
		r4, fairVerdict(r4), r3, fairVerdict(r3), r2)
	return w.String()
}

// fairHistory is the fairness line's part of the history row.
func (b *bench) fairHistory() string {
	f := b.fair
	if !f.measured() {
		return ""
	}
	r2, r3, r4 := f.ratios()
	return fmt.Sprintf("fairness quiet p99 %s ms: noisy unlimited %.2fx, limited and ignoring 429s %.2fx (%s), limited and following Retry-After %.2fx (%s)",
		msec(f.phases[0].p99()), r2, r3, fairVerdict(r3), r4, fairVerdict(r4))
}
