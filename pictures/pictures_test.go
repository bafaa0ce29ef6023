package pictures_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/pictures"
)

func ptr[T any](v T) *T { return &v }

func at(s string) accountable.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return accountable.TimeOf(t)
}

// sampleMap has a confirmed, a discovered and a retired process, a stage key two processes
// share, a key no process has, edges breached, open and closed, and names that need escaping.
func sampleMap() accountable.OperatingMap {
	return accountable.OperatingMap{
		Processes: []accountable.MapProcess{
			{ID: "0190a000-0000-7000-8000-000000000002", Name: "Discovered <intake> & \"triage\" \\N", LifecycleState: accountable.ProcessDiscovered,
				ProvenanceMode: accountable.ProvenanceObserved, Episodes: 1,
				Stages: []accountable.CandidateStage{{Key: "intake", Name: "Intake"}, {Key: "triage", Name: "Triage\nline two"}}},
			{ID: "0190a000-0000-7000-8000-000000000001", Name: "Content review", LifecycleState: accountable.ProcessActive,
				ProvenanceMode: accountable.ProvenanceDeclared, Episodes: 12,
				Stages: []accountable.CandidateStage{{Key: "draft", Name: "Draft"}, {Key: "review", Name: "Review"}, {Key: "publish", Name: "Publish"}, {Key: "triage", Name: "Triage"}}},
			{ID: "0190a000-0000-7000-8000-000000000003", Name: "Old process", LifecycleState: accountable.ProcessRetired,
				ProvenanceMode: accountable.ProvenanceDeclared, Stages: []accountable.CandidateStage{}},
		},
		HandoffEdges: []accountable.HandoffEdge{
			{FromStageKey: "review", ToStageKey: "publish", Handoffs: 40, Open: 3, Breached: 2, Fulfilled: 35, MedianFulfilmentSeconds: ptr[int64](7260)},
			{FromStageKey: "draft", ToStageKey: "review", Handoffs: 41, Open: 1, Fulfilled: 40, MedianFulfilmentSeconds: ptr[int64](1800)},
			{FromStageKey: "intake", ToStageKey: "triage", Handoffs: 1, Open: 0},
			{FromStageKey: "triage", ToStageKey: "elsewhere", Handoffs: 2, Open: 2},
		},
	}
}

func sampleLaunch() accountable.Launch {
	dec := accountable.Decision{ID: "0190b000-0000-7000-8000-0000000000d1", Title: "Approve <budget> & more", Status: accountable.DecisionPending,
		Shape: "budget_approval", JobID: ptr("0190b000-0000-7000-8000-0000000000a3"), CreatedAt: at("2026-11-27T08:00:04Z")}
	return accountable.Launch{
		LaunchID: "0190b000-0000-7000-8000-000000000001", InitiativeID: "0190b000-0000-7000-8000-000000000002",
		State: accountable.LaunchBlocked, CreatedAt: at("2026-11-27T08:00:00Z"), ModelTier: "standard", EffectiveAutonomy: accountable.AutonomyGated,
		Cost: accountable.LaunchCost{ServerEstimateCents: 9000, CostCeilingCents: 6000, ReservedCents: 5000, SettledCents: 1234},
		Jobs: []accountable.LaunchJob{
			{WorkstreamID: "0190b000-0000-7000-8000-0000000000f1", JobID: "0190b000-0000-7000-8000-0000000000a1", Status: accountable.JobSucceeded},
			{WorkstreamID: "0190b000-0000-7000-8000-0000000000f2", JobID: "0190b000-0000-7000-8000-0000000000a2", Status: accountable.JobRunning},
			{WorkstreamID: "0190b000-0000-7000-8000-0000000000f3", JobID: "0190b000-0000-7000-8000-0000000000a3", Status: accountable.JobBlocked,
				BlockCode: ptr(accountable.BlockBudgetCeiling)},
		},
		Runs: []accountable.LaunchRun{
			{ID: "0190b000-0000-7000-8000-0000000000c1", JobID: "0190b000-0000-7000-8000-0000000000a1", Status: accountable.RunSucceeded,
				OutcomeKind: ptr(accountable.OutcomeShipped), CostCents: 1234, CreatedAt: at("2026-11-27T08:00:02Z"), FinalizedAt: ptr(at("2026-11-27T08:05:00Z"))},
			{ID: "0190b000-0000-7000-8000-0000000000c2", JobID: "0190b000-0000-7000-8000-0000000000a2", Status: accountable.RunRunning,
				CreatedAt: at("2026-11-27T08:00:03Z")},
		},
		Receipts: []accountable.ReservationReceipt{
			{ID: "0190b000-0000-7000-8000-0000000000e1", JobID: "0190b000-0000-7000-8000-0000000000a1", CostEstimateCents: 3000,
				SettlementStatus: accountable.SettlementSettled, CreatedAt: at("2026-11-27T08:00:01Z"), SettledAt: ptr(at("2026-11-27T08:05:01Z")), SettledCents: ptr[int64](1234)},
			{ID: "0190b000-0000-7000-8000-0000000000e2", JobID: "0190b000-0000-7000-8000-0000000000a2", CostEstimateCents: 2000,
				SettlementStatus: accountable.SettlementReserved, CreatedAt: at("2026-11-27T08:00:02Z")},
		},
		BlockingDecision: &dec,
	}
}

// golden compares got with testdata/name, which UPDATE_GOLDEN=1 rewrites.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the picture drawn (review, then UPDATE_GOLDEN=1 go test ./pictures):\n%s", path, got)
	}
}

// wellFormed fails unless svg is one well-formed XML document whose root is <svg>.
func wellFormed(t *testing.T, svg []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	dec.Strict = true
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
}

func TestOperatingMapGolden(t *testing.T) {
	svg, err := pictures.OperatingMap(context.Background(), sampleMap())
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, svg)
	golden(t, "operating_map.svg", svg)
	for _, want := range []string{"Content review", "Review", "Publish", "not confirmed", "active, confirmed", "retired",
		"2 breached", "3 open", "median fulfil 2h 1m", "in no process", `&lt;intake&gt; &amp; &quot;triage&quot; \N`, "stroke-dasharray"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("the map lacks %q", want)
		}
	}
	// The same map in another order, laid out afresh (not the picture kept), draws the
	// same picture.
	m := sampleMap()
	m.Processes[0], m.Processes[1] = m.Processes[1], m.Processes[0]
	m.HandoffEdges[0], m.HandoffEdges[3] = m.HandoffEdges[3], m.HandoffEdges[0]
	again, err := pictures.LayOut(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(svg, again) {
		t.Fatal("the same map in another order draws another picture")
	}
}

func TestOperatingMapEmpty(t *testing.T) {
	svg, err := pictures.OperatingMap(context.Background(), accountable.OperatingMap{})
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, svg)
	golden(t, "operating_map_empty.svg", svg)
}

// TestOperatingMapConcurrent lays out maps from many goroutines at once (run with -race):
// the one Graphviz context serves them in turn, each the same bytes.
func TestOperatingMapConcurrent(t *testing.T) {
	want, err := pictures.LayOut(context.Background(), sampleMap())
	if err != nil {
		t.Fatal(err)
	}
	concurrently(t, 16, func() error {
		got, err := pictures.LayOut(context.Background(), sampleMap())
		if err == nil && !bytes.Equal(got, want) {
			err = fmt.Errorf("another picture")
		}
		return err
	})
}

// concurrently runs f n times at once and fails on the first error.
func concurrently(t *testing.T, n int, f func() error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() { errs <- f() })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A map drawn is kept by its DOT text: asked for again, or by many at once, it is laid out
// once; a map that changed is laid out again.
func TestOperatingMapDrawnOnce(t *testing.T) {
	m := bigMap(7)
	before := pictures.Layouts()
	want, err := pictures.LayOut(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	concurrently(t, 16, func() error {
		got, err := pictures.OperatingMap(context.Background(), m)
		if err == nil && !bytes.Equal(got, want) {
			err = fmt.Errorf("another picture than the map's layout")
		}
		return err
	})
	if _, err := pictures.OperatingMap(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if n := pictures.Layouts() - before; n != 1 {
		t.Fatalf("17 asks for one map ran %d layouts, want 1", n)
	}
	m.HandoffEdges[0].Open++
	changed, err := pictures.OperatingMap(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if n := pictures.Layouts() - before; n != 2 || bytes.Equal(changed, want) {
		t.Fatalf("a changed map: %d layouts in all (want 2), the same picture: %v", n, bytes.Equal(changed, want))
	}
}

// A caller already gone starts no layout; one that goes during a layout gets its context's
// error, and the layout runs to its end and is kept for the next.
func TestOperatingMapCancelled(t *testing.T) {
	m := bigMap(11)
	before := pictures.Layouts()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := pictures.OperatingMap(ctx, m); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled request: %v, want context.Canceled", err)
	}
	if n := pictures.Layouts() - before; n != 0 {
		t.Fatalf("a cancelled request ran %d layouts", n)
	}
	short, stop := context.WithTimeout(context.Background(), time.Millisecond)
	defer stop()
	if _, err := pictures.OperatingMap(short, m); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a request gone during the layout: %v, want context.DeadlineExceeded", err)
	}
	if _, err := pictures.OperatingMap(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if n := pictures.Layouts() - before; n != 1 {
		t.Fatalf("the layout a gone request began was not the next's: %d layouts, want 1", n)
	}
}

func TestLaunchTimelineGolden(t *testing.T) {
	svg, err := pictures.LaunchTimeline(sampleLaunch())
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, svg)
	golden(t, "launch_timeline.svg", svg)
	for _, want := range []string{"job-0190b000-0000-7000-8000-0000000000a1", "job-0190b000-0000-7000-8000-0000000000a3",
		"BLOCKED on decision", "Approve &lt;budget&gt; &amp; more", "reserved $50.00, settled $12.34", "settled $12.34 settled",
		"ran 4m 58s (succeeded, shipped)", "not ended", "budget_ceiling_exceeded"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("the timeline lacks %q", want)
		}
	}
	if n := strings.Count(string(svg), `class="job"`); n != 3 {
		t.Fatalf("%d job rows, want 3", n)
	}
}

func TestLaunchTimelineEmpty(t *testing.T) {
	svg, err := pictures.LaunchTimeline(accountable.Launch{LaunchID: "x", CreatedAt: at("2026-11-27T08:00:00Z")})
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, svg)
	golden(t, "launch_timeline_empty.svg", svg)
}

func TestDuration(t *testing.T) {
	for s, want := range map[int64]string{0: "0s", -5: "0s", 45: "45s", 60: "1m", 90: "1m 30s", 600: "10m", 3600: "1h", 7260: "2h 1m",
		86400: "1d", 90000: "1d 1h"} {
		if got := pictures.Duration(s); got != want {
			t.Errorf("Duration(%d) = %q, want %q", s, got, want)
		}
	}
}

// A map past the bounds is drawn in part (its busiest edges, its first processes) and says
// so; its layout's effort is bounded.
func TestOperatingMapBounded(t *testing.T) {
	m := bigMap(310) // 1,550 edges
	m.HandoffEdges[7].Handoffs = 1_000_000
	dot := string(pictures.OperatingMapDOT(m))
	for _, want := range []string{"Drawn: the 1000 busiest of 1550 handoff edges and the first 300 of 310 processes by id", "mclimit=0.1",
		`"edge-p1-s2-p1-s3"`} {
		if !strings.Contains(dot, want) {
			t.Errorf("the DOT lacks %q", want)
		}
	}
	if n := strings.Count(dot, " -> "); n != 1000 {
		t.Fatalf("%d edges drawn", n)
	}
	if strings.Contains(string(pictures.OperatingMapDOT(sampleMap())), "mclimit") {
		t.Fatal("a small map's layout is bounded")
	}
}

// A launch of a few seconds has its axis and offsets in milliseconds and tenths of a
// second, not +0s everywhere.
func TestLaunchTimelineSubSecond(t *testing.T) {
	l := sampleLaunch()
	start := l.CreatedAt.Time
	l.Receipts[0].CreatedAt = accountable.TimeOf(start.Add(250 * time.Millisecond))
	l.Runs[0].CreatedAt = accountable.TimeOf(start.Add(1500 * time.Millisecond))
	l.Runs[0].FinalizedAt = ptr(accountable.TimeOf(start.Add(1800 * time.Millisecond)))
	l.Receipts[0].SettledAt = ptr(accountable.TimeOf(start.Add(2 * time.Second)))
	l.Runs[1].CreatedAt = accountable.TimeOf(start.Add(2 * time.Second))
	l.Receipts[1].CreatedAt = accountable.TimeOf(start.Add(time.Second))
	l.BlockingDecision.CreatedAt = accountable.TimeOf(start.Add(3 * time.Second))
	svg, err := pictures.LaunchTimeline(l)
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, svg)
	for _, want := range []string{"reserved +250ms", "dispatched +1.5s", "settled +2s", ">+0s<"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("the timeline lacks %q", want)
		}
	}
	if n := bytes.Count(svg, []byte(">+0s<")); n != 1 {
		t.Errorf("%d axis ticks read +0s, want the first only", n)
	}
}
