package planner_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/planner"
	"github.com/accountablework/accountable/projection"
)

func ptr[T any](v T) *T { return &v }

func plan(t *testing.T, in accountable.ProposeInitiative) accountable.GeneratedPlan {
	t.Helper()
	if err := in.Validate(); err != nil {
		t.Fatalf("request: %v", err)
	}
	res, err := planner.NewBaseline().Plan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func names(p accountable.Plan) []string {
	var out []string
	for _, w := range p.Workstreams {
		out = append(out, w.Name)
	}
	return out
}

// The same request gives the same plan, byte for byte.
func TestBaselineIsDeterministic(t *testing.T) {
	in := accountable.ProposeInitiative{Title: "Public status page",
		Prompt:  ptr("Build an API and a database of incidents, design the page, and announce it in the newsletter."),
		Context: &accountable.ProposalContext{Constraints: []string{"no new vendors"}}}
	first, _ := json.Marshal(plan(t, in))
	for range 5 {
		again, _ := json.Marshal(plan(t, in))
		if string(again) != string(first) {
			t.Fatalf("plans differ:\n%s\n%s", first, again)
		}
	}
	res := plan(t, in)
	if res.Source != accountable.AssignmentBaseline || res.Receipt.Provider != "baseline" || res.Receipt.Model != planner.BaselineModel ||
		res.Receipt.TokensIn != 0 || res.Receipt.CostUSD != 0 {
		t.Fatalf("source %s, receipt %+v", res.Source, res.Receipt)
	}
}

// Workstreams follow the domains the request mentions, most mentioned first, up to the
// bound; each has its roster agent, estimates, and at depth full milestones with tasks.
func TestBaselineExpandsTheDomainsTheRequestMentions(t *testing.T) {
	in := accountable.ProposeInitiative{Title: "Status page",
		Prompt: ptr("Implement the status API, deploy the service, test the database failover. Design a prototype of the page.")}
	res := plan(t, in)
	got := names(res.Plan)
	if len(got) < 2 || res.Plan.Workstreams[0].Domain != accountable.DomainEngineering || res.Plan.Workstreams[1].Domain != accountable.DomainDesign {
		t.Fatalf("workstreams %v", got)
	}
	for _, w := range res.Plan.Workstreams {
		if w.AgentID == nil || *w.AgentID != "agent-"+string(w.Domain) || w.Confidence <= 0 || w.Confidence > 1 || w.Rationale == "" {
			t.Errorf("%s: agent %v confidence %v rationale %q", w.Name, w.AgentID, w.Confidence, w.Rationale)
		}
		if w.ExpectedTokens <= 0 || w.ExpectedDurationHours <= 0 || w.ExpectedBudgetUSD <= 0 || w.Source != accountable.WorkstreamGenerated {
			t.Errorf("%s: estimates %d %v %v source %s", w.Name, w.ExpectedTokens, w.ExpectedDurationHours, w.ExpectedBudgetUSD, w.Source)
		}
		if len(w.Milestones) == 0 || len(w.Milestones[0].Tasks) == 0 || w.Milestones[0].Tasks[0].EstimatedHours <= 0 {
			t.Errorf("%s: milestones %+v", w.Name, w.Milestones)
		}
	}
	e := projection.EconomicsOf(res.Plan)
	var tokens int64
	for _, w := range res.Plan.Workstreams {
		tokens += w.ExpectedTokens
	}
	if e.ExpectedTokens != tokens || e.HumanEquivalentUSD != e.ExpectedHours*accountable.HumanHourlyRateUSD || e.ValueBasis == "" {
		t.Fatalf("economics %+v", e)
	}

	in.Generation = &accountable.GenerationOptions{MaxWorkstreams: ptr(int64(1))}
	if got := names(plan(t, in).Plan); len(got) != 1 {
		t.Fatalf("max_workstreams 1 gave %v", got)
	}
}

// Explicit workstreams are kept as given; the planner fills only their gaps.
func TestBaselineKeepsExplicitWorkstreams(t *testing.T) {
	in := accountable.ProposeInitiative{Title: "Launch", Prompt: ptr("Sales pipeline and marketing campaign."),
		Workstreams: []accountable.ExplicitWorkstream{
			{Name: "Pricing", Goal: ptr("Set the prices"), DomainHint: ptr("sales"), AgentID: ptr("agent-custom"), ExpectedTokens: ptr(int64(7))},
			{Name: "Docs", DependsOn: []string{"Pricing"}, Milestones: []accountable.MilestoneRef{{Title: "Drafted", Tasks: []string{"Write the guide"}}}},
		}}
	res := plan(t, in)
	p, d := res.Plan.Workstreams[0], res.Plan.Workstreams[1]
	if p.Name != "Pricing" || p.Goal != "Set the prices" || p.Domain != accountable.DomainSales || *p.AgentID != "agent-custom" ||
		p.Confidence != 1 || p.ExpectedTokens != 7 || p.Source != accountable.WorkstreamExplicit || p.ExpectedDurationHours <= 0 {
		t.Fatalf("explicit workstream %+v", p)
	}
	if d.Name != "Docs" || !slices.Equal(d.DependsOn, []string{"Pricing"}) || len(d.Milestones) != 1 || d.Milestones[0].Title != "Drafted" ||
		d.Milestones[0].Tasks[0].Title != "Write the guide" || d.Goal == "" {
		t.Fatalf("explicit workstream %+v", d)
	}
	// The sales domain is covered by the explicit lane: no generated sales lane beside it.
	for _, w := range res.Plan.Workstreams[2:] {
		if w.Domain == accountable.DomainSales {
			t.Fatalf("a second sales lane: %v", names(res.Plan))
		}
	}
}

// agent_assignment none leaves agents unassigned; depth bounds the expansion.
func TestBaselineAssignmentAndDepth(t *testing.T) {
	base := accountable.ProposeInitiative{Title: "Onboarding", Prompt: ptr("Improve onboarding and activation."),
		Workstreams: []accountable.ExplicitWorkstream{{Name: "Research"}}}
	none := base
	none.AgentAssignment = ptr(accountable.AgentAssignmentNone)
	for _, w := range plan(t, none).Plan.Workstreams {
		if w.AgentID != nil || w.AgentName != nil || w.Confidence != 0 {
			t.Fatalf("agent assigned with none: %+v", w)
		}
	}
	initiative := base
	initiative.Depth = ptr(accountable.DepthInitiative)
	if got := plan(t, initiative).Plan.Workstreams; len(got) != 1 || got[0].Name != "Research" || len(got[0].Milestones) != 0 {
		t.Fatalf("depth initiative: %+v", got)
	}
	streams := base
	streams.Depth = ptr(accountable.DepthWorkstreams)
	got := plan(t, streams).Plan.Workstreams
	if len(got) < 2 {
		t.Fatalf("depth workstreams: %v", got)
	}
	for _, w := range got {
		if len(w.Milestones) != 0 {
			t.Fatalf("milestones at depth workstreams: %+v", w)
		}
	}
}
