package accountable

import (
	"fmt"
	"math"
)

// A launch puts an initiative (or one of its workstreams, or one task) to work: one job per
// workstream in scope reserves its estimated cost against the launch's ceiling, dispatches
// a run to the workstream's agent and, when the run is finalised (or times out), settles
// the reservation against the cost the run reported. A job whose reservation would pass
// the ceiling waits for a budget_approval decision. The LaunchDispatch workflow drives it.

// Ledger vocabulary of launches and runs.
const (
	AggregateLaunch       = "launch"
	AggregateRun          = "run"
	EventLaunchCreated    = "launch.created"
	EventLaunchJobChanged = "launch.job_changed"
	EventLaunchEnded      = "launch.ended"
	EventRunDispatched    = "run.dispatched"
	EventRunFinalized     = "run.finalized"
)

// LaunchState is where a launch is.
type LaunchState string

// Launch states.
const (
	LaunchPending    LaunchState = "pending"
	LaunchDispatched LaunchState = "dispatched"
	LaunchRunning    LaunchState = "running"
	LaunchBlocked    LaunchState = "blocked"
	LaunchSettling   LaunchState = "settling"
	LaunchCompleted  LaunchState = "completed"
	LaunchFailed     LaunchState = "failed"
	LaunchCancelled  LaunchState = "cancelled"
)

// Enum lists the states.
func (LaunchState) Enum() []any {
	return EnumStrings(LaunchPending, LaunchDispatched, LaunchRunning, LaunchBlocked, LaunchSettling, LaunchCompleted,
		LaunchFailed, LaunchCancelled)
}

// Autonomy is how far agents act without asking.
type Autonomy string

// Autonomies.
const (
	AutonomyManual    Autonomy = "manual"
	AutonomyGated     Autonomy = "gated"
	AutonomyAutopilot Autonomy = "autopilot"
)

// Enum lists the autonomies.
func (Autonomy) Enum() []any { return EnumStrings(AutonomyManual, AutonomyGated, AutonomyAutopilot) }

// JobStatus is where a launch job is.
type JobStatus string

// Job statuses.
const (
	JobQueued     JobStatus = "queued"
	JobReserved   JobStatus = "reserved"
	JobDispatched JobStatus = "dispatched"
	JobRunning    JobStatus = "running"
	JobSucceeded  JobStatus = "succeeded"
	JobFailed     JobStatus = "failed"
	JobBlocked    JobStatus = "blocked"
	JobCancelled  JobStatus = "cancelled"
)

// Enum lists the statuses.
func (JobStatus) Enum() []any {
	return EnumStrings(JobQueued, JobReserved, JobDispatched, JobRunning, JobSucceeded, JobFailed, JobBlocked, JobCancelled)
}

// BlockCode says why a job is blocked.
type BlockCode string

// Block codes.
const (
	BlockBudgetCeiling   BlockCode = "budget_ceiling_exceeded"
	BlockDecisionPending BlockCode = "decision_pending"
	BlockNoAgent         BlockCode = "no_agent_assigned"
	BlockEmptyScope      BlockCode = "empty_scope"
)

// Enum lists the codes.
func (BlockCode) Enum() []any {
	return EnumStrings(BlockBudgetCeiling, BlockDecisionPending, BlockNoAgent, BlockEmptyScope)
}

// RunStatus is where a run is.
type RunStatus string

// Run statuses.
const (
	RunQueued    RunStatus = "queued"
	RunRunning   RunStatus = "running"
	RunPaused    RunStatus = "paused"
	RunSucceeded RunStatus = "succeeded"
	RunFailed    RunStatus = "failed"
	RunCancelled RunStatus = "cancelled"
)

// Enum lists the statuses.
func (RunStatus) Enum() []any {
	return EnumStrings(RunQueued, RunRunning, RunPaused, RunSucceeded, RunFailed, RunCancelled)
}

// Final reports whether a run in status s has ended.
func (s RunStatus) Final() bool { return s == RunSucceeded || s == RunFailed || s == RunCancelled }

// OutcomeKind is what a finalised run delivered.
type OutcomeKind string

// Outcome kinds.
const (
	OutcomeShipped        OutcomeKind = "shipped"
	OutcomeBlocked        OutcomeKind = "blocked"
	OutcomeAbandoned      OutcomeKind = "abandoned"
	OutcomeAwaitingReview OutcomeKind = "awaiting_review"
)

// Enum lists the kinds.
func (OutcomeKind) Enum() []any {
	return EnumStrings(OutcomeShipped, OutcomeBlocked, OutcomeAbandoned, OutcomeAwaitingReview)
}

// SettlementStatus is where a reservation is.
type SettlementStatus string

// Settlement statuses: reserved until its run ends; then settled (the reported cost fits),
// overrun (it does not) or released (the run cost nothing).
const (
	SettlementReserved SettlementStatus = "reserved"
	SettlementSettled  SettlementStatus = "settled"
	SettlementReleased SettlementStatus = "released"
	SettlementOverrun  SettlementStatus = "overrun"
)

// Enum lists the statuses.
func (SettlementStatus) Enum() []any {
	return EnumStrings(SettlementReserved, SettlementSettled, SettlementReleased, SettlementOverrun)
}

// LaunchInitiative is the command that launches an initiative (POST /initiatives/{id}/launch).
type LaunchInitiative struct {
	InitiativeID     string     `json:"-"`
	WorkstreamID     *string    `json:"workstream_id,omitzero" format:"uuid"`
	TaskID           *string    `json:"task_id,omitzero" format:"uuid"`
	ModelTier        *ModelTier `json:"model_tier,omitzero"`
	Autonomy         *Autonomy  `json:"autonomy,omitzero"`
	CostCeilingCents int64      `json:"cost_ceiling_cents" minimum:"0" maximum:"100000000000"`
	Causation
}

// Validate checks the bounds; a launch is scoped to a workstream or a task, not both.
func (c LaunchInitiative) Validate() error {
	is := CheckFields(c)
	if c.WorkstreamID != nil && c.TaskID != nil {
		is.Add("/task_id", "a launch is scoped to a workstream or to a task, not both")
	}
	return is.Err()
}

// LaunchScope is what a launch covers: the whole initiative (both null), a workstream or a task.
type LaunchScope struct {
	WorkstreamID *string `json:"workstream_id" format:"uuid"`
	TaskID       *string `json:"task_id" format:"uuid"`
}

// LaunchCost is a launch's money, in cents.
type LaunchCost struct {
	ServerEstimateCents int64 `json:"server_estimate_cents" minimum:"0"`
	CostCeilingCents    int64 `json:"cost_ceiling_cents" minimum:"0"`
	ReservedCents       int64 `json:"reserved_cents" minimum:"0"`
	SettledCents        int64 `json:"settled_cents" minimum:"0"`
}

// LaunchJob is a job of a launch.
type LaunchJob struct {
	WorkstreamID string     `json:"workstream_id" format:"uuid"`
	JobID        string     `json:"job_id" format:"uuid"`
	Status       JobStatus  `json:"status"`
	BlockCode    *BlockCode `json:"block_code"`
}

// LaunchRun is a run of a launch as the launch shows it: its job, when it was dispatched
// (created_at) and when it ended (finalized_at, null until then).
type LaunchRun struct {
	ID          string       `json:"id" format:"uuid"`
	Status      RunStatus    `json:"status"`
	OutcomeKind *OutcomeKind `json:"outcome_kind"`
	CostCents   int64        `json:"cost_cents" minimum:"0"`
	JobID       string       `json:"job_id" format:"uuid"`
	CreatedAt   Time         `json:"created_at"`
	FinalizedAt *Time        `json:"finalized_at"`
}

// ReservationReceipt is a job's reservation: when it was made (created_at) and, once
// settled, released or overrun, when (settled_at) and for how much (settled_cents).
type ReservationReceipt struct {
	ID                string           `json:"id" format:"uuid"`
	CostEstimateCents int64            `json:"cost_estimate_cents" minimum:"0"`
	SettlementStatus  SettlementStatus `json:"settlement_status"`
	JobID             string           `json:"job_id" format:"uuid"`
	CreatedAt         Time             `json:"created_at"`
	SettledAt         *Time            `json:"settled_at"`
	SettledCents      *int64           `json:"settled_cents" minimum:"0"`
}

// Launch is the specification's Launch.
type Launch struct {
	LaunchID          string               `json:"launch_id" format:"uuid"`
	InitiativeID      string               `json:"initiative_id" format:"uuid"`
	State             LaunchState          `json:"state"`
	AggregateVersion  int64                `json:"aggregate_version" minimum:"1"`
	CreatedAt         Time                 `json:"created_at"`
	ModelTier         ModelTier            `json:"model_tier"`
	EffectiveAutonomy Autonomy             `json:"effective_autonomy"`
	Scope             LaunchScope          `json:"scope"`
	Cost              LaunchCost           `json:"cost"`
	Jobs              []LaunchJob          `json:"jobs"`
	Runs              []LaunchRun          `json:"runs"`
	Receipts          []ReservationReceipt `json:"receipts"`
	BlockingDecision  *Decision            `json:"blocking_decision"`
	Encoded           `json:"-"`
}

// FinalizeRun is the command by which an agent reports the end of its run
// (POST /runs/{id}/finalize).
type FinalizeRun struct {
	RunID       string       `json:"-"`
	Status      RunStatus    `json:"status"`
	OutcomeKind *OutcomeKind `json:"outcome_kind,omitzero"`
	CostCents   *int64       `json:"cost_cents,omitzero" minimum:"0" maximum:"100000000"`
	Summary     *string      `json:"summary,omitzero" maxLength:"4000"`
	Evidence    Object       `json:"evidence,omitzero"`
	Causation
}

// Validate checks the bounds; a run is finalised into an ended status.
func (c FinalizeRun) Validate() error {
	is := CheckFields(c)
	if c.Status != "" && !c.Status.Final() {
		is.Add("/status", "must be succeeded, failed or cancelled")
	}
	return is.Err()
}

// Run is a run record (GET /runs/{id}).
type Run struct {
	ID               string       `json:"id" format:"uuid"`
	LaunchID         string       `json:"launch_id" format:"uuid"`
	JobID            string       `json:"job_id" format:"uuid"`
	InitiativeID     string       `json:"initiative_id" format:"uuid"`
	WorkstreamID     string       `json:"workstream_id" format:"uuid"`
	AgentID          *string      `json:"agent_id"`
	Status           RunStatus    `json:"status"`
	OutcomeKind      *OutcomeKind `json:"outcome_kind"`
	CostCents        int64        `json:"cost_cents" minimum:"0"`
	Summary          *string      `json:"summary"`
	Evidence         Object       `json:"evidence"`
	CreatedAt        Time         `json:"created_at"`
	UpdatedAt        Time         `json:"updated_at"`
	FinalizedAt      *Time        `json:"finalized_at"`
	AggregateVersion int64        `json:"aggregate_version" minimum:"1"`
	Encoded          `json:"-"`
}

// RunChanged is the signal a run sends its launch when its status changes: finalised
// (run-finalized), or paused and resumed (run-actioned).
type RunChanged struct {
	RunID     string    `json:"runId"`
	JobID     string    `json:"jobId"`
	Status    RunStatus `json:"status"`
	CostCents int64     `json:"costCents"`
}

// DecisionDecided is the signal a decided decision sends the launch it blocks.
type DecisionDecided struct {
	DecisionID string         `json:"decisionId"`
	JobID      string         `json:"jobId"`
	Status     DecisionStatus `json:"status"`
}

// JobReservation is what reserving a launch job came to: reserved, or blocked on the
// decision DecisionID.
type JobReservation struct {
	Reserved   bool   `json:"reserved"`
	DecisionID string `json:"decisionId"`
}

// RunAction is an action on a run (POST /runs/{id}/actions/{action}).
type RunAction string

// Run actions: pause a running run, resume a paused one, cancel one that has not ended
// (its launch settles it), roll back one that has ended (its outcome becomes abandoned).
const (
	RunPause    RunAction = "pause"
	RunResume   RunAction = "resume"
	RunCancel   RunAction = "cancel"
	RunRollback RunAction = "rollback"
)

// Enum lists the actions.
func (RunAction) Enum() []any { return EnumStrings(RunPause, RunResume, RunCancel, RunRollback) }

// EventRunActioned is the event of a run action other than the cancel that ends it.
const EventRunActioned = "run.actioned"

// RunActionRequest is the body of a run action.
type RunActionRequest struct {
	Reason *string `json:"reason,omitzero" maxLength:"4000"`
	Causation
}

// Validate checks the bounds.
func (c RunActionRequest) Validate() error { return CheckFields(c).Err() }

// LaunchWorkstream is a workstream of the launched initiative, as a launch plans it.
type LaunchWorkstream struct {
	ID                string
	AgentID           *string
	ExpectedBudgetUSD float64
	Tasks             int64 // the workstream's tasks, over which a one-task launch shares its budget
}

// PlannedJob is a job a launch plans: its workstream (and task, for a one-task launch),
// the agent it dispatches to, and the cost it estimates.
type PlannedJob struct {
	WorkstreamID  string
	TaskID        *string
	AgentID       *string
	EstimateCents int64
}

// LaunchPlan is what a launch puts to work, before it has ids.
type LaunchPlan struct {
	Scope     LaunchScope
	ModelTier ModelTier
	Autonomy  Autonomy
	Cost      LaunchCost
	Jobs      []PlannedJob
}

// Plan plans the launch over the initiative's workstreams (in their order): one job per
// workstream in scope, estimating its expected budget (shared over its tasks for a one-task
// launch); taskWorkstreamID is the workstream of the launched task (nil: the task is not
// the initiative's, or in no workstream). Model tier standard and autonomy gated unless
// asked (no workspace policy narrows them yet).
func (c LaunchInitiative) Plan(streams []LaunchWorkstream, taskWorkstreamID *string) (LaunchPlan, error) {
	p := LaunchPlan{Scope: LaunchScope{WorkstreamID: c.WorkstreamID, TaskID: c.TaskID}, ModelTier: ModelTierStandard,
		Autonomy: AutonomyGated, Cost: LaunchCost{CostCeilingCents: c.CostCeilingCents}}
	if c.ModelTier != nil {
		p.ModelTier = *c.ModelTier
	}
	if c.Autonomy != nil {
		p.Autonomy = *c.Autonomy
	}
	cents := func(usd float64) int64 { return int64(math.Round(usd * 100)) }
	switch {
	case c.TaskID != nil:
		if taskWorkstreamID == nil {
			return p, NotFound("task")
		}
		for _, s := range streams {
			if s.ID == *taskWorkstreamID {
				p.Jobs = append(p.Jobs, PlannedJob{WorkstreamID: s.ID, TaskID: c.TaskID, AgentID: s.AgentID,
					EstimateCents: cents(s.ExpectedBudgetUSD) / max(s.Tasks, 1)})
			}
		}
	case c.WorkstreamID != nil:
		for _, s := range streams {
			if s.ID == *c.WorkstreamID {
				p.Jobs = append(p.Jobs, PlannedJob{WorkstreamID: s.ID, AgentID: s.AgentID, EstimateCents: cents(s.ExpectedBudgetUSD)})
			}
		}
		if len(p.Jobs) == 0 {
			return p, NotFound("workstream")
		}
	default:
		for _, s := range streams {
			p.Jobs = append(p.Jobs, PlannedJob{WorkstreamID: s.ID, AgentID: s.AgentID, EstimateCents: cents(s.ExpectedBudgetUSD)})
		}
	}
	for _, j := range p.Jobs {
		p.Cost.ServerEstimateCents += j.EstimateCents
	}
	return p, nil
}

// Launch is the planned launch as created: pending, at version 1, its jobs queued;
// jobIDs name the planned jobs in order.
func (p LaunchPlan) Launch(id, initiativeID string, jobIDs []string, at Time) Launch {
	l := Launch{LaunchID: id, InitiativeID: initiativeID, State: LaunchPending, AggregateVersion: 1, CreatedAt: at,
		ModelTier: p.ModelTier, EffectiveAutonomy: p.Autonomy, Scope: p.Scope, Cost: p.Cost,
		Jobs: []LaunchJob{}, Runs: []LaunchRun{}, Receipts: []ReservationReceipt{}}
	for i, j := range p.Jobs {
		l.Jobs = append(l.Jobs, LaunchJob{WorkstreamID: j.WorkstreamID, JobID: jobIDs[i], Status: JobQueued})
	}
	return l
}

// JobBudget is a launch job and its launch's money, as reserving it reads them (locked).
type JobBudget struct {
	Status        JobStatus
	DecisionID    *string // the budget decision a blocked job waits for
	EstimateCents int64
	ReservedCents int64 // the launch's, so far
	CeilingCents  int64 // the launch's
}

// ReservationStep is what reserving a job does.
type ReservationStep int

// Reservation steps.
const (
	// ReservationAnswered: the job was reserved, blocked or cancelled before (an activity
	// retry); the answer says so again and nothing is written.
	ReservationAnswered ReservationStep = iota
	// ReservationBlocks: the reservation would pass the ceiling; the job waits for a
	// budget_approval decision.
	ReservationBlocks
	// ReservationReserves: the estimate is reserved against the launch.
	ReservationReserves
)

// Reserve decides a reservation of the job: a queued job reserves its estimate, or waits
// for a budget decision when that would pass the ceiling; a blocked job reserves once its
// decision is approved (past the ceiling) and otherwise keeps waiting. The answer is set
// for ReservationAnswered.
func (b JobBudget) Reserve(approved bool) (ReservationStep, JobReservation) {
	switch b.Status {
	case JobQueued:
	case JobBlocked:
		if !approved {
			var decision string
			if b.DecisionID != nil {
				decision = *b.DecisionID
			}
			return ReservationAnswered, JobReservation{DecisionID: decision}
		}
	default:
		return ReservationAnswered, JobReservation{Reserved: b.Status != JobCancelled}
	}
	if !approved && b.ReservedCents+b.EstimateCents > b.CeilingCents {
		return ReservationBlocks, JobReservation{}
	}
	return ReservationReserves, JobReservation{Reserved: true}
}

// BudgetApproval phrases the budget_approval decision a job over the ceiling waits for.
func (b JobBudget) BudgetApproval() (title, summary string, context Object) {
	return "Approve the budget of a launch job",
		fmt.Sprintf("Reserving %d cents for this job would bring the launch to %d cents, past its ceiling of %d cents.",
			b.EstimateCents, b.ReservedCents+b.EstimateCents, b.CeilingCents),
		Object(fmt.Sprintf(`{"ceiling_cents":%d,"estimate_cents":%d,"reserved_cents":%d}`, b.CeilingCents, b.EstimateCents, b.ReservedCents))
}
