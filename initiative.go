package accountable

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Initiatives are planned from proposals: POST /initiatives/proposals runs the planner over
// a title, a prompt and optional explicit workstreams and stores an immutable,
// digest-addressed proposal; POST /initiatives commits one into an initiative with its
// workstreams, milestones and tasks.

// Bounds of a proposal request (the specification's Limits) and of a plan.
const (
	MaxProposalTitle       = 200  // specification
	MaxProposalPrompt      = 4000 // specification
	MaxExplicitWorkstreams = 20   // specification
	ProposalLifetime       = 7 * 24 * time.Hour
	// DefaultMaxWorkstreams bounds a plan's workstreams when the request does not
	// (generation.max_workstreams); explicit workstreams always fit.
	DefaultMaxWorkstreams = 5
	maxListString         = 200
)

// Ledger vocabulary of proposals.
const (
	AggregateInitiativeProposal = "initiative_proposal"
	EventProposalGenerated      = "initiative_proposal.generated"
)

// Domain is the kind of work a workstream is (the controllers' domains).
type Domain string

// Domains.
const (
	DomainProduct     Domain = "product"
	DomainEngineering Domain = "engineering"
	DomainGrowth      Domain = "growth"
	DomainSales       Domain = "sales"
	DomainDesign      Domain = "design"
	DomainOperations  Domain = "operations"
)

// Domains lists every domain in a fixed order.
var Domains = []Domain{DomainProduct, DomainEngineering, DomainGrowth, DomainSales, DomainDesign, DomainOperations}

// Enum lists the domains.
func (Domain) Enum() []any { return EnumStrings(Domains...) }

// PlanDepth bounds how far a proposal expands: the initiative alone, its workstreams, or
// workstreams with milestones and tasks.
type PlanDepth string

// Plan depths.
const (
	DepthInitiative  PlanDepth = "initiative"
	DepthWorkstreams PlanDepth = "workstreams"
	DepthFull        PlanDepth = "full"
)

// Enum lists the depths.
func (PlanDepth) Enum() []any { return EnumStrings(DepthInitiative, DepthWorkstreams, DepthFull) }

// AgentAssignment says whether the planner assigns agents to workstreams.
type AgentAssignment string

// Agent assignment modes.
const (
	AgentAssignmentAuto AgentAssignment = "auto"
	AgentAssignmentNone AgentAssignment = "none"
)

// Enum lists the modes.
func (AgentAssignment) Enum() []any { return EnumStrings(AgentAssignmentAuto, AgentAssignmentNone) }

// ModelTier selects the model the planner uses (and, for launches, the agents' tier).
type ModelTier string

// Model tiers.
const (
	ModelTierStandard  ModelTier = "standard"
	ModelTierBalanced  ModelTier = "balanced"
	ModelTierPrecision ModelTier = "precision"
)

// Enum lists the tiers.
func (ModelTier) Enum() []any {
	return EnumStrings(ModelTierStandard, ModelTierBalanced, ModelTierPrecision)
}

// EvidenceVerification says how far the source evidence of a proposal was verified.
type EvidenceVerification string

// Evidence verification states.
const (
	EvidenceVerified   EvidenceVerification = "verified"
	EvidencePartial    EvidenceVerification = "partial"
	EvidenceUnverified EvidenceVerification = "unverified"
)

// Enum lists the states.
func (EvidenceVerification) Enum() []any {
	return EnumStrings(EvidenceVerified, EvidencePartial, EvidenceUnverified)
}

// AssignmentSource says who made a proposal's plan: a model, or the deterministic baseline.
type AssignmentSource string

// Assignment sources.
const (
	AssignmentModel    AssignmentSource = "model"
	AssignmentBaseline AssignmentSource = "baseline"
)

// Enum lists the sources.
func (AssignmentSource) Enum() []any { return EnumStrings(AssignmentModel, AssignmentBaseline) }

// ProposalStatus is where a proposal is in its life.
type ProposalStatus string

// Proposal statuses: proposed on creation, instantiated once committed, expired after
// ProposalLifetime.
const (
	ProposalProposed     ProposalStatus = "proposed"
	ProposalInstantiated ProposalStatus = "instantiated"
	ProposalExpired      ProposalStatus = "expired"
)

// Enum lists the statuses.
func (ProposalStatus) Enum() []any {
	return EnumStrings(ProposalProposed, ProposalInstantiated, ProposalExpired)
}

// ProposalContext is what the planner should know beyond the prompt.
type ProposalContext struct {
	Audience        *string  `json:"audience,omitzero" maxLength:"500"`
	Constraints     []string `json:"constraints,omitzero" maxItems:"20"`
	SuccessCriteria []string `json:"success_criteria,omitzero" maxItems:"20"`
	Links           []string `json:"links,omitzero" maxItems:"20"`
	Notes           *string  `json:"notes,omitzero" maxLength:"4000"`
}

// ExplicitWorkstream is a workstream the caller gives: kept as given; the planner only
// fills what it leaves out.
type ExplicitWorkstream struct {
	Name                  string         `json:"name" minLength:"1" maxLength:"200"`
	Goal                  *string        `json:"goal,omitzero" maxLength:"4000"`
	DomainHint            *string        `json:"domain_hint,omitzero" maxLength:"100"`
	AgentID               *string        `json:"agent_id,omitzero" minLength:"1" maxLength:"200"`
	DependsOn             []string       `json:"depends_on,omitzero" maxItems:"20"`
	Deliverables          []string       `json:"deliverables,omitzero" maxItems:"20"`
	ExpectedTokens        *int64         `json:"expected_tokens,omitzero" minimum:"0" maximum:"1000000000"`
	ExpectedDurationHours *float64       `json:"expected_duration_hours,omitzero" minimum:"0" maximum:"100000"`
	ExpectedBudgetUSD     *float64       `json:"expected_budget_usd,omitzero" minimum:"0" maximum:"10000000"`
	Milestones            []MilestoneRef `json:"milestones,omitzero" maxItems:"10"`
}

// MilestoneRef is a milestone a caller names for an explicit workstream: its title, and
// optionally its tasks' titles. A bare string is taken as the title.
type MilestoneRef struct {
	Title string   `json:"title" minLength:"1" maxLength:"200"`
	Tasks []string `json:"tasks,omitzero" maxItems:"10"`
}

// UnmarshalJSON takes a milestone as an object, or a bare string as its title.
func (m *MilestoneRef) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		*m = MilestoneRef{}
		return json.Unmarshal(b, &m.Title)
	}
	type object MilestoneRef
	return json.Unmarshal(b, (*object)(m))
}

// GenerationOptions tune the planner.
type GenerationOptions struct {
	ModelTier      *ModelTier `json:"model_tier,omitzero"`
	MaxWorkstreams *int64     `json:"max_workstreams,omitzero" minimum:"1" maximum:"20"`
}

// SourceEvidence is where the idea of the initiative came from.
type SourceEvidence struct {
	TargetURL         *string               `json:"target_url,omitzero" maxLength:"2000"`
	VerificationState *EvidenceVerification `json:"verification_state,omitzero"`
	EvidenceURLs      []string              `json:"evidence_urls,omitzero" maxItems:"20"`
	Notes             *string               `json:"notes,omitzero" maxLength:"4000"`
}

// ProposeInitiative is the command that generates a proposal (POST /initiatives/proposals).
type ProposeInitiative struct {
	Title           string               `json:"title" minLength:"1" maxLength:"200"`
	Summary         *string              `json:"summary,omitzero" maxLength:"4000"`
	Prompt          *string              `json:"prompt,omitzero" maxLength:"4000"`
	GoalIDs         []string             `json:"goal_ids,omitzero" maxItems:"20"`
	Context         *ProposalContext     `json:"context,omitzero"`
	Depth           *PlanDepth           `json:"depth,omitzero"`
	Workstreams     []ExplicitWorkstream `json:"workstreams,omitzero" maxItems:"20"`
	AgentAssignment *AgentAssignment     `json:"agent_assignment,omitzero"`
	Generation      *GenerationOptions   `json:"generation,omitzero"`
	SourceEvidence  *SourceEvidence      `json:"source_evidence,omitzero"`
	Causation
}

// Validate checks the bounds of every field, the strings inside lists, and that explicit
// workstreams have distinct names and depend only on each other.
func (c ProposeInitiative) Validate() error {
	is := CheckFields(c)
	checkStrings(&is, "/goal_ids", c.GoalIDs, maxListString)
	if c.Context != nil {
		checkStrings(&is, "/context/constraints", c.Context.Constraints, 500)
		checkStrings(&is, "/context/success_criteria", c.Context.SuccessCriteria, 500)
		checkStrings(&is, "/context/links", c.Context.Links, 2000)
	}
	if c.SourceEvidence != nil {
		checkStrings(&is, "/source_evidence/evidence_urls", c.SourceEvidence.EvidenceURLs, 2000)
	}
	names := map[string]int{}
	for i, w := range c.Workstreams {
		if j, dup := names[w.Name]; dup {
			is.Add(fmt.Sprintf("/workstreams/%d/name", i), "repeats the name of workstream %d", j)
		}
		names[w.Name] = i
	}
	for i, w := range c.Workstreams {
		p := fmt.Sprintf("/workstreams/%d", i)
		checkStrings(&is, p+"/depends_on", w.DependsOn, maxListString)
		checkStrings(&is, p+"/deliverables", w.Deliverables, 500)
		for k, d := range w.DependsOn {
			if _, ok := names[d]; !ok || d == w.Name {
				is.Add(fmt.Sprintf("%s/depends_on/%d", p, k), "must name another explicit workstream")
			}
		}
		for k, m := range w.Milestones {
			checkStrings(&is, fmt.Sprintf("%s/milestones/%d/tasks", p, k), m.Tasks, maxListString)
		}
	}
	return is.Err()
}

// checkStrings adds an issue for every empty string of list, or one longer than max.
func checkStrings(is *Issues, path string, list []string, max int) {
	for i, s := range list {
		if s == "" {
			is.Add(fmt.Sprintf("%s/%d", path, i), "must not be empty")
		} else if strings.IndexByte(s, 0) >= 0 {
			is.Add(fmt.Sprintf("%s/%d", path, i), "must not contain NUL characters")
		} else if n := len([]rune(s)); n > max {
			is.Add(fmt.Sprintf("%s/%d", path, i), "must be at most %d characters long", max)
		}
	}
}

// DepthOr returns the requested depth, full by default.
func (c ProposeInitiative) DepthOr() PlanDepth {
	if c.Depth != nil {
		return *c.Depth
	}
	return DepthFull
}

// AssignsAgents says whether the planner assigns agents (auto by default).
func (c ProposeInitiative) AssignsAgents() bool {
	return c.AgentAssignment == nil || *c.AgentAssignment == AgentAssignmentAuto
}

// Tier returns the requested model tier, standard by default.
func (c ProposeInitiative) Tier() ModelTier {
	if c.Generation != nil && c.Generation.ModelTier != nil {
		return *c.Generation.ModelTier
	}
	return ModelTierStandard
}

// MaxWorkstreams returns how many workstreams the plan may hold: the request's bound, or
// the default, and never fewer than the explicit workstreams.
func (c ProposeInitiative) MaxWorkstreams() int {
	n := DefaultMaxWorkstreams
	if c.Generation != nil && c.Generation.MaxWorkstreams != nil {
		n = int(*c.Generation.MaxWorkstreams)
	}
	return max(n, len(c.Workstreams))
}

// Plan is what the planner makes of a request: the initiative and its workstreams, with
// milestones and tasks at depth full.
type Plan struct {
	Initiative  PlannedInitiative   `json:"initiative"`
	Workstreams []PlannedWorkstream `json:"workstreams" maxItems:"20"`
}

// PlannedInitiative is the initiative a plan proposes.
type PlannedInitiative struct {
	Title   string   `json:"title" minLength:"1" maxLength:"200"`
	Summary string   `json:"summary" maxLength:"4000"`
	GoalIDs []string `json:"goal_ids" maxItems:"20"`
}

// PlannedWorkstream is one lane of the plan, with its agent assignment (agent_id and
// agent_name null when agents are not assigned) and its estimates.
type PlannedWorkstream struct {
	Name                  string             `json:"name" minLength:"1" maxLength:"200"`
	Goal                  string             `json:"goal" maxLength:"4000"`
	Domain                Domain             `json:"domain"`
	AgentID               *string            `json:"agent_id"`
	AgentName             *string            `json:"agent_name"`
	Confidence            float64            `json:"confidence" minimum:"0" maximum:"1"`
	Rationale             string             `json:"rationale" maxLength:"4000"`
	ExpectedTokens        int64              `json:"expected_tokens" minimum:"0" maximum:"1000000000"`
	ExpectedDurationHours float64            `json:"expected_duration_hours" minimum:"0" maximum:"100000"`
	ExpectedBudgetUSD     float64            `json:"expected_budget_usd" minimum:"0" maximum:"10000000"`
	DependsOn             []string           `json:"depends_on" maxItems:"20"`
	Deliverables          []string           `json:"deliverables" maxItems:"20"`
	Milestones            []PlannedMilestone `json:"milestones" maxItems:"10"`
	// Source says whether the caller gave this workstream (explicit) or the planner made
	// it (generated).
	Source WorkstreamSource `json:"source"`
}

// WorkstreamSource says who named a workstream.
type WorkstreamSource string

// Workstream sources.
const (
	WorkstreamExplicit  WorkstreamSource = "explicit"
	WorkstreamGenerated WorkstreamSource = "generated"
)

// Enum lists the sources.
func (WorkstreamSource) Enum() []any { return EnumStrings(WorkstreamExplicit, WorkstreamGenerated) }

// PlannedMilestone is a milestone of a workstream with its tasks.
type PlannedMilestone struct {
	Title string        `json:"title" minLength:"1" maxLength:"200"`
	Tasks []PlannedTask `json:"tasks" maxItems:"10"`
}

// PlannedTask is a task of a milestone: an ordinary work item once the proposal is
// committed.
type PlannedTask struct {
	Title          string   `json:"title" minLength:"1" maxLength:"500"`
	Description    string   `json:"description" maxLength:"4000"`
	Priority       Priority `json:"priority"`
	EstimatedHours float64  `json:"estimated_hours" minimum:"0" maximum:"100000"`
}

// Validate checks a plan as any planner made it (a model's output above all): the bounds,
// distinct workstream names, dependencies on workstreams of the plan, agents named
// together with their ids, and the depth: at depth initiative the plan holds only the
// caller's explicit workstreams, and below depth full only those may carry milestones
// (the caller's own).
func (p Plan) Validate(depth PlanDepth) error {
	is := CheckFields(p)
	names := map[string]bool{}
	for i, w := range p.Workstreams {
		path := fmt.Sprintf("/workstreams/%d", i)
		if names[w.Name] {
			is.Add(path+"/name", "repeats another workstream's name")
		}
		names[w.Name] = true
		if (w.AgentID == nil) != (w.AgentName == nil) {
			is.Add(path+"/agent_id", "agent_id and agent_name are given together or not at all")
		}
		generated := w.Source == WorkstreamGenerated
		if generated && depth == DepthInitiative {
			is.Add(path, "a generated workstream exceeds depth initiative")
		}
		if generated && depth != DepthFull && len(w.Milestones) > 0 {
			is.Add(path+"/milestones", "must be empty at depth %s", depth)
		}
	}
	for i, w := range p.Workstreams {
		for k, d := range w.DependsOn {
			if !names[d] || d == w.Name {
				is.Add(fmt.Sprintf("/workstreams/%d/depends_on/%d", i, k), "must name another workstream of the plan")
			}
		}
	}
	return is.Err()
}

// Economics are a plan's totals and what the same work would cost people.
type Economics struct {
	ExpectedTokens     int64   `json:"expected_tokens" minimum:"0"`
	ExpectedHours      float64 `json:"expected_hours" minimum:"0"`
	ExpectedBudgetUSD  float64 `json:"expected_budget_usd" minimum:"0"`
	HumanEquivalentUSD float64 `json:"human_equivalent_usd" minimum:"0"`
	ValueBasis         string  `json:"value_basis"`
}

// HumanHourlyRateUSD is the rate at which the hours of a plan are valued as people's work
// (human_equivalent_usd): a documented assumption, stated in value_basis.
const HumanHourlyRateUSD = 95.0

// GeneratedPlan is a planner's plan with who made it and what making it cost; the
// receipt's ReceiptID is left to the proposal that keeps it.
type GeneratedPlan struct {
	Plan    Plan
	Source  AssignmentSource
	Receipt GenerationReceipt
}

// GenerationReceipt records who made a plan and what it cost.
type GenerationReceipt struct {
	ReceiptID string  `json:"receipt_id" format:"uuid"`
	Provider  string  `json:"provider"`
	Model     string  `json:"model"`
	TokensIn  int64   `json:"tokens_in" minimum:"0"`
	TokensOut int64   `json:"tokens_out" minimum:"0"`
	CostUSD   float64 `json:"cost_usd" minimum:"0"`
}

// InitiativeProposal is the specification's Initiative proposal: immutable, addressed by
// its digest.
type InitiativeProposal struct {
	ProposalID        string            `json:"proposal_id" format:"uuid"`
	ProposalDigest    string            `json:"proposal_digest" pattern:"^sha256:[a-f0-9]{64}$"`
	Status            ProposalStatus    `json:"status"`
	ExpiresAt         Time              `json:"expires_at"`
	Plan              Plan              `json:"plan"`
	AssignmentSource  AssignmentSource  `json:"assignment_source"`
	Economics         Economics         `json:"economics"`
	GenerationReceipt GenerationReceipt `json:"generation_receipt"`
	Encoded           `json:"-"`
}

// ProposalContent is what a proposal's digest covers (its proposal_digest: sha256 of the
// RFC 8785 canonical JSON of it): everything but its status (which moves) and the digest
// itself.
type ProposalContent struct {
	ProposalID        string            `json:"proposal_id"`
	ExpiresAt         Time              `json:"expires_at"`
	Plan              Plan              `json:"plan"`
	AssignmentSource  AssignmentSource  `json:"assignment_source"`
	Economics         Economics         `json:"economics"`
	GenerationReceipt GenerationReceipt `json:"generation_receipt"`
}

// ProposalContent returns what the proposal's digest covers.
func (p InitiativeProposal) ProposalContent() ProposalContent {
	return ProposalContent{ProposalID: p.ProposalID, ExpiresAt: p.ExpiresAt, Plan: p.Plan,
		AssignmentSource: p.AssignmentSource, Economics: p.Economics, GenerationReceipt: p.GenerationReceipt}
}

// StatusAt returns the proposal's status at now: a proposed proposal past its expiry is
// expired.
func (p InitiativeProposal) StatusAt(now time.Time) ProposalStatus {
	if p.Status == ProposalProposed && !now.Before(p.ExpiresAt.Time) {
		return ProposalExpired
	}
	return p.Status
}

// ProposalClaim is what claiming a proposal generation found: a replay of the same
// request, a run of it to wait for, or (neither) the right to start one, holding the rate
// slot Slot.
type ProposalClaim struct {
	Replay *InitiativeProposal
	Attach *WorkflowRun
	Slot   string
}

// Ledger vocabulary of initiatives and their parts.
const (
	AggregateInitiative       = "initiative"
	AggregateWorkstream       = "workstream"
	AggregateMilestone        = "milestone"
	EventInitiativeCreated    = "initiative.created"
	EventWorkstreamCreated    = "workstream.created"
	EventMilestoneCreated     = "milestone.created"
	EventProposalInstantiated = "initiative_proposal.instantiated"
)

// InitiativeStatus is where an initiative is in its life.
type InitiativeStatus string

// Initiative statuses: active once committed; the lifecycle pauses, resumes, cancels.
const (
	InitiativeActive    InitiativeStatus = "active"
	InitiativePaused    InitiativeStatus = "paused"
	InitiativeCompleted InitiativeStatus = "completed"
	InitiativeCancelled InitiativeStatus = "cancelled"
)

// Enum lists the statuses.
func (InitiativeStatus) Enum() []any {
	return EnumStrings(InitiativeActive, InitiativePaused, InitiativeCompleted, InitiativeCancelled)
}

// CommitInitiative is the command that creates an initiative (POST /initiatives): from a
// proposal, named by its id and digest, with every workstream, milestone and task of its
// plan; or from a starter title alone.
type CommitInitiative struct {
	ProposalID     *string `json:"proposal_id,omitzero" format:"uuid"`
	ProposalDigest *string `json:"proposal_digest,omitzero" pattern:"^sha256:[a-f0-9]{64}$"`
	Title          *string `json:"title,omitzero" minLength:"1" maxLength:"200"`
	Summary        *string `json:"summary,omitzero" maxLength:"4000"`
	Causation
}

// Validate checks the bounds, that proposal_id and proposal_digest come together, and
// that the command names a proposal or a title.
func (c CommitInitiative) Validate() error {
	is := CheckFields(c)
	switch n := countSet(c.ProposalID, c.ProposalDigest); {
	case n == 1:
		is.Add("/proposal_digest", "proposal_id and proposal_digest are given together")
	case n == 0 && c.Title == nil:
		is.Add("/title", "is required without a proposal (proposal_id with proposal_digest)")
	}
	return is.Err()
}

// InitiativeRef is the initiative of a commit's result.
type InitiativeRef struct {
	ID               string           `json:"id" format:"uuid"`
	Title            string           `json:"title"`
	Status           InitiativeStatus `json:"status"`
	AggregateVersion int64            `json:"aggregateVersion" minimum:"1"`
}

// CreatedCounts says how many of each part a commit created.
type CreatedCounts struct {
	Workstreams int `json:"workstreams" minimum:"0"`
	Milestones  int `json:"milestones" minimum:"0"`
	Tasks       int `json:"tasks" minimum:"0"`
}

// CommitReceipt is the receipt of a commit: its id and the initiative.created event.
type CommitReceipt struct {
	ReceiptID string `json:"receipt_id" format:"uuid"`
	EventID   string `json:"event_id" format:"uuid"`
}

// InitiativeCommitted is the result of CommitInitiative.
type InitiativeCommitted struct {
	Initiative InitiativeRef `json:"initiative"`
	Created    CreatedCounts `json:"created"`
	ProposalID *string       `json:"proposal_id" format:"uuid"`
	Receipt    CommitReceipt `json:"receipt"`
	Encoded    `json:"-"`
}

// Initiative is an initiative record (GET /initiatives/{id}), with its tree and launches
// when asked for.
type Initiative struct {
	ID               string           `json:"id" format:"uuid"`
	Title            string           `json:"title"`
	Summary          string           `json:"summary"`
	Status           InitiativeStatus `json:"status"`
	ProposalID       *string          `json:"proposal_id" format:"uuid"`
	CreatedAt        Time             `json:"created_at"`
	UpdatedAt        Time             `json:"updated_at"`
	AggregateVersion int64            `json:"aggregate_version" minimum:"1"`
	Tree             *InitiativeTree  `json:"tree,omitzero"`
	Launches         []any            `json:"launches,omitzero"`
}

// InitiativeTree is an initiative's workstreams with their milestones and tasks.
type InitiativeTree struct {
	Workstreams []Workstream `json:"workstreams"`
}

// Workstream is a lane of a committed initiative.
type Workstream struct {
	ID                    string      `json:"id" format:"uuid"`
	Name                  string      `json:"name"`
	Goal                  string      `json:"goal"`
	Domain                Domain      `json:"domain"`
	AgentID               *string     `json:"agent_id"`
	AgentName             *string     `json:"agent_name"`
	Confidence            float64     `json:"confidence" minimum:"0" maximum:"1"`
	Rationale             string      `json:"rationale"`
	ExpectedTokens        int64       `json:"expected_tokens" minimum:"0"`
	ExpectedDurationHours float64     `json:"expected_duration_hours" minimum:"0"`
	ExpectedBudgetUSD     float64     `json:"expected_budget_usd" minimum:"0"`
	Position              int         `json:"position" minimum:"0"`
	Milestones            []Milestone `json:"milestones"`
}

// Milestone is a milestone of a committed workstream, with its tasks (work items).
type Milestone struct {
	ID       string `json:"id" format:"uuid"`
	Title    string `json:"title"`
	Position int    `json:"position" minimum:"0"`
	Tasks    []Task `json:"tasks"`
}
