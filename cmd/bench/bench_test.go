package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
