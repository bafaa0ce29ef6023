package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/swaggest/jsonschema-go"

	"github.com/accountablework/accountable"
)

// ModelConfig configures the model planner.
type ModelConfig struct {
	APIKey  string // OPENAI_API_KEY
	BaseURL string // OPENAI_BASE_URL: any OpenAI-compatible server; empty for OpenAI's
	Model   string // OPENAI_MODEL: the model of every tier without its own
	// TierModels name a model per tier (OPENAI_MODEL_BALANCED, OPENAI_MODEL_PRECISION).
	TierModels map[accountable.ModelTier]string
}

// DefaultModel is the model used when OPENAI_MODEL is not set.
const DefaultModel = "gpt-4o-mini"

// Model plans with a chat completions model through openai-go, asking for structured
// output under a strict JSON schema derived from the plan types. What it answers is
// decoded strictly and checked with Plan.Validate; anything malformed, off the schema, or
// a refusal is an error (ErrModelOutput, ErrModelRefused) and nothing of it is kept: the
// workflow retries the activity, a bounded number of times. openai-go's own retries are
// off, so that one place (Temporal) decides retries.
type Model struct {
	client openai.Client
	cfg    ModelConfig
}

// NewModel returns the model planner.
func NewModel(cfg ModelConfig) *Model {
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	opts := []option.RequestOption{option.WithAPIKey(cfg.APIKey), option.WithMaxRetries(0)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	return &Model{client: openai.NewClient(opts...), cfg: cfg}
}

// Errors of a model's answer. Both are worth a retry: a model answers differently.
var (
	ErrModelOutput  = errors.New("planner: the model's answer is not a valid plan")
	ErrModelRefused = errors.New("planner: the model refused")
)

// modelFor returns the model of a tier.
func (m *Model) modelFor(tier accountable.ModelTier) string {
	if name := m.cfg.TierModels[tier]; name != "" {
		return name
	}
	return m.cfg.Model
}

// Plan asks the model for the plan of in.
func (m *Model) Plan(ctx context.Context, in accountable.ProposeInitiative) (accountable.GeneratedPlan, error) {
	request, err := json.Marshal(in)
	if err != nil {
		return accountable.GeneratedPlan{}, err
	}
	model := m.modelFor(in.Tier())
	completion, err := m.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: shared.ChatModel(model),
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(systemPrompt(in)),
			openai.UserMessage(string(request)),
		},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name: "initiative_plan", Strict: openai.Bool(true), Schema: outputSchema,
				Description: openai.String("The plan of an initiative: its summary and workstreams."),
			},
		}},
	})
	if err != nil {
		return accountable.GeneratedPlan{}, fmt.Errorf("planner: chat completion: %w", err)
	}
	if len(completion.Choices) == 0 {
		return accountable.GeneratedPlan{}, fmt.Errorf("%w: no choices", ErrModelOutput)
	}
	choice := completion.Choices[0]
	if choice.Message.Refusal != "" {
		return accountable.GeneratedPlan{}, fmt.Errorf("%w: %s", ErrModelRefused, clip(choice.Message.Refusal, 200))
	}
	if choice.FinishReason != "" && choice.FinishReason != "stop" {
		return accountable.GeneratedPlan{}, fmt.Errorf("%w: finish reason %q", ErrModelOutput, choice.FinishReason)
	}
	var out modelOutput
	if err := jsonv2.Unmarshal([]byte(choice.Message.Content), &out, jsonv2.RejectUnknownMembers(true)); err != nil {
		return accountable.GeneratedPlan{}, fmt.Errorf("%w: %v", ErrModelOutput, err)
	}
	plan, err := mergeModelPlan(in, out)
	if err != nil {
		return accountable.GeneratedPlan{}, fmt.Errorf("%w: %v", ErrModelOutput, err)
	}
	if completion.Model != "" {
		model = completion.Model
	}
	tokensIn, tokensOut := completion.Usage.PromptTokens, completion.Usage.CompletionTokens
	return accountable.GeneratedPlan{Plan: plan, Source: accountable.AssignmentModel, Receipt: accountable.GenerationReceipt{
		Provider: "openai", Model: model, TokensIn: tokensIn, TokensOut: tokensOut,
		CostUSD: GenerationCostUSD(model, tokensIn, tokensOut),
	}}, nil
}

// modelOutput is what the model is asked for (its JSON schema is outputSchema).
type modelOutput struct {
	Summary     string            `json:"summary" description:"Two or three sentences on what the initiative delivers."`
	Workstreams []modelWorkstream `json:"workstreams"`
}

type modelWorkstream struct {
	Name                  string                         `json:"name"`
	Goal                  string                         `json:"goal"`
	Domain                accountable.Domain             `json:"domain"`
	AgentID               rosterAgentID                  `json:"agent_id" description:"The roster agent for the workstream, or an empty string for none."`
	Confidence            float64                        `json:"confidence" minimum:"0" maximum:"1"`
	Rationale             string                         `json:"rationale"`
	ExpectedTokens        int64                          `json:"expected_tokens" minimum:"0"`
	ExpectedDurationHours float64                        `json:"expected_duration_hours" minimum:"0"`
	ExpectedBudgetUSD     float64                        `json:"expected_budget_usd" minimum:"0"`
	DependsOn             []string                       `json:"depends_on"`
	Deliverables          []string                       `json:"deliverables"`
	Milestones            []accountable.PlannedMilestone `json:"milestones"`
}

// rosterAgentID is a roster agent's id, or "" for none.
type rosterAgentID string

// Enum lists the roster's ids and "".
func (rosterAgentID) Enum() []any {
	out := []any{""}
	for _, d := range accountable.Domains {
		out = append(out, roster[d].id)
	}
	return out
}

// outputSchema is the strict JSON schema of modelOutput: every property required, no
// other properties, and no string-length keywords (strict structured output does not take
// them; Plan.Validate checks the bounds after).
var outputSchema = func() map[string]any {
	var r jsonschema.Reflector
	s, err := r.Reflect(modelOutput{}, jsonschema.InlineRefs,
		jsonschema.InterceptProp(func(p jsonschema.InterceptPropParams) error {
			if p.Processed && !slices.Contains(p.ParentSchema.Required, p.Name) {
				p.ParentSchema.Required = append(p.ParentSchema.Required, p.Name)
			}
			return nil
		}),
		jsonschema.InterceptSchema(func(p jsonschema.InterceptSchemaParams) (bool, error) {
			if p.Processed && p.Value.Kind() == reflect.Struct {
				p.Schema.WithAdditionalProperties(jsonschema.SchemaOrBool{TypeBoolean: ptr(false)})
			}
			return false, nil
		}))
	if err != nil {
		panic(err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		panic(err)
	}
	stripKeywords(m, "minLength", "maxLength", "$schema")
	return m
}()

func ptr[T any](v T) *T { return &v }

func stripKeywords(v any, keys ...string) {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range keys {
			delete(t, k)
		}
		for _, x := range t {
			stripKeywords(x, keys...)
		}
	case []any:
		for _, x := range t {
			stripKeywords(x, keys...)
		}
	}
}

// systemPrompt tells the model the task and the request's bounds.
func systemPrompt(in accountable.ProposeInitiative) string {
	var b strings.Builder
	b.WriteString("You plan initiatives for a team of people and AI agents. The user message is the request as JSON: ")
	b.WriteString("a title, an optional summary and prompt, goal ids, context, and optional explicit workstreams. ")
	b.WriteString("Answer with the plan in the required JSON schema.\n")
	fmt.Fprintf(&b, "- Return every explicit workstream under its exact name, filling only what it leaves out; keep what it gives.\n")
	switch in.DepthOr() {
	case accountable.DepthInitiative:
		b.WriteString("- Depth is initiative: add no workstreams of your own, and give no milestones.\n")
	case accountable.DepthWorkstreams:
		fmt.Fprintf(&b, "- Depth is workstreams: at most %d workstreams in all; milestones only where an explicit workstream gives them.\n", in.MaxWorkstreams())
	default:
		fmt.Fprintf(&b, "- Depth is full: at most %d workstreams in all, each with 1 to 5 milestones of 1 to 5 concrete tasks.\n", in.MaxWorkstreams())
	}
	if in.AssignsAgents() {
		b.WriteString("- Assign each workstream the roster agent of its domain (agent-<domain>), with your confidence (0 to 1) and the rationale.\n")
	} else {
		b.WriteString("- Do not assign agents: agent_id is the empty string.\n")
	}
	fmt.Fprintf(&b, "- Estimate tokens (about %d per agent hour), hours and budget in USD for each workstream.\n", TokensPerAgentHour)
	b.WriteString("- depends_on names other workstreams of the plan. Names are unique, at most 200 characters.\n")
	return b.String()
}

// mergeModelPlan makes the plan of the model's answer: explicit workstreams keep what the
// caller gave (the model fills the rest), the bounds of the request hold, and the result
// passes Plan.Validate.
func mergeModelPlan(in accountable.ProposeInitiative, out modelOutput) (accountable.Plan, error) {
	depth := in.DepthOr()
	plan := accountable.Plan{
		Initiative:  accountable.PlannedInitiative{Title: in.Title, Summary: out.Summary, GoalIDs: nonNil(in.GoalIDs)},
		Workstreams: []accountable.PlannedWorkstream{},
	}
	if in.Summary != nil && *in.Summary != "" {
		plan.Initiative.Summary = *in.Summary
	}
	byName := map[string]modelWorkstream{}
	for _, w := range out.Workstreams {
		byName[w.Name] = w
	}
	explicit := map[string]bool{}
	for _, e := range in.Workstreams {
		w, ok := byName[e.Name]
		if !ok {
			return plan, fmt.Errorf("the explicit workstream %q is missing", clip(e.Name, 80))
		}
		explicit[e.Name] = true
		plan.Workstreams = append(plan.Workstreams, overlayExplicit(in, e, fromModel(in, w, accountable.WorkstreamExplicit)))
	}
	if depth != accountable.DepthInitiative {
		for _, w := range out.Workstreams {
			if explicit[w.Name] {
				continue
			}
			pw := fromModel(in, w, accountable.WorkstreamGenerated)
			if depth != accountable.DepthFull {
				pw.Milestones = []accountable.PlannedMilestone{}
			}
			plan.Workstreams = append(plan.Workstreams, pw)
		}
	}
	if n := len(plan.Workstreams); n > in.MaxWorkstreams() {
		return plan, fmt.Errorf("%d workstreams, more than the %d asked for", n, in.MaxWorkstreams())
	}
	return plan, plan.Validate(depth)
}

func fromModel(in accountable.ProposeInitiative, w modelWorkstream, source accountable.WorkstreamSource) accountable.PlannedWorkstream {
	pw := accountable.PlannedWorkstream{
		Name: w.Name, Goal: w.Goal, Domain: w.Domain, Confidence: w.Confidence, Rationale: w.Rationale,
		ExpectedTokens: w.ExpectedTokens, ExpectedDurationHours: w.ExpectedDurationHours, ExpectedBudgetUSD: w.ExpectedBudgetUSD,
		DependsOn: nonNil(w.DependsOn), Deliverables: nonNil(w.Deliverables), Milestones: nonNil(w.Milestones), Source: source,
	}
	for i := range pw.Milestones {
		pw.Milestones[i].Tasks = nonNil(pw.Milestones[i].Tasks)
	}
	if a, ok := rosterByID[string(w.AgentID)]; ok && in.AssignsAgents() {
		pw.AgentID, pw.AgentName = ptr(a.id), ptr(a.name)
	} else if !in.AssignsAgents() {
		pw.Confidence, pw.Rationale = 0, "Agents are not assigned (agent_assignment: none)."
	}
	return pw
}

// overlayExplicit keeps what the caller gave of an explicit workstream.
func overlayExplicit(in accountable.ProposeInitiative, e accountable.ExplicitWorkstream, pw accountable.PlannedWorkstream) accountable.PlannedWorkstream {
	if e.Goal != nil {
		pw.Goal = *e.Goal
	}
	if e.DomainHint != nil {
		if d := accountable.Domain(strings.ToLower(strings.TrimSpace(*e.DomainHint))); slices.Contains(accountable.Domains, d) {
			pw.Domain = d
		}
	}
	if e.AgentID != nil {
		id, name := *e.AgentID, *e.AgentID
		if a, ok := rosterByID[id]; ok {
			name = a.name
		}
		pw.AgentID, pw.AgentName, pw.Confidence, pw.Rationale = &id, &name, 1, "Assigned by the caller."
	}
	pw.ExpectedTokens = orDefault(e.ExpectedTokens, pw.ExpectedTokens)
	pw.ExpectedDurationHours = orDefault(e.ExpectedDurationHours, pw.ExpectedDurationHours)
	pw.ExpectedBudgetUSD = orDefault(e.ExpectedBudgetUSD, pw.ExpectedBudgetUSD)
	if len(e.DependsOn) > 0 {
		pw.DependsOn = slices.Clone(e.DependsOn)
	}
	if len(e.Deliverables) > 0 {
		pw.Deliverables = slices.Clone(e.Deliverables)
	}
	if len(e.Milestones) > 0 {
		pw.Milestones = pw.Milestones[:0:0]
		for _, m := range e.Milestones {
			pw.Milestones = append(pw.Milestones, explicitMilestone(m))
		}
	} else if in.DepthOr() != accountable.DepthFull {
		pw.Milestones = []accountable.PlannedMilestone{}
	}
	return pw
}

// ModelPrice is what a model costs, in USD per million tokens.
type ModelPrice struct{ In, Out float64 }

// ModelPrices is the price table of generation receipts (OpenAI's list prices for
// standard processing; docs/architecture.md states the date). A model is priced by the longest entry
// its name starts with; a model not in the table (a local server's) costs 0.
var ModelPrices = map[string]ModelPrice{
	"gpt-4o-mini":  {0.15, 0.60},
	"gpt-4o":       {2.50, 10.00},
	"gpt-4.1-nano": {0.10, 0.40},
	"gpt-4.1-mini": {0.40, 1.60},
	"gpt-4.1":      {2.00, 8.00},
	"gpt-5-nano":   {0.05, 0.40},
	"gpt-5-mini":   {0.25, 2.00},
	"gpt-5":        {1.25, 10.00},
	"o4-mini":      {1.10, 4.40},
}

// GenerationCostUSD prices a generation from the table, rounded to a millionth of a dollar.
func GenerationCostUSD(model string, tokensIn, tokensOut int64) float64 {
	names := make([]string, 0, len(ModelPrices))
	for name := range ModelPrices {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	for _, name := range names {
		if strings.HasPrefix(model, name) {
			p := ModelPrices[name]
			usd := (float64(tokensIn)*p.In + float64(tokensOut)*p.Out) / 1e6
			return float64(int64(usd*1e6+0.5)) / 1e6
		}
	}
	return 0
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
