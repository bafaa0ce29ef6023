package accountable

import (
	"fmt"
	"strings"
	"time"
)

// Projections are figures folded from the workspace's ledger events, and from nothing
// else: every number below is computed from accepted events when it is read (in one
// snapshot), so a database rebuilt from the ledger alone gives the same figures, and no
// figure can drift from the events it summarises. Each projection says what it cannot
// know (Limitations) and how fresh it is (Freshness).

// ProjectionEventTypes are the event types any projection reads. The ledger's partial
// index ledger_events_projection (migration 018) covers exactly these, so appends of other
// events pay nothing for it.
var ProjectionEventTypes = []string{EventWorkCompleted, EventReceiptImported, EventRunFinalized, EventDecisionProposed,
	EventDecisionApproved, EventDecisionDeclined, EventArtifactCreated, EventEpisodeRecorded, EventProposalGenerated}

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

// MaxProjectionBuckets bounds a work-ledger read (a year of days).
const MaxProjectionBuckets = 366

// defaultBuckets is how many buckets a work-ledger read covers when it names no start.
var defaultBuckets = map[BucketSize]int{BucketDay: 30, BucketWeek: 12, BucketMonth: 12}

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

// NewFreshness describes a projection computed now from n events, the newest at latest.
func NewFreshness(now time.Time, n int64, latest *time.Time) ProjectionFreshness {
	f := ProjectionFreshness{Mode: "computed_on_read", Source: "ledger", ComputedAt: TimeOf(now), EventsConsidered: n}
	if latest != nil {
		t := TimeOf(*latest)
		f.LatestEventAt = &t
	}
	return f
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

// WorkLedgerQuery is a read of the work-ledger projection.
type WorkLedgerQuery struct {
	Bucket   BucketSize
	TimeZone string
	From, To *time.Time
	Now      time.Time
}

// WorkLedgerWindow is a validated work-ledger query: the location and the bucket bounds
// (len(Bounds) = buckets + 1; bucket i is [Bounds[i], Bounds[i+1])).
type WorkLedgerWindow struct {
	Bucket   BucketSize
	Location *time.Location
	Bounds   []time.Time
}

// Window validates the query and lays out its buckets: starts at bucket boundaries of the
// time zone, from the bucket holding From (default: defaultBuckets before the one holding
// To) through the bucket holding the instant before To (default: now).
func (q WorkLedgerQuery) Window() (WorkLedgerWindow, error) {
	var is Issues
	if q.Bucket == "" {
		q.Bucket = BucketDay
	}
	if _, ok := defaultBuckets[q.Bucket]; !ok {
		is.Add("bucket", "is one of day, week, month")
	}
	if q.TimeZone == "" {
		q.TimeZone = "UTC"
	}
	loc, err := LoadTimeZone(q.TimeZone)
	if err != nil {
		is.Add("time_zone", "is an IANA time zone name such as Europe/Berlin")
	}
	if len(is) > 0 {
		return WorkLedgerWindow{}, is.Err()
	}
	to := q.Now
	if q.To != nil {
		to = *q.To
	}
	last := BucketStart(to.Add(-time.Microsecond), q.Bucket, loc)
	var first time.Time
	if q.From != nil {
		if !q.From.Before(to) {
			return WorkLedgerWindow{}, ValidationError(Issue{Path: "to", Message: "is after from"})
		}
		first = BucketStart(*q.From, q.Bucket, loc)
	} else {
		first = last
		for range defaultBuckets[q.Bucket] - 1 {
			first = BucketStart(first.Add(-time.Microsecond), q.Bucket, loc)
		}
	}
	w := WorkLedgerWindow{Bucket: q.Bucket, Location: loc}
	for b := first; !b.After(last); b = NextBucket(b, q.Bucket, loc) {
		if len(w.Bounds) == MaxProjectionBuckets {
			return WorkLedgerWindow{}, ValidationError(Issue{Path: "from",
				Message: fmt.Sprintf("is at most %d %ss before to", MaxProjectionBuckets, q.Bucket)})
		}
		w.Bounds = append(w.Bounds, b)
	}
	w.Bounds = append(w.Bounds, NextBucket(last, q.Bucket, loc))
	return w, nil
}

// LoadTimeZone loads an IANA time zone by name; names that reach outside the zone
// database ("../", absolute paths) and "Local" are refused.
func LoadTimeZone(name string) (*time.Location, error) {
	if name == "" || name == "Local" || strings.HasPrefix(name, "/") || strings.Contains(name, "..") || len(name) > 64 {
		return nil, fmt.Errorf("unknown time zone %q", name)
	}
	return time.LoadLocation(name)
}

// BucketStart returns the start, in loc, of the bucket holding t.
func BucketStart(t time.Time, size BucketSize, loc *time.Location) time.Time {
	l := t.In(loc)
	y, m, d := l.Date()
	switch size {
	case BucketMonth:
		d = 1
	case BucketWeek:
		d -= (int(l.Weekday()) + 6) % 7 // back to Monday
	}
	return time.Date(y, m, d, 0, 0, 0, 0, loc)
}

// NextBucket returns the start of the bucket after the one starting at start.
func NextBucket(start time.Time, size BucketSize, loc *time.Location) time.Time {
	l := start.In(loc)
	y, m, d := l.Date()
	switch size {
	case BucketMonth:
		return time.Date(y, m+1, 1, 0, 0, 0, 0, loc)
	case BucketWeek:
		return time.Date(y, m, d+7, 0, 0, 0, 0, loc)
	default:
		return time.Date(y, m, d+1, 0, 0, 0, 0, loc)
	}
}

// BucketLabel names a bucket in its own calendar: 2026-11-23, 2026-W48, 2026-11.
func BucketLabel(start time.Time, size BucketSize, loc *time.Location) string {
	l := start.In(loc)
	switch size {
	case BucketMonth:
		return l.Format("2006-01")
	case BucketWeek:
		y, w := l.ISOWeek()
		return fmt.Sprintf("%04d-W%02d", y, w)
	default:
		return l.Format("2006-01-02")
	}
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

// Add counts n events of type eventType carrying costCents.
func (c *WorkLedgerCounts) Add(eventType string, n, costCents int64) {
	switch eventType {
	case EventWorkCompleted:
		c.CompletionReceipts += n
		c.Receipts += n
	case EventReceiptImported:
		c.ImportedReceipts += n
		c.Receipts += n
	case EventRunFinalized:
		c.RunsFinalized += n
		c.RunCostCents += costCents
	case EventDecisionProposed:
		c.DecisionsProposed += n
	case EventDecisionApproved, EventDecisionDeclined:
		c.DecisionsResolved += n
	case EventArtifactCreated:
		c.Artifacts += n
	}
}

// WorkLedgerEventTypes are the events the work ledger counts.
var WorkLedgerEventTypes = []string{EventWorkCompleted, EventReceiptImported, EventRunFinalized, EventDecisionProposed,
	EventDecisionApproved, EventDecisionDeclined, EventArtifactCreated}

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

// NewWorkLedger lays out the empty buckets of a window.
func NewWorkLedger(w WorkLedgerWindow) WorkLedgerProjection {
	p := WorkLedgerProjection{Projection: "work-ledger", Bucket: w.Bucket, TimeZone: w.Location.String(),
		From: TimeOf(w.Bounds[0]), To: TimeOf(w.Bounds[len(w.Bounds)-1]), Buckets: make([]WorkLedgerBucket, len(w.Bounds)-1),
		Limitations: []string{
			"Counts events as the ledger accepted them; a run's cost is the cost reported when it was finalized.",
			"Imported receipts are producer-reported claims: they are counted, not verified.",
			"Buckets follow the named time zone's calendar (weeks start on Monday); an event belongs to the bucket of its occurred_at.",
		}}
	for i := range p.Buckets {
		p.Buckets[i] = WorkLedgerBucket{Label: BucketLabel(w.Bounds[i], w.Bucket, w.Location), Start: TimeOf(w.Bounds[i]), End: TimeOf(w.Bounds[i+1])}
	}
	return p
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

// Finish derives the success rate from the outcomes.
func (a *AdoptionProcess) Finish() {
	ended := a.Outcomes[string(EpisodeSucceeded)] + a.Outcomes[string(EpisodeFailed)] + a.Outcomes[string(EpisodeAbandoned)]
	if ended > 0 {
		r := roundTo(float64(a.Outcomes[string(EpisodeSucceeded)])/float64(ended), 4)
		a.SuccessRate = &r
	}
}

// AdoptionProjection is GET /projections/adoption.
type AdoptionProjection struct {
	Projection  string              `json:"projection" enum:"adoption"`
	Period      ProjectionPeriod    `json:"period"`
	Processes   []AdoptionProcess   `json:"processes"`
	Limitations []string            `json:"limitations"`
	Freshness   ProjectionFreshness `json:"freshness"`
}

// AdoptionLimitations say what the adoption projection cannot know.
var AdoptionLimitations = []string{
	"Adoption counts recorded episodes (POST /episodes): work that happened without an episode is invisible here.",
	"Processes are listed by id with the name of their declaration or discovery event; later renames are not followed.",
	"The 30-day windows end at the time of the read and ignore the period filter.",
}

// HumanHourlyRateRangeUSD is the range at which hours of work are valued as people's work
// in the value case: a documented assumption around HumanHourlyRateUSD.
var HumanHourlyRateRangeUSD = USDRange{Low: 60, High: 150}

// USDRange is a low-high range of US dollars.
type USDRange struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// Hours values h hours at the range.
func (r USDRange) Hours(h float64) USDRange {
	return USDRange{Low: roundTo(h*r.Low, 2), High: roundTo(h*r.High, 2)}
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

// Finish rounds the sums and derives the value range.
func (v *ValueCaseProjection) Finish() {
	v.Currency, v.HourlyRateRange = "USD", HumanHourlyRateRangeUSD
	p, r := &v.Proposals, &v.Receipts
	p.ExpectedHours, p.ExpectedBudgetUSD, p.GenerationCostUSD = roundTo(p.ExpectedHours, 2), roundTo(p.ExpectedBudgetUSD, 2), roundTo(p.GenerationCostUSD, 6)
	p.HumanEquivalent = HumanHourlyRateRangeUSD.Hours(p.ExpectedHours)
	r.MeasuredHours, r.CostUSD = roundTo(r.MeasuredHours, 2), roundTo(r.CostUSD, 2)
	r.HumanEquivalent = HumanHourlyRateRangeUSD.Hours(r.MeasuredHours)
	v.Runs.CostUSD = roundTo(v.Runs.CostUSD, 2)
	v.AgentCostUSD = roundTo(r.CostUSD+v.Runs.CostUSD+p.GenerationCostUSD, 2)
	v.RealisedValueUSD = USDRange{Low: roundTo(r.HumanEquivalent.Low-v.AgentCostUSD, 2), High: roundTo(r.HumanEquivalent.High-v.AgentCostUSD, 2)}
}

// ValueCaseLimitations say what the value case cannot know.
var ValueCaseLimitations = []string{
	"Human-equivalent value is hours x an assumed hourly range (human_hourly_rate_range_usd), not a measured saving.",
	"Only receipts that report a measured duration are valued; receipts without one count toward cost only.",
	"Imported receipts are producer-reported claims taken as reported: their hours are the elapsed time from start to completion, their cost the reported total when it is in USD (other currencies are not converted).",
	"Proposals are plans: their human equivalent is what the plan would be worth if carried out, shown apart from realised value.",
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

// Finish totals the models and rounds the costs.
func (m *MeterUsageProjection) Finish() {
	m.BillingReady = false
	m.TokensIn, m.TokensOut, m.CostUSD = 0, 0, 0
	for i := range m.Generations {
		g := &m.Generations[i]
		g.CostUSD = roundTo(g.CostUSD, 6)
		m.TokensIn += g.TokensIn
		m.TokensOut += g.TokensOut
		m.CostUSD += g.CostUSD
	}
	m.Runs.CostUSD = roundTo(m.Runs.CostUSD, 2)
	m.CostUSD = roundTo(m.CostUSD+m.Runs.CostUSD, 6)
}

// MeterUsageLimitations say what the meter cannot know.
var MeterUsageLimitations = []string{
	"billingReady is false: usage is folded from ledger events for insight, not metered for invoicing.",
	"Token counts and costs are those the planner's generation receipts report; proposals generated before generation receipts were written to the ledger count as generations without tokens.",
	"Run cost is what each run reported when it was finalized (cost_cents).",
}
