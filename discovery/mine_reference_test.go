package discovery

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
)

// TestMineIsTheReference compares Mine with the way it was first written (mineReference,
// kept here) on varied events: cases of many sizes given in any order, events at one
// instant told apart by Seq, repeated stages, stage names, every grouping rule, traces
// longer than accountable.MaxStagesPerTrace, and too few cases for a candidate.
func TestMineIsTheReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 2))
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	stages := []string{"intake", "triage", "fix", "review", "ship", "close", "code_review", "qa-check"}
	rules := append([]accountable.GroupingRule{""}, accountable.GroupingRules...)
	found := 0
	for round := range 60 {
		var events []accountable.TraceEvent
		cases := 1 + rng.IntN(200)
		for c := range cases {
			id := fmt.Sprintf("case-%d", rng.IntN(cases)) // some cases get events twice over
			n := 1 + rng.IntN(6)
			if rng.IntN(40) == 0 {
				n = accountable.MaxStagesPerTrace + rng.IntN(30)
			}
			for i := range n {
				e := accountable.TraceEvent{CaseID: id, Stage: stages[rng.IntN(2+round%(len(stages)-1))],
					At: t0.Add(time.Duration(rng.IntN(4)) * time.Minute), Seq: int64(rng.IntN(1000)),
					Citation: accountable.Citation{Kind: "ledger_event", EventID: fmt.Sprintf("e-%d-%d", c, i), CaseID: id}}
				if rng.IntN(5) == 0 {
					e.StageName = "Stage " + e.Stage
				}
				if r := rules[rng.IntN(len(rules))]; r != "" {
					e.Basis = accountable.CaseBasis{Rule: r, Label: id}
				}
				if rng.IntN(3) == 0 {
					e.Seq = int64(i) // ties in At and Seq: input order decides
				}
				events = append(events, e)
			}
		}
		rng.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
		runID := fmt.Sprintf("run-%d", round)
		wantCards, wantCases := mineReference(runID, cloneEvents(events))
		gotCards, gotCases := Mine(runID, cloneEvents(events))
		found += len(wantCards)
		if gotCases != wantCases || !reflect.DeepEqual(gotCards, wantCards) {
			t.Fatalf("round %d: %d cases, cards\n%+v\nwant %d cases,\n%+v", round, gotCases, gotCards, wantCases, wantCards)
		}
	}
	if found < 100 {
		t.Fatalf("only %d candidates in all: the events compare too little", found)
	}
}

func cloneEvents(e []accountable.TraceEvent) []accountable.TraceEvent {
	return append([]accountable.TraceEvent(nil), e...)
}

// mineReference is Mine as it was first written (a map of each case's events, sorted with
// sort.SliceStable), the answer Mine must keep giving.
func mineReference(runID string, events []accountable.TraceEvent) ([]accountable.ProcessCard, int) {
	byCase := map[string][]accountable.TraceEvent{}
	for _, e := range events {
		byCase[e.CaseID] = append(byCase[e.CaseID], e)
	}
	cases := make([]string, 0, len(byCase))
	for c := range byCase {
		cases = append(cases, c)
	}
	sort.Strings(cases)
	names := map[string]string{}
	type variant struct {
		stages    []string
		cases     []string
		bases     []accountable.CaseBasis
		citations []accountable.Citation
	}
	variants := map[string]*variant{}
	follows := map[[2]string]int{}
	startsIn := map[string]int{} // cases in which a stage occurs
	for _, c := range cases {
		evs := byCase[c]
		sort.SliceStable(evs, func(i, j int) bool {
			if !evs[i].At.Equal(evs[j].At) {
				return evs[i].At.Before(evs[j].At)
			}
			return evs[i].Seq < evs[j].Seq
		})
		var trace []string
		var cites []accountable.Citation
		var basis accountable.CaseBasis // the case's strongest
		for _, e := range evs {
			if e.Basis.Rule != "" && (basis.Rule == "" || rank(e.Basis.Rule) < rank(basis.Rule)) {
				basis = e.Basis
			}
			if e.StageName != "" && names[e.Stage] == "" {
				names[e.Stage] = e.StageName
			}
			if len(trace) > 0 && trace[len(trace)-1] == e.Stage {
				continue
			}
			if len(trace) == accountable.MaxStagesPerTrace {
				break
			}
			trace = append(trace, e.Stage)
			cites = append(cites, e.Citation)
		}
		seen := map[string]bool{}
		for i, s := range trace {
			if !seen[s] {
				startsIn[s]++
				seen[s] = true
			}
			if i > 0 {
				follows[[2]string{trace[i-1], s}]++
			}
		}
		key := strings.Join(trace, "\x00")
		v := variants[key]
		if v == nil {
			v = &variant{stages: trace}
			variants[key] = v
		}
		v.cases = append(v.cases, c)
		v.bases = append(v.bases, basis)
		for _, ct := range cites {
			if len(v.citations) < MaxCitations {
				v.citations = append(v.citations, ct)
			}
		}
	}
	var cards []accountable.ProcessCard
	for key, v := range variants {
		if len(v.stages) < 2 || len(v.cases) < MinCaseSupport {
			continue
		}
		dep := 1.0
		for i := 1; i < len(v.stages); i++ {
			ab, ba := float64(follows[[2]string{v.stages[i-1], v.stages[i]}]), float64(follows[[2]string{v.stages[i], v.stages[i-1]}])
			dep = math.Min(dep, (ab-ba)/(ab+ba+1))
		}
		share := float64(len(v.cases)) / float64(startsIn[v.stages[0]])
		conf := math.Round(math.Max(0, math.Min(1, share*dep))*1000) / 1000
		stages := make([]accountable.CandidateStage, len(v.stages))
		for i, s := range v.stages {
			n := names[s]
			if n == "" {
				n = stageName(s)
			}
			stages[i] = accountable.CandidateStage{Key: s, Name: n}
		}
		sum := sha256.Sum256([]byte(runID + "\x00" + key))
		h := hex.EncodeToString(sum[:16])
		id := h[0:8] + "-" + h[8:12] + "-8" + h[13:16] + "-" + "8" + h[17:20] + "-" + h[20:32] // RFC 9562 version 8 (custom)
		cards = append(cards, accountable.ProcessCard{ID: id, Name: stages[0].Name + " → " + stages[len(stages)-1].Name,
			Purpose: fmt.Sprintf("Observed in %d cases: %s.", len(v.cases), joinStageNames(stages)),
			Stages:  stages, Confidence: conf, Support: len(v.cases), Grouping: groupingOf(v.bases), Citations: v.citations,
			Limitations: []string{"Mined from the order of events alone: stages, not their intent; confirm before relying on it."}})
	}
	sort.Slice(cards, func(i, j int) bool {
		if cards[i].Support != cards[j].Support {
			return cards[i].Support > cards[j].Support
		}
		return joinStageKeys(cards[i].Stages) < joinStageKeys(cards[j].Stages)
	})
	if len(cards) > MaxCandidates {
		cards = cards[:MaxCandidates]
	}
	return cards, len(cases)
}
