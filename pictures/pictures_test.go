package pictures_test

import (
	"bytes"
	"context"
	"encoding/xml"
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
	// The same map in another order draws the same picture.
	m := sampleMap()
	m.Processes[0], m.Processes[1] = m.Processes[1], m.Processes[0]
	m.HandoffEdges[0], m.HandoffEdges[3] = m.HandoffEdges[3], m.HandoffEdges[0]
	again, err := pictures.OperatingMap(context.Background(), m)
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

// TestOperatingMapConcurrent draws maps from many goroutines at once (run with -race): the
// one Graphviz context serves them in turn, each the same bytes.
func TestOperatingMapConcurrent(t *testing.T) {
	want, err := pictures.OperatingMap(context.Background(), sampleMap())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			got, err := pictures.OperatingMap(context.Background(), sampleMap())
			if err == nil && !bytes.Equal(got, want) {
				err = fmt.Errorf("another picture")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestOperatingMapCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := pictures.OperatingMap(ctx, sampleMap()); err == nil {
		t.Fatal("a cancelled request drew a map")
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
