package accountable

import "time"

// The vocabulary of cases: why a case's events were grouped into it (GroupingRule,
// CaseBasis, CaseGrouping), and what discovery reads of completed work to group it
// (WorkFacts, CompletedWork). Package discovery applies the rules.

// GroupingRule names why the events of a case were grouped into it.
type GroupingRule string

// Grouping rules, in precedence order (a case is explained by its strongest rule). The
// first five are explicit in the ledger or the request; the others are inferred from
// ordinary work.
const (
	GroupCaseMetadata       GroupingRule = "case_metadata"       // a work item's metadata.case_id
	GroupHandoffKey         GroupingRule = "handoff_key"         // handoffs of one handoff_key (and work whose metadata names it)
	GroupEpisode            GroupingRule = "episode"             // a recorded episode
	GroupReceiptRequest     GroupingRule = "receipt_request"     // imported receipts of one request, run or trace
	GroupObservation        GroupingRule = "observation"         // supplied observations of one case_id
	GroupCorrelationID      GroupingRule = "correlation_id"      // work whose commands share a correlation_id
	GroupCausationID        GroupingRule = "causation_id"        // work caused by another's commands (causation_id)
	GroupMetadataIdentifier GroupingRule = "metadata_identifier" // work sharing an identifier in its metadata (post_id: 12)
	GroupTitleIdentifier    GroupingRule = "title_identifier"    // work sharing an identifier in its title (#12, ABC-123, "Name")
	GroupMilestone          GroupingRule = "milestone"           // work of one milestone
	GroupWorkstream         GroupingRule = "workstream"          // work of one workstream
	GroupInitiative         GroupingRule = "initiative"          // work of one initiative
)

// GroupingRules lists the rules in precedence order.
var GroupingRules = []GroupingRule{GroupCaseMetadata, GroupHandoffKey, GroupEpisode, GroupReceiptRequest, GroupObservation,
	GroupCorrelationID, GroupCausationID, GroupMetadataIdentifier, GroupTitleIdentifier, GroupMilestone, GroupWorkstream, GroupInitiative}

// Enum lists the grouping rules.
func (GroupingRule) Enum() []any { return EnumStrings(GroupingRules...) }

// CaseBasis is why an event belongs to its case: the rule, and the case as the evidence
// shows it (the identifier, key, correlation id or name).
type CaseBasis struct {
	Rule  GroupingRule
	Label string
}

// CaseGrouping says why a candidate's cases were grouped: the rule, how many of the
// candidate's cases it grouped (each case counts under its strongest rule), and briefly
// the evidence ("shared identifier in titles: post #12, post #13, post #14").
type CaseGrouping struct {
	Rule     GroupingRule `json:"rule"`
	Cases    int          `json:"cases" minimum:"1"`
	Evidence string       `json:"evidence"`
}

// WorkFacts is what discovery reads of a completed work item besides its completion
// event: its title, the metadata that names its case or stage, the top-level scalar
// members of its metadata, where it belongs (with names), and the ids of the command that
// created it.
type WorkFacts struct {
	Title     string
	CaseID    string // metadata.case_id (a string), explicit
	Stage     string // metadata.process_stage (a string), explicit
	StageName string // metadata.process_stage_name
	// Metadata holds the top-level members of the metadata that are strings or numbers
	// (numbers as written).
	Metadata                     map[string]string
	InitiativeID, InitiativeName string
	WorkstreamID, WorkstreamName string
	MilestoneID, MilestoneName   string
	CreatedEventID               string // the work item's first event (work.created)
	CreatedCommandID             string
	CreatedCausationID           string
	CreatedCorrelationID         string
}

// Explicit reports whether the metadata names both the case and the stage: such a work
// item is mined as it says and never grouped by inference.
func (f WorkFacts) Explicit() bool { return f.CaseID != "" && f.Stage != "" }

// CompletedWork is a completed work item as inference sees it: its completion event (when,
// where in the stream, the ids of the completing command) and its facts.
type CompletedWork struct {
	TaskID        string
	EventID       string
	At            time.Time
	Seq           int64
	CommandID     string
	CausationID   string
	CorrelationID string
	WorkFacts
}
