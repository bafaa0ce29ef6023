package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/accountablework/accountable"
)

// Baseline is the deterministic planner used when no model is configured: the same request
// gives the same plan, byte for byte. It classifies the request's text into domains by
// keywords (a workstream per domain that the text mentions, most mentioned first), assigns
// each workstream the domain's agent of the roster, estimates from a per-domain table and,
// at depth full, expands each workstream into the domain's template of milestones and
// tasks. Explicit workstreams are kept as given; it fills only what they leave out.
type Baseline struct{}

// NewBaseline returns the baseline planner.
func NewBaseline() *Baseline { return &Baseline{} }

// BaselineModel names the baseline in generation receipts.
const BaselineModel = "baseline-v1"

// Plan makes the plan of in.
func (b *Baseline) Plan(_ context.Context, in accountable.ProposeInitiative) (accountable.GeneratedPlan, error) {
	plan := baselinePlan(in)
	if err := plan.Validate(in.DepthOr()); err != nil {
		return accountable.GeneratedPlan{}, fmt.Errorf("planner: baseline made an invalid plan: %w", err)
	}
	return accountable.GeneratedPlan{Plan: plan, Source: accountable.AssignmentBaseline,
		Receipt: accountable.GenerationReceipt{Provider: "baseline", Model: BaselineModel}}, nil
}

func baselinePlan(in accountable.ProposeInitiative) accountable.Plan {
	depth := in.DepthOr()
	text := requestText(in)
	plan := accountable.Plan{
		Initiative:  accountable.PlannedInitiative{Title: in.Title, Summary: initiativeSummary(in), GoalIDs: nonNil(in.GoalIDs)},
		Workstreams: []accountable.PlannedWorkstream{},
	}
	taken := map[string]bool{}
	covered := map[accountable.Domain]bool{}
	for _, w := range in.Workstreams {
		pw := fillExplicit(in, w, depth)
		plan.Workstreams = append(plan.Workstreams, pw)
		taken[pw.Name] = true
		covered[pw.Domain] = true
	}
	if depth == accountable.DepthInitiative {
		return plan
	}
	for _, d := range rankDomains(text) {
		if len(plan.Workstreams) >= in.MaxWorkstreams() {
			break
		}
		if covered[d.domain] {
			continue
		}
		name := uniqueName(domainProfiles[d.domain].lane, taken)
		taken[name] = true
		plan.Workstreams = append(plan.Workstreams, generated(in, d, name, depth))
	}
	return plan
}

// requestText is the lower-cased text the domains are recognised in.
func requestText(in accountable.ProposeInitiative) string {
	parts := []string{in.Title, deref(in.Summary), deref(in.Prompt)}
	if c := in.Context; c != nil {
		parts = append(parts, deref(c.Audience), deref(c.Notes))
		parts = append(parts, c.Constraints...)
		parts = append(parts, c.SuccessCriteria...)
	}
	return strings.ToLower(strings.Join(parts, "\n"))
}

func initiativeSummary(in accountable.ProposeInitiative) string {
	if in.Summary != nil && *in.Summary != "" {
		return *in.Summary
	}
	if in.Prompt != nil {
		if s := firstSentence(*in.Prompt); s != "" {
			return s
		}
	}
	return "Deliver " + in.Title + "."
}

// firstSentence returns the prompt up to its first full stop (at most 300 characters).
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, ".!?\n"); i >= 0 {
		s = s[:i+1]
	}
	r := []rune(strings.TrimSpace(s))
	if len(r) > 300 {
		r = r[:300]
	}
	return string(r)
}

type domainScore struct {
	domain accountable.Domain
	hits   int
}

// rankDomains orders the domains the text mentions, most mentioned first (ties in the
// roster's order); with none mentioned, product and engineering.
func rankDomains(text string) []domainScore {
	var out []domainScore
	for _, d := range accountable.Domains {
		n := 0
		for _, k := range domainProfiles[d].keywords {
			n += strings.Count(text, k)
		}
		if n > 0 {
			out = append(out, domainScore{d, n})
		}
	}
	slices.SortStableFunc(out, func(a, b domainScore) int { return b.hits - a.hits })
	if len(out) == 0 {
		out = []domainScore{{accountable.DomainProduct, 0}, {accountable.DomainEngineering, 0}}
	}
	return out
}

// classify returns the domain of an explicit workstream: its hint when it names one,
// otherwise the domain its name and goal mention most (engineering when none).
func classify(w accountable.ExplicitWorkstream) (accountable.Domain, int) {
	if w.DomainHint != nil {
		h := accountable.Domain(strings.ToLower(strings.TrimSpace(*w.DomainHint)))
		if slices.Contains(accountable.Domains, h) {
			return h, 1
		}
	}
	ranked := rankDomains(strings.ToLower(w.Name + "\n" + deref(w.Goal) + "\n" + deref(w.DomainHint)))
	if ranked[0].hits == 0 {
		return accountable.DomainEngineering, 0
	}
	return ranked[0].domain, ranked[0].hits
}

func fillExplicit(in accountable.ProposeInitiative, w accountable.ExplicitWorkstream, depth accountable.PlanDepth) accountable.PlannedWorkstream {
	domain, hits := classify(w)
	prof := domainProfiles[domain]
	pw := accountable.PlannedWorkstream{
		Name: w.Name, Goal: deref(w.Goal), Domain: domain, Source: accountable.WorkstreamExplicit,
		DependsOn: nonNil(w.DependsOn), Deliverables: nonNil(w.Deliverables), Milestones: []accountable.PlannedMilestone{},
	}
	if pw.Goal == "" {
		pw.Goal = fmt.Sprintf("%s for %s.", prof.goal, in.Title)
	}
	if len(w.Deliverables) == 0 {
		pw.Deliverables = slices.Clone(prof.deliverables)
	}
	hours := prof.hours
	pw.ExpectedDurationHours = orDefault(w.ExpectedDurationHours, hours)
	pw.ExpectedTokens = orDefault(w.ExpectedTokens, tokensFor(pw.ExpectedDurationHours))
	pw.ExpectedBudgetUSD = orDefault(w.ExpectedBudgetUSD, budgetFor(pw.ExpectedTokens, in.Tier()))
	switch {
	case w.AgentID != nil:
		id, name := *w.AgentID, *w.AgentID
		if a, ok := rosterByID[id]; ok {
			name = a.name
		}
		pw.AgentID, pw.AgentName = &id, &name
		pw.Confidence = 1
		pw.Rationale = "Assigned by the caller."
	case in.AssignsAgents():
		assign(&pw, domain, hits)
	default:
		pw.Rationale = "Agents are not assigned (agent_assignment: none)."
	}
	for _, m := range w.Milestones {
		pw.Milestones = append(pw.Milestones, explicitMilestone(m))
	}
	if len(w.Milestones) == 0 && depth == accountable.DepthFull {
		pw.Milestones = expand(prof, in.Title, pw.ExpectedDurationHours)
	}
	spreadHours(pw.Milestones, pw.ExpectedDurationHours)
	return pw
}

func generated(in accountable.ProposeInitiative, d domainScore, name string, depth accountable.PlanDepth) accountable.PlannedWorkstream {
	prof := domainProfiles[d.domain]
	pw := accountable.PlannedWorkstream{
		Name: name, Goal: fmt.Sprintf("%s for %s.", prof.goal, in.Title), Domain: d.domain, Source: accountable.WorkstreamGenerated,
		DependsOn: []string{}, Deliverables: slices.Clone(prof.deliverables), Milestones: []accountable.PlannedMilestone{},
		ExpectedDurationHours: prof.hours,
	}
	pw.ExpectedTokens = tokensFor(pw.ExpectedDurationHours)
	pw.ExpectedBudgetUSD = budgetFor(pw.ExpectedTokens, in.Tier())
	if in.AssignsAgents() {
		assign(&pw, d.domain, d.hits)
	} else {
		pw.Rationale = "Agents are not assigned (agent_assignment: none)."
	}
	if depth == accountable.DepthFull {
		pw.Milestones = expand(prof, in.Title, pw.ExpectedDurationHours)
		spreadHours(pw.Milestones, pw.ExpectedDurationHours)
	}
	return pw
}

// assign gives pw the domain's agent, with a confidence that grows with how often the
// request mentions the domain.
func assign(pw *accountable.PlannedWorkstream, domain accountable.Domain, hits int) {
	a := roster[domain]
	id, name := a.id, a.name
	pw.AgentID, pw.AgentName = &id, &name
	pw.Confidence = min(0.5+0.1*float64(min(hits, 4)), 0.9)
	if hits == 0 {
		pw.Rationale = fmt.Sprintf("No domain is named in the request; %s covers %s work by default.", a.name, domain)
		return
	}
	pw.Rationale = fmt.Sprintf("The request mentions %s work %d time(s); %s is the roster's %s agent.", domain, hits, a.name, domain)
}

// explicitMilestone is the planned milestone of one a caller named: its tasks are the
// titles given, at medium priority.
func explicitMilestone(m accountable.MilestoneRef) accountable.PlannedMilestone {
	pm := accountable.PlannedMilestone{Title: m.Title, Tasks: []accountable.PlannedTask{}}
	for _, t := range m.Tasks {
		pm.Tasks = append(pm.Tasks, accountable.PlannedTask{Title: t, Description: t + " (" + m.Title + ").", Priority: accountable.PriorityMedium})
	}
	return pm
}

// expand makes the domain's milestones and tasks for the initiative.
func expand(prof domainProfile, title string, hours float64) []accountable.PlannedMilestone {
	out := make([]accountable.PlannedMilestone, 0, len(prof.milestones))
	for _, m := range prof.milestones {
		pm := accountable.PlannedMilestone{Title: m.title, Tasks: make([]accountable.PlannedTask, 0, len(m.tasks))}
		for i, t := range m.tasks {
			prio := accountable.PriorityMedium
			if i == 0 {
				prio = accountable.PriorityHigh
			}
			pm.Tasks = append(pm.Tasks, accountable.PlannedTask{Title: fmt.Sprintf(t, title), Priority: prio,
				Description: fmt.Sprintf("%s (%s).", fmt.Sprintf(t, title), m.title)})
		}
		out = append(out, pm)
	}
	return out
}

// spreadHours divides a workstream's hours evenly over its tasks that have none.
func spreadHours(ms []accountable.PlannedMilestone, hours float64) {
	n := 0
	for _, m := range ms {
		n += len(m.Tasks)
	}
	if n == 0 {
		return
	}
	each := float64(int64(hours/float64(n)*100)) / 100
	for i := range ms {
		for j := range ms[i].Tasks {
			if ms[i].Tasks[j].EstimatedHours == 0 {
				ms[i].Tasks[j].EstimatedHours = each
			}
		}
	}
}

// tokensFor estimates the model tokens of an agent's hours of work.
func tokensFor(hours float64) int64 { return int64(hours * TokensPerAgentHour) }

// budgetFor prices tokens at the tier's rate, in USD rounded to cents.
func budgetFor(tokens int64, tier accountable.ModelTier) float64 {
	usd := float64(tokens) / 1e6 * TierUSDPerMillionTokens[tier]
	return float64(int64(usd*100+0.5)) / 100
}

func uniqueName(base string, taken map[string]bool) string {
	name := base
	for i := 2; taken[name]; i++ {
		name = fmt.Sprintf("%s %d", base, i)
	}
	return name
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func orDefault[T any](v *T, def T) T {
	if v != nil {
		return *v
	}
	return def
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return slices.Clone(s)
}
