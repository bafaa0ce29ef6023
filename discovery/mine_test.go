package discovery_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/discovery"
)

// trace makes the events of one case passing through stages, a minute apart.
func trace(caseID string, start time.Time, stages ...string) []accountable.TraceEvent {
	out := make([]accountable.TraceEvent, len(stages))
	for i, s := range stages {
		out[i] = accountable.TraceEvent{CaseID: caseID, Stage: s, At: start.Add(time.Duration(i) * time.Minute), Seq: int64(i),
			Citation: accountable.Citation{Kind: "observation", CaseID: caseID}}
	}
	return out
}

// A seeded log with a known answer: intake → triage → fix in 5 cases, intake → triage →
// close in 3, one-off sequences once, a repeated stage collapsed.
func TestMineKnownAnswer(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	var events []accountable.TraceEvent
	for i := range 5 {
		events = append(events, trace(fmt.Sprintf("fix-%d", i), t0.Add(time.Duration(i)*time.Hour), "intake", "triage", "triage", "fix")...)
	}
	for i := range 3 {
		events = append(events, trace(fmt.Sprintf("close-%d", i), t0.Add(time.Duration(i)*time.Hour), "intake", "triage", "close")...)
	}
	events = append(events, trace("odd", t0, "triage", "intake")...)
	events = append(events, trace("single", t0, "intake")...)
	cards, cases := discovery.Mine("run-1", events)
	if cases != 10 || len(cards) != 2 {
		t.Fatalf("%d cases, cards %+v", cases, cards)
	}
	fix, closing := cards[0], cards[1]
	if got := []string{fix.Stages[0].Key, fix.Stages[1].Key, fix.Stages[2].Key}; !reflect.DeepEqual(got, []string{"intake", "triage", "fix"}) ||
		fix.Support != 5 || closing.Support != 3 || fix.Stages[0].Name != "Intake" || fix.Name != "Intake → Fix" {
		t.Fatalf("cards %+v", cards)
	}
	// intake occurs in 10 cases; intake>triage 8 times, triage>intake once: dependency 7/10;
	// triage>fix 5, fix>triage 0: 5/6. Confidence = 5/10 × 0.7 = 0.35 and 3/10 × 0.7 = 0.21.
	if fix.Confidence != 0.35 || closing.Confidence != 0.21 {
		t.Fatalf("confidences %v %v", fix.Confidence, closing.Confidence)
	}
	if !accountable.ValidUUID(fix.ID) || fix.ID == closing.ID || len(fix.Citations) == 0 {
		t.Fatalf("ids %s %s, citations %v", fix.ID, closing.ID, fix.Citations)
	}
	// Deterministic: the same events in another order give the same cards; another run id
	// other ids.
	shuffled := append([]accountable.TraceEvent(nil), events...)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	again, _ := discovery.Mine("run-1", shuffled)
	if !reflect.DeepEqual(again, cards) {
		t.Fatalf("not deterministic:\n%+v\n%+v", again, cards)
	}
	other, _ := discovery.Mine("run-2", events)
	if other[0].ID == fix.ID {
		t.Fatal("ids do not depend on the run")
	}
}

// Nothing recurring, nothing found.
func TestMineBelowSupport(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	events := append(trace("a", t0, "x", "y"), trace("b", t0, "y", "z")...)
	if cards, cases := discovery.Mine("r", events); len(cards) != 0 || cases != 2 {
		t.Fatalf("%d cases, cards %+v", cases, cards)
	}
}

// Mining 100,000 events stays well within a run's time (the bound is measured by make bench).
func BenchmarkMine(b *testing.B) {
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	stages := []string{"intake", "triage", "fix", "review", "ship"}
	var events []accountable.TraceEvent
	for i := 0; len(events) < 100000; i++ {
		n := 2 + i%4
		events = append(events, trace(fmt.Sprintf("c%d", i), t0.Add(time.Duration(i)*time.Minute), stages[:n]...)...)
	}
	b.ResetTimer()
	for range b.N {
		discovery.Mine("run", events)
	}
}

// The technique every run names (in the root, which cannot import this package) states
// the case support mining applies.
func TestTechniqueStatesTheCaseSupport(t *testing.T) {
	if want := fmt.Sprintf("min case support %d", discovery.MinCaseSupport); !strings.Contains(accountable.DiscoveryTechnique, want) {
		t.Fatalf("DiscoveryTechnique %q does not say %q", accountable.DiscoveryTechnique, want)
	}
}
