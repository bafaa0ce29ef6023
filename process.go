package accountable

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Operating processes are how the organisation actually works, written down: a process
// with a name, a purpose and a lifecycle, and revisions of its specification (the stages
// work passes through, the handoffs between them, and what completes it). A process is
// declared by people, or discovered from the ledger and proposed for review; either way
// it is confirmed, shadowed and activated by people, one transition at a time.

// Ledger vocabulary of operating processes.
const (
	AggregateProcess        = "operating_process"
	EventProcessDeclared    = "operating_process.declared"
	EventProcessDiscovered  = "operating_process.discovered"
	EventProcessRevised     = "operating_process.revised"
	EventProcessTransitions = "operating_process." // + the transition's past tense (ProcessAction.Event)
)

// ProcessState is an operating process's lifecycle state.
type ProcessState string

// The specification's eight lifecycle states.
const (
	ProcessDiscovered ProcessState = "discovered"
	ProcessProposed   ProcessState = "proposed"
	ProcessConfirmed  ProcessState = "confirmed"
	ProcessShadowing  ProcessState = "shadowing"
	ProcessActive     ProcessState = "active"
	ProcessChanging   ProcessState = "changing"
	ProcessDeprecated ProcessState = "deprecated"
	ProcessRetired    ProcessState = "retired"
)

// Enum lists the states.
func (ProcessState) Enum() []any {
	return EnumStrings(ProcessDiscovered, ProcessProposed, ProcessConfirmed, ProcessShadowing, ProcessActive, ProcessChanging,
		ProcessDeprecated, ProcessRetired)
}

// ProvenanceMode says where a process came from.
type ProvenanceMode string

// Provenance modes: declared by people, observed in the ledger (discovery), reconciled.
const (
	ProvenanceDeclared   ProvenanceMode = "declared"
	ProvenanceObserved   ProvenanceMode = "observed"
	ProvenanceReconciled ProvenanceMode = "reconciled"
)

// Enum lists the provenance modes.
func (ProvenanceMode) Enum() []any {
	return EnumStrings(ProvenanceDeclared, ProvenanceObserved, ProvenanceReconciled)
}

// ProcessAction is a lifecycle transition of an operating process.
type ProcessAction string

// The transitions (CONTRACT.md), each a POST /operating-processes/{id}/{action}.
const (
	ProcessPropose   ProcessAction = "propose"
	ProcessConfirm   ProcessAction = "confirm"
	ProcessShadow    ProcessAction = "shadow"
	ProcessActivate  ProcessAction = "activate"
	ProcessChange    ProcessAction = "change"
	ProcessDeprecate ProcessAction = "deprecate"
	ProcessRetire    ProcessAction = "retire"
)

// ProcessActions lists the transitions in lifecycle order.
var ProcessActions = []ProcessAction{ProcessPropose, ProcessConfirm, ProcessShadow, ProcessActivate, ProcessChange,
	ProcessDeprecate, ProcessRetire}

type processTransition struct {
	from  []ProcessState
	to    ProcessState
	event string
}

var processTransitions = map[ProcessAction]processTransition{
	ProcessPropose:   {[]ProcessState{ProcessDiscovered}, ProcessProposed, "proposed"},
	ProcessConfirm:   {[]ProcessState{ProcessProposed, ProcessDiscovered}, ProcessConfirmed, "confirmed"},
	ProcessShadow:    {[]ProcessState{ProcessConfirmed}, ProcessShadowing, "shadowing_started"},
	ProcessActivate:  {[]ProcessState{ProcessConfirmed, ProcessShadowing, ProcessChanging}, ProcessActive, "activated"},
	ProcessChange:    {[]ProcessState{ProcessActive}, ProcessChanging, "change_started"},
	ProcessDeprecate: {[]ProcessState{ProcessActive, ProcessChanging}, ProcessDeprecated, "deprecated"},
	ProcessRetire:    {[]ProcessState{ProcessDeprecated}, ProcessRetired, "retired"},
}

// From lists the states the action leaves.
func (a ProcessAction) From() []ProcessState { return processTransitions[a].from }

// Event is the ledger event type of the action.
func (a ProcessAction) Event() string { return EventProcessTransitions + processTransitions[a].event }

// Apply returns the state the action moves from to, or 409 invalid_state_transition.
func (a ProcessAction) Apply(from ProcessState) (ProcessState, error) {
	t, ok := processTransitions[a]
	if !ok {
		return from, Errorf(ECodeInvalidStateTransition, "%q is not a transition of an operating process.", a)
	}
	if !slices.Contains(t.from, from) {
		return from, Errorf(ECodeInvalidStateTransition, "An operating process that is %s cannot %s (it can from %v).", from, a, t.from)
	}
	return t.to, nil
}

// ProcessRef is the specification's OperatingProcessRef: a reference to something in the
// workspace (a value recipient, a domain, a revision, a system, a policy).
type ProcessRef struct {
	ID          string `json:"id" minLength:"1" maxLength:"200"`
	WorkspaceID string `json:"workspaceId" format:"uuid"`
}

// RefInput is a reference as a request gives it: the id (any workspaceId it carries is
// ignored; references are always to the caller's workspace).
type RefInput struct {
	ID string `json:"id" minLength:"1" maxLength:"200"`
}

// Refs makes references in workspaceID of the given ones.
func Refs(workspaceID string, in []RefInput) []ProcessRef {
	out := make([]ProcessRef, 0, len(in))
	for _, r := range in {
		out = append(out, ProcessRef{ID: r.ID, WorkspaceID: workspaceID})
	}
	return out
}

// OperatingProcess is the specification's OperatingProcess (no extra properties).
type OperatingProcess struct {
	SchemaVersion                    string         `json:"schemaVersion" const:"1.0.0"`
	ID                               string         `json:"id" format:"uuid"`
	WorkspaceID                      string         `json:"workspaceId" format:"uuid"`
	Name                             string         `json:"name" minLength:"1"`
	Purpose                          string         `json:"purpose" minLength:"1"`
	ValueRecipientRefs               []ProcessRef   `json:"valueRecipientRefs"`
	DomainRef                        *ProcessRef    `json:"domainRef"`
	LifecycleState                   ProcessState   `json:"lifecycleState"`
	CurrentRevisionRef               *ProcessRef    `json:"currentRevisionRef"`
	AccountableResponsibilityLinkRef *ProcessRef    `json:"accountableResponsibilityLinkRef"`
	ProvenanceMode                   ProvenanceMode `json:"provenanceMode"`
	Confidence                       float64        `json:"confidence" minimum:"0" maximum:"1"`
	Tags                             []string       `json:"tags"`
	CreatedAt                        Time           `json:"createdAt"`
	UpdatedAt                        Time           `json:"updatedAt"`
}

// ProcessStage is one stage of a process: its key and name, and whatever else the author
// says of it (kept as given).
type ProcessStage struct {
	Key   string `json:"key" minLength:"1" maxLength:"200"`
	Name  string `json:"name" minLength:"1" maxLength:"500"`
	extra map[string]json.RawMessage
}

// OpenObject marks a type whose JSON object may carry members beyond its fields.
func (ProcessStage) OpenObject() {}

// MarshalJSON renders the stage with the members it was given.
func (s ProcessStage) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(s.extra)+2)
	for k, v := range s.extra {
		m[k] = v
	}
	m["key"], m["name"] = s.Key, s.Name
	return json.Marshal(m)
}

// UnmarshalJSON reads a stage object, keeping its other members.
func (s *ProcessStage) UnmarshalJSON(b []byte) error {
	if !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		return errors.New("a stage must be a JSON object")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*s = ProcessStage{}
	for _, f := range []struct {
		name string
		into *string
	}{{"key", &s.Key}, {"name", &s.Name}} {
		raw, ok := m[f.name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, f.into); err != nil {
			return fmt.Errorf("a stage's %s must be a string", f.name)
		}
		delete(m, f.name)
	}
	if len(m) > 0 {
		s.extra = m
	}
	return nil
}

// Others returns the stage's members beyond key and name, as given (nil without any). The
// map is the stage's own: the API and the store put its values in canonical form in place
// (see Object.UnmarshalJSON).
func (s ProcessStage) Others() map[string]json.RawMessage { return s.extra }

// OtherMemberError is the refusal of the stage's member name as free-form JSON (err:
// ErrFreeFormTooDeep, ErrFreeFormNotIJSON or an error wrapping one).
func OtherMemberError(name string, err error) error {
	return fmt.Errorf("a stage's %s %w", name, err)
}

// RevisionContent is what a revision of a process says (the specification's optional
// ProcessSpecRevision fields, and its stages). Its canonical JSON is the revision's
// contentDigest.
type RevisionContent struct {
	Stages                    []ProcessStage `json:"stages" minItems:"1" maxItems:"100"`
	RatifiedBy                []Object       `json:"ratifiedBy,omitzero" maxItems:"100"`
	EffectiveFrom             *Time          `json:"effectiveFrom,omitzero"`
	EffectiveTo               *Time          `json:"effectiveTo,omitzero"`
	TriggerSpec               Object         `json:"triggerSpec,omitzero"`
	IntendedTransformation    Object         `json:"intendedTransformation,omitzero"`
	Handoffs                  []Object       `json:"handoffs,omitzero" maxItems:"200"`
	CompletionContract        Object         `json:"completionContract,omitzero"`
	ExceptionContracts        []Object       `json:"exceptionContracts,omitzero" maxItems:"100"`
	SystemRefs                []ProcessRef   `json:"systemRefs,omitzero" maxItems:"100"`
	CapabilityRefs            []ProcessRef   `json:"capabilityRefs,omitzero" maxItems:"100"`
	SkillRefs                 []ProcessRef   `json:"skillRefs,omitzero" maxItems:"100"`
	PolicyRefs                []ProcessRef   `json:"policyRefs,omitzero" maxItems:"100"`
	AuthorizationRequirements []Object       `json:"authorizationRequirements,omitzero" maxItems:"100"`
	BudgetRef                 *ProcessRef    `json:"budgetRef,omitzero"`
	MeasurementPlan           Object         `json:"measurementPlan,omitzero"`
	AdoptionPlan              Object         `json:"adoptionPlan,omitzero"`
	MigrationState            Object         `json:"migrationState,omitzero"`
	Provenance                Object         `json:"provenance,omitzero"`
	Limitations               []string       `json:"limitations,omitzero" maxItems:"100"`
}

// ProcessSpecRevision is the specification's ProcessSpecRevision (no extra properties).
type ProcessSpecRevision struct {
	SchemaVersion  string `json:"schemaVersion" const:"1.0.0"`
	ID             string `json:"id" format:"uuid"`
	ProcessID      string `json:"processId" format:"uuid"`
	WorkspaceID    string `json:"workspaceId" format:"uuid"`
	RevisionNumber int64  `json:"revisionNumber" minimum:"1"`
	ContentDigest  string `json:"contentDigest" pattern:"^sha256:[a-f0-9]{64}$"`
	AuthoredBy     Actor  `json:"authoredBy"`
	RevisionContent
}

// RevisionInput is a revision's content as a request gives it (snake_case members, and
// references by id alone); Content makes the RevisionContent of it, and a test holds the
// two to the same fields.
type RevisionInput struct {
	Stages                    []ProcessStage `json:"stages" minItems:"1" maxItems:"100"`
	RatifiedBy                []Object       `json:"ratified_by,omitzero" maxItems:"100"`
	EffectiveFrom             *Time          `json:"effective_from,omitzero"`
	EffectiveTo               *Time          `json:"effective_to,omitzero"`
	TriggerSpec               Object         `json:"trigger_spec,omitzero"`
	IntendedTransformation    Object         `json:"intended_transformation,omitzero"`
	Handoffs                  []Object       `json:"handoffs,omitzero" maxItems:"200"`
	CompletionContract        Object         `json:"completion_contract,omitzero"`
	ExceptionContracts        []Object       `json:"exception_contracts,omitzero" maxItems:"100"`
	SystemRefs                []RefInput     `json:"system_refs,omitzero" maxItems:"100"`
	CapabilityRefs            []RefInput     `json:"capability_refs,omitzero" maxItems:"100"`
	SkillRefs                 []RefInput     `json:"skill_refs,omitzero" maxItems:"100"`
	PolicyRefs                []RefInput     `json:"policy_refs,omitzero" maxItems:"100"`
	AuthorizationRequirements []Object       `json:"authorization_requirements,omitzero" maxItems:"100"`
	BudgetRef                 *RefInput      `json:"budget_ref,omitzero"`
	MeasurementPlan           Object         `json:"measurement_plan,omitzero"`
	AdoptionPlan              Object         `json:"adoption_plan,omitzero"`
	MigrationState            Object         `json:"migration_state,omitzero"`
	Provenance                Object         `json:"provenance,omitzero"`
	Limitations               []string       `json:"limitations,omitzero" maxItems:"100"`
}

// Content is the revision content the input describes, its references in workspaceID.
func (in RevisionInput) Content(workspaceID string) RevisionContent {
	c := RevisionContent{
		Stages: in.Stages, RatifiedBy: in.RatifiedBy, EffectiveFrom: in.EffectiveFrom, EffectiveTo: in.EffectiveTo,
		TriggerSpec: in.TriggerSpec, IntendedTransformation: in.IntendedTransformation, Handoffs: in.Handoffs,
		CompletionContract: in.CompletionContract, ExceptionContracts: in.ExceptionContracts,
		AuthorizationRequirements: in.AuthorizationRequirements, MeasurementPlan: in.MeasurementPlan,
		AdoptionPlan: in.AdoptionPlan, MigrationState: in.MigrationState, Provenance: in.Provenance, Limitations: in.Limitations,
	}
	if in.SystemRefs != nil {
		c.SystemRefs = Refs(workspaceID, in.SystemRefs)
	}
	if in.CapabilityRefs != nil {
		c.CapabilityRefs = Refs(workspaceID, in.CapabilityRefs)
	}
	if in.SkillRefs != nil {
		c.SkillRefs = Refs(workspaceID, in.SkillRefs)
	}
	if in.PolicyRefs != nil {
		c.PolicyRefs = Refs(workspaceID, in.PolicyRefs)
	}
	if in.BudgetRef != nil {
		r := ProcessRef{ID: in.BudgetRef.ID, WorkspaceID: workspaceID}
		c.BudgetRef = &r
	}
	return c
}

// Validate checks a revision's rules: the field bounds, stage keys unique, and the
// effective period in order.
func (in RevisionInput) Validate() error {
	is := CheckFields(in)
	in.check(&is, "")
	return is.Err()
}

func (in RevisionInput) check(is *Issues, prefix string) {
	seen := map[string]bool{}
	for i, s := range in.Stages {
		if seen[s.Key] {
			is.Add(fmt.Sprintf("%s/stages/%d/key", prefix, i), "stage keys are unique within a revision")
		}
		seen[s.Key] = true
	}
	if in.EffectiveFrom != nil && in.EffectiveTo != nil && in.EffectiveTo.Before(in.EffectiveFrom.Time) {
		is.Add(prefix+"/effective_to", "is not before effective_from")
	}
	checkStrings(is, prefix+"/limitations", in.Limitations, 1000)
}

// DeclareProcess is the command that declares an operating process (POST
// /operating-processes): state proposed, provenance declared, and its first revision.
type DeclareProcess struct {
	Name               string     `json:"name" minLength:"1" maxLength:"200"`
	Purpose            string     `json:"purpose" minLength:"1" maxLength:"4000"`
	ValueRecipientRefs []RefInput `json:"value_recipient_refs,omitzero" maxItems:"50"`
	DomainRef          *RefInput  `json:"domain_ref,omitzero"`
	Confidence         *float64   `json:"confidence,omitzero" minimum:"0" maximum:"1"`
	Tags               []string   `json:"tags,omitzero" maxItems:"50"`
	RevisionInput
	Causation
}

// Validate checks the declaration's rules.
func (c DeclareProcess) Validate() error {
	is := CheckFields(c)
	c.RevisionInput.check(&is, "")
	checkStrings(&is, "/tags", c.Tags, 100)
	return is.Err()
}

// ReviseProcess is the command that adds a revision to a process (POST
// /operating-processes/{id}/revisions); the new revision becomes the current one.
type ReviseProcess struct {
	ProcessID                string `json:"-"`
	ExpectedAggregateVersion *int64 `json:"expected_aggregate_version,omitzero" minimum:"1"`
	RevisionInput
	Causation
}

// Validate checks the revision's rules.
func (c ReviseProcess) Validate() error {
	is := CheckFields(c)
	c.RevisionInput.check(&is, "")
	return is.Err()
}

// TransitionProcess is the command that moves a process through its lifecycle (POST
// /operating-processes/{id}/{action}).
type TransitionProcess struct {
	ProcessID                string        `json:"-"`
	Action                   ProcessAction `json:"-"`
	ExpectedAggregateVersion int64         `json:"expected_aggregate_version" minimum:"1"`
	Reason                   *string       `json:"reason,omitzero" maxLength:"4000"`
	Causation
}

// Validate checks the transition's fields.
func (c TransitionProcess) Validate() error { return CheckFields(c).Err() }

// ProcessLedgerResult is the specification's OperatingProcessLedgerResult: the event a
// command on a process appended.
type ProcessLedgerResult struct {
	EventID          string `json:"eventId" format:"uuid"`
	AggregateVersion int64  `json:"aggregateVersion" minimum:"1"`
	EventHash        string `json:"eventHash" pattern:"^sha256:[a-f0-9]{64}$"`
	Duplicate        bool   `json:"duplicate"`
	PayloadDigest    string `json:"payloadDigest" pattern:"^sha256:[a-f0-9]{64}$"`
}

// ProcessChanged is what a command on a process answers: the process, its current
// revision, its aggregate version and the event the command appended.
type ProcessChanged struct {
	Process          OperatingProcess    `json:"process"`
	Revision         ProcessSpecRevision `json:"revision"`
	AggregateVersion int64               `json:"aggregateVersion" minimum:"1"`
	Ledger           ProcessLedgerResult `json:"ledger"`
	Encoded          `json:"-"`
}

// ProcessDetail is GET /operating-processes/{id}: the process, every revision (oldest
// first) and its aggregate version.
type ProcessDetail struct {
	Process          OperatingProcess      `json:"process"`
	Revisions        []ProcessSpecRevision `json:"revisions"`
	AggregateVersion int64                 `json:"aggregateVersion" minimum:"1"`
}

// ProcessFilter selects processes of a workspace (newest first, keyset pages).
type ProcessFilter struct {
	Limit          int
	After          *WorkCursor
	LifecycleState *ProcessState
	ProvenanceMode *ProvenanceMode
}

// ProcessVersionConflict is the 409 of an expected_aggregate_version that is not current.
func ProcessVersionConflict(id string, current, expected int64) *Error {
	return Errorf(ECodeVersionConflict, "Operating process %s is at version %d, not %d.", id, current, expected).
		WithDetails(map[string]any{"current_aggregate_version": current})
}

// ProposeDiscoveredProcess is the command that turns a discovery run's candidate into a
// process for review (POST /discovery-runs/{runId}/propose; no extra properties).
type ProposeDiscoveredProcess struct {
	RunID              string `json:"-"`
	ProcessCandidateID string `json:"process_candidate_id" format:"uuid"`
}

// Validate checks the command's fields.
func (c ProposeDiscoveredProcess) Validate() error { return CheckFields(c).Err() }

// DiscoveredProcessProposal is the specification's answer to a discovery proposal.
type DiscoveredProcessProposal struct {
	Process            OperatingProcess    `json:"process"`
	Revision           ProcessSpecRevision `json:"revision"`
	DiscoveryRunID     string              `json:"discoveryRunId" format:"uuid"`
	ProcessCandidateID string              `json:"processCandidateId" format:"uuid"`
	Ledger             ProcessLedgerResult `json:"ledger"`
	Encoded            `json:"-"`
}
