package accountable

// Projections are figures folded from the workspace's ledger events, and from nothing
// else: every number below is computed from accepted events when it is read (in one
// snapshot), so a database rebuilt from the ledger alone gives the same figures, and no
// figure can drift from the events it summarises. Each projection says what it cannot
// know (Limitations) and how fresh it is (Freshness). The folding (the buckets of a time
// zone's calendar, the counts, the rounding) is package projection's; these are the
// shapes it fills.

// BucketSize is the width of a work-ledger bucket.
type BucketSize string

// Bucket sizes. Weeks start on Monday (ISO 8601).
const (
	BucketDay   BucketSize = "day"
	BucketWeek  BucketSize = "week"
	BucketMonth BucketSize = "month"
)

// Enum lists the bucket sizes.
func (BucketSize) Enum() []any { return []any{BucketDay, BucketWeek, BucketMonth} }

// ProjectionFreshness says how current a projection is.
type ProjectionFreshness struct {
	// Mode is computed_on_read: the figures are folded from the ledger by this read, so
	// they include every event committed before it began (lag 0).
	Mode       string `json:"mode" enum:"computed_on_read"`
	Source     string `json:"source" enum:"ledger"`
	ComputedAt Time   `json:"computed_at"`
	// EventsConsidered counts the ledger events the figures were folded from.
	EventsConsidered int64 `json:"events_considered" minimum:"0"`
	// LatestEventAt is when the newest of them occurred (null when there is none).
	LatestEventAt *Time `json:"latest_event_at"`
	LagSeconds    int64 `json:"lag_seconds" minimum:"0"`
}

// ProjectionPeriod is an optional [from, to) range of occurrence times.
type ProjectionPeriod struct {
	From *Time `json:"from"`
	To   *Time `json:"to"`
}

// Validate checks that the range is not reversed.
func (p ProjectionPeriod) Validate() error {
	var is Issues
	if p.From != nil && p.To != nil && !p.From.Before(p.To.Time) {
		is.Add("to", "is after from")
	}
	return is.Err()
}

// WorkLedgerCounts are the events of one bucket (or of the whole window).
type WorkLedgerCounts struct {
	// Receipts = CompletionReceipts (work completed here) + ImportedReceipts (producer-
	// reported receipts imported through POST /agent-work-receipts).
	Receipts           int64 `json:"receipts" minimum:"0"`
	CompletionReceipts int64 `json:"completion_receipts" minimum:"0"`
	ImportedReceipts   int64 `json:"imported_receipts" minimum:"0"`
	// RunsFinalized counts runs that reached an end (run.finalized), with their cost.
	RunsFinalized     int64 `json:"runs_finalized" minimum:"0"`
	RunCostCents      int64 `json:"run_cost_cents" minimum:"0"`
	DecisionsProposed int64 `json:"decisions_proposed" minimum:"0"`
	DecisionsResolved int64 `json:"decisions_resolved" minimum:"0"` // approved or declined
	Artifacts         int64 `json:"artifacts" minimum:"0"`
}

// WorkLedgerBucket is one time bucket of the work ledger.
type WorkLedgerBucket struct {
	Label string `json:"label"`
	Start Time   `json:"start"`
	End   Time   `json:"end"` // exclusive
	WorkLedgerCounts
}

// WorkLedgerProjection is GET /projections/work-ledger.
type WorkLedgerProjection struct {
	Projection  string              `json:"projection" enum:"work-ledger"`
	Bucket      BucketSize          `json:"bucket"`
	TimeZone    string              `json:"time_zone"`
	From        Time                `json:"from"`
	To          Time                `json:"to"`
	Buckets     []WorkLedgerBucket  `json:"buckets"`
	Totals      WorkLedgerCounts    `json:"totals"`
	Limitations []string            `json:"limitations"`
	Freshness   ProjectionFreshness `json:"freshness"`
}

// AdoptionProcess is one operating process's adoption, from its recorded episodes.
type AdoptionProcess struct {
	ProcessID string  `json:"process_id"`
	Name      *string `json:"name"` // from its declaration or discovery event; null when the ledger has none
	Episodes  int64   `json:"episodes" minimum:"0"`
	Cases     int64   `json:"cases" minimum:"0"` // distinct case ids
	// Outcomes counts episodes by outcome (succeeded, failed, abandoned, in_progress).
	Outcomes map[string]int64 `json:"outcomes"`
	// SuccessRate is succeeded / (succeeded + failed + abandoned); null before any ended.
	SuccessRate    *float64 `json:"success_rate"`
	ActiveDays     int64    `json:"active_days" minimum:"0"` // distinct UTC days with an episode recorded
	FirstRecorded  Time     `json:"first_recorded_at"`
	LastRecorded   Time     `json:"last_recorded_at"`
	EpisodesLast30 int64    `json:"episodes_last_30_days" minimum:"0"`
	EpisodesPrev30 int64    `json:"episodes_previous_30_days" minimum:"0"`
}

// AdoptionProjection is GET /projections/adoption.
type AdoptionProjection struct {
	Projection  string              `json:"projection" enum:"adoption"`
	Period      ProjectionPeriod    `json:"period"`
	Processes   []AdoptionProcess   `json:"processes"`
	Limitations []string            `json:"limitations"`
	Freshness   ProjectionFreshness `json:"freshness"`
}

// HumanHourlyRateRangeUSD is the range at which hours of work are valued as people's work
// in the value case: a documented assumption around HumanHourlyRateUSD.
var HumanHourlyRateRangeUSD = USDRange{Low: 60, High: 150}

// USDRange is a low-high range of US dollars.
type USDRange struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// ValueCaseProposals are the planned side: proposals' expected hours and budgets.
type ValueCaseProposals struct {
	Count             int64    `json:"count" minimum:"0"`
	ExpectedHours     float64  `json:"expected_hours"`
	ExpectedBudgetUSD float64  `json:"expected_budget_usd"`
	GenerationCostUSD float64  `json:"generation_cost_usd"`
	HumanEquivalent   USDRange `json:"human_equivalent_usd"`
}

// ValueCaseReceipts are the done side: completion and imported receipts.
type ValueCaseReceipts struct {
	Count int64 `json:"count" minimum:"0"`
	// WithMeasuredDuration counts the receipts that report hours; only they are valued.
	WithMeasuredDuration int64    `json:"with_measured_duration" minimum:"0"`
	MeasuredHours        float64  `json:"measured_hours"`
	CostUSD              float64  `json:"cost_usd"`
	HumanEquivalent      USDRange `json:"human_equivalent_usd"`
}

// ValueCaseRuns are the launches' runs and what they cost.
type ValueCaseRuns struct {
	Count   int64   `json:"count" minimum:"0"`
	CostUSD float64 `json:"cost_usd"`
}

// ValueCaseProjection is GET /projections/value-case.
type ValueCaseProjection struct {
	Projection       string              `json:"projection" enum:"value-case"`
	Period           ProjectionPeriod    `json:"period"`
	Currency         string              `json:"currency" enum:"USD"`
	HourlyRateRange  USDRange            `json:"human_hourly_rate_range_usd"`
	Proposals        ValueCaseProposals  `json:"proposals"`
	Receipts         ValueCaseReceipts   `json:"receipts"`
	Runs             ValueCaseRuns       `json:"runs"`
	AgentCostUSD     float64             `json:"agent_cost_usd"`     // receipts + runs + generation
	RealisedValueUSD USDRange            `json:"realised_value_usd"` // receipts' human equivalent - agent cost
	Limitations      []string            `json:"limitations"`
	Freshness        ProjectionFreshness `json:"freshness"`
}

// MeterModel is the generation usage of one provider and model.
type MeterModel struct {
	Provider    string  `json:"provider"`
	Model       string  `json:"model"`
	Generations int64   `json:"generations" minimum:"0"`
	TokensIn    int64   `json:"tokens_in" minimum:"0"`
	TokensOut   int64   `json:"tokens_out" minimum:"0"`
	CostUSD     float64 `json:"cost_usd"`
}

// MeterUsageProjection is GET /projections/meter-usage.
type MeterUsageProjection struct {
	Projection   string              `json:"projection" enum:"meter-usage"`
	Period       ProjectionPeriod    `json:"period"`
	BillingReady bool                `json:"billingReady"` // always false: these are usage figures, not invoices
	Generations  []MeterModel        `json:"generations"`
	Runs         ValueCaseRuns       `json:"runs"`
	TokensIn     int64               `json:"tokens_in" minimum:"0"`
	TokensOut    int64               `json:"tokens_out" minimum:"0"`
	CostUSD      float64             `json:"cost_usd"`
	Limitations  []string            `json:"limitations"`
	Freshness    ProjectionFreshness `json:"freshness"`
}
