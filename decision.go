package accountable

import "fmt"

// Decisions are the questions the service puts to people: a budget approval for a launch
// job that would pass its ceiling, a route for a handoff, a proposal a controller admitted.
// They are decided once: pending, then approved or declined (or superseded or cancelled
// by what raised them).

// Ledger vocabulary of decisions.
const (
	AggregateDecision     = "decision"
	EventDecisionProposed = "decision.proposed"
	EventDecisionApproved = "decision.approved"
	EventDecisionDeclined = "decision.declined"
)

// DecisionStatus is where a decision is.
type DecisionStatus string

// Decision statuses.
const (
	DecisionPending    DecisionStatus = "pending"
	DecisionApproved   DecisionStatus = "approved"
	DecisionDeclined   DecisionStatus = "declined"
	DecisionSuperseded DecisionStatus = "superseded"
	DecisionCancelled  DecisionStatus = "cancelled"
)

// Enum lists the statuses.
func (DecisionStatus) Enum() []any {
	return EnumStrings(DecisionPending, DecisionApproved, DecisionDeclined, DecisionSuperseded, DecisionCancelled)
}

// DecisionShape is what kind of question a decision is.
type DecisionShape string

// Decision shapes.
const (
	ShapeGeneric        DecisionShape = "generic"
	ShapeBudgetApproval DecisionShape = "budget_approval"
	ShapeHandoffRoute   DecisionShape = "handoff_route"
	ShapePlanAdjust     DecisionShape = "plan_adjust"
	ShapeTaskRestart    DecisionShape = "task_restart"
	ShapeEscalation     DecisionShape = "escalation"
	ShapeOptionSelect   DecisionShape = "option_select"
)

// Enum lists the shapes.
func (DecisionShape) Enum() []any {
	return EnumStrings(ShapeGeneric, ShapeBudgetApproval, ShapeHandoffRoute, ShapePlanAdjust, ShapeTaskRestart,
		ShapeEscalation, ShapeOptionSelect)
}

// DecisionUrgency says how soon a decision is needed.
type DecisionUrgency string

// Urgencies; standard is the default.
const (
	UrgencyDeferred DecisionUrgency = "deferred"
	UrgencyStandard DecisionUrgency = "standard"
	UrgencyUrgent   DecisionUrgency = "urgent"
	UrgencyCritical DecisionUrgency = "critical"
)

// Enum lists the urgencies.
func (DecisionUrgency) Enum() []any {
	return EnumStrings(UrgencyDeferred, UrgencyStandard, UrgencyUrgent, UrgencyCritical)
}

// DecisionOption is one answer an option_select decision offers.
type DecisionOption struct {
	ID          string  `json:"id" minLength:"1" maxLength:"100"`
	Label       string  `json:"label" minLength:"1" maxLength:"200"`
	Description *string `json:"description,omitzero" maxLength:"2000"`
}

// Decision is a decision record.
type Decision struct {
	ID               string           `json:"id" format:"uuid"`
	Title            string           `json:"title"`
	Summary          *string          `json:"summary"`
	Shape            DecisionShape    `json:"shape"`
	Urgency          DecisionUrgency  `json:"urgency"`
	Status           DecisionStatus   `json:"status"`
	Options          []DecisionOption `json:"options"`
	SelectedOption   *string          `json:"selected_option"`
	InitiativeID     *string          `json:"initiative_id" format:"uuid"`
	LaunchID         *string          `json:"launch_id" format:"uuid"`
	JobID            *string          `json:"job_id" format:"uuid"`
	Context          Object           `json:"context"`
	DueAt            *Time            `json:"due_at"`
	RequestedBy      Actor            `json:"requested_by"`
	DecidedBy        *Actor           `json:"decided_by"`
	DecidedAt        *Time            `json:"decided_at"`
	Note             *string          `json:"note"`
	CreatedAt        Time             `json:"created_at"`
	UpdatedAt        Time             `json:"updated_at"`
	AggregateVersion int64            `json:"aggregate_version" minimum:"1"`
}

// DecisionEnvelope is how the Decisions area answers one decision: {decision}.
type DecisionEnvelope struct {
	Decision Decision `json:"decision"`
	Encoded  `json:"-"`
}

// CreateDecision is the command that asks for a decision (POST /decisions).
type CreateDecision struct {
	Title        string           `json:"title" minLength:"1" maxLength:"200"`
	Summary      *string          `json:"summary,omitzero" maxLength:"4000"`
	Shape        *DecisionShape   `json:"shape,omitzero"`
	Urgency      *DecisionUrgency `json:"urgency,omitzero"`
	Options      []DecisionOption `json:"options,omitzero" maxItems:"10"`
	InitiativeID *string          `json:"initiative_id,omitzero" format:"uuid"`
	Context      Object           `json:"context,omitzero"`
	DueAt        *Time            `json:"due_at,omitzero"`
	Causation
}

// Validate checks the bounds; an option_select decision offers at least two options with
// distinct ids, and only it offers options.
func (c CreateDecision) Validate() error {
	is := CheckFields(c)
	shape := ShapeGeneric
	if c.Shape != nil {
		shape = *c.Shape
	}
	if shape == ShapeOptionSelect && len(c.Options) < 2 {
		is.Add("/options", "an option_select decision offers at least two options")
	}
	if shape != ShapeOptionSelect && len(c.Options) > 0 {
		is.Add("/options", "only an option_select decision offers options")
	}
	seen := map[string]bool{}
	for i, o := range c.Options {
		if seen[o.ID] {
			is.Add(fmt.Sprintf("/options/%d/id", i), "repeats another option's id")
		}
		seen[o.ID] = true
	}
	return is.Err()
}

// DecideDecision is the command that approves or declines a pending decision
// (POST /decisions/{id}/approve or /decline).
type DecideDecision struct {
	DecisionID               string  `json:"-"`
	Note                     *string `json:"note,omitzero" maxLength:"4000"`
	OptionID                 *string `json:"option_id,omitzero" minLength:"1" maxLength:"100"`
	ExpectedAggregateVersion *int64  `json:"expected_aggregate_version,omitzero" minimum:"1"`
	Causation
}

// Validate checks the bounds.
func (c DecideDecision) Validate() error { return CheckFields(c).Err() }

// DecisionFilter selects decisions of a list.
type DecisionFilter struct {
	Limit        int
	After        *WorkCursor
	Status       *DecisionStatus
	InitiativeID *string
}
