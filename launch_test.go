package accountable_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/accountablework/accountable"
)

// A launch plans one job per workstream in scope, each estimating its workstream's budget
// in cents (a one-task launch: shared over the workstream's tasks).
func TestLaunchPlan(t *testing.T) {
	s := func(v string) *string { return &v }
	agent := s("agent-1")
	streams := []accountable.LaunchWorkstream{
		{ID: "ws-a", AgentID: agent, ExpectedBudgetUSD: 12.345, Tasks: 3},
		{ID: "ws-b", ExpectedBudgetUSD: 0.5, Tasks: 0},
	}
	precision, autopilot := accountable.ModelTierPrecision, accountable.AutonomyAutopilot
	for _, c := range []struct {
		name       string
		in         accountable.LaunchInitiative
		streams    []accountable.LaunchWorkstream
		taskStream *string
		jobs       []accountable.PlannedJob
		errCode    string
	}{
		{name: "the whole initiative", in: accountable.LaunchInitiative{CostCeilingCents: 100}, streams: streams,
			jobs: []accountable.PlannedJob{{WorkstreamID: "ws-a", AgentID: agent, EstimateCents: 1235}, {WorkstreamID: "ws-b", EstimateCents: 50}}},
		{name: "an initiative without workstreams", in: accountable.LaunchInitiative{}},
		{name: "a workstream", in: accountable.LaunchInitiative{WorkstreamID: s("ws-b")}, streams: streams,
			jobs: []accountable.PlannedJob{{WorkstreamID: "ws-b", EstimateCents: 50}}},
		{name: "a workstream of another initiative", in: accountable.LaunchInitiative{WorkstreamID: s("ws-z")}, streams: streams,
			errCode: accountable.ECodeNotFound},
		{name: "a task shares its workstream's budget", in: accountable.LaunchInitiative{TaskID: s("task-1")}, streams: streams, taskStream: s("ws-a"),
			jobs: []accountable.PlannedJob{{WorkstreamID: "ws-a", TaskID: s("task-1"), AgentID: agent, EstimateCents: 411}}},
		{name: "a task of a workstream without tasks counted", in: accountable.LaunchInitiative{TaskID: s("task-2")}, streams: streams, taskStream: s("ws-b"),
			jobs: []accountable.PlannedJob{{WorkstreamID: "ws-b", TaskID: s("task-2"), EstimateCents: 50}}},
		{name: "a task in no workstream (or not found)", in: accountable.LaunchInitiative{TaskID: s("task-3")}, streams: streams,
			errCode: accountable.ECodeNotFound},
		{name: "model tier and autonomy as asked", in: accountable.LaunchInitiative{ModelTier: &precision, Autonomy: &autopilot}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := c.in.Plan(c.streams, c.taskStream)
			if c.errCode != "" {
				if accountable.ErrorCode(err) != c.errCode {
					t.Fatalf("err %v, want %s", err, c.errCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var total int64
			for _, j := range c.jobs {
				total += j.EstimateCents
			}
			tier, autonomy := accountable.ModelTierStandard, accountable.AutonomyGated
			if c.in.ModelTier != nil {
				tier, autonomy = *c.in.ModelTier, *c.in.Autonomy
			}
			want := accountable.LaunchPlan{Scope: accountable.LaunchScope{WorkstreamID: c.in.WorkstreamID, TaskID: c.in.TaskID},
				ModelTier: tier, Autonomy: autonomy, Cost: accountable.LaunchCost{ServerEstimateCents: total, CostCeilingCents: c.in.CostCeilingCents},
				Jobs: c.jobs}
			if !reflect.DeepEqual(p, want) {
				t.Errorf("got  %+v\nwant %+v", p, want)
			}
		})
	}

	p, err := accountable.LaunchInitiative{CostCeilingCents: 7}.Plan(streams, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := accountable.TimeOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	l := p.Launch("launch-1", "init-1", []string{"job-a", "job-b"}, at)
	want := accountable.Launch{LaunchID: "launch-1", InitiativeID: "init-1", State: accountable.LaunchPending, AggregateVersion: 1, CreatedAt: at,
		ModelTier: accountable.ModelTierStandard, EffectiveAutonomy: accountable.AutonomyGated, Cost: p.Cost,
		Jobs: []accountable.LaunchJob{{WorkstreamID: "ws-a", JobID: "job-a", Status: accountable.JobQueued}, {WorkstreamID: "ws-b", JobID: "job-b", Status: accountable.JobQueued}},
		Runs: []accountable.LaunchRun{}, Receipts: []accountable.ReservationReceipt{}}
	if !reflect.DeepEqual(l, want) {
		t.Errorf("launch\ngot  %+v\nwant %+v", l, want)
	}
}

// Reserving a job: once per job, against the ceiling unless its budget decision was approved.
func TestJobReserve(t *testing.T) {
	decision := "decision-1"
	for _, c := range []struct {
		name     string
		budget   accountable.JobBudget
		approved bool
		step     accountable.ReservationStep
		answer   accountable.JobReservation
	}{
		{name: "within the ceiling", budget: accountable.JobBudget{Status: accountable.JobQueued, EstimateCents: 40, ReservedCents: 60, CeilingCents: 100},
			step: accountable.ReservationReserves, answer: accountable.JobReservation{Reserved: true}},
		{name: "past the ceiling", budget: accountable.JobBudget{Status: accountable.JobQueued, EstimateCents: 41, ReservedCents: 60, CeilingCents: 100},
			step: accountable.ReservationBlocks},
		{name: "past the ceiling, approved", budget: accountable.JobBudget{Status: accountable.JobQueued, EstimateCents: 41, ReservedCents: 60, CeilingCents: 100},
			approved: true, step: accountable.ReservationReserves, answer: accountable.JobReservation{Reserved: true}},
		{name: "blocked, still waiting", budget: accountable.JobBudget{Status: accountable.JobBlocked, DecisionID: &decision, EstimateCents: 41, ReservedCents: 60, CeilingCents: 100},
			step: accountable.ReservationAnswered, answer: accountable.JobReservation{DecisionID: decision}},
		{name: "blocked, approved", budget: accountable.JobBudget{Status: accountable.JobBlocked, DecisionID: &decision, EstimateCents: 41, ReservedCents: 60, CeilingCents: 100},
			approved: true, step: accountable.ReservationReserves, answer: accountable.JobReservation{Reserved: true}},
		{name: "reserved before", budget: accountable.JobBudget{Status: accountable.JobReserved}, step: accountable.ReservationAnswered,
			answer: accountable.JobReservation{Reserved: true}},
		{name: "running", budget: accountable.JobBudget{Status: accountable.JobRunning}, step: accountable.ReservationAnswered,
			answer: accountable.JobReservation{Reserved: true}},
		{name: "cancelled", budget: accountable.JobBudget{Status: accountable.JobCancelled}, approved: true, step: accountable.ReservationAnswered},
	} {
		step, answer := c.budget.Reserve(c.approved)
		if step != c.step || answer != c.answer {
			t.Errorf("%s: %v %+v, want %v %+v", c.name, step, answer, c.step, c.answer)
		}
	}
	title, summary, context := accountable.JobBudget{EstimateCents: 41, ReservedCents: 60, CeilingCents: 100}.BudgetApproval()
	if title != "Approve the budget of a launch job" ||
		summary != "Reserving 41 cents for this job would bring the launch to 101 cents, past its ceiling of 100 cents." ||
		string(context) != `{"ceiling_cents":100,"estimate_cents":41,"reserved_cents":60}` {
		t.Errorf("budget approval: %q %q %s", title, summary, context)
	}
}
