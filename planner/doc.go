// Package planner turns a proposal request (accountable.ProposeInitiative) into a plan:
// the initiative, its workstreams with agent assignments and estimates, and at depth full
// their milestones and tasks. Two planners share one result type: Model, which asks an
// OpenAI-compatible chat completions server for structured output (a JSON schema derived
// from the plan type) through openai-go, and Baseline, a deterministic planner used when
// no model is configured. Both keep the caller's explicit workstreams and fill only their
// gaps. Neither stores anything: the ProposalGeneration workflow calls them from an
// activity and retries (bounded) what a model got wrong.
package planner

import (
	"context"

	"github.com/accountablework/accountable"
)

// Planner is what both planners are (the consumers declare their own copy; this one
// documents and checks the pair).
type Planner interface {
	Plan(ctx context.Context, in accountable.ProposeInitiative) (accountable.GeneratedPlan, error)
}

var (
	_ Planner = (*Baseline)(nil)
	_ Planner = (*Model)(nil)
)

// TokensPerAgentHour is how many model tokens an agent's hour of work is estimated at.
const TokensPerAgentHour = 25_000

// TierUSDPerMillionTokens prices the agents' tokens by model tier, for the expected budget
// of a workstream (an estimate, stated in docs/architecture.md).
var TierUSDPerMillionTokens = map[accountable.ModelTier]float64{
	accountable.ModelTierStandard:  2,
	accountable.ModelTierBalanced:  6,
	accountable.ModelTierPrecision: 15,
}

// agent is an agent of the roster.
type agent struct{ id, name string }

// roster is the agent of each domain that plans assign.
var roster = map[accountable.Domain]agent{
	accountable.DomainProduct:     {"agent-product", "Product agent"},
	accountable.DomainEngineering: {"agent-engineering", "Engineering agent"},
	accountable.DomainGrowth:      {"agent-growth", "Growth agent"},
	accountable.DomainSales:       {"agent-sales", "Sales agent"},
	accountable.DomainDesign:      {"agent-design", "Design agent"},
	accountable.DomainOperations:  {"agent-operations", "Operations agent"},
}

var rosterByID = func() map[string]agent {
	m := map[string]agent{}
	for _, a := range roster {
		m[a.id] = a
	}
	return m
}()

// domainProfile is what the planners know of a domain: the words that mention it, the
// name and goal of its lane, its deliverables, its estimate and its milestone template
// (%s is the initiative's title).
type domainProfile struct {
	keywords     []string
	lane         string
	goal         string
	deliverables []string
	hours        float64
	milestones   []milestoneTemplate
}

type milestoneTemplate struct {
	title string
	tasks []string
}

var domainProfiles = map[accountable.Domain]domainProfile{
	accountable.DomainProduct: {
		keywords: []string{"product", "feature", "roadmap", "requirement", "user research", "customer", "mvp", "priorit", "spec"},
		lane:     "Product definition", goal: "Define the problem, the users and the scope",
		deliverables: []string{"Product brief", "Prioritised requirements"}, hours: 12,
		milestones: []milestoneTemplate{
			{"Scope agreed", []string{"Write the product brief for %s", "Agree the success criteria of %s"}},
			{"Requirements ready", []string{"List and prioritise the requirements of %s", "Review the requirements of %s with stakeholders"}},
		},
	},
	accountable.DomainEngineering: {
		keywords: []string{"engineer", "api", "backend", "build", "code", "implement", "infrastructure", "integrat", "migrat",
			"deploy", "database", "service", "test", "bug", "performance", "security", "platform"},
		lane: "Engineering delivery", goal: "Design, build and ship the technical work",
		deliverables: []string{"Technical design", "Shipped change with tests"}, hours: 24,
		milestones: []milestoneTemplate{
			{"Design approved", []string{"Write the technical design of %s", "Review the design of %s"}},
			{"Built and tested", []string{"Implement %s", "Test %s end to end"}},
			{"Shipped", []string{"Deploy %s", "Verify %s in production"}},
		},
	},
	accountable.DomainGrowth: {
		keywords: []string{"growth", "marketing", "acquisition", "seo", "campaign", "funnel", "retention", "onboarding",
			"activation", "newsletter", "content", "announce", "launch"},
		lane: "Growth", goal: "Bring the outcome to the people it is for and measure the uptake",
		deliverables: []string{"Launch plan", "Uptake report"}, hours: 10,
		milestones: []milestoneTemplate{
			{"Launch planned", []string{"Plan the launch of %s", "Prepare the announcement of %s"}},
			{"Uptake measured", []string{"Measure the uptake of %s", "Report on the uptake of %s"}},
		},
	},
	accountable.DomainSales: {
		keywords: []string{"sales", "pipeline", "lead", "deal", "prospect", "crm", "pricing", "partner", "revenue", "quota"},
		lane:     "Sales", goal: "Turn the outcome into pipeline and revenue",
		deliverables: []string{"Sales brief", "Pipeline review"}, hours: 8,
		milestones: []milestoneTemplate{
			{"Sales ready", []string{"Write the sales brief for %s", "Brief the sales team on %s"}},
			{"Pipeline reviewed", []string{"Review the pipeline of %s"}},
		},
	},
	accountable.DomainDesign: {
		keywords: []string{"design", "ux", "ui ", "prototype", "wireframe", "brand", "visual", "accessib", "usability"},
		lane:     "Design", goal: "Shape how people experience the outcome",
		deliverables: []string{"Prototype", "Usability findings"}, hours: 16,
		milestones: []milestoneTemplate{
			{"Prototype ready", []string{"Sketch the flows of %s", "Build a prototype of %s"}},
			{"Design validated", []string{"Test the prototype of %s with users", "Hand over the final design of %s"}},
		},
	},
	accountable.DomainOperations: {
		keywords: []string{"operation", "process", "support", "compliance", "finance", "hiring", "vendor", "logistic",
			"report", "policy", "procure"},
		lane: "Operations", goal: "Make the outcome run reliably and accountably",
		deliverables: []string{"Runbook", "Operating report"}, hours: 10,
		milestones: []milestoneTemplate{
			{"Operations ready", []string{"Write the runbook of %s", "Train the people who operate %s"}},
			{"Running", []string{"Review the first weeks of %s"}},
		},
	},
}
