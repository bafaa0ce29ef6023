// Package projection folds the figures of the projections (GET /projections/...) from the
// workspace's ledger events, and from nothing else: every number is computed from accepted
// events when it is read (in one snapshot, by the store), so a database rebuilt from the
// ledger alone gives the same figures, and no figure can drift from the events it
// summarises. It lays out the work ledger's buckets in a time zone's calendar, counts
// events into them, rounds and derives the sums, and says what each projection cannot
// know (its limitations) and how fresh it is. It also totals the economics of a plan, which
// proposals carry into the ledger for the value case. The shapes it fills are the root's
// (accountable.WorkLedgerProjection, accountable.ValueCaseProjection, ...).
package projection

import (
	"fmt"
	"strings"
	"time"

	"github.com/accountablework/accountable"
)

// EventTypes are the event types any projection reads. The ledger's partial index
// ledger_events_projection (migration 018) covers exactly these, so appends of other
// events pay nothing for it.
var EventTypes = []string{accountable.EventWorkCompleted, accountable.EventReceiptImported, accountable.EventRunFinalized,
	accountable.EventDecisionProposed, accountable.EventDecisionApproved, accountable.EventDecisionDeclined,
	accountable.EventArtifactCreated, accountable.EventEpisodeRecorded, accountable.EventProposalGenerated}

// MaxBuckets bounds a work-ledger read (a year of days).
const MaxBuckets = 366

// defaultBuckets is how many buckets a work-ledger read covers when it names no start.
var defaultBuckets = map[accountable.BucketSize]int{accountable.BucketDay: 30, accountable.BucketWeek: 12, accountable.BucketMonth: 12}

// NewFreshness describes a projection computed now from n events, the newest at latest.
func NewFreshness(now time.Time, n int64, latest *time.Time) accountable.ProjectionFreshness {
	f := accountable.ProjectionFreshness{Mode: "computed_on_read", Source: "ledger", ComputedAt: accountable.TimeOf(now),
		EventsConsidered: n}
	if latest != nil {
		t := accountable.TimeOf(*latest)
		f.LatestEventAt = &t
	}
	return f
}

// WorkLedgerQuery is a read of the work-ledger projection.
type WorkLedgerQuery struct {
	Bucket   accountable.BucketSize
	TimeZone string
	From, To *time.Time
	Now      time.Time
}

// WorkLedgerWindow is a validated work-ledger query: the location and the bucket bounds
// (len(Bounds) = buckets + 1; bucket i is [Bounds[i], Bounds[i+1])).
type WorkLedgerWindow struct {
	Bucket   accountable.BucketSize
	Location *time.Location
	Bounds   []time.Time
}

// Window validates the query and lays out its buckets: starts at bucket boundaries of the
// time zone, from the bucket holding From (default: defaultBuckets before the one holding
// To) through the bucket holding the instant before To (default: now).
func (q WorkLedgerQuery) Window() (WorkLedgerWindow, error) {
	var is accountable.Issues
	if q.Bucket == "" {
		q.Bucket = accountable.BucketDay
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
			return WorkLedgerWindow{}, accountable.ValidationError(accountable.Issue{Path: "to", Message: "is after from"})
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
		if len(w.Bounds) == MaxBuckets {
			return WorkLedgerWindow{}, accountable.ValidationError(accountable.Issue{Path: "from",
				Message: fmt.Sprintf("is at most %d %ss before to", MaxBuckets, q.Bucket)})
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
func BucketStart(t time.Time, size accountable.BucketSize, loc *time.Location) time.Time {
	l := t.In(loc)
	y, m, d := l.Date()
	switch size {
	case accountable.BucketMonth:
		d = 1
	case accountable.BucketWeek:
		d -= (int(l.Weekday()) + 6) % 7 // back to Monday
	}
	return time.Date(y, m, d, 0, 0, 0, 0, loc)
}

// NextBucket returns the start of the bucket after the one starting at start.
func NextBucket(start time.Time, size accountable.BucketSize, loc *time.Location) time.Time {
	l := start.In(loc)
	y, m, d := l.Date()
	switch size {
	case accountable.BucketMonth:
		return time.Date(y, m+1, 1, 0, 0, 0, 0, loc)
	case accountable.BucketWeek:
		return time.Date(y, m, d+7, 0, 0, 0, 0, loc)
	default:
		return time.Date(y, m, d+1, 0, 0, 0, 0, loc)
	}
}

// BucketLabel names a bucket in its own calendar: 2026-11-23, 2026-W48, 2026-11.
func BucketLabel(start time.Time, size accountable.BucketSize, loc *time.Location) string {
	l := start.In(loc)
	switch size {
	case accountable.BucketMonth:
		return l.Format("2006-01")
	case accountable.BucketWeek:
		y, w := l.ISOWeek()
		return fmt.Sprintf("%04d-W%02d", y, w)
	default:
		return l.Format("2006-01-02")
	}
}

// WorkLedgerEventTypes are the events the work ledger counts.
var WorkLedgerEventTypes = []string{accountable.EventWorkCompleted, accountable.EventReceiptImported,
	accountable.EventRunFinalized, accountable.EventDecisionProposed, accountable.EventDecisionApproved,
	accountable.EventDecisionDeclined, accountable.EventArtifactCreated}

// Count counts into c n events of type eventType carrying costCents.
func Count(c *accountable.WorkLedgerCounts, eventType string, n, costCents int64) {
	switch eventType {
	case accountable.EventWorkCompleted:
		c.CompletionReceipts += n
		c.Receipts += n
	case accountable.EventReceiptImported:
		c.ImportedReceipts += n
		c.Receipts += n
	case accountable.EventRunFinalized:
		c.RunsFinalized += n
		c.RunCostCents += costCents
	case accountable.EventDecisionProposed:
		c.DecisionsProposed += n
	case accountable.EventDecisionApproved, accountable.EventDecisionDeclined:
		c.DecisionsResolved += n
	case accountable.EventArtifactCreated:
		c.Artifacts += n
	}
}

// NewWorkLedger lays out the empty buckets of a window.
func NewWorkLedger(w WorkLedgerWindow) accountable.WorkLedgerProjection {
	p := accountable.WorkLedgerProjection{Projection: "work-ledger", Bucket: w.Bucket, TimeZone: w.Location.String(),
		From: accountable.TimeOf(w.Bounds[0]), To: accountable.TimeOf(w.Bounds[len(w.Bounds)-1]),
		Buckets: make([]accountable.WorkLedgerBucket, len(w.Bounds)-1),
		Limitations: []string{
			"Counts events as the ledger accepted them; a run's cost is the cost reported when it was finalized.",
			"Imported receipts are producer-reported claims: they are counted, not verified.",
			"Buckets follow the named time zone's calendar (weeks start on Monday); an event belongs to the bucket of its occurred_at.",
		}}
	for i := range p.Buckets {
		p.Buckets[i] = accountable.WorkLedgerBucket{Label: BucketLabel(w.Bounds[i], w.Bucket, w.Location),
			Start: accountable.TimeOf(w.Bounds[i]), End: accountable.TimeOf(w.Bounds[i+1])}
	}
	return p
}

// AdoptionLimitations say what the adoption projection cannot know.
var AdoptionLimitations = []string{
	"Adoption counts recorded episodes (POST /episodes): work that happened without an episode is invisible here.",
	"Processes are listed by id with the name of their declaration or discovery event; later renames are not followed.",
	"The 30-day windows end at the time of the read and ignore the period filter.",
}

// FinishAdoption derives a process's success rate from its outcomes.
func FinishAdoption(a *accountable.AdoptionProcess) {
	succeeded := a.Outcomes[string(accountable.EpisodeSucceeded)]
	ended := succeeded + a.Outcomes[string(accountable.EpisodeFailed)] + a.Outcomes[string(accountable.EpisodeAbandoned)]
	if ended > 0 {
		r := round(float64(succeeded)/float64(ended), 4)
		a.SuccessRate = &r
	}
}

// ValueCaseLimitations say what the value case cannot know.
var ValueCaseLimitations = []string{
	"Human-equivalent value is hours x an assumed hourly range (human_hourly_rate_range_usd), not a measured saving.",
	"Only receipts that report a measured duration are valued; receipts without one count toward cost only.",
	"Imported receipts are producer-reported claims taken as reported: their hours are the elapsed time from start to completion, their cost the reported total when it is in USD (other currencies are not converted).",
	"Proposals are plans: their human equivalent is what the plan would be worth if carried out, shown apart from realised value.",
}

// FinishValueCase rounds the value case's sums and derives its value range, valuing hours
// at accountable.HumanHourlyRateRangeUSD.
func FinishValueCase(v *accountable.ValueCaseProjection) {
	rate := accountable.HumanHourlyRateRangeUSD
	hours := func(h float64) accountable.USDRange {
		return accountable.USDRange{Low: round(h*rate.Low, 2), High: round(h*rate.High, 2)}
	}
	v.Currency, v.HourlyRateRange = "USD", rate
	p, r := &v.Proposals, &v.Receipts
	p.ExpectedHours, p.ExpectedBudgetUSD, p.GenerationCostUSD = round(p.ExpectedHours, 2), round(p.ExpectedBudgetUSD, 2), round(p.GenerationCostUSD, 6)
	p.HumanEquivalent = hours(p.ExpectedHours)
	r.MeasuredHours, r.CostUSD = round(r.MeasuredHours, 2), round(r.CostUSD, 2)
	r.HumanEquivalent = hours(r.MeasuredHours)
	v.Runs.CostUSD = round(v.Runs.CostUSD, 2)
	v.AgentCostUSD = round(r.CostUSD+v.Runs.CostUSD+p.GenerationCostUSD, 2)
	v.RealisedValueUSD = accountable.USDRange{Low: round(r.HumanEquivalent.Low-v.AgentCostUSD, 2),
		High: round(r.HumanEquivalent.High-v.AgentCostUSD, 2)}
}

// MeterUsageLimitations say what the meter cannot know.
var MeterUsageLimitations = []string{
	"billingReady is false: usage is folded from ledger events for insight, not metered for invoicing.",
	"Token counts and costs are those the planner's generation receipts report; proposals generated before generation receipts were written to the ledger count as generations without tokens.",
	"Run cost is what each run reported when it was finalized (cost_cents).",
}

// FinishMeterUsage totals the meter's models and rounds the costs.
func FinishMeterUsage(m *accountable.MeterUsageProjection) {
	m.BillingReady = false
	m.TokensIn, m.TokensOut, m.CostUSD = 0, 0, 0
	for i := range m.Generations {
		g := &m.Generations[i]
		g.CostUSD = round(g.CostUSD, 6)
		m.TokensIn += g.TokensIn
		m.TokensOut += g.TokensOut
		m.CostUSD += g.CostUSD
	}
	m.Runs.CostUSD = round(m.Runs.CostUSD, 2)
	m.CostUSD = round(m.CostUSD+m.Runs.CostUSD, 6)
}

// EconomicsOf totals a plan's workstreams and values its hours as people's work at
// accountable.HumanHourlyRateUSD: the economics a proposal carries, which the value case
// folds from the ledger.
func EconomicsOf(p accountable.Plan) accountable.Economics {
	var e accountable.Economics
	for _, w := range p.Workstreams {
		e.ExpectedTokens += w.ExpectedTokens
		e.ExpectedHours += w.ExpectedDurationHours
		e.ExpectedBudgetUSD += w.ExpectedBudgetUSD
	}
	e.ExpectedHours = round(e.ExpectedHours, 2)
	e.ExpectedBudgetUSD = round(e.ExpectedBudgetUSD, 2)
	e.HumanEquivalentUSD = round(e.ExpectedHours*accountable.HumanHourlyRateUSD, 2)
	e.ValueBasis = fmt.Sprintf("expected_hours x %.2f USD per hour of human work (the service's documented rate)", accountable.HumanHourlyRateUSD)
	return e
}

// round rounds f half away from zero to places decimal places.
func round(f float64, places int) float64 {
	p := 1.0
	for range places {
		p *= 10
	}
	if f >= 0 {
		return float64(int64(f*p+0.5)) / p
	}
	return -float64(int64(-f*p+0.5)) / p
}
