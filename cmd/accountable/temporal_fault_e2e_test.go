package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	temporallog "go.temporal.io/sdk/log"

	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/workflows"
)

// temporalDevServer is a Temporal dev server of the test's own (the shared one of `make
// test` serves other tests and must not be stopped), on a fixed port and database file so
// that a start after a crash finds its state.
type temporalDevServer struct {
	t       *testing.T
	bin     string
	addr    string
	uiPort  string
	db      string
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

func newTemporalDevServer(t *testing.T, bin string) *temporalDevServer {
	t.Helper()
	dir := t.TempDir()
	_, ui, err := net.SplitHostPort(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	s := &temporalDevServer{t: t, bin: bin, addr: freeAddr(t), uiPort: ui, db: filepath.Join(dir, "temporal.db"),
		logPath: filepath.Join(dir, "temporal.log")}
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			if raw, err := os.ReadFile(s.logPath); err == nil && len(raw) > 0 {
				if len(raw) > 4000 {
					raw = raw[len(raw)-4000:]
				}
				t.Logf("the test's Temporal server's log ends:\n%s", raw)
			}
		}
	})
	return s
}

// start runs the server (the flags and dynamic configuration of scripts/stack.sh) and waits
// until it reports itself healthy.
func (s *temporalDevServer) start() {
	s.t.Helper()
	_, port, _ := net.SplitHostPort(s.addr)
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(s.bin, "server", "start-dev", "--ip", "127.0.0.1", "--port", port, "--ui-port", s.uiPort, "--headless",
		"--db-filename", s.db, "--log-level", "warn",
		"--dynamic-config-value", "matching.numTaskqueueReadPartitions=1",
		"--dynamic-config-value", "matching.numTaskqueueWritePartitions=1",
		"--search-attribute", "WorkspaceId=Keyword")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }() //nolint:errcheck // killed by the test
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	storetest.WaitFor(s.t, 90*time.Second, fmt.Sprintf("the Temporal dev server on %s to become healthy (log: %s)", s.addr, s.logPath), func() bool {
		select {
		case <-exited:
			s.t.Fatalf("the Temporal dev server exited while starting (log: %s)", s.logPath)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return exec.CommandContext(ctx, s.bin, "operator", "cluster", "health", "--address", s.addr).Run() == nil
	})
}

// kill stops the server with SIGKILL (a crash) and waits for it to be gone.
func (s *temporalDevServer) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL) //nolint:errcheck // it may be dead already
	<-exited
}

// startServeOn is startServe with the API's Temporal client at temporalAddr, and proposal
// generation not rate limited (the generator asks more often than 6 a minute).
func startServeOn(t *testing.T, queue, temporalAddr string) Config {
	t.Helper()
	return startApp(t, serveOptions, func(cfg *Config) {
		cfg.TaskQueue, cfg.TemporalAddress, cfg.ProposalsPerMinute = queue, temporalAddr, 1000
	})
}

// faultClient issues requests from the generator's goroutines: it reports failures instead
// of ending the test (which only the test's goroutine may do).
type faultClient struct {
	site string
	key  string
	http *http.Client
}

func (c faultClient) do(method, path, idemKey string, body any) (int, map[string]any, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(raw)
	}
	url := c.site + path
	if !strings.HasPrefix(path, "/healthz") && !strings.HasPrefix(path, "/readyz") {
		url = c.site + "/api/v1" + path
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return res.StatusCode, nil, fmt.Errorf("decoding the answer (%d): %w", res.StatusCode, err)
	}
	return res.StatusCode, out, nil
}

// faultAnswer is one answer the generator received.
type faultAnswer struct {
	kind       string
	status     int
	code       string // error.code of an error envelope; readyz: the temporal check
	err        error
	start, end time.Duration // since the load began
	ref        string        // launch, handoff or run id; proposal idempotency key
	launch     string        // run.finalize: the run's launch
}

func faultErrorCode(body map[string]any) string {
	if e, ok := body["error"].(map[string]any); ok {
		code, _ := e["code"].(string)
		return code
	}
	return ""
}

func faultData(body map[string]any) map[string]any {
	d, _ := body["data"].(map[string]any)
	return d
}

// Temporal crashes (SIGKILL) in the middle of a bounded load and comes back on the same port
// and database a few seconds later, with the API process and the worker process running
// throughout. While it is down, operations that need no workflow keep answering 2xx; proposal
// generation, which waits for its workflow, answers 503 workflow_engine_unavailable and
// stores nothing; commands whose workflows go through the transactional outbox (launches,
// handoffs with an SLA, run finalisations) answer 2xx and their messages wait in the outbox;
// /readyz reports Temporal unavailable while /healthz answers 200. Once Temporal is back,
// without a restart of anything else, the outbox drains, every launch gets its workflow and
// settles exactly once, every SLA handoff has its timer workflow, exactly the committed
// commands have workflows, and the ledger verifies.
func TestTemporalStoppedAndStarted(t *testing.T) {
	temporalBin := os.Getenv("ACCOUNTABLE_TEMPORAL_BIN")
	if temporalBin == "" {
		t.Fatal("ACCOUNTABLE_TEMPORAL_BIN is not set: run the tests with `make test` (scripts/stack.sh exports the pinned Temporal CLI)")
	}
	began := time.Now()
	ts := newTemporalDevServer(t, temporalBin)
	ts.start()
	bin := buildBinary(t)
	queue := fmt.Sprintf("e2e-temporal-fault-%d", time.Now().UnixNano())
	cfg := startServeOn(t, queue, ts.addr)
	workerExited := startWorkerProcess(t, bin, queue, "TEMPORAL_ADDRESS="+ts.addr).exited
	db := storetest.Open(t)
	tenant := storetest.NewTenant(t, db)
	ws := tenant.Principal.WorkspaceID
	c := apiClient{t: t, base: cfg.SiteURL, key: tenant.Key}
	conn := storetest.Conn(t)
	lc := faultClient{site: cfg.SiteURL, key: tenant.Key, http: &http.Client{Timeout: 60 * time.Second}}

	// An initiative of one workstream estimated at $1: each launch of it is one job that
	// reserves 100 cents and settles at the run's reported cost.
	status, body := c.call("POST", "/initiatives/proposals", "fault-setup-plan", map[string]any{"title": "Fault setup", "depth": "workstreams",
		"generation": map[string]any{"max_workstreams": 1}, "workstreams": []any{map[string]any{"name": "Lane", "expected_budget_usd": 1}}})
	if status != http.StatusCreated {
		t.Fatalf("propose: %d %v", status, body)
	}
	p := faultData(body)
	status, body = c.call("POST", "/initiatives", "fault-setup-commit", map[string]any{"proposal_id": p["proposal_id"], "proposal_digest": p["proposal_digest"]})
	if status != http.StatusCreated {
		t.Fatalf("commit: %d %v", status, body)
	}
	initiative := faultData(body)["initiative"].(map[string]any)["id"].(string)
	t.Logf("set up in %s (Temporal dev server, binary, API, worker, initiative)", time.Since(began).Round(time.Millisecond))

	// The bounded generator: a few goroutines until stop (~17 s, ~600 requests), never more
	// than budget requests.
	const budget = 1000
	var (
		mu       sync.Mutex
		answers  []faultAnswer
		issued   atomic.Int64
		stop     = make(chan struct{})
		outage   = make(chan struct{}) // closed when Temporal has been killed
		wg       sync.WaitGroup
		t0       = time.Now()
		since    = func() time.Duration { return time.Since(t0) }
		stopping = func() bool {
			select {
			case <-stop:
				return true
			default:
				return issued.Load() >= budget
			}
		}
		pause = func(d time.Duration) bool { // false when the generator should stop
			select {
			case <-stop:
				return false
			case <-time.After(d):
				return issued.Load() < budget
			}
		}
	)
	request := func(kind, method, path, key string, reqBody any) (faultAnswer, map[string]any) {
		issued.Add(1)
		a := faultAnswer{kind: kind, start: since()}
		status, out, err := lc.do(method, path, key, reqBody)
		a.status, a.err, a.end, a.code = status, err, since(), faultErrorCode(out)
		return a, out
	}
	keep := func(a faultAnswer) {
		mu.Lock()
		answers = append(answers, a)
		mu.Unlock()
	}
	loop := func(every time.Duration, fn func(n int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stopping(); n++ {
				fn(n)
				if !pause(every) {
					return
				}
			}
		}()
	}

	// Work created, read and completed: no workflow.
	loop(150*time.Millisecond, func(n int) {
		a, body := request("work.create", "POST", "/work", fmt.Sprintf("fault-work-%d", n), map[string]any{"title": fmt.Sprintf("Load %d", n)})
		keep(a)
		if a.status != http.StatusCreated {
			return
		}
		id, _ := faultData(body)["taskId"].(string)
		a, body = request("work.get", "GET", "/work/"+id, "", nil)
		keep(a)
		if a.status != http.StatusOK {
			return
		}
		concurrency, _ := faultData(body)["concurrency"].(map[string]any)
		token, _ := concurrency["version_token"].(string)
		a, _ = request("work.complete", "POST", "/work/"+id+"/complete", "", map[string]any{"version_token": token, "summary": "done"})
		keep(a)
	})
	// Reads: the event stream, page after page, and the work list.
	cursor := ""
	loop(200*time.Millisecond, func(int) {
		path := "/events/stream?limit=50"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		a, body := request("events.stream", "GET", path, "", nil)
		keep(a)
		if a.status == http.StatusOK {
			meta, _ := body["meta"].(map[string]any)
			if next, _ := meta["nextCursor"].(string); next != "" && meta["hasMore"] == true {
				cursor = next
			} else {
				cursor = ""
			}
		}
		a, _ = request("work.list", "GET", "/work?limit=20", "", nil)
		keep(a)
	})
	// Launches (their LaunchDispatch workflows start through the outbox).
	loop(450*time.Millisecond, func(n int) {
		a, body := request("launch", "POST", "/initiatives/"+initiative+"/launch", fmt.Sprintf("fault-launch-%d", n),
			map[string]any{"cost_ceiling_cents": 100000})
		a.ref, _ = faultData(body)["launch_id"].(string)
		keep(a)
	})
	// Handoffs with an SLA (their HandoffSLA timers start through the outbox).
	loop(350*time.Millisecond, func(n int) {
		a, body := request("handoff", "POST", "/handoffs", fmt.Sprintf("fault-handoff-%d", n), map[string]any{
			"handoff_key": fmt.Sprintf("fault-%d", n), "from_stage_key": "build", "to_stage_key": "review",
			"title": fmt.Sprintf("Handoff %d", n), "sla_minutes": 60})
		a.ref, _ = faultData(body)["id"].(string)
		keep(a)
	})
	// Run finalisations (signals to the launches' workflows, through the outbox). The runs
	// dispatched before the outage are held until it begins, so that some signals are
	// committed while Temporal is down.
	finalized := map[string]bool{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-outage:
		case <-stop:
			return
		}
		for !stopping() {
			a, body := request("runs.list", "GET", "/runs?limit=1000", "", nil)
			keep(a)
			runs, _ := body["data"].([]any)
			for _, r := range runs {
				run, _ := r.(map[string]any)
				id, _ := run["id"].(string)
				if finalized[id] || (run["status"] != "queued" && run["status"] != "running") || stopping() {
					continue
				}
				finalized[id] = true
				a, _ := request("run.finalize", "POST", "/runs/"+id+"/finalize", "fault-fin-"+id,
					map[string]any{"status": "succeeded", "cost_cents": 70})
				a.ref, a.launch = id, fmt.Sprint(run["launch_id"])
				keep(a)
			}
			if !pause(300 * time.Millisecond) {
				return
			}
		}
	}()
	// Proposal generations (the request waits for its workflow), one every 900 ms, each in
	// its own goroutine so that one waiting out the outage does not hold the next back. None
	// is in flight at the crash itself (holdProposals): a generation whose task a worker held
	// when Temporal died waits out Temporal's activity timeout (30-60 s) after the restart,
	// which would hold the test past its time.
	var (
		holdProposals     atomic.Bool
		proposalsInFlight atomic.Int64
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		var gens sync.WaitGroup
		defer gens.Wait()
		for n := 0; !stopping(); n++ {
			proposalsInFlight.Add(1) // before looking at the hold: the test waits for none in flight after setting it
			if holdProposals.Load() {
				proposalsInFlight.Add(-1)
				if !pause(100 * time.Millisecond) {
					return
				}
				continue
			}
			gens.Add(1)
			go func(n int) {
				defer gens.Done()
				defer proposalsInFlight.Add(-1)
				key := fmt.Sprintf("fault-plan-%d", n)
				a, _ := request("proposal", "POST", "/initiatives/proposals", key, map[string]any{"title": "Fault plan " + key,
					"depth": "workstreams", "generation": map[string]any{"max_workstreams": 1},
					"workstreams": []any{map[string]any{"name": "Lane", "expected_budget_usd": 1}}})
				a.ref = key
				keep(a)
			}(n)
			if !pause(900 * time.Millisecond) {
				return
			}
		}
	}()
	// The probes.
	loop(300*time.Millisecond, func(int) {
		a, _ := request("healthz", "GET", "/healthz", "", nil)
		keep(a)
		a, body := request("readyz", "GET", "/readyz", "", nil)
		if checks, ok := body["checks"].(map[string]any); ok {
			a.code = fmt.Sprintf("postgres=%v temporal=%v", checks["postgres"], checks["temporal"])
		}
		keep(a)
	})
	stopLoad := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopLoad) // a failure below still ends the generator before the servers go

	// Temporal crashes after ~3 s of load (with no proposal generation in flight) and stays
	// down ~6 s.
	time.Sleep(2 * time.Second)
	holdProposals.Store(true)
	storetest.WaitFor(t, 30*time.Second, "the proposal generations in flight to end before the crash", func() bool { return proposalsInFlight.Load() == 0 })
	time.Sleep(time.Until(t0.Add(3 * time.Second)))
	ts.kill()
	killAt := since()
	close(outage)
	holdProposals.Store(false)
	storetest.WaitFor(t, 15*time.Second, "/readyz to report Temporal unavailable", func() bool {
		status, body, err := lc.do("GET", "/readyz", "", nil)
		checks, _ := body["checks"].(map[string]any)
		return err == nil && status == http.StatusServiceUnavailable && checks["temporal"] == "unavailable"
	})
	time.Sleep(time.Until(t0.Add(killAt + 6*time.Second)))

	// Before it comes back: every outbox command answered since the crash has its message
	// waiting (the answers are read first: each of them committed before the outbox is read).
	mu.Lock()
	during := append([]faultAnswer(nil), answers...)
	mu.Unlock()
	rows, err := conn.Query(context.Background(), `SELECT id, kind, workflow_id, last_error IS NOT NULL FROM outbox WHERE workspace_id = $1`, ws)
	if err != nil {
		t.Fatal(err)
	}
	waiting := map[string]int{} // kind + " " + workflow id -> messages
	pendingAtRestart, failedDeliveries := 0, 0
	var lastWaiting int64 // the newest message waiting at the restart
	for rows.Next() {
		var id int64
		var kind, workflowID string
		var failed bool
		if err := rows.Scan(&id, &kind, &workflowID, &failed); err != nil {
			t.Fatal(err)
		}
		waiting[kind+" "+workflowID]++
		pendingAtRestart++
		lastWaiting = max(lastWaiting, id)
		if failed {
			failedDeliveries++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	outageCommands := 0
	for _, a := range during {
		if a.start < killAt || a.err != nil || a.status/100 != 2 {
			continue
		}
		var want string
		switch a.kind {
		case "launch":
			want = "start " + workflows.LaunchDispatchID(ws, a.ref)
		case "handoff":
			want = "start " + workflows.HandoffSLAID(ws, a.ref)
		case "run.finalize":
			want = "signal " + workflows.LaunchDispatchID(ws, a.launch)
		default:
			continue
		}
		outageCommands++
		if waiting[want] == 0 {
			t.Errorf("%s %s answered %d during the outage but its workflow message (%s) is not in the outbox", a.kind, a.ref, a.status, want)
		}
	}
	if outageCommands == 0 {
		t.Fatal("no outbox command was answered during the outage: the generator did not reach the API")
	}
	t.Logf("at the restart: %d workflow messages wait in the outbox (%d with a failed delivery recorded); %d commands answered during the outage",
		pendingAtRestart, failedDeliveries, outageCommands)

	restartAt := since()
	ts.start()
	healthyAt := since()
	// Within a bound, the API reports ready again and every message that waited through the
	// outage is delivered (the load goes on meanwhile).
	pending := func(upTo int64) (int, string) {
		var n int
		var kinds string
		if err := conn.QueryRow(context.Background(), `SELECT count(*), coalesce(string_agg(kind || ' ' || workflow_name || ' ' ||
			coalesce(dead_at::text, 'live') || ' ' || coalesce(last_error, ''), '; '), '') FROM outbox WHERE workspace_id = $1 AND id <= $2`,
			ws, upTo).Scan(&n, &kinds); err != nil {
			t.Fatal(err)
		}
		return n, kinds
	}
	var readyAt, drainedAt time.Duration
	var left int
	var leftKinds string
	t.Cleanup(func() {
		if t.Failed() && (readyAt == 0 || drainedAt == 0) {
			t.Logf("after Temporal came back: ready %v; %d of the messages that waited through the outage left: %s", readyAt > 0, left, leftKinds)
		}
	})
	storetest.WaitFor(t, 60*time.Second, "/readyz and the messages that waited through the outage to recover", func() bool {
		if readyAt == 0 {
			if status, _, err := lc.do("GET", "/readyz", "", nil); err == nil && status == http.StatusOK {
				readyAt = since()
			}
		}
		if drainedAt == 0 {
			if left, leftKinds = pending(lastWaiting); left == 0 {
				drainedAt = since()
			}
		}
		return readyAt != 0 && drainedAt != 0
	})
	time.Sleep(3 * time.Second) // load after the recovery too
	stopLoad()
	loadEnd := since()
	// Then the whole outbox drains (the messages of the commands made after the recovery too).
	storetest.WaitFor(t, 60*time.Second, "the outbox to drain", func() bool { n, _ := pending(1 << 62); return n == 0 })

	// The answers, by kind and phase.
	type tally struct{ before, outage, after map[string]int }
	tallies := map[string]*tally{}
	phase := func(a faultAnswer) string {
		switch {
		case a.start < killAt:
			return "before"
		case a.start < healthyAt:
			return "outage"
		}
		return "after"
	}
	var launches, handoffs []string
	var proposals201, proposalsRefused []faultAnswer
	startsUnanswered := 0 // proposals answered 503: Temporal may have begun their run all the same
	probesInOutage := 0
	for _, a := range answers {
		tl := tallies[a.kind]
		if tl == nil {
			tl = &tally{map[string]int{}, map[string]int{}, map[string]int{}}
			tallies[a.kind] = tl
		}
		label := fmt.Sprint(a.status)
		if a.err != nil {
			label = "error"
		}
		map[string]map[string]int{"before": tl.before, "outage": tl.outage, "after": tl.after}[phase(a)][label]++
		if a.err != nil {
			t.Errorf("%s (sent at %s): %v", a.kind, a.start.Round(time.Millisecond), a.err)
			continue
		}
		inOutage := a.start >= killAt && a.end <= restartAt
		switch a.kind {
		case "work.create", "handoff":
			if a.status != http.StatusCreated {
				t.Errorf("%s (%s): %d %s, want 201", a.kind, phase(a), a.status, a.code)
			}
		case "launch":
			if a.status != http.StatusAccepted {
				t.Errorf("launch (%s): %d %s, want 202", phase(a), a.status, a.code)
			}
		case "work.get", "work.complete", "work.list", "events.stream", "runs.list", "run.finalize", "healthz":
			if a.status != http.StatusOK {
				t.Errorf("%s (%s): %d %s, want 200", a.kind, phase(a), a.status, a.code)
			}
		case "readyz":
			if inOutage {
				probesInOutage++
				if a.status != http.StatusServiceUnavailable || a.code != "postgres=ok temporal=unavailable" {
					t.Errorf("/readyz during the outage: %d %s, want 503 with Temporal unavailable and PostgreSQL ok", a.status, a.code)
				}
			} else if a.start >= readyAt && a.status != http.StatusOK {
				t.Errorf("/readyz after the recovery: %d %s", a.status, a.code)
			}
		case "proposal":
			switch {
			case a.status == http.StatusCreated:
				proposals201 = append(proposals201, a)
			case a.status == http.StatusServiceUnavailable && a.code == "workflow_engine_unavailable":
				// In flight at some moment between the crash and the API's readiness again.
				if a.end < killAt || a.start >= readyAt {
					t.Errorf("proposal %s answered 503 while Temporal was up (sent at %s, answered at %s; down %s-%s, ready again %s)", a.ref,
						a.start.Round(time.Millisecond), a.end.Round(time.Millisecond), killAt.Round(time.Millisecond),
						healthyAt.Round(time.Millisecond), readyAt.Round(time.Millisecond))
				}
				proposalsRefused = append(proposalsRefused, a)
				startsUnanswered++
			case a.status == http.StatusTooManyRequests && a.code == "generation_in_progress":
				proposalsRefused = append(proposalsRefused, a) // another generation of the workspace was running
			default:
				t.Errorf("proposal %s (%s): %d %s", a.ref, phase(a), a.status, a.code)
			}
		}
		if a.status/100 == 2 {
			switch a.kind {
			case "launch":
				launches = append(launches, a.ref)
			case "handoff":
				handoffs = append(handoffs, a.ref)
			}
		}
	}
	kinds := make([]string, 0, len(tallies))
	for k := range tallies {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	t.Logf("load: %d requests in %s; Temporal killed at %s, started again at %s, healthy at %s, /readyz ready at %s; "+
		"the %d messages that waited were delivered by %s (%s after Temporal was healthy)",
		len(answers), loadEnd.Round(time.Millisecond), killAt.Round(time.Millisecond), restartAt.Round(time.Millisecond),
		healthyAt.Round(time.Millisecond), readyAt.Round(time.Millisecond), pendingAtRestart, drainedAt.Round(time.Millisecond),
		(drainedAt - healthyAt).Round(time.Millisecond))
	for _, k := range kinds {
		tl := tallies[k]
		t.Logf("  %-14s before %v  outage %v  after %v", k, tl.before, tl.outage, tl.after)
	}
	for _, a := range answers {
		if a.kind == "proposal" {
			t.Logf("  proposal %s sent at %s, answered %d %s at %s", a.ref, a.start.Round(time.Millisecond), a.status, a.code, a.end.Round(time.Millisecond))
		}
	}
	outageRefusals := 0
	for _, a := range proposalsRefused {
		if a.status == http.StatusServiceUnavailable {
			outageRefusals++
		}
	}
	if outageRefusals == 0 {
		t.Error("no proposal generation was refused with 503 workflow_engine_unavailable during the outage")
	}
	if probesInOutage == 0 {
		t.Error("no /readyz probe ran within the outage")
	}
	select {
	case <-workerExited:
		t.Fatal("the worker process exited during the test")
	default:
	}

	stage := time.Now()
	stages := []string{}
	lap := func(what string) {
		stages = append(stages, fmt.Sprintf("%s %s", what, time.Since(stage).Round(time.Millisecond)))
		stage = time.Now()
	}
	// A generation after the recovery succeeds. A start refused as Temporal came back may
	// still have begun a run (its request's deadline ran out as Temporal took it); until the
	// worker runs it, the workspace's generation is "in progress", and a client retries
	// after the retryAfter it is told. That run stores nothing (its request was answered
	// 503), which the check after this one shows.
	retryUntil := time.Now().Add(45 * time.Second)
	for {
		status, body = c.call("POST", "/initiatives/proposals", "fault-after-plan", map[string]any{"title": "Fault after recovery"})
		e, _ := body["error"].(map[string]any)
		if status != http.StatusTooManyRequests || e["code"] != "generation_in_progress" || time.Now().After(retryUntil) {
			break
		}
		t.Logf("proposal after the recovery: 429 generation_in_progress, retrying after %vs", e["retryAfter"])
		time.Sleep(time.Duration(e["retryAfter"].(float64)) * time.Second) // a client waiting out Retry-After, as it is told to
	}
	if status != http.StatusCreated {
		t.Fatalf("proposal after the recovery: %d %v", status, body)
	}
	var storedProposals int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM initiative_proposals WHERE workspace_id = $1`, ws).Scan(&storedProposals); err != nil {
		t.Fatal(err)
	}
	if want := len(proposals201) + 2; storedProposals != want { // + the set-up and the one after the recovery
		t.Errorf("%d proposals stored, want %d (one per generation answered 201)", storedProposals, want)
	}
	// A generation refused (503, or 429 for one already running) stored nothing: no proposal,
	// no idempotency record, also once a run its refused start began anyway has ended (the
	// generation after the recovery could start, so none is running).
	for _, a := range proposalsRefused {
		var proposals, records int
		if err := conn.QueryRow(context.Background(), `SELECT
			(SELECT count(*) FROM initiative_proposals WHERE workspace_id = $1 AND request_title = $2),
			(SELECT count(*) FROM idempotency_records WHERE workspace_id = $1 AND key = $3)`,
			ws, "Fault plan "+a.ref, a.ref).Scan(&proposals, &records); err != nil {
			t.Fatal(err)
		}
		if proposals != 0 || records != 0 {
			t.Errorf("proposal %s answered %d %s but left %d proposals and %d idempotency records", a.ref, a.status, a.code, proposals, records)
		}
	}

	lap("proposal checks")
	// Every launch gets its workflow and settles exactly once: the runs not finalised by the
	// generator are finalised now.
	readLaunch := func(id string) map[string]any {
		status, body := c.call("GET", "/launches/"+id, "", nil)
		if status != http.StatusOK {
			t.Fatalf("read launch %s: %d %v", id, status, body)
		}
		return faultData(body)
	}
	for _, id := range launches {
		var l map[string]any
		storetest.WaitFor(t, 60*time.Second, "launch "+id+" to dispatch its run", func() bool { l = readLaunch(id); return len(l["runs"].([]any)) == 1 })
		run := l["runs"].([]any)[0].(map[string]any)
		runID := run["id"].(string)
		if finalized[runID] {
			continue
		}
		status, body := c.call("POST", "/runs/"+runID+"/finalize", "fault-fin-"+runID, map[string]any{"status": "succeeded", "cost_cents": 70})
		if status != http.StatusOK {
			t.Fatalf("finalize %s: %d %v", runID, status, body)
		}
		finalized[runID] = true
	}
	for _, id := range launches {
		var l map[string]any
		storetest.WaitFor(t, 60*time.Second, "launch "+id+" to settle", func() bool { l = readLaunch(id); return l["state"] == "completed" })
		cost := l["cost"].(map[string]any)
		if cost["reserved_cents"] != 100.0 || cost["settled_cents"] != 70.0 || cost["server_estimate_cents"] != 100.0 {
			t.Errorf("launch %s totals %v, want 100 reserved, 70 settled", id, cost)
		}
		receipts := l["receipts"].([]any)
		if len(receipts) != 1 || receipts[0].(map[string]any)["settlement_status"] != "settled" {
			t.Errorf("launch %s receipts %v", id, receipts)
		}
	}
	lap("launches settled")
	// Each launch's one job changed exactly three times (reserved, running, settled).
	changes := map[string]int{}
	total := 0
	storetest.WaitFor(t, 30*time.Second, "the stream serves the launches' job changes", func() bool {
		status, body := c.call("GET", "/events/stream?event_type=launch.job_changed&limit=1000", "", nil)
		if status != http.StatusOK {
			t.Fatalf("stream: %d %v", status, body)
		}
		changes, total = map[string]int{}, 0
		for _, e := range body["data"].([]any) {
			changes[e.(map[string]any)["aggregateId"].(string)]++
			total++
		}
		return total >= 3*len(launches)
	})
	for _, id := range launches {
		if changes[id] != 3 {
			t.Errorf("launch %s: %d job changes, want 3 (reserved, running, settled)", id, changes[id])
		}
	}
	if total != 3*len(launches) {
		t.Errorf("%d job changes, want %d", total, 3*len(launches))
	}

	lap("job changes")
	// Temporal has exactly the workflows of the committed commands (a client of the test's
	// own, made now: it would otherwise reconnect with gRPC's long default backoff).
	tc, err := client.Dial(client.Options{HostPort: ts.addr, Logger: temporallog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	for _, id := range handoffs {
		res, err := tc.DescribeWorkflowExecution(context.Background(), workflows.HandoffSLAID(ws, id), "")
		if err != nil {
			t.Errorf("handoff %s has no SLA timer workflow: %v", id, err)
			continue
		}
		if st := res.WorkflowExecutionInfo.GetStatus(); st != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Errorf("handoff %s: its SLA timer is %s, want running (due in an hour)", id, st)
		}
	}
	for _, id := range launches {
		res, err := tc.DescribeWorkflowExecution(context.Background(), workflows.LaunchDispatchID(ws, id), "")
		if err != nil {
			t.Errorf("launch %s has no workflow: %v", id, err)
			continue
		}
		if st := res.WorkflowExecutionInfo.GetStatus(); st != enums.WORKFLOW_EXECUTION_STATUS_COMPLETED {
			t.Errorf("launch %s: its workflow is %s, want completed", id, st)
		}
	}
	// countOf waits for at least want workflows of workflowType, and at most want+extra.
	countOf := func(workflowType string, want, extra int) int {
		n := -1
		storetest.WaitFor(t, 20*time.Second, fmt.Sprintf("%d to %d %s workflows for the workspace", want, want+extra, workflowType), func() bool {
			n = 0
			var token []byte
			for {
				res, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{PageSize: 1000, NextPageToken: token,
					Query: fmt.Sprintf("WorkspaceId = '%s' AND WorkflowType = '%s'", ws, workflowType)})
				if err != nil {
					t.Fatal(err)
				}
				n += len(res.Executions)
				if token = res.NextPageToken; len(token) == 0 {
					break
				}
			}
			return n >= want && n <= want+extra
		})
		return n
	}
	for _, w := range []struct {
		name  string
		want  int
		extra int
	}{
		{workflows.LaunchDispatchName, len(launches), 0},
		{workflows.HandoffSLAName, len(handoffs), 0},
		// A generation per 201 (and the set-up's and the one after the recovery), and perhaps
		// one for each start answered 503: Temporal may have taken it as the request's start
		// deadline ran out (its run stores nothing, as checked above).
		{workflows.ProposalGenerationName, len(proposals201) + 2, startsUnanswered},
	} {
		if n := countOf(w.name, w.want, w.extra); n < w.want || n > w.want+w.extra {
			t.Errorf("%d %s workflows for the workspace, want %d to %d", n, w.name, w.want, w.want+w.extra)
		}
	}

	// The relay delivers at least once: a signal Temporal took as it was killed, whose
	// acknowledgement was lost, is sent again, and reaches its launch twice (the launch
	// ignores the repeat, as the totals above show). Reported, not failed. (Relays no
	// longer take each other's leased messages when they recover together, which made
	// two or three such repeats in most runs: TestReleaseLeavesLeasedMessagesToTheirRelay.)
	repeated := 0
	for _, id := range launches {
		it := tc.GetWorkflowHistory(context.Background(), workflows.LaunchDispatchID(ws, id), "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		signals := 0
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if e.GetEventType() == enums.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED {
				signals++
			}
		}
		if signals > 1 {
			repeated++
			t.Logf("launch %s received %d run-finalized signals for its one run", id, signals)
		}
	}
	lap("workflows")
	status, body = c.call("GET", "/events/verify", "", nil)
	if status != http.StatusOK || faultData(body)["verified"] != true {
		t.Fatalf("verify: %d %v", status, body)
	}
	lap("verify")
	t.Logf("after the load: %s; %d launches received a signal more than once", strings.Join(stages, ", "), repeated)
	select {
	case <-workerExited:
		t.Fatal("the worker process exited during the test")
	default:
	}
	t.Logf("%d launches (all settled once), %d SLA handoffs (all with their timer), %d proposals generated and %d refused; test took %s",
		len(launches), len(handoffs), len(proposals201), len(proposalsRefused), time.Since(began).Round(time.Millisecond))
}
