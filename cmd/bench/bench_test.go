package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
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
		changed := strings.Replace(string(src), "0)) FOR UPDATE", "0)) FOR NO KEY UPDATE", 1)
		if err := os.WriteFile(filepath.Join(root, "store", f), []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	diff, err := sameStatements(root)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(diff, "FOR NO KEY UPDATE") {
		t.Fatalf("a changed lock of the ledger head went unnoticed: %q", diff)
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
		canon, err := accountable.CanonicalizeJSON(reencoded)
		if err != nil || accountable.Digest(canon) != e.PayloadDigest {
			t.Fatalf("event %d: payloadDigest does not match the payload (%v)", i, err)
		}
		if h, err := e.Hash(); err != nil || h != e.EventHash {
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
