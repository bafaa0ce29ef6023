package accountable

import "time"

// The vocabulary of discovery runs: what a run is asked, what it reads and what it finds.
// The mining itself (the technique DiscoveryTechnique names) is package discovery's.

// Ledger vocabulary of discovery runs.
const (
	AggregateDiscoveryRun      = "discovery_run"
	EventDiscoveryRunRequested = "discovery_run.requested"
	EventDiscoveryRunCompleted = "discovery_run.completed"
	EventDiscoveryRunFailed    = "discovery_run.failed"
)

// Discovery bounds.
const (
	MaxStagesPerTrace    = 100 // longer traces are cut (and a receipt holds at most as many steps)
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
