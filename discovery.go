package accountable

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode"
)

// Discovery finds the processes a workspace already follows, from what its ledger shows
// (handoffs between stages, completed work tagged with its stage, recorded episodes) and
// from observations a caller supplies. The technique is the process-mining one of trace
// variants over a directly-follows graph with frequency thresholds:
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

// Ledger vocabulary of discovery runs.
const (
	AggregateDiscoveryRun      = "discovery_run"
	EventDiscoveryRunRequested = "discovery_run.requested"
	EventDiscoveryRunCompleted = "discovery_run.completed"
	EventDiscoveryRunFailed    = "discovery_run.failed"
)

// Discovery bounds.
const (
	MinCaseSupport       = 2   // cases a variant needs to be a candidate
	MaxCandidates        = 50  // candidates a run keeps (the best supported)
	MaxCitations         = 20  // citations a candidate keeps
	MaxStagesPerTrace    = 100 // longer traces are cut
	discoveryDefaultMode = DiscoveryBoundedSync
)

// DiscoveryMode is how a run answers: bounded_sync with the finished result (within the
// request's deadline), the others at once (202) with the run to read.
type DiscoveryMode string

// Discovery modes (CONTRACT.md).
const (
	DiscoveryBoundedSync DiscoveryMode = "bounded_sync"
	DiscoveryDeepSearch  DiscoveryMode = "deep_search"
	DiscoveryReconcile   DiscoveryMode = "reconcile"
)

// Enum lists the modes.
func (DiscoveryMode) Enum() []any {
	return EnumStrings(DiscoveryBoundedSync, DiscoveryDeepSearch, DiscoveryReconcile)
}

// SourceKind is a kind of evidence a run mines.
type SourceKind string

// Source kinds (CONTRACT.md).
const (
	SourceLedger       SourceKind = "ledger"
	SourceWork         SourceKind = "work"
	SourceHandoffs     SourceKind = "handoffs"
	SourceReceipts     SourceKind = "receipts"
	SourceObservations SourceKind = "observations"
)

// SourceKinds lists every source kind: a run mines them all unless told otherwise.
var SourceKinds = []SourceKind{SourceLedger, SourceWork, SourceHandoffs, SourceReceipts, SourceObservations}

// Enum lists the source kinds.
func (SourceKind) Enum() []any { return EnumStrings(SourceKinds...) }

// DiscoveryStatus is where a run is.
type DiscoveryStatus string

// Run statuses (CONTRACT.md).
const (
	DiscoveryQueued    DiscoveryStatus = "queued"
	DiscoveryRunning   DiscoveryStatus = "running"
	DiscoverySucceeded DiscoveryStatus = "succeeded"
	DiscoveryPartial   DiscoveryStatus = "partial"
	DiscoveryFailed    DiscoveryStatus = "failed"
	DiscoveryCancelled DiscoveryStatus = "cancelled"
)

// Enum lists the statuses.
func (DiscoveryStatus) Enum() []any {
	return EnumStrings(DiscoveryQueued, DiscoveryRunning, DiscoverySucceeded, DiscoveryPartial, DiscoveryFailed, DiscoveryCancelled)
}

// Finished reports whether the run has its result.
func (s DiscoveryStatus) Finished() bool {
	return s == DiscoverySucceeded || s == DiscoveryPartial || s == DiscoveryFailed || s == DiscoveryCancelled
}

// Observation is one supplied event: case caseId passed through stage at a time.
type Observation struct {
	CaseID    string  `json:"case_id" minLength:"1" maxLength:"200"`
	Stage     string  `json:"stage" minLength:"1" maxLength:"200"`
	StageName *string `json:"stage_name,omitzero" maxLength:"500"`
	At        Time    `json:"at"`
}

// StartDiscoveryRun is the command that starts a discovery run (POST /discovery-runs).
type StartDiscoveryRun struct {
	Mode         *DiscoveryMode `json:"mode,omitzero"`
	Query        *string        `json:"query,omitzero" maxLength:"1000"`
	SourceKinds  []SourceKind   `json:"source_kinds,omitzero" maxItems:"5"`
	Observations []Observation  `json:"observations,omitzero" maxItems:"10000"`
	Causation
}

// Validate checks the command's fields.
func (c StartDiscoveryRun) Validate() error { return CheckFields(c).Err() }

// ModeOr returns the requested mode, bounded_sync by default.
func (c StartDiscoveryRun) ModeOr() DiscoveryMode {
	if c.Mode == nil {
		return discoveryDefaultMode
	}
	return *c.Mode
}

// Mines reports whether the run mines kind.
func (c StartDiscoveryRun) Mines(kind SourceKind) bool {
	if len(c.SourceKinds) == 0 {
		return true
	}
	for _, k := range c.SourceKinds {
		if k == kind || (k == SourceLedger && kind != SourceObservations) {
			return true
		}
	}
	return false
}

// Citation is a piece of evidence a candidate came from: a ledger event, or a supplied
// observation (its case and position).
type Citation struct {
	Kind    string `json:"kind"` // ledger_event, observation
	EventID string `json:"eventId,omitzero"`
	CaseID  string `json:"caseId"`
}

// CandidateStage is a stage of a candidate process.
type CandidateStage struct {
	Key  string `json:"key"`
	Name string `json:"name"`
}

// ProcessCard is a candidate process a run found. Grouping says why its cases were
// grouped (the rules and, briefly, the evidence); its id depends on the run and the
// stages only, so explaining the grouping changes no candidate's id.
type ProcessCard struct {
	ID          string           `json:"id" format:"uuid"`
	Name        string           `json:"name"`
	Purpose     string           `json:"purpose"`
	Stages      []CandidateStage `json:"stages"`
	Confidence  float64          `json:"confidence" minimum:"0" maximum:"1"`
	Support     int              `json:"support" minimum:"0"`
	Grouping    []CaseGrouping   `json:"grouping"`
	Citations   []Citation       `json:"citations"`
	Limitations []string         `json:"limitations"`
}

// DiscoveryCounts are a run's counts so far.
type DiscoveryCounts struct {
	EventsRead   int `json:"eventsRead"`
	Observations int `json:"observations"`
	Cases        int `json:"cases"`
	Candidates   int `json:"candidates"`
}

// DiscoveryRun is a run and what it found (so far).
type DiscoveryRun struct {
	ID               string          `json:"id" format:"uuid"`
	WorkspaceID      string          `json:"workspaceId" format:"uuid"`
	Mode             DiscoveryMode   `json:"mode"`
	Status           DiscoveryStatus `json:"status"`
	Query            *string         `json:"query"`
	SourceKinds      []SourceKind    `json:"sourceKinds"`
	Counts           DiscoveryCounts `json:"counts"`
	Technique        string          `json:"technique"`
	Error            *string         `json:"error"`
	CreatedAt        Time            `json:"createdAt"`
	UpdatedAt        Time            `json:"updatedAt"`
	CompletedAt      *Time           `json:"completedAt"`
	AggregateVersion int64           `json:"aggregateVersion" minimum:"1"`
	WorkflowID       string          `json:"workflowId"`
}

// DiscoveryResult is a run with its result (CONTRACT.md): the run, the observations it was
// given, the candidates (processCards) and the confirmed processes they match.
type DiscoveryResult struct {
	Run                  DiscoveryRun  `json:"run"`
	Observations         []Observation `json:"observations"`
	ProcessCards         []ProcessCard `json:"processCards"`
	ConfirmedProcessRefs []ProcessRef  `json:"confirmedProcessRefs"`
	Encoded              `json:"-"`
}

// DiscoveryTechnique names the technique in every run.
const DiscoveryTechnique = "trace variants over a directly-follows graph with frequency thresholds (min case support 2; Heuristics Miner dependency)"

// TraceEvent is one event of a case, as mining sees it.
type TraceEvent struct {
	CaseID    string
	Stage     string
	StageName string
	At        time.Time
	Seq       int64 // tie-break within a case: ledger position or observation index
	Citation  Citation
	Basis     CaseBasis // why the event is in its case
}

// Mine turns events into candidate processes (see the top of this file). runID seeds the
// candidates' ids; the result depends on nothing else.
func Mine(runID string, events []TraceEvent) ([]ProcessCard, int) {
	byCase := map[string][]TraceEvent{}
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
		bases     []CaseBasis
		citations []Citation
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
		var cites []Citation
		var basis CaseBasis // the case's strongest
		for _, e := range evs {
			if e.Basis.Rule != "" && (basis.Rule == "" || e.Basis.Rule.rank() < basis.Rule.rank()) {
				basis = e.Basis
			}
			if e.StageName != "" && names[e.Stage] == "" {
				names[e.Stage] = e.StageName
			}
			if len(trace) > 0 && trace[len(trace)-1] == e.Stage {
				continue
			}
			if len(trace) == MaxStagesPerTrace {
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
	var cards []ProcessCard
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
		stages := make([]CandidateStage, len(v.stages))
		for i, s := range v.stages {
			n := names[s]
			if n == "" {
				n = stageName(s)
			}
			stages[i] = CandidateStage{Key: s, Name: n}
		}
		sum := sha256.Sum256([]byte(runID + "\x00" + key))
		h := hex.EncodeToString(sum[:16])
		id := h[0:8] + "-" + h[8:12] + "-8" + h[13:16] + "-" + "8" + h[17:20] + "-" + h[20:32] // RFC 9562 version 8 (custom)
		cards = append(cards, ProcessCard{ID: id, Name: stages[0].Name + " → " + stages[len(stages)-1].Name,
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

func joinStageNames(s []CandidateStage) string {
	out := make([]string, len(s))
	for i, st := range s {
		out[i] = st.Name
	}
	return strings.Join(out, " → ")
}

func joinStageKeys(s []CandidateStage) string {
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

// Event types discovery mines from the ledger.
var DiscoveryEventTypes = []string{EventHandoffProposed, EventWorkCompleted, EventEpisodeRecorded, EventReceiptImported}

// TraceEventsOf makes the mining events of ledger events: a proposed handoff is its from
// stage then its to stage in the case of its handoff key; a completed work item whose
// metadata names its case and stage (work, by task id) is that stage in its case; a
// recorded episode is its stages in its own case; an imported receipt is its steps
// (actions by type, human interventions, the verification verdict) in the case of the
// request it served (ReceiptImported.Trace). Every other completed work item (with its
// facts) is returned for InferCases, which needs them all. pos numbers the events in
// stream order (the tie-break of events at one instant).
func TraceEventsOf(events []Event, work map[string]WorkFacts, pos int64, kinds func(SourceKind) bool) ([]TraceEvent, []CompletedWork) {
	var out []TraceEvent
	var ordinary []CompletedWork
	for i, e := range events {
		seq := (pos + int64(i)) * 2
		cite := Citation{Kind: "ledger_event", EventID: e.ID}
		switch e.EventType {
		case EventHandoffProposed:
			if !kinds(SourceHandoffs) {
				continue
			}
			var h Handoff
			if err := json.Unmarshal(e.Payload, &h); err != nil || h.HandoffKey == "" {
				continue
			}
			cite.CaseID = h.HandoffKey
			at := h.CreatedAt.Time
			basis := CaseBasis{Rule: GroupHandoffKey, Label: h.HandoffKey}
			out = append(out, TraceEvent{CaseID: h.HandoffKey, Stage: h.FromStageKey, At: at, Seq: seq, Citation: cite, Basis: basis},
				TraceEvent{CaseID: h.HandoffKey, Stage: h.ToStageKey, At: at, Seq: seq + 1, Citation: cite, Basis: basis})
		case EventEpisodeRecorded:
			if !kinds(SourceLedger) {
				continue
			}
			var ep Episode
			if err := json.Unmarshal(e.Payload, &ep); err != nil {
				continue
			}
			out = append(out, EpisodeTrace(ep, e.ID, pos+int64(i))...)
		case EventWorkCompleted:
			if !kinds(SourceWork) {
				continue
			}
			f, ok := work[e.AggregateID]
			if !ok {
				continue
			}
			if !f.Explicit() {
				var p struct {
					CommandID *string `json:"command_id"`
				}
				_ = json.Unmarshal(e.Payload, &p) // only the completing command's id is read
				ordinary = append(ordinary, CompletedWork{TaskID: e.AggregateID, EventID: e.ID, At: e.OccurredAt.Time, Seq: seq,
					CommandID: deref(p.CommandID), CausationID: deref(e.CausationID), CorrelationID: deref(e.CorrelationID), WorkFacts: f})
				continue
			}
			cite.CaseID = f.CaseID
			out = append(out, TraceEvent{CaseID: f.CaseID, Stage: f.Stage, StageName: f.StageName, At: e.OccurredAt.Time, Seq: seq, Citation: cite,
				Basis: CaseBasis{Rule: GroupCaseMetadata, Label: f.CaseID}})
		case EventReceiptImported:
			if !kinds(SourceReceipts) {
				continue
			}
			var r ReceiptImported
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
func MineWork(runID string, events []TraceEvent, ordinary []CompletedWork) ([]ProcessCard, int) {
	inferred := InferCases(ordinary)
	if len(inferred) == 0 {
		return Mine(runID, events)
	}
	all := make([]TraceEvent, 0, len(events)+len(inferred))
	return Mine(runID, append(append(all, events...), inferred...))
}

// ObservationEvents makes the mining events of supplied observations.
func ObservationEvents(obs []Observation) []TraceEvent {
	out := make([]TraceEvent, len(obs))
	for i, o := range obs {
		name := ""
		if o.StageName != nil {
			name = *o.StageName
		}
		out[i] = TraceEvent{CaseID: "observed:" + o.CaseID, Stage: o.Stage, StageName: name, At: o.At.Time, Seq: int64(i),
			Citation: Citation{Kind: "observation", CaseID: o.CaseID}, Basis: CaseBasis{Rule: GroupObservation, Label: o.CaseID}}
	}
	return out
}
