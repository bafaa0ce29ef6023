package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/contextpack"
)

// The pgbench scripts send the statements the store sends for the same operation: when
// store/command.go or store/work.go change a statement of creating or completing work,
// this fails until cmd/bench/pgbench.go sends the same (so the ratio stays like with like).
func TestScriptsSendTheStoresStatements(t *testing.T) {
	diff, err := sameStatements(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if diff != "" {
		t.Fatalf("the pgbench scripts of make bench no longer send what the service sends; update cmd/bench/pgbench.go:\n%s", diff)
	}
}

// The check fails when the store changes a statement.
func TestScriptCheckNoticesAChangedStatement(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "store"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"command.go", "work.go"} {
		src, err := os.ReadFile(filepath.Join("..", "..", "store", f))
		if err != nil {
			t.Fatal(err)
		}
		changed := strings.Replace(string(src), "SELECT idempotency_gate(", "SELECT idempotency_gate_v2(", 1)
		if err := os.WriteFile(filepath.Join(root, "store", f), []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	diff, err := sameStatements(root)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(diff, "idempotency_gate_v2") {
		t.Fatalf("a changed idempotency gate went unnoticed: %q", diff)
	}
}

// A changed statement is noticed.
func TestNormalizeSQLKeepsTheStatement(t *testing.T) {
	a := normalizeSQL(`UPDATE ledger_heads SET version = $4 WHERE workspace_id = $1 AND aggregate_id = $3`)
	b := normalizeSQL("UPDATE ledger_heads SET version = :v2\n\tWHERE workspace_id = :ws AND aggregate_id = ('f3000000-0000-7000-8000-' || lpad(to_hex(:k::bigint), 12, '0'))")
	if a != b {
		t.Fatalf("%q != %q", a, b)
	}
	c := normalizeSQL(`UPDATE ledger_heads SET version = $4 WHERE workspace_id = $1 AND aggregate_type = $2 AND aggregate_id = $3`)
	if a == c {
		t.Fatal("a different WHERE clause normalised to the same text")
	}
	if got := normalizeSQL(`SELECT hashtextextended(:ws::text || '/' || ('pgbench-create-' || :k)::text, 0)`); got != `SELECT hashtextextended(?::text || '/' || ?::text, 0)` {
		t.Fatalf("got %q", got)
	}
}

func TestParsePgbenchLogs(t *testing.T) {
	dir := t.TempDir()
	// client_id transaction_no time(µs) script_no epoch µs; the run ends at 100.000000 s.
	lines := []string{
		"0 1 5000 0 88 500000",   // ended 11.5 s before the end: warm-up
		"0 2 1000 0 95 000000",   // within the last 10 s
		"1 1 2000 0 99 000000",   // within
		"1 2 3000 0 100 000000",  // the last one
		"1 3 failed 0 99 500000", // a failure in the window
	}
	if err := os.WriteFile(filepath.Join(dir, "log.1"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var r pgbResult
	if err := r.parseLogs([]string{filepath.Join(dir, "log.1")}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if r.Count != 3 || r.Errors != 1 || r.PerClient != 3 || r.Rate != 0.3 {
		t.Fatalf("count %d errors %d per client %d rate %v", r.Count, r.Errors, r.PerClient, r.Rate)
	}
	if r.P50 != 2*time.Millisecond || r.P99 != 3*time.Millisecond {
		t.Fatalf("p50 %s p99 %s", r.P50, r.P99)
	}
}

func TestPercentiles(t *testing.T) {
	var lat []time.Duration
	for i := 100; i >= 1; i-- {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	p50, p99 := percentiles(lat)
	if p50 != 50*time.Millisecond || p99 != 99*time.Millisecond {
		t.Fatalf("p50 %s p99 %s", p50, p99)
	}
	if p50, p99 := percentiles(nil); p50 != 0 || p99 != 0 {
		t.Fatal("empty")
	}
}

func TestMedian(t *testing.T) {
	s := []sample{{Rate: 3}, {Rate: 1}, {Rate: 2}}
	if m := median(s, rateOf); m != 2 {
		t.Fatalf("median %v", m)
	}
	if m := median(s[:2], rateOf); m != 2 {
		t.Fatalf("median of two %v", m)
	}
}

func TestResponseFields(t *testing.T) {
	body := []byte(`{"data":{"taskId":"a-b","task":{"concurrency":{"version_token":"djEu"}}},"meta":{"count":500,"nextCursor":"ZTEu","hasMore":true}}`)
	if jsonString(body, "taskId") != "a-b" || jsonString(body, "version_token") != "djEu" {
		t.Fatal("jsonString")
	}
	if lastInt(body, "count") != 500 || lastString(body, "nextCursor") != "ZTEu" || lastInt(body, "absent") != 0 {
		t.Fatal("lastInt / lastString")
	}
}

func TestWithDatabase(t *testing.T) {
	got, err := withDatabase("postgres://accountable@127.0.0.1:54329/accountable?sslmode=disable", "accountable_bench")
	if err != nil || got != "postgres://accountable@127.0.0.1:54329/accountable_bench?sslmode=disable" {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := withDatabase("mysql://x", "y"); err == nil {
		t.Fatal("accepted a non-postgres URL")
	}
}

func TestParseProcStatus(t *testing.T) {
	status := "Name:\taccountable\nVmPeak:\t 1300000 kB\nVmHWM:\t   90112 kB\nVmRSS:\t   81234 kB\nThreads:\t12\n"
	rss, hwm, err := parseProcStatus([]byte(status))
	if err != nil || rss != 81234*1024 || hwm != 90112*1024 {
		t.Fatalf("rss %d hwm %d err %v", rss, hwm, err)
	}
	for _, bad := range []string{
		"Name:\tkthreadd\nThreads:\t1\n",             // a kernel thread has neither
		"VmHWM:\t 1 kB\nVmRSS:\t 12 MB\n",            // another unit
		"VmHWM:\t 1 kB\nVmRSS:\t twelve kB\n",        // not a number
		"VmRSS:\t 12 kB\n",                           // no VmHWM
		"VmHWM:\t 1 kB\nVmRSS:\t -5 kB\nVmSwap: 0\n", // negative
	} {
		if _, _, err := parseProcStatus([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestSummarizeRSS(t *testing.T) {
	if s := summarizeRSS(nil); s.Samples != 0 || s.Median != 0 || s.Peak != 0 {
		t.Fatalf("empty: %+v", s)
	}
	s := summarizeRSS([]int64{30, 10, 20, 50})
	if s.Samples != 4 || s.Median != 25 || s.Peak != 50 {
		t.Fatalf("%+v", s)
	}
	r := memRow{Runs: []memSample{{Samples: 3, Median: 10, Peak: 40, HWM: 45, HWMSinceRun: true}, {}, {Samples: 2, Median: 30, Peak: 35, HWM: 50, HWMSinceRun: true}, {Samples: 1, Median: 20, Peak: 20, HWM: 21, HWMSinceRun: true}}}
	med, peak, hwm, sinceRun := r.summary()
	if med != 20 || peak != 40 || hwm != 50 || !sinceRun {
		t.Fatalf("median %d peak %d hwm %d since run %v", med, peak, hwm, sinceRun)
	}
	r.Runs[0].HWMSinceRun = false
	if _, _, _, sinceRun := r.summary(); sinceRun {
		t.Fatal("a VmHWM since start taken for the run's own")
	}
	if mib(0) != "–" || mib(3<<20) != "3.0" {
		t.Fatalf("mib %q %q", mib(0), mib(3<<20))
	}
}

func TestGrowthCheck(t *testing.T) {
	for _, c := range []struct {
		small, large   float64
		higherIsBetter bool
		ratio          float64
		worse          bool
	}{
		{2000, 1900, true, 0.95, false},  // a rate 5% lower
		{2000, 1600, true, 0.8, false},   // exactly 20% lower: at the bound
		{2000, 1500, true, 0.75, true},   // 25% lower
		{2000, 4000, true, 2, false},     // faster
		{4, 4.8, false, 1.2, false},      // a latency 20% higher: at the bound
		{4, 5, false, 1.25, true},        // 25% higher
		{4, 2, false, 0.5, false},        // lower
		{0, 5, false, 0, false},          // no figure at the smallest size
		{5, 0, true, 0, false},           // none at the largest
		{100, 121, false, 1.21, true},    // memory 21% higher
		{100, 79.9, true, 0.799, true},   // a rate just past the bound
		{100, 120.5, false, 1.205, true}, // a latency just past it
	} {
		r, worse := growthCheck(c.small, c.large, c.higherIsBetter)
		if math.Abs(r-c.ratio) > 1e-9 || worse != c.worse {
			t.Errorf("growthCheck(%v, %v, %v) = %v, %v; want %v, %v", c.small, c.large, c.higherIsBetter, r, worse, c.ratio, c.worse)
		}
	}
	if got := growthCell(4, 5, false); got != "**1.25x (grows)**" {
		t.Fatalf("cell %q", got)
	}
	if got := growthCell(2000, 1900, true); got != "0.95x" {
		t.Fatalf("cell %q", got)
	}
	if got := growthCell(0, 1, true); got != "–" {
		t.Fatalf("cell %q", got)
	}
}

// The growth line's bulk-seeded events are valid ledger events: the checks of
// store.VerifyLedger (checkEvent) hold for each, and each task's version token is the one
// a read of it would answer.
func TestGrowthRowsAreValidEvents(t *testing.T) {
	ws, actor := "01a20b87-855e-73a1-a553-3e06b850b2c9", "01a20b87-8564-7989-a538-7f6edf4efc52"
	now := time.Date(2026, 11, 24, 3, 9, 21, 1747000, time.UTC)
	rows, err := growthRows(ws, actor, 40, 43, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows.events) != 3 || len(rows.tasks2) != 3 || len(rows.heads) != 3 || len(rows.tasks) != 3 {
		t.Fatalf("%d events, %d tasks, %d heads, %d pool", len(rows.events), len(rows.tasks2), len(rows.heads), len(rows.tasks))
	}
	for i, r := range rows.events {
		if len(r) != len(growthEventColumns) || len(rows.tasks2[i]) != len(growthTaskColumns) || len(rows.heads[i]) != len(growthHeadColumns) {
			t.Fatal("a row does not match its columns")
		}
		str := func(v any) *string {
			switch x := v.(type) {
			case string:
				return &x
			case *string:
				return x
			}
			return nil
		}
		e := accountable.Event{EventHeader: accountable.EventHeader{
			ID: r[1].(string), WorkspaceID: r[0].(string), AggregateType: r[2].(string), AggregateID: r[3].(string),
			AggregateVersion: r[4].(int64), EventType: r[5].(string), SchemaVersion: r[6].(string),
			ActorType: accountable.ActorType(r[7].(string)), ActorID: r[8].(string), PayloadDigest: r[10].(string),
			OccurredAt: accountable.TimeOf(r[11].(time.Time)), RecordedAt: accountable.TimeOf(r[12].(time.Time)),
			IdempotencyKey: str(r[13]), CausationID: str(r[14]), CorrelationID: str(r[15]), PreviousHash: str(r[16]),
		}, Payload: accountable.Object(r[9].(string)), EventHash: r[17].(string)}
		// What checkEvent (store/ledger.go) recomputes, the payload as jsonb gives it back.
		var decoded any
		if err := json.Unmarshal(e.Payload, &decoded); err != nil {
			t.Fatal(err)
		}
		reencoded, _ := json.Marshal(decoded)
		canon, err := canonical.Transform(reencoded)
		if err != nil || canonical.Digest(canon) != e.PayloadDigest {
			t.Fatalf("event %d: payloadDigest does not match the payload (%v)", i, err)
		}
		if h, err := canonical.DigestOf(e.EventHeader); err != nil || h != e.EventHash {
			t.Fatalf("event %d: eventHash does not match the event", i)
		}
		if e.AggregateVersion != 1 || e.PreviousHash != nil || e.EventType != accountable.EventWorkCreated || e.AggregateType != accountable.AggregateTask {
			t.Fatalf("event %d: not the first event of a task's chain: %+v", i, e.EventHeader)
		}
		if *e.IdempotencyKey != fmt.Sprintf("bench-growth-seed-%d", 40+i) {
			t.Fatalf("key %q", *e.IdempotencyKey)
		}
		var p struct {
			Task accountable.Task `json:"task"`
		}
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			t.Fatal(err)
		}
		task, head, pool := rows.tasks2[i], rows.heads[i], rows.tasks[i]
		if p.Task.ID != e.AggregateID || task[1] != e.AggregateID || pool.id.String() != e.AggregateID || p.Task.Status != accountable.TaskTodo {
			t.Fatalf("event %d and its task disagree: %+v %v %v", i, p.Task, task[1], pool.id)
		}
		if head[2] != e.AggregateID || head[4] != e.ID || head[5] != e.EventHash || head[3] != int64(1) {
			t.Fatalf("event %d: its head does not anchor it: %v", i, head)
		}
		p.Task.AggregateVersion = 1
		token := accountable.TaskVersion{AggregateVersion: 1, UpdatedAt: time.UnixMicro(pool.updated)}.Token()
		if got := p.Task.WithConcurrency().Concurrency.VersionToken; got != token || !task[8].(time.Time).Equal(time.UnixMicro(pool.updated)) {
			t.Fatalf("event %d: version token %q, the pool's %q", i, got, token)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 100000: "100,000", 1000000: "1,000,000", -12345: "-12,345"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q", n, got)
		}
	}
	if got := intList([]int{10000, 100000, 1000000}); got != "10,000, 100,000 and 1,000,000" {
		t.Fatalf("%q", got)
	}
	if got := intList([]int{5}); got != "5" {
		t.Fatalf("%q", got)
	}
}

// The fairness line's open-loop schedule: evenly spaced at the total rate, dealt to the
// quiet workspaces in turn (each workspace's requests n/rate apart), half writes in any
// stretch, each workspace alternating.
func TestOpenSchedule(t *testing.T) {
	start := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	o := openSchedule{start: start, rate: 200, n: 999}
	for i := range 5000 {
		if d := o.at(i + 1).Sub(o.at(i)); d != 5*time.Millisecond {
			t.Fatalf("request %d to %d: %s apart, want 5ms", i, i+1, d)
		}
	}
	if got := o.at(200); !got.Equal(start.Add(time.Second)) {
		t.Fatalf("request 200 at %s", got.Sub(start))
	}
	if got := o.count(start.Add(12 * time.Second)); got != 2400 {
		t.Fatalf("%d requests due in 12 s at 200/s", got)
	}
	// A rate that does not divide a second: every request due before the end is counted,
	// and none after it.
	odd := openSchedule{start: start, rate: 3, n: 2}
	end := start.Add(time.Second)
	if n := odd.count(end); n != 3 || !odd.at(n-1).Before(end) || odd.at(n).Before(end) {
		t.Fatalf("count %d at rate 3 (last due %s)", n, odd.at(n-1).Sub(start))
	}
	if n := odd.count(start); n != 0 {
		t.Fatalf("count %d in an empty window", n)
	}
	// Each workspace: requests n/rate apart, numbered in turn.
	seen := map[int][]int{}
	for i := range 3 * o.n {
		ws, k := o.slot(i)
		if ws < 0 || ws >= o.n || k != len(seen[ws]) {
			t.Fatalf("request %d: workspace %d, its request %d (it had %d)", i, ws, k, len(seen[ws]))
		}
		seen[ws] = append(seen[ws], i)
	}
	for ws, reqs := range seen {
		for j := 1; j < len(reqs); j++ {
			if d := o.at(reqs[j]).Sub(o.at(reqs[j-1])); d != 4995*time.Millisecond {
				t.Fatalf("workspace %d: requests %s apart, want 999/200 s", ws, d)
			}
		}
		if quietWrite(ws, 0) == quietWrite(ws, 1) || quietWrite(ws, 1) == quietWrite(ws, 2) {
			t.Fatalf("workspace %d does not alternate writes and reads", ws)
		}
	}
	// Half writes in any stretch of the schedule, for an odd and an even count of workspaces.
	for _, n := range []int{999, 1000, 2} {
		o := openSchedule{start: start, rate: 200, n: n}
		for _, from := range []int{0, 7, 998, 1500} {
			writes := 0
			for i := from; i < from+400; i++ {
				if quietWrite(o.slot(i)) {
					writes++
				}
			}
			if writes < 199 || writes > 201 {
				t.Fatalf("%d workspaces, requests %d to %d: %d writes of 400", n, from, from+400, writes)
			}
		}
	}
}

// The fairness verdict: a phase's quiet p99 within 1.5x of phase 1's.
func TestFairVerdict(t *testing.T) {
	for _, c := range []struct {
		base, p time.Duration
		ratio   float64
		meets   bool
	}{
		{4 * time.Millisecond, 4 * time.Millisecond, 1, true},
		{4 * time.Millisecond, 6 * time.Millisecond, 1.5, true}, // at the bound
		{4 * time.Millisecond, 6*time.Millisecond + time.Microsecond, 1.50025, false},
		{4 * time.Millisecond, 2 * time.Millisecond, 0.5, true}, // lower
		{4 * time.Millisecond, 40 * time.Millisecond, 10, false},
		{0, 4 * time.Millisecond, 0, false}, // no phase 1
		{4 * time.Millisecond, 0, 0, false}, // no phase 3
	} {
		r := fairRatio(c.base, c.p)
		if math.Abs(r-c.ratio) > 1e-9 || fairMeets(r) != c.meets {
			t.Errorf("fairRatio(%s, %s) = %v (meets %v); want %v (%v)", c.base, c.p, r, fairMeets(r), c.ratio, c.meets)
		}
	}
	if v := fairVerdict(1.2); !strings.HasPrefix(v, "meets") {
		t.Errorf("verdict %q", v)
	}
	if v := fairVerdict(2); !strings.Contains(v, "above 1.5x") {
		t.Errorf("verdict %q", v)
	}
	if v := fairVerdict(0); v != "–" {
		t.Errorf("verdict %q", v)
	}
	f := &fairness{phases: []*fairPhase{
		{Quiet: []quietSample{{sample: sample{P99: 4 * time.Millisecond}}, {sample: sample{P99: 6 * time.Millisecond}}, {sample: sample{P99: 5 * time.Millisecond}}}},
		{Quiet: []quietSample{{sample: sample{P99: 50 * time.Millisecond}}}},
		{Quiet: []quietSample{{sample: sample{P99: 7 * time.Millisecond}}, {sample: sample{P99: 8 * time.Millisecond}}}},
		{Quiet: []quietSample{{sample: sample{P99: 6 * time.Millisecond}}}},
	}}
	if !f.measured() {
		t.Fatal("four measured phases")
	}
	if r2, r3, r4 := f.ratios(); r2 != 10 || r3 != 1.5 || r4 != 1.2 { // medians 5, 50, 7.5 and 6 ms
		t.Fatalf("ratios %v %v %v", r2, r3, r4)
	}
	if f.phases = f.phases[:3]; f.measured() {
		t.Fatal("three phases measured as four")
	}
	if m := median([]noisySample{{OK: 10, Window: time.Second}, {OK: 30, Window: time.Second}, {OK: 20, Window: 2 * time.Second}}, noisySample.okRate); m != 10 {
		t.Fatalf("median noisy rate %v", m)
	}
}

// The open-loop sender sends on schedule whether or not earlier requests were answered,
// measures each from its due instant, and counts what is not the expected answer; the
// closed loop counts 201s and 429s apart, and a polite one waits out Retry-After.
func TestOpenAndClosedLoops(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var served atomic.Int64
	srv := &fasthttp.Server{Handler: func(c *fasthttp.RequestCtx) {
		n := served.Add(1)
		switch string(c.Path()) {
		case "/slow":
			time.Sleep(20 * time.Millisecond) // a slow endpoint's latency, on purpose: the loops are measured against it
			c.SetStatusCode(fasthttp.StatusOK)
		case "/limited":
			c.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
			c.SetStatusCode(fasthttp.StatusTooManyRequests)
		case "/create":
			if n%2 == 0 {
				c.SetStatusCode(fasthttp.StatusTooManyRequests)
				return
			}
			c.SetStatusCode(fasthttp.StatusCreated)
		default:
			c.SetStatusCode(fasthttp.StatusNotFound)
		}
	}}
	go srv.Serve(ln)     //nolint:errcheck // closed below
	defer srv.Shutdown() //nolint:errcheck // the test is over
	addr := ln.Addr().String()

	// 200 requests a second for 0.1 s of warm-up and 0.5 s measured, each taking 20 ms: a
	// closed loop of one client would send 25, the open loop sends every one due (100), a
	// tenth of them to a path that answers 404.
	sched := openSchedule{start: time.Now().Add(10 * time.Millisecond), rate: 200, n: 10}
	q := runOpen(context.Background(), addr, sched, 100*time.Millisecond, 500*time.Millisecond, func(i int, req *fasthttp.Request) int {
		ws, _ := sched.slot(i)
		if ws == 3 {
			req.SetRequestURI("http://" + addr + "/missing")
		} else {
			req.SetRequestURI("http://" + addr + "/slow")
		}
		return fasthttp.StatusOK
	})
	if q.Sent != 100 || q.Count != 90 || q.Errors != 10 || q.Status[404] != 10 || q.Dropped != 0 {
		t.Fatalf("open loop: %+v", q)
	}
	if q.P50 < 20*time.Millisecond || q.Rate < 170 || q.Rate > 190 {
		t.Fatalf("open loop: p50 %s, rate %v", q.P50, q.Rate)
	}
	if q.ReadP99 < 20*time.Millisecond || q.WriteP99 != 0 { // every request expected 200: a read
		t.Fatalf("open loop: GET p99 %s, POST p99 %s", q.ReadP99, q.WriteP99)
	}
	if !strings.HasPrefix(q.FirstErr, "404") {
		t.Fatalf("first error %q", q.FirstErr)
	}

	n := runClosed(context.Background(), addr, 4, time.Now(), 50*time.Millisecond, 200*time.Millisecond, false, func(_ int, req *fasthttp.Request) {
		req.Header.SetMethod(fasthttp.MethodPost)
		req.SetRequestURI("http://" + addr + "/create")
	})
	if n.OK == 0 || n.Limited == 0 || n.Other != 0 || n.Window != 200*time.Millisecond {
		t.Fatalf("closed loop: %+v", n)
	}
	if d := n.OK - n.Limited; d < -4 || d > 4 {
		t.Fatalf("closed loop: %d 201s and %d 429s of alternating answers", n.OK, n.Limited)
	}

	// A polite client waits out Retry-After (1 s), but not past the run's end: each of 4
	// clients sends once in the 0.25 s run.
	before, began := served.Load(), time.Now()
	n = runClosed(context.Background(), addr, 4, time.Now(), 0, 250*time.Millisecond, true, func(_ int, req *fasthttp.Request) {
		req.Header.SetMethod(fasthttp.MethodPost)
		req.SetRequestURI("http://" + addr + "/limited")
	})
	if sent := served.Load() - before; sent != 4 || n.Limited != 4 || n.OK != 0 {
		t.Fatalf("polite closed loop: %d requests served, %+v", sent, n)
	}
	if took := time.Since(began); took > 800*time.Millisecond {
		t.Fatalf("polite closed loop waited %s, past the run's end", took)
	}
}

// The baseline collects garbage as the service does by default: serviceGCPercent is
// cmd/accountable's defaultGCPercent.
func TestBaselineRunsWithTheServicesGCPercent(t *testing.T) {
	src, err := os.ReadFile("../accountable/main.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`const defaultGCPercent = (\d+)`).FindSubmatch(src)
	if m == nil {
		t.Fatal("cmd/accountable/main.go declares no defaultGCPercent")
	}
	if string(m[1]) != strconv.Itoa(serviceGCPercent) {
		t.Fatalf("the service runs with GOGC=%s, the baseline with %d", m[1], serviceGCPercent)
	}
}

// The ledgerlog line builds its synthetic logs over the newest stored hash of each level:
// the stored hashes and the roots it computes are tlog's, computed over every stored hash.
func TestLogFrontierBuildsTlogsTree(t *testing.T) {
	var f logFrontier
	all := map[int64]tlog.Hash{}
	reader := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			h, ok := all[x]
			if !ok {
				return nil, fmt.Errorf("no stored hash %d", x)
			}
			out[i] = h
		}
		return out, nil
	})
	for n := int64(0); n < 1500; n++ {
		data := []byte("leaf " + strconv.FormatInt(n, 10))
		want, err := tlog.StoredHashes(n, data, reader)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.add(n, tlog.RecordHash(data))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("leaf %d: stored hashes differ", n)
		}
		first := tlog.StoredHashIndex(0, n)
		for j, h := range want {
			all[first+int64(j)] = h
			if level, m := tlog.SplitStoredHashIndex(first + int64(j)); level != j || m != n>>j {
				t.Fatalf("leaf %d: stored hash %d is of level %d node %d, not %d %d", n, j, level, m, j, n>>j)
			}
		}
		size := n + 1
		root, err := tlog.TreeHash(size, &f)
		if err != nil {
			t.Fatalf("the root at %d: %v", size, err)
		}
		if want, _ := tlog.TreeHash(size, reader); root != want {
			t.Fatalf("the root at %d differs", size)
		}
	}
	if _, err := f.ReadHashes([]int64{tlog.StoredHashIndex(0, 3)}); err == nil {
		t.Fatal("read an old stored hash the frontier no longer holds")
	}
	if got := logSignSizes(1000000, 1003); !slices.Equal(got, []int64{1003, 250001, 500001, 1000000}) {
		t.Fatalf("sign sizes %v", got)
	}
}

// The ledgerlog line's verdicts: the append path holds at a rate 10% lower and no more,
// the checkpoint latency with every sample cosigned and the p99 under 2 s.
func TestLogVerdicts(t *testing.T) {
	for r, want := range map[float64]bool{1.05: true, 0.95: true, 0.9: true, 0.8999: false, 0: false} {
		if appendHolds(r) != want {
			t.Errorf("appendHolds(%v) = %v", r, !want)
		}
	}
	ll := &logLine{with: []sample{{Rate: 90, P99: 4 * time.Millisecond}}, without: []sample{{Rate: 100, P99: 2 * time.Millisecond}}}
	if r, p := ll.appendRatios(); r != 0.9 || p != 2 {
		t.Fatalf("ratios %v %v", r, p)
	}
	for i := range 100 {
		ll.latencies = append(ll.latencies, time.Duration(i+1)*15*time.Millisecond) // 15 ms to 1.5 s
	}
	if p50, p99, mx := ll.checkpointFigures(); p50 != 750*time.Millisecond || p99 != 1485*time.Millisecond || mx != 1500*time.Millisecond {
		t.Fatalf("p50 %s p99 %s max %s", p50, p99, mx)
	}
	if !ll.checkpointHolds() {
		t.Fatal("a p99 of 1.485 s does not hold")
	}
	ll.missed = 1
	if ll.checkpointHolds() {
		t.Fatal("held with a sample never cosigned")
	}
	ll.missed, ll.latencies = 0, append(ll.latencies, 3*time.Second, 3*time.Second)
	if ll.checkpointHolds() {
		t.Fatal("held with a p99 of 3 s")
	}
	signed := "accountable.localhost/workspaces/x\n5\nAAAA\n\n— accountable.localhost abc\n— witness.example xyz\n"
	if !cosignedBy(signed, "witness.example") || cosignedBy(signed, "witness") || cosignedBy(signed, "other") {
		t.Fatal("cosignedBy")
	}
}

// The baseline's tiles send the statements the store sends.
func TestBaselineTilesSendTheStoresStatements(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "store", "ledgerlog.go"))
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := os.ReadFile(filepath.Join("..", "..", "store", "ledger.go"))
	if err != nil {
		t.Fatal(err)
	}
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	store := flat(string(src))
	for _, q := range []string{baseCheckpointColumns, baseNewestCheckpoint, baseLogHashesSQL, baseLogEntriesTail} {
		if !strings.Contains(store, flat(q)) {
			t.Errorf("store/ledgerlog.go no longer sends %q", flat(q))
		}
	}
	m := regexp.MustCompile("(?s)const eventColumns = `([^`]*)`").FindSubmatch(ledger)
	if m == nil || flat(string(m[1])) != flat(baseEventColumns) {
		t.Errorf("store/ledger.go's eventColumns are not the baseline's")
	}
}

// The context line's seeding splits the missing events 70/20/10 and makes every one of
// them; a workspace already as large seeds nothing.
func TestContextSeedPlan(t *testing.T) {
	for missing, want := range map[int]contextSeed{
		100000: {work: 70000, decisions: 20000, handoffs: 10000},
		99963:  {work: 69975, decisions: 19992, handoffs: 9996},
		7:      {work: 6, decisions: 1},
		0:      {},
		-5:     {},
	} {
		got := contextSeedPlan(missing)
		if got != want || (missing > 0 && got.work+got.decisions+got.handoffs != missing) {
			t.Errorf("contextSeedPlan(%d) = %+v, want %+v", missing, got, want)
		}
	}
}

// A transfer is rebuilt as a client does: a full one is its text, a delta its operations
// applied to the text held, and either is refused when its sha256 is not its version or
// when a delta names another base.
func TestRebuildContext(t *testing.T) {
	base := "{\n \"a\": 1,\n \"items\": [\n  \"one\",\n  \"two\"\n ]\n}"
	next := "{\n \"a\": 2,\n \"items\": [\n  \"zero\",\n  \"one\",\n  \"two\"\n ]\n}"
	full := &contextTransfer{Mode: "full", Version: sha256Version(base), Serialized: &base}
	held, err := rebuildContext(nil, full)
	if err != nil || held.text != base || held.version != canonical.Digest([]byte(base)) {
		t.Fatalf("full: %+v %v", held, err)
	}
	ops, err := json.Marshal(contextpack.Delta(base, next))
	if err != nil {
		t.Fatal(err)
	}
	delta := &contextTransfer{Mode: "delta", Version: sha256Version(next), BaseVersion: held.version, Operations: ops}
	got, err := rebuildContext(&held, delta)
	if err != nil || got.text != next || got.version != sha256Version(next) {
		t.Fatalf("delta: %+v %v", got, err)
	}
	for name, c := range map[string]struct {
		held *contextText
		tr   *contextTransfer
	}{
		"no transfer":        {&held, nil},
		"a tampered version": {&held, &contextTransfer{Mode: "delta", Version: sha256Version(next + " "), BaseVersion: held.version, Operations: ops}},
		"another base":       {&contextText{version: sha256Version("x"), text: "x"}, &contextTransfer{Mode: "delta", Version: delta.Version, BaseVersion: sha256Version(base), Operations: ops}},
		"no base held":       {nil, delta},
		"a wrong full text":  {nil, &contextTransfer{Mode: "full", Version: sha256Version(next), Serialized: &base}},
		"a copy past the end": {&held, &contextTransfer{Mode: "delta", Version: sha256Version(next), BaseVersion: held.version,
			Operations: json.RawMessage(`[{"copy":[0,99]}]`)}},
		"an unknown mode": {&held, &contextTransfer{Mode: "patch", Version: delta.Version}},
	} {
		if _, err := rebuildContext(c.held, c.tr); err == nil {
			t.Errorf("%s: rebuilt", name)
		}
	}
	if s := tokensSaved(50, 1000); math.Abs(s-0.95) > 1e-12 {
		t.Errorf("tokensSaved(50, 1000) = %v", s)
	}
	if s := tokensSaved(5, 0); s != 0 {
		t.Errorf("tokensSaved of an empty text = %v", s)
	}
	cl := &contextResult{turns: []contextTurn{{DeltaTokens: 10, TextTokens: 100}, {DeltaTokens: 50, TextTokens: 100}, {DeltaTokens: 5, TextTokens: 100}}}
	if med, worst := cl.saved(); math.Abs(med-0.9) > 1e-12 || math.Abs(worst-0.5) > 1e-12 {
		t.Errorf("saved: median %v, worst %v", med, worst)
	}
}

// The context line's request bodies are the API's: a delta names its base, a full one none.
func TestContextBody(t *testing.T) {
	for _, base := range []string{"", sha256Version("x")} {
		var in accountable.PrepareContext
		raw := contextBody("0190c0de-0000-7000-8000-000000000001", "0190c0de-0000-7000-8000-000000000002", "delta", base)
		if err := json.Unmarshal(raw, &in); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if in.TaskID == nil || in.DeliveryMode == nil || *in.DeliveryMode != accountable.ContextDeliveryDelta || in.Budget() != contextBudget ||
			in.Tokenizer() != contextTokenizer || (in.AcknowledgedContextVersion != nil) != (base != "") || in.Validate() != nil {
			t.Errorf("%s: %+v", raw, in)
		}
	}
}

// The context line's table: each figure beside its target, a p99 of 100 ms or more and a
// saving under 90% missing them; the history row names them.
func TestContextTable(t *testing.T) {
	b := &bench{}
	if b.contextTable() != "" || b.contextHistory() != "" {
		t.Fatal("a table without the line")
	}
	full := func(p99 time.Duration) *contextFull {
		return &contextFull{clients: 1, line: &line{Service: []sample{{P50: p99 / 2, P99: p99}}}, answerBytes: 45000, textBytes: 23000, toks: 8000}
	}
	b.ctxLine = &contextResult{full: []*contextFull{full(99 * time.Millisecond), full(100 * time.Millisecond)},
		deltaRuns: []sample{{P50: 20 * time.Millisecond, P99: 40 * time.Millisecond}},
		turns:     []contextTurn{{AnswerBytes: 2000, DeltaBytes: 800, DeltaTokens: 300, TextBytes: 23000, TextTokens: 8000}}}
	rows := strings.Split(strings.TrimSpace(b.contextTable()), "\n")
	if len(rows) != 6 || !strings.HasSuffix(rows[2], "| holds |") || !strings.HasSuffix(rows[3], "| **misses** |") ||
		!strings.Contains(rows[4], "| 20.00 / **40.00** | 2,000 | 800 | 300 |") || !strings.HasSuffix(rows[4], "| holds |") ||
		!strings.Contains(rows[5], "**96.2%** of the text's 8,000 tokens (worst turn 96.2%)") || !strings.HasSuffix(rows[5], "| holds |") {
		t.Fatalf("table:\n%s", strings.Join(rows, "\n"))
	}
	b.ctxLine.turns[0].DeltaTokens = 801
	if !strings.HasSuffix(strings.TrimSpace(b.contextTable()), "| ≥ 90.0% | **misses** |") {
		t.Fatalf("a saving of 89.99%%:\n%s", b.contextTable())
	}
	if h := b.contextHistory(); h != "context: full p99 @1 99.00 ms, full p99 @1 100 ms, delta p99 40.00 ms, 90.0% of the tokens saved" {
		t.Fatalf("history: %q", h)
	}
}

// The console line's seed bodies are valid JSON, each handoff between two stages of its
// own process; its sign-in reads the form's CSRF field; its answers are checked for their
// content type and marker; its table gives the HTML pages a verdict and the SVG none.
func TestConsoleHelpers(t *testing.T) {
	var proc struct {
		Name   string `json:"name"`
		Stages []struct {
			Key string `json:"key"`
		} `json:"stages"`
	}
	var h struct {
		From string `json:"from_stage_key"`
		To   string `json:"to_stage_key"`
		SLA  int    `json:"sla_minutes"`
	}
	for _, i := range []int{0, 41, 999} {
		if err := json.Unmarshal(consoleProcessBody(i), &proc); err != nil {
			t.Fatalf("process %d: %v: %s", i, err, consoleProcessBody(i))
		}
		if err := json.Unmarshal(consoleHandoffBody(i), &h); err != nil {
			t.Fatalf("handoff %d: %v: %s", i, err, consoleHandoffBody(i))
		}
		if proc.Name != consoleProcessName(i) || len(proc.Stages) != 3 || h.From != proc.Stages[0].Key || h.To != proc.Stages[1].Key || h.SLA < 1 {
			t.Fatalf("process %d: %+v, handoff %+v", i, proc, h)
		}
	}
	if consoleStages(0)[1] == consoleStages(1)[1] {
		t.Fatal("two processes share a stage key")
	}
	if got := csrfField([]byte(`<form><input type="hidden" name="csrf" value="abc-123"><input name="email">`)); got != "abc-123" {
		t.Fatalf("csrf %q", got)
	}
	if csrfField([]byte(`<form></form>`)) != "" || csrfField([]byte(`name="csrf" value="unterminated`)) != "" {
		t.Fatal("a csrf field where there is none")
	}

	pages := consolePages(1000)
	if len(pages) != 6 || pages[3].Marker != `id="map-counts">1000 processes` || pages[5].HTML {
		t.Fatalf("pages %+v", pages)
	}
	if err := checkConsoleAnswer(pages[3], "text/html; charset=utf-8", []byte(`<p id="map-counts">1000 processes (0 discovered or proposed`)); err != nil {
		t.Fatal(err)
	}
	if checkConsoleAnswer(pages[3], "text/html; charset=utf-8", []byte("<p>No processes yet.</p>")) == nil ||
		checkConsoleAnswer(pages[5], "text/html", []byte("p1000-review")) == nil {
		t.Fatal("a page without its marker, or of the wrong type, passed")
	}

	b := &bench{}
	if b.consoleTable() != "" || b.consoleHistory() != "" {
		t.Fatal("a table without the line")
	}
	b.console = &consoleResult{processes: 1000, handoffs: 1000, pages: pages}
	for i, p := range pages {
		p99 := time.Duration(50+20*i) * time.Millisecond
		p.Runs, p.Bytes = []sample{{P50: p99 / 2, P99: p99}}, 12345
	}
	rows := strings.Split(strings.TrimSpace(b.consoleTable()), "\n")
	if len(rows) != 8 || !strings.HasSuffix(rows[2], "| p99 < 100 ms | holds |") || !strings.Contains(rows[2], "| 25.00 / **50.00** | 12,345 |") ||
		!strings.HasSuffix(rows[5], "| **misses** |") || !strings.Contains(rows[7], "image/svg+xml") || !strings.HasSuffix(rows[7], "| – |") {
		t.Fatalf("table:\n%s", strings.Join(rows, "\n"))
	}
	if h := b.consoleHistory(); !strings.HasPrefix(h, "console p99 (ms): /console 50.00, ") || !strings.HasSuffix(h, "/api/v1/operating-map 150") {
		t.Fatalf("history %q", h)
	}
}

// A line's verdict is against its own target when it has one (the defaults line: 0.9 of
// the tuned service), else DESIGN §6's.
func TestLineVerdict(t *testing.T) {
	own := &line{Target: defaultsTarget}
	for r, want := range map[float64]string{0.95: "meets 0.9", 0.9: "meets 0.9", 0.85: "**below 0.9**"} {
		if got := own.verdict(r); got != want {
			t.Errorf("target 0.9, ratio %.2f: %q, want %q", r, got, want)
		}
	}
	for r, want := range map[float64]string{0.85: "meets 0.8", 0.75: "meets 0.7", 0.65: "**below 0.7**"} {
		if got := (&line{}).verdict(r); got != want {
			t.Errorf("DESIGN's target, ratio %.2f: %q, want %q", r, got, want)
		}
	}
}

// The completion's statement parts cut from a completion of the service put its event's
// header and its replay document back together around the values the statement fills in.
func TestCompletionPartsPutTheCompletionBackTogether(t *testing.T) {
	prev := "sha256:" + strings.Repeat("ab", 32)
	key := "bench-1"
	h := accountable.EventHeader{ID: "0190c7a2-1b2c-7d3e-8f40-000000000001", WorkspaceID: "0190c7a2-1b2c-7d3e-8f40-000000000002",
		AggregateType: "task", AggregateID: "0190c7a2-1b2c-7d3e-8f40-000000000003", AggregateVersion: 2, EventType: "work.completed",
		SchemaVersion: "1.0.0", ActorType: "human", ActorID: "u", PayloadDigest: "sha256:" + strings.Repeat("cd", 32),
		IdempotencyKey: &key, PreviousHash: &prev}
	header, err := canonical.JSON(h)
	if err != nil {
		t.Fatal(err)
	}
	hash := "sha256:" + strings.Repeat("ef", 32)
	task := `{"id" : "x", "metadata" : {"a": 1}, "concurrency" : {"version_token":"dj","expected_aggregate_version":2}}`
	tmpl := templates{CompletedDigest: h.PayloadDigest, CompleteResponse: `{"v":1,"data":{"taskId":"x","receiptId":"r","eventId":"e","aggregateVersion":2,"eventHash":"` +
		hash + `","duplicate":false,"task":` + task + `,"receipt":{"id":"r"}}}`}
	if err := tmpl.completionParts(h); err != nil {
		t.Fatal(err)
	}
	unhex := func(s string) string {
		b, err := hex.DecodeString(strings.TrimPrefix(s, `\x`))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := unhex(tmpl.HeaderBefore) + "2" + unhex(tmpl.HeaderMiddle) + `"` + prev + `"` + unhex(tmpl.HeaderAfter); got != string(header) {
		t.Fatalf("header\n got %s\nwant %s", got, header)
	}
	if got := tmpl.DocA + "2" + tmpl.DocB + hash + tmpl.DocC + task + tmpl.DocD; got != tmpl.CompleteResponse {
		t.Fatalf("document\n got %s\nwant %s", got, tmpl.CompleteResponse)
	}
	if tmpl.Concurrency != `{"version_token":"dj","expected_aggregate_version":2}` {
		t.Fatalf("concurrency %s", tmpl.Concurrency)
	}
}
