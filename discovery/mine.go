// Package discovery finds the processes a workspace already follows, from what its ledger
// shows (handoffs between stages, completed work tagged with its stage, recorded episodes,
// imported receipts) and from observations a caller supplies. The technique is the
// process-mining one of trace variants over a directly-follows graph with frequency
// thresholds (accountable.DiscoveryTechnique names it in every run):
//
//  1. Events become traces: each case (a handoff key, a work item's case_id, an episode, an
//     observation's case_id, or a case of ordinary work InferCases finds) is the sequence of
//     stages its events passed through, in time order, with immediate repeats collapsed.
//  2. The directly-follows graph counts, over all traces, how often stage b directly
//     follows stage a (|a>b|).
//  3. Every trace variant (distinct stage sequence) of at least two stages seen in at least
//     MinCaseSupport cases is a candidate process. Its confidence is its share of the cases
//     in which its first stage occurs, times the weakest dependency of its edges in the
//     Heuristics Miner's measure (|a>b| - |b>a|) / (|a>b| + |b>a| + 1), clamped to 0..1.
//
// The same events give the same candidates, in the same order, with the same ids.
package discovery

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/payload"
	"github.com/accountablework/accountable/receipt"
)

// Mining bounds. Traces are cut at accountable.MaxStagesPerTrace stages, which stays in
// the root because it bounds an imported receipt's steps too.
const (
	MinCaseSupport = 2  // cases a variant needs to be a candidate
	MaxCandidates  = 50 // candidates a run keeps (the best supported)
	MaxCitations   = 20 // citations a candidate keeps
)

// Mine turns events into candidate processes (see the package comment). runID seeds the
// candidates' ids; the result depends on nothing else.
func Mine(runID string, events []accountable.TraceEvent) ([]accountable.ProcessCard, int) {
	// Each case's events, as indices in the order given: a number per case (in the order
	// first seen), then the indices grouped by case number (a counting sort keeps their
	// order). A run's 200,000 events are not copied into a slice per case.
	number := make(map[string]int32)
	var caseIDs []string
	var sizes []int32
	caseOf := make([]int32, len(events))
	for i := range events {
		n, ok := number[events[i].CaseID]
		if !ok {
			n = int32(len(caseIDs))
			number[events[i].CaseID] = n
			caseIDs, sizes = append(caseIDs, events[i].CaseID), append(sizes, 0)
		}
		caseOf[i] = n
		sizes[n]++
	}
	starts := make([]int32, len(caseIDs)+1)
	for n, k := range sizes {
		starts[n+1] = starts[n] + k
	}
	order := make([]int32, len(events))
	next := append([]int32(nil), starts[:len(caseIDs)]...)
	for i, n := range caseOf {
		order[next[n]] = int32(i)
		next[n]++
	}
	cases := make([]int32, len(caseIDs)) // case numbers by case id
	for n := range cases {
		cases[n] = int32(n)
	}
	slices.SortFunc(cases, func(a, b int32) int { return strings.Compare(caseIDs[a], caseIDs[b]) })
	// Events in time order, those at one instant by Seq, then as given.
	before := func(a, b int32) bool {
		ea, eb := &events[a], &events[b]
		if !ea.At.Equal(eb.At) {
			return ea.At.Before(eb.At)
		}
		return ea.Seq < eb.Seq
	}
	names := map[string]string{}
	type variant struct {
		stages    []string
		support   int // its cases
		bases     []accountable.CaseBasis
		citations []accountable.Citation
	}
	variants := map[string]*variant{}
	follows := map[[2]string]int{}
	startsIn := map[string]int{} // cases in which a stage occurs
	var trace []string           // a case's, reused: a variant keeps a copy
	var cites []accountable.Citation
	var key []byte
	for _, n := range cases {
		evs := order[starts[n]:starts[n+1]]
		for i := 1; i < len(evs); i++ {
			if before(evs[i], evs[i-1]) {
				slices.SortStableFunc(evs, func(a, b int32) int {
					switch {
					case before(a, b):
						return -1
					case before(b, a):
						return 1
					}
					return 0
				})
				break
			}
		}
		trace, cites = trace[:0], cites[:0]
		var basis accountable.CaseBasis // the case's strongest
		for _, i := range evs {
			e := &events[i]
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
		var seen map[string]bool // for a long trace; a short one is searched
		if len(trace) > 16 {
			seen = make(map[string]bool, len(trace))
		}
		key = key[:0]
		for i, s := range trace {
			if seen != nil && !seen[s] || seen == nil && !slices.Contains(trace[:i], s) {
				startsIn[s]++
				if seen != nil {
					seen[s] = true
				}
			}
			if i > 0 {
				follows[[2]string{trace[i-1], s}]++
				key = append(key, 0)
			}
			key = append(key, s...)
		}
		v := variants[string(key)]
		if v == nil {
			v = &variant{stages: slices.Clone(trace)}
			variants[string(key)] = v
		}
		v.support++
		v.bases = append(v.bases, basis)
		for _, ct := range cites {
			if len(v.citations) < MaxCitations {
				v.citations = append(v.citations, ct)
			}
		}
	}
	var cards []accountable.ProcessCard
	for key, v := range variants {
		if len(v.stages) < 2 || v.support < MinCaseSupport {
			continue
		}
		dep := 1.0
		for i := 1; i < len(v.stages); i++ {
			ab, ba := float64(follows[[2]string{v.stages[i-1], v.stages[i]}]), float64(follows[[2]string{v.stages[i], v.stages[i-1]}])
			dep = math.Min(dep, (ab-ba)/(ab+ba+1))
		}
		share := float64(v.support) / float64(startsIn[v.stages[0]])
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
			Purpose: fmt.Sprintf("Observed in %d cases: %s.", v.support, joinStageNames(stages)),
			Stages:  stages, Confidence: conf, Support: v.support, Grouping: groupingOf(v.bases), Citations: v.citations,
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
	return cards, len(caseIDs)
}

func joinStageNames(s []accountable.CandidateStage) string {
	out := make([]string, len(s))
	for i, st := range s {
		out[i] = st.Name
	}
	return strings.Join(out, " → ")
}

func joinStageKeys(s []accountable.CandidateStage) string {
	out := make([]string, len(s))
	for i, st := range s {
		out[i] = st.Key
	}
	return strings.Join(out, "\x00")
}

// stageName makes a readable name of a stage key: "code_review" → "Code review".
func stageName(key string) string {
	s := strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == '.' {
			return ' '
		}
		return r
	}, key)
	r := []rune(strings.TrimSpace(s))
	if len(r) == 0 {
		return key
	}
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// EventTypes are the ledger event types discovery mines (TraceEventsOf reads them).
var EventTypes = []string{accountable.EventHandoffProposed, accountable.EventWorkCompleted, accountable.EventEpisodeRecorded, accountable.EventReceiptImported}

// TraceEventsOf makes the mining events of ledger events: a proposed handoff is its from
// stage then its to stage in the case of its handoff key; a completed work item whose
// metadata names its case and stage (work, by task id) is that stage in its case; a
// recorded episode is its stages in its own case; an imported receipt is its steps
// (actions by type, human interventions, the verification verdict) in the case of the
// request it served (receipt.ReceiptImported.Trace). Every other completed work item (with its
// facts) is returned for InferCases, which needs them all. pos numbers the events in
// stream order (the tie-break of events at one instant).
func TraceEventsOf(events []accountable.Event, work map[string]accountable.WorkFacts, pos int64, kinds func(accountable.SourceKind) bool) ([]accountable.TraceEvent, []accountable.CompletedWork) {
	return AppendTraceEvents(make([]accountable.TraceEvent, 0, 2*len(events)), nil, events, work, pos, kinds)
}

// AppendTraceEvents appends TraceEventsOf's two results to out and ordinary: a run
// gathers its pages' into one slice without copying each page's.
func AppendTraceEvents(out []accountable.TraceEvent, ordinary []accountable.CompletedWork, events []accountable.Event,
	work map[string]accountable.WorkFacts, pos int64, kinds func(accountable.SourceKind) bool) ([]accountable.TraceEvent, []accountable.CompletedWork) {
	for i := range events {
		e := &events[i]
		seq := (pos + int64(i)) * 2
		cite := accountable.Citation{Kind: "ledger_event", EventID: e.ID}
		switch e.EventType {
		case accountable.EventHandoffProposed:
			if !kinds(accountable.SourceHandoffs) {
				continue
			}
			h, ok := handoffStagesOf(e.Payload)
			if !ok {
				continue
			}
			cite.CaseID = h.key
			basis := accountable.CaseBasis{Rule: accountable.GroupHandoffKey, Label: h.key}
			out = append(out, accountable.TraceEvent{CaseID: h.key, Stage: h.from, At: h.at, Seq: seq, Citation: cite, Basis: basis},
				accountable.TraceEvent{CaseID: h.key, Stage: h.to, At: h.at, Seq: seq + 1, Citation: cite, Basis: basis})
		case accountable.EventEpisodeRecorded:
			if !kinds(accountable.SourceLedger) {
				continue
			}
			var ep payload.EpisodeRecorded
			if err := json.Unmarshal(e.Payload, &ep); err != nil {
				continue
			}
			out = append(out, episodeEvents(ep, e.ID, pos+int64(i))...)
		case accountable.EventWorkCompleted:
			if !kinds(accountable.SourceWork) {
				continue
			}
			f, ok := work[e.AggregateID]
			if !ok {
				continue
			}
			if !f.Explicit() {
				var p struct {
					CommandID *string `json:"command_id"` // payload.WorkCompleted's
				}
				_ = json.Unmarshal(e.Payload, &p) // only the completing command's id is read
				ordinary = append(ordinary, accountable.CompletedWork{TaskID: e.AggregateID, EventID: e.ID, At: e.OccurredAt.Time, Seq: seq,
					CommandID: deref(p.CommandID), CausationID: deref(e.CausationID), CorrelationID: deref(e.CorrelationID), WorkFacts: f})
				continue
			}
			cite.CaseID = f.CaseID
			out = append(out, accountable.TraceEvent{CaseID: f.CaseID, Stage: f.Stage, StageName: f.StageName, At: e.OccurredAt.Time, Seq: seq, Citation: cite,
				Basis: accountable.CaseBasis{Rule: accountable.GroupCaseMetadata, Label: f.CaseID}})
		case accountable.EventReceiptImported:
			if !kinds(accountable.SourceReceipts) {
				continue
			}
			var r receipt.ReceiptImported
			if err := json.Unmarshal(e.Payload, &r); err != nil || r.CaseID == "" {
				continue
			}
			out = append(out, r.Trace(e.ID, pos+int64(i))...)
		}
	}
	return out, ordinary
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// MineWork mines events together with the cases InferCases finds in ordinary work.
func MineWork(runID string, events []accountable.TraceEvent, ordinary []accountable.CompletedWork) ([]accountable.ProcessCard, int) {
	inferred := InferCases(ordinary)
	if len(inferred) == 0 {
		return Mine(runID, events)
	}
	all := make([]accountable.TraceEvent, 0, len(events)+len(inferred))
	return Mine(runID, append(append(all, events...), inferred...))
}

// ObservationEvents makes the mining events of supplied observations.
func ObservationEvents(obs []accountable.Observation) []accountable.TraceEvent {
	out := make([]accountable.TraceEvent, len(obs))
	for i, o := range obs {
		name := ""
		if o.StageName != nil {
			name = *o.StageName
		}
		out[i] = accountable.TraceEvent{CaseID: "observed:" + o.CaseID, Stage: o.Stage, StageName: name, At: o.At.Time, Seq: int64(i),
			Citation: accountable.Citation{Kind: "observation", CaseID: o.CaseID}, Basis: accountable.CaseBasis{Rule: accountable.GroupObservation, Label: o.CaseID}}
	}
	return out
}

// episodeEvents makes the mining events of an episode (an episode.recorded event's payload):
// its stages in its case, at their times (or, without one, in the order given, at the
// episode's start).
func episodeEvents(e accountable.Episode, eventID string, pos int64) []accountable.TraceEvent {
	out := make([]accountable.TraceEvent, 0, len(e.Stages))
	for i, s := range e.Stages {
		at := e.StartedAt.Time
		if s.At != nil {
			at = s.At.Time
		}
		out = append(out, accountable.TraceEvent{CaseID: "episode:" + e.ProcessRef.ID + ":" + e.CaseID, Stage: s.Key, At: at,
			Seq: pos*2 + int64(i), Citation: accountable.Citation{Kind: "ledger_event", EventID: eventID, CaseID: e.CaseID},
			Basis: accountable.CaseBasis{Rule: accountable.GroupEpisode, Label: e.CaseID}})
	}
	return out
}
