package accountable

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Handoffs pass work from one stage of a process to the next: proposed by the stage that
// hands over, claimed by whoever takes it, fulfilled with proof (or returned, escalated,
// cancelled). A handoff with an SLA has a durable timer (the HandoffSLA workflow) that
// escalates it when it comes due unfulfilled.

// Ledger vocabulary of handoffs.
const (
	AggregateHandoff         = "handoff"
	EventHandoffProposed     = "handoff.proposed"
	EventHandoffClaimed      = "handoff.claimed"
	EventHandoffFulfilled    = "handoff.fulfilled"
	EventHandoffReturned     = "handoff.returned"
	EventHandoffEscalated    = "handoff.escalated"
	EventHandoffCancelled    = "handoff.cancelled"
	EventHandoffSLABreached  = "handoff.sla_breached"
	DefaultHandoffPriority   = HandoffNormal
	maxHandoffProofs         = 100
	handoffResultProofsField = "proofs"
)

// HandoffStatus is where a handoff is.
type HandoffStatus string

// Handoff statuses (CONTRACT.md).
const (
	HandoffProposed  HandoffStatus = "proposed"
	HandoffClaimed   HandoffStatus = "claimed"
	HandoffFulfilled HandoffStatus = "fulfilled"
	HandoffReturned  HandoffStatus = "returned"
	HandoffEscalated HandoffStatus = "escalated"
	HandoffCancelled HandoffStatus = "cancelled"
)

// Enum lists the statuses.
func (HandoffStatus) Enum() []any {
	return EnumStrings(HandoffProposed, HandoffClaimed, HandoffFulfilled, HandoffReturned, HandoffEscalated, HandoffCancelled)
}

// Final reports whether nothing more happens to a handoff in this status.
func (s HandoffStatus) Final() bool { return s == HandoffFulfilled || s == HandoffCancelled }

// HandoffPriority says how urgent a handoff is.
type HandoffPriority string

// Handoff priorities; normal is the default.
const (
	HandoffLow    HandoffPriority = "low"
	HandoffNormal HandoffPriority = "normal"
	HandoffHigh   HandoffPriority = "high"
	HandoffUrgent HandoffPriority = "urgent"
)

// Enum lists the priorities.
func (HandoffPriority) Enum() []any {
	return EnumStrings(HandoffLow, HandoffNormal, HandoffHigh, HandoffUrgent)
}

// ProofKind is a kind of proof a handoff's fulfilment carries.
type ProofKind string

// Proof kinds (CONTRACT.md).
const (
	ProofArtifact   ProofKind = "artifact"
	ProofLink       ProofKind = "link"
	ProofReceipt    ProofKind = "receipt"
	ProofTestResult ProofKind = "test_result"
	ProofApproval   ProofKind = "approval"
	ProofNote       ProofKind = "note"
)

// Enum lists the proof kinds.
func (ProofKind) Enum() []any {
	return EnumStrings(ProofArtifact, ProofLink, ProofReceipt, ProofTestResult, ProofApproval, ProofNote)
}

// ProofRequirement is a kind of proof a handoff asks for, required or not.
type ProofRequirement struct {
	Kind     ProofKind `json:"kind"`
	Required bool      `json:"required"`
}

// HandoffAction is a transition of a handoff.
type HandoffAction string

// Handoff transitions, each a POST /handoffs/{id}/{action}.
const (
	HandoffClaim    HandoffAction = "claim"
	HandoffFulfill  HandoffAction = "fulfill"
	HandoffReturn   HandoffAction = "return"
	HandoffEscalate HandoffAction = "escalate"
	HandoffCancel   HandoffAction = "cancel"
)

type handoffTransition struct {
	from  []HandoffStatus
	to    HandoffStatus
	event string
}

var handoffTransitions = map[HandoffAction]handoffTransition{
	HandoffClaim:    {[]HandoffStatus{HandoffProposed, HandoffReturned, HandoffEscalated}, HandoffClaimed, EventHandoffClaimed},
	HandoffFulfill:  {[]HandoffStatus{HandoffClaimed}, HandoffFulfilled, EventHandoffFulfilled},
	HandoffReturn:   {[]HandoffStatus{HandoffClaimed}, HandoffReturned, EventHandoffReturned},
	HandoffEscalate: {[]HandoffStatus{HandoffProposed, HandoffClaimed, HandoffReturned}, HandoffEscalated, EventHandoffEscalated},
	HandoffCancel:   {[]HandoffStatus{HandoffProposed, HandoffClaimed, HandoffReturned, HandoffEscalated}, HandoffCancelled, EventHandoffCancelled},
}

// HandoffActions lists the transitions.
var HandoffActions = []HandoffAction{HandoffClaim, HandoffFulfill, HandoffReturn, HandoffEscalate, HandoffCancel}

// Event is the ledger event type of the action.
func (a HandoffAction) Event() string { return handoffTransitions[a].event }

// From lists the statuses the action leaves.
func (a HandoffAction) From() []HandoffStatus { return handoffTransitions[a].from }

// Apply returns the status the action moves from to, or 409 invalid_state_transition.
func (a HandoffAction) Apply(from HandoffStatus) (HandoffStatus, error) {
	t, ok := handoffTransitions[a]
	if !ok {
		return from, Errorf(ECodeInvalidStateTransition, "%q is not a transition of a handoff.", a)
	}
	if !slices.Contains(t.from, from) {
		return from, Errorf(ECodeInvalidStateTransition, "A %s handoff cannot be %s (only one that is %v).", from, pastTense(a), t.from)
	}
	return t.to, nil
}

func pastTense(a HandoffAction) string {
	return map[HandoffAction]string{HandoffClaim: "claimed", HandoffFulfill: "fulfilled", HandoffReturn: "returned",
		HandoffEscalate: "escalated", HandoffCancel: "cancelled"}[a]
}

// Handoff is the specification's Handoff, with its aggregateVersion (CONTRACT.md). The
// SLA and source members are left out when the handoff has none.
type Handoff struct {
	SchemaVersion     string             `json:"schemaVersion" const:"1.0.0"`
	ID                string             `json:"id" format:"uuid"`
	WorkspaceID       string             `json:"workspaceId" format:"uuid"`
	HandoffKey        string             `json:"handoffKey"`
	FromStageKey      string             `json:"fromStageKey"`
	ToStageKey        string             `json:"toStageKey"`
	SourceProcessRef  *string            `json:"sourceProcessRef,omitzero" format:"uuid"`
	SourceRevisionRef *string            `json:"sourceRevisionRef,omitzero" format:"uuid"`
	Title             string             `json:"title"`
	Summary           string             `json:"summary"`
	Priority          HandoffPriority    `json:"priority"`
	SLAMinutes        *int64             `json:"slaMinutes,omitzero" minimum:"1"`
	DueAt             *Time              `json:"dueAt,omitzero"`
	CurrentActor      Actor              `json:"currentActor"`
	ProofRequirements []ProofRequirement `json:"proofRequirements"`
	Result            Object             `json:"result"`
	Status            HandoffStatus      `json:"status"`
	AggregateVersion  int64              `json:"aggregateVersion" minimum:"1"`
	CreatedAt         Time               `json:"createdAt"`
	UpdatedAt         Time               `json:"updatedAt"`
	Encoded           `json:"-"`
}

// HasSLA reports whether the handoff comes due (and so has a HandoffSLA timer).
func (h Handoff) HasSLA() bool { return h.DueAt != nil }

// CreateHandoff is the command that proposes a handoff (POST /handoffs).
type CreateHandoff struct {
	HandoffKey        string             `json:"handoff_key" minLength:"1" maxLength:"200"`
	FromStageKey      string             `json:"from_stage_key" minLength:"1" maxLength:"200"`
	ToStageKey        string             `json:"to_stage_key" minLength:"1" maxLength:"200"`
	Title             string             `json:"title" minLength:"1" maxLength:"500"`
	Summary           *string            `json:"summary,omitzero" maxLength:"4000"`
	Priority          *HandoffPriority   `json:"priority,omitzero"`
	SLAMinutes        *int64             `json:"sla_minutes,omitzero" minimum:"1" maximum:"525600"`
	DueAt             *Time              `json:"due_at,omitzero"`
	ProofRequirements []ProofRequirement `json:"proof_requirements,omitzero" maxItems:"20"`
	SourceProcessRef  *string            `json:"source_process_ref,omitzero" format:"uuid"`
	SourceRevisionRef *string            `json:"source_revision_ref,omitzero" format:"uuid"`
	Causation
}

// Validate checks the command's rules: the bounds, proof kinds required at most once,
// and a revision given only with its process.
func (c CreateHandoff) Validate() error {
	is := CheckFields(c)
	seen := map[ProofKind]bool{}
	for i, r := range c.ProofRequirements {
		if seen[r.Kind] {
			is.Add(fmt.Sprintf("/proof_requirements/%d/kind", i), "each proof kind is listed once")
		}
		seen[r.Kind] = true
	}
	if c.SourceRevisionRef != nil && c.SourceProcessRef == nil {
		is.Add("/source_revision_ref", "is given with source_process_ref")
	}
	return is.Err()
}

// Schedule returns the handoff's due time and SLA in minutes from the command, created at
// now: due_at when given (the SLA then counts the whole minutes to it, at least 1), else
// now + sla_minutes; none when neither is given.
func (c CreateHandoff) Schedule(now time.Time) (*Time, *int64) {
	switch {
	case c.DueAt != nil:
		due := TimeOf(c.DueAt.Time)
		sla := c.SLAMinutes
		if sla == nil {
			m := max(int64(due.Sub(now)/time.Minute), 1)
			sla = &m
		}
		return &due, sla
	case c.SLAMinutes != nil:
		due := TimeOf(now.Add(time.Duration(*c.SLAMinutes) * time.Minute))
		return &due, c.SLAMinutes
	}
	return nil, nil
}

// Proof is one proof a fulfilment carries: its kind and whatever identifies it.
type Proof struct {
	Kind ProofKind `json:"kind"`
	Ref  *string   `json:"ref,omitzero" maxLength:"2000"`
	URL  *string   `json:"url,omitzero" maxLength:"2000"`
	Note *string   `json:"note,omitzero" maxLength:"4000"`
}

// ActOnHandoff is the command of a handoff transition (POST /handoffs/{id}/{action}). Every
// field is optional: fulfil accepts an empty object (the specification). A fulfilment's
// result is kept as given, with the proofs (of result.proofs and of proofs) under
// result.proofs.
type ActOnHandoff struct {
	HandoffID                string        `json:"-"`
	Action                   HandoffAction `json:"-"`
	ExpectedAggregateVersion *int64        `json:"expected_aggregate_version,omitzero" minimum:"1"`
	Reason                   *string       `json:"reason,omitzero" maxLength:"4000"`
	Result                   Object        `json:"result,omitzero"`
	Proofs                   []Proof       `json:"proofs,omitzero" maxItems:"100"`
	Causation
}

// Validate checks the command's fields and the proofs its result carries.
func (c ActOnHandoff) Validate() error {
	is := CheckFields(c)
	if _, err := c.AllProofs(); err != nil {
		is.Add("/result/proofs", "%s", err.Error())
	}
	return is.Err()
}

// AllProofs returns the proofs of result.proofs and of proofs, in that order.
func (c ActOnHandoff) AllProofs() ([]Proof, error) {
	var out []Proof
	if len(c.Result) > 0 {
		var r struct {
			Proofs json.RawMessage `json:"proofs"`
		}
		if err := json.Unmarshal(c.Result, &r); err != nil {
			return nil, err
		}
		if len(r.Proofs) > 0 && string(r.Proofs) != "null" {
			if err := json.Unmarshal(r.Proofs, &out); err != nil {
				return nil, fmt.Errorf("must be an array of proofs ({kind, ref, url, note})")
			}
		}
	}
	out = append(out, c.Proofs...)
	if len(out) > maxHandoffProofs {
		return nil, fmt.Errorf("at most %d proofs", maxHandoffProofs)
	}
	for i, p := range out {
		if !slices.Contains(ProofKind("").Enum(), any(string(p.Kind))) {
			return nil, fmt.Errorf("proof %d: kind must be one of %v", i, ProofKind("").Enum())
		}
	}
	return out, nil
}

// FulfilmentResult is the result a fulfilment records: the given result object with every
// proof under proofs (not in canonical form: the store records its canonical form).
func (c ActOnHandoff) FulfilmentResult() (Object, error) {
	proofs, err := c.AllProofs()
	if err != nil {
		return nil, err
	}
	m := map[string]json.RawMessage{}
	if len(c.Result) > 0 {
		if err := json.Unmarshal(c.Result, &m); err != nil {
			return nil, err
		}
	}
	if proofs == nil {
		proofs = []Proof{}
	}
	raw, err := json.Marshal(proofs)
	if err != nil {
		return nil, err
	}
	m[handoffResultProofsField] = raw
	return json.Marshal(m)
}

// MissingProofs returns the required proof kinds the proofs do not include.
func MissingProofs(req []ProofRequirement, proofs []Proof) []ProofKind {
	var missing []ProofKind
	for _, r := range req {
		if r.Required && !slices.ContainsFunc(proofs, func(p Proof) bool { return p.Kind == r.Kind }) {
			missing = append(missing, r.Kind)
		}
	}
	return missing
}

// HandoffFilter selects handoffs of a workspace (newest first, keyset pages).
type HandoffFilter struct {
	Limit  int
	After  *WorkCursor
	Status *HandoffStatus
}
