package store

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/projection"
)

// The projections read ledger_events and no other table (see projection/): each is one
// snapshot of aggregate queries over the workspace's events of a few types. Their cost grows
// with the events of the period (all of history when it is open), so each is a long read
// (longread.go): on the long-read pool, one at a time per workspace.

// projectionEvents is the predicate of the partial index ledger_events_projection
// (migration 018), written out in each query so that the planner can prove the query's rows
// are in the index (a parameter, event_type = ANY($n), alone would not let it use a partial
// index). A test holds it to projection.EventTypes.
const projectionEvents = `event_type IN ('work.completed', 'receipt.imported', 'run.finalized', 'decision.proposed',
	'decision.approved', 'decision.declined', 'artifact.created', 'episode.recorded', 'initiative_proposal.generated')`

// WorkLedgerSQL is WorkLedger's query (exported for the bare baseline of make bench). Its
// first half counts every type but run.finalized from the index alone (an index-only
// scan: about 7x faster than reading 100,000 rows); only runs are read from the table, for
// their cost. $3 is the counted types, run.finalized apart.
const WorkLedgerSQL = `SELECT width_bucket(occurred_at, $2::timestamptz[]), event_type, count(*), 0::bigint, max(occurred_at)
	FROM ledger_events
	WHERE workspace_id = $1 AND ` + projectionEvents + ` AND event_type = ANY($3)
		AND occurred_at >= $4 AND occurred_at < $5
	GROUP BY 1, 2
	UNION ALL
	SELECT width_bucket(occurred_at, $2::timestamptz[]), 'run.finalized', count(*),
		COALESCE(sum((payload->>'cost_cents')::bigint), 0)::bigint, max(occurred_at)
	FROM ledger_events
	WHERE workspace_id = $1 AND ` + projectionEvents + ` AND event_type = 'run.finalized'
		AND occurred_at >= $4 AND occurred_at < $5
	GROUP BY 1`

// WorkLedgerCountedTypes ($3 of WorkLedgerSQL) are the work-ledger's types counted from the index: all but runs.
var WorkLedgerCountedTypes = slices.DeleteFunc(slices.Clone(projection.WorkLedgerEventTypes), func(t string) bool {
	return t == accountable.EventRunFinalized
})

// periodBounds returns a [from, to) range for SQL (open ends as -infinity/infinity).
func periodBounds(p accountable.ProjectionPeriod) (any, any) {
	var from, to any = "-infinity", "infinity"
	if p.From != nil {
		from = p.From.Time
	}
	if p.To != nil {
		to = p.To.Time
	}
	return from, to
}

// freshnessOf finishes a projection's freshness from its queries' counts.
type freshnessOf struct {
	n      int64
	latest *time.Time
}

func (f *freshnessOf) add(n int64, latest *time.Time) {
	f.n += n
	if latest != nil && (f.latest == nil || latest.After(*f.latest)) {
		f.latest = latest
	}
}

// WorkLedger counts the work-ledger events of the workspace in each bucket of w.
func (db *DB) WorkLedger(ctx context.Context, workspaceID string, w projection.WorkLedgerWindow) (accountable.WorkLedgerProjection, error) {
	p := projection.NewWorkLedger(w)
	var fresh freshnessOf
	err := db.projectionSnapshot(ctx, workspaceID, func(q pgx.Tx) error {
		p, fresh = projection.NewWorkLedger(w), freshnessOf{}
		rows, err := q.Query(ctx, WorkLedgerSQL,
			workspaceID, w.Bounds, WorkLedgerCountedTypes, w.Bounds[0], w.Bounds[len(w.Bounds)-1])
		if err != nil {
			return err
		}
		var (
			bucket    int
			eventType string
			n, cost   int64
			latest    time.Time
		)
		_, err = pgx.ForEachRow(rows, []any{&bucket, &eventType, &n, &cost, &latest}, func() error {
			if bucket < 1 || bucket > len(p.Buckets) {
				return nil // outside the window (cannot happen with the range above)
			}
			projection.Count(&p.Buckets[bucket-1].WorkLedgerCounts, eventType, n, cost)
			projection.Count(&p.Totals, eventType, n, cost)
			l := latest
			fresh.add(n, &l)
			return nil
		})
		return err
	})
	if err != nil {
		return p, mapError(err)
	}
	p.Freshness = projection.NewFreshness(accountable.Now(), fresh.n, fresh.latest)
	return p, nil
}

// Adoption summarises the episodes recorded per process in the period.
func (db *DB) Adoption(ctx context.Context, workspaceID string, period accountable.ProjectionPeriod) (accountable.AdoptionProjection, error) {
	p := accountable.AdoptionProjection{Projection: "adoption", Period: period, Processes: []accountable.AdoptionProcess{},
		Limitations: projection.AdoptionLimitations}
	from, to := periodBounds(period)
	now := accountable.Now()
	var fresh freshnessOf
	err := db.projectionSnapshot(ctx, workspaceID, func(q pgx.Tx) error {
		p.Processes, fresh = []accountable.AdoptionProcess{}, freshnessOf{}
		rows, err := q.Query(ctx, `SELECT payload->'processRef'->>'id' AS process, count(*),
				count(DISTINCT payload->>'caseId'), count(DISTINCT (occurred_at AT TIME ZONE 'UTC')::date),
				min(occurred_at), max(occurred_at),
				count(*) FILTER (WHERE occurred_at >= $4::timestamptz - interval '30 days'),
				count(*) FILTER (WHERE occurred_at >= $4::timestamptz - interval '60 days' AND occurred_at < $4::timestamptz - interval '30 days'),
				count(*) FILTER (WHERE payload->>'outcome' = 'succeeded'),
				count(*) FILTER (WHERE payload->>'outcome' = 'failed'),
				count(*) FILTER (WHERE payload->>'outcome' = 'abandoned'),
				count(*) FILTER (WHERE payload->>'outcome' = 'in_progress')
			FROM ledger_events
			WHERE workspace_id = $1 AND `+projectionEvents+` AND event_type = 'episode.recorded'
				AND occurred_at >= $2 AND occurred_at < $3
			GROUP BY 1 ORDER BY 1`, workspaceID, from, to, now)
		if err != nil {
			return err
		}
		var (
			a                                        accountable.AdoptionProcess
			first, last                              time.Time
			succeeded, failed, abandoned, inProgress int64
		)
		_, err = pgx.ForEachRow(rows, []any{&a.ProcessID, &a.Episodes, &a.Cases, &a.ActiveDays, &first, &last, &a.EpisodesLast30,
			&a.EpisodesPrev30, &succeeded, &failed, &abandoned, &inProgress}, func() error {
			a.FirstRecorded, a.LastRecorded = accountable.TimeOf(first), accountable.TimeOf(last)
			a.Outcomes = map[string]int64{string(accountable.EpisodeSucceeded): succeeded, string(accountable.EpisodeFailed): failed,
				string(accountable.EpisodeAbandoned): abandoned, string(accountable.EpisodeInProgress): inProgress}
			projection.FinishAdoption(&a)
			p.Processes = append(p.Processes, a)
			l := last
			fresh.add(a.Episodes, &l)
			a = accountable.AdoptionProcess{}
			return nil
		})
		if err != nil || len(p.Processes) == 0 {
			return err
		}
		// Names from the processes' first events (declared or discovered), by the
		// aggregate's chain index.
		ids := make([]string, len(p.Processes))
		for i, a := range p.Processes {
			ids[i] = a.ProcessID
		}
		names := map[string]string{}
		rows, err = q.Query(ctx, `SELECT aggregate_id, payload->'process'->>'name' FROM ledger_events
			WHERE workspace_id = $1 AND aggregate_type = $2 AND aggregate_id = ANY($3) AND aggregate_version = 1`,
			workspaceID, accountable.AggregateProcess, ids)
		if err != nil {
			return err
		}
		var id string
		var name *string
		if _, err := pgx.ForEachRow(rows, []any{&id, &name}, func() error {
			if name != nil {
				names[id] = *name
			}
			return nil
		}); err != nil {
			return err
		}
		for i := range p.Processes {
			if n, ok := names[p.Processes[i].ProcessID]; ok {
				p.Processes[i].Name = &n
			}
		}
		return nil
	})
	if err != nil {
		return p, mapError(err)
	}
	p.Freshness = projection.NewFreshness(now, fresh.n, fresh.latest)
	return p, nil
}

// ValueCase sets the cost of the period's receipts, runs and generations against the
// human-equivalent value of their hours. Sums are numeric in SQL, so that the figures do
// not depend on the order rows are summed in.
func (db *DB) ValueCase(ctx context.Context, workspaceID string, period accountable.ProjectionPeriod) (accountable.ValueCaseProjection, error) {
	v := accountable.ValueCaseProjection{Projection: "value-case", Period: period, Limitations: projection.ValueCaseLimitations}
	from, to := periodBounds(period)
	var fresh freshnessOf
	err := db.projectionSnapshot(ctx, workspaceID, func(q pgx.Tx) error {
		fresh = freshnessOf{}
		var (
			n      int64
			latest *time.Time
		)
		err := q.QueryRow(ctx, `SELECT
				count(*) FILTER (WHERE event_type = 'initiative_proposal.generated'),
				COALESCE(sum((payload->'economics'->>'expected_hours')::numeric) FILTER (WHERE event_type = 'initiative_proposal.generated'), 0)::float8,
				COALESCE(sum((payload->'economics'->>'expected_budget_usd')::numeric) FILTER (WHERE event_type = 'initiative_proposal.generated'), 0)::float8,
				COALESCE(sum((payload->'generation_receipt'->>'cost_usd')::numeric) FILTER (WHERE event_type = 'initiative_proposal.generated'), 0)::float8,
				count(*) FILTER (WHERE event_type IN ('work.completed', 'receipt.imported')),
				count(*) FILTER (WHERE `+receiptHours+` IS NOT NULL),
				COALESCE(sum(`+receiptHours+`), 0)::float8,
				COALESCE(sum(`+receiptCostCents+`), 0)::float8 / 100,
				count(*) FILTER (WHERE event_type = 'run.finalized'),
				COALESCE(sum((payload->>'cost_cents')::numeric) FILTER (WHERE event_type = 'run.finalized'), 0)::float8 / 100,
				count(*), max(occurred_at)
			FROM ledger_events
			WHERE workspace_id = $1 AND `+projectionEvents+`
				AND event_type IN ('initiative_proposal.generated', 'work.completed', 'receipt.imported', 'run.finalized')
				AND occurred_at >= $2 AND occurred_at < $3`, workspaceID, from, to).Scan(
			&v.Proposals.Count, &v.Proposals.ExpectedHours, &v.Proposals.ExpectedBudgetUSD, &v.Proposals.GenerationCostUSD,
			&v.Receipts.Count, &v.Receipts.WithMeasuredDuration, &v.Receipts.MeasuredHours, &v.Receipts.CostUSD,
			&v.Runs.Count, &v.Runs.CostUSD, &n, &latest)
		fresh.add(n, latest)
		return err
	})
	if err != nil {
		return v, mapError(err)
	}
	projection.FinishValueCase(&v)
	v.Freshness = projection.NewFreshness(accountable.Now(), fresh.n, fresh.latest)
	return v, nil
}

// receiptHours and receiptCostCents read a receipt event's measured hours and cost: a
// completion's receipt (measured_duration_hours, cost_cents), or an imported receipt's
// summary (its elapsed time from start to completion, and its reported total cost when
// that is in USD; other currencies are not converted, which the limitations say).
const (
	receiptHours = `(CASE event_type WHEN 'work.completed' THEN (payload->'receipt'->>'measured_duration_hours')::numeric
		WHEN 'receipt.imported' THEN (payload->'timestamps'->>'elapsed_ms')::numeric / 3600000 END)`
	receiptCostCents = `(CASE event_type WHEN 'work.completed' THEN (payload->'receipt'->>'cost_cents')::numeric
		WHEN 'receipt.imported' THEN CASE WHEN payload->'cost'->>'currency' = 'USD' THEN (payload->'cost'->>'total')::numeric * 100 END END)`
)

// MeterUsage totals the tokens and cost of the period's generations (per provider and
// model) and runs.
func (db *DB) MeterUsage(ctx context.Context, workspaceID string, period accountable.ProjectionPeriod) (accountable.MeterUsageProjection, error) {
	m := accountable.MeterUsageProjection{Projection: "meter-usage", Period: period, Generations: []accountable.MeterModel{},
		Limitations: projection.MeterUsageLimitations}
	from, to := periodBounds(period)
	var fresh freshnessOf
	err := db.projectionSnapshot(ctx, workspaceID, func(q pgx.Tx) error {
		m.Generations, fresh = []accountable.MeterModel{}, freshnessOf{}
		rows, err := q.Query(ctx, `SELECT COALESCE(payload->'generation_receipt'->>'provider', 'unknown'),
				COALESCE(payload->'generation_receipt'->>'model', 'unknown'), count(*),
				COALESCE(sum((payload->'generation_receipt'->>'tokens_in')::bigint), 0)::bigint,
				COALESCE(sum((payload->'generation_receipt'->>'tokens_out')::bigint), 0)::bigint,
				COALESCE(sum((payload->'generation_receipt'->>'cost_usd')::numeric), 0)::float8, max(occurred_at)
			FROM ledger_events
			WHERE workspace_id = $1 AND `+projectionEvents+` AND event_type = 'initiative_proposal.generated'
				AND occurred_at >= $2 AND occurred_at < $3
			GROUP BY 1, 2 ORDER BY 1, 2`, workspaceID, from, to)
		if err != nil {
			return err
		}
		var (
			g      accountable.MeterModel
			latest time.Time
		)
		if _, err := pgx.ForEachRow(rows, []any{&g.Provider, &g.Model, &g.Generations, &g.TokensIn, &g.TokensOut, &g.CostUSD, &latest}, func() error {
			m.Generations = append(m.Generations, g)
			l := latest
			fresh.add(g.Generations, &l)
			return nil
		}); err != nil {
			return err
		}
		var last *time.Time
		err = q.QueryRow(ctx, `SELECT count(*), COALESCE(sum((payload->>'cost_cents')::numeric), 0)::float8 / 100, max(occurred_at)
			FROM ledger_events
			WHERE workspace_id = $1 AND `+projectionEvents+` AND event_type = 'run.finalized'
				AND occurred_at >= $2 AND occurred_at < $3`, workspaceID, from, to).Scan(&m.Runs.Count, &m.Runs.CostUSD, &last)
		fresh.add(m.Runs.Count, last)
		return err
	})
	if err != nil {
		return m, mapError(err)
	}
	projection.FinishMeterUsage(&m)
	m.Freshness = projection.NewFreshness(accountable.Now(), fresh.n, fresh.latest)
	return m, nil
}
