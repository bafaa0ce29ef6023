package accountable

import (
	"fmt"
)

// Episodes are observed executions of an operating process: one case passing through its
// stages, with its outcome and evidence. Discovery mines them like any other trace, and
// the operating map counts them.

// Ledger vocabulary of episodes.
const (
	AggregateEpisode     = "episode"
	EventEpisodeRecorded = "episode.recorded"
)

// EpisodeOutcome is how an episode ended (or that it has not).
type EpisodeOutcome string

// Episode outcomes.
const (
	EpisodeInProgress EpisodeOutcome = "in_progress"
	EpisodeSucceeded  EpisodeOutcome = "succeeded"
	EpisodeFailed     EpisodeOutcome = "failed"
	EpisodeAbandoned  EpisodeOutcome = "abandoned"
)

// Enum lists the outcomes.
func (EpisodeOutcome) Enum() []any {
	return EnumStrings(EpisodeInProgress, EpisodeSucceeded, EpisodeFailed, EpisodeAbandoned)
}

// EpisodeStage is a stage an episode passed through, and when.
type EpisodeStage struct {
	Key string `json:"key" minLength:"1" maxLength:"200"`
	At  *Time  `json:"at,omitzero"`
}

// Episode is one observed execution of a process.
type Episode struct {
	SchemaVersion    string         `json:"schemaVersion" const:"1.0.0"`
	ID               string         `json:"id" format:"uuid"`
	WorkspaceID      string         `json:"workspaceId" format:"uuid"`
	ProcessRef       ProcessRef     `json:"processRef"`
	CaseID           string         `json:"caseId"`
	StartedAt        Time           `json:"startedAt"`
	EndedAt          *Time          `json:"endedAt"`
	Outcome          EpisodeOutcome `json:"outcome"`
	Stages           []EpisodeStage `json:"stages"`
	Summary          string         `json:"summary"`
	Evidence         Object         `json:"evidence"`
	RecordedBy       Actor          `json:"recordedBy"`
	CreatedAt        Time           `json:"createdAt"`
	AggregateVersion int64          `json:"aggregateVersion" minimum:"1"`
	Encoded          `json:"-"`
}

// RecordEpisode is the command that records an episode (POST /episodes).
type RecordEpisode struct {
	ProcessID string          `json:"process_id" format:"uuid"`
	CaseID    *string         `json:"case_id,omitzero" minLength:"1" maxLength:"200"`
	StartedAt Time            `json:"started_at"`
	EndedAt   *Time           `json:"ended_at,omitzero"`
	Outcome   *EpisodeOutcome `json:"outcome,omitzero"`
	Stages    []EpisodeStage  `json:"stages,omitzero" maxItems:"100"`
	Summary   *string         `json:"summary,omitzero" maxLength:"4000"`
	Evidence  Object          `json:"evidence,omitzero"`
	Causation
}

// Validate checks the command's rules: the bounds, an end not before the start, an outcome
// other than in_progress only with an end, and stage times within the episode and in order.
func (c RecordEpisode) Validate() error {
	is := CheckFields(c)
	if c.EndedAt != nil && c.EndedAt.Before(c.StartedAt.Time) {
		is.Add("/ended_at", "is not before started_at")
	}
	if c.Outcome != nil && *c.Outcome != EpisodeInProgress && c.EndedAt == nil {
		is.Add("/outcome", "%s needs ended_at", *c.Outcome)
	}
	if c.Outcome != nil && *c.Outcome == EpisodeInProgress && c.EndedAt != nil {
		is.Add("/outcome", "is not in_progress once ended_at is given")
	}
	var last *Time
	for i, s := range c.Stages {
		if s.At == nil {
			continue
		}
		if s.At.Before(c.StartedAt.Time) || (c.EndedAt != nil && s.At.After(c.EndedAt.Time)) {
			is.Add(fmt.Sprintf("/stages/%d/at", i), "is within started_at and ended_at")
		}
		if last != nil && s.At.Before(last.Time) {
			is.Add(fmt.Sprintf("/stages/%d/at", i), "is not before the stage before it")
		}
		last = s.At
	}
	return is.Err()
}

// OutcomeOr returns the episode's outcome: as given, else succeeded once ended, else
// in_progress.
func (c RecordEpisode) OutcomeOr() EpisodeOutcome {
	switch {
	case c.Outcome != nil:
		return *c.Outcome
	case c.EndedAt != nil:
		return EpisodeSucceeded
	}
	return EpisodeInProgress
}

// EpisodeFilter selects episodes of a workspace (newest first, keyset pages).
type EpisodeFilter struct {
	Limit     int
	After     *WorkCursor
	ProcessID *string
}

// OperatingMap is GET /operating-map: the workspace's processes, who they serve, their
// domains, and the handoff edges between stages, derived from the ledger's projections.
type OperatingMap struct {
	Processes       []MapProcess  `json:"processes"`
	ValueRecipients []MapRef      `json:"valueRecipients"`
	Domains         []MapRef      `json:"domains"`
	HandoffEdges    []HandoffEdge `json:"handoffEdges"`
	Limitations     []string      `json:"limitations"`
}

// MapProcess is a process on the map, with the stages of its current revision.
type MapProcess struct {
	ID             string           `json:"id" format:"uuid"`
	Name           string           `json:"name"`
	LifecycleState ProcessState     `json:"lifecycleState"`
	ProvenanceMode ProvenanceMode   `json:"provenanceMode"`
	DomainRef      *ProcessRef      `json:"domainRef"`
	Stages         []CandidateStage `json:"stages"`
	Episodes       int              `json:"episodes"`
}

// MapRef is a value recipient or domain and the processes that name it.
type MapRef struct {
	ID         string   `json:"id"`
	ProcessIDs []string `json:"processIds"`
}

// HandoffEdgesByStageKeys is the map's limitation the edges carry (OperatingMap.Limitations).
const HandoffEdgesByStageKeys = "Handoff edges count handoffs by their stage keys, whichever process they belong to."

// HandoffEdge is a pair of stages handoffs went between, with how many, how many are open,
// how many breached their SLA, how many were fulfilled and the median time from a
// handoff's creation to its fulfilment (in whole seconds; null until one is fulfilled).
type HandoffEdge struct {
	FromStageKey            string `json:"fromStageKey"`
	ToStageKey              string `json:"toStageKey"`
	Handoffs                int    `json:"handoffs"`
	Open                    int    `json:"open"`
	Breached                int    `json:"breached"`
	Fulfilled               int    `json:"fulfilled"`
	MedianFulfilmentSeconds *int64 `json:"medianFulfilmentSeconds" minimum:"0"`
}
