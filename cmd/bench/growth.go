package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/valyala/fasthttp"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/cursors"
	"github.com/accountablework/accountable/payload"
)

// The growth line: does the cost of the service grow with its ledger? One workspace ("Bench
// growth") is grown to each size of BENCH_GROWTH_EVENTS in turn (10,000, 100,000 and
// 1,000,000 events by default; the ledger_events table, shared by every workspace, then
// holds at least as many), and at each size the harness measures
//
//   - POST /work/{id}/complete at BENCH_GROWTH_CLIENTS clients (the complete line's
//     workload), completing tasks of that ledger picked at random across it (old and new
//     alike), with the memory of the service sampled as it runs;
//   - GET /events/stream, one client, a page of BENCH_PAGE_LIMIT events: the newest page (the
//     cursor of the event BENCH_PAGE_LIMIT from the end) and the first page (no cursor).
//
// The report compares the figures at the largest size with those at the smallest and flags
// any more than growthTolerance worse.
//
// Seeding is bulk, not through the API (1,000,000 POST /work at ~3,000 a second would take
// minutes, and the line runs three sizes): the harness builds what POST /work writes for a
// task, with the store's own event construction (the task, its work.created event with
// the RFC 8785 canonical payload, its payloadDigest and eventHash, version 1 without a
// previousHash, and its ledger head), and COPYs them in chunks, two at a time. The ledger
// stays valid and verifiable: `accountable ledger verify` checks the growth workspace after
// the first size is seeded and once more at the end of the line (every digest, hash, chain
// link and anchored head, with the completions made through the API in between). What
// bulk seeding leaves out is the idempotency record of each creation (it expires after a
// day; the ledger does not refer to it).

// growthTolerance is how much worse a figure may be at the largest ledger than at the
// smallest before the report flags it (a rate lower, a latency or memory higher).
const growthTolerance = 0.20

const (
	growthChunk       = 10000 // events per COPY transaction
	growthSeedWorkers = 2     // chunks built and copied at once
)

// growthTask is a seeded task the growth line may complete: its id and the instant of its
// version 1 (its version token is derived from them).
type growthTask struct {
	id      uuid.UUID
	updated int64 // UnixMicro
}

// growthPoint is the measurement at one size of the ledger.
type growthPoint struct {
	Target     int           // the size asked for
	Start, End int           // events in the growth workspace when the measurement began and ended
	Table      int           // events in ledger_events, every workspace, when it began
	Seeded     int           // events bulk-seeded to reach Target
	SeedTime   time.Duration // the seeding (COPY) alone
	VacuumTime time.Duration // VACUUM ANALYZE after it
	Complete   []sample
	Newest     []sample
	First      []sample
	Mem        []memSample
	WAL        []float64 // WAL bytes per completion, one per completion run (see walPosition)
	Notes      []string
}

// A completion run's WAL per completion (growthPoint.WAL) is the WAL the cluster wrote
// during the run (warm-up included; how far pg_current_wal_lsn() moved) over the
// completions it sent. After a checkpoint PostgreSQL writes a full-page image (about
// 8 KiB) for the first change of each page, and completions spread across a larger ledger
// change more distinct pages, so this can grow with the ledger while the service's own
// work does not. (pg_stat_wal's counters, which would count the images, are flushed by
// each backend up to a second later, too late for runs this short.)
//
// walPosition is the cluster's current WAL position.
func (b *bench) walPosition() (string, error) {
	var lsn string
	if err := b.db.QueryRow(b.ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		return "", fmt.Errorf("growth: reading the WAL position: %w", err)
	}
	return lsn, nil
}

// walSince is the WAL written since the position from.
func (b *bench) walSince(from string) (float64, error) {
	var n float64
	if err := b.db.QueryRow(b.ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::float8`, from).Scan(&n); err != nil {
		return 0, fmt.Errorf("growth: reading the WAL written: %w", err)
	}
	return n, nil
}

// seedTotal is the time spent seeding all sizes (COPY and VACUUM ANALYZE).
func seedTotal(pts []*growthPoint) time.Duration {
	var d time.Duration
	for _, pt := range pts {
		d += pt.SeedTime + pt.VacuumTime
	}
	return d
}

func (b *bench) growthLine() error {
	start := time.Now()
	defer func() {
		b.growthTook = time.Since(start)
		logf("growth: the line took %s", b.growthTook.Round(time.Second))
	}()
	var have int
	if err := b.db.QueryRow(b.ctx, `SELECT count(*) FROM ledger_events WHERE workspace_id = $1`, b.growth.WorkspaceID).Scan(&have); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(11, 1000000)) // the order of completions, not a secret
	for i, target := range b.s.GrowthEvents {
		if err := b.ctx.Err(); err != nil {
			return err
		}
		pt := &growthPoint{Target: target}
		b.growthPoints = append(b.growthPoints, pt)
		if missing := target - have; missing > 0 {
			logf("growth: seeding %d work.created events into the growth workspace (bulk COPY), to %d", missing, target)
			start := time.Now()
			if err := b.seedGrowth(missing); err != nil {
				return err
			}
			pt.Seeded, pt.SeedTime = missing, time.Since(start)
			start = time.Now()
			if err := b.analyze(); err != nil {
				return err
			}
			pt.VacuumTime = time.Since(start)
			logf("  seeded %d events in %s (%.0f events/s), VACUUM ANALYZE %s", missing, pt.SeedTime.Round(time.Millisecond),
				float64(missing)/pt.SeedTime.Seconds(), pt.VacuumTime.Round(time.Millisecond))
		} else if missing < 0 {
			pt.Notes = append(pt.Notes, fmt.Sprintf("the ledger already held %d events", have))
		}
		if i == 0 {
			if err := b.verifyGrowth(); err != nil {
				return err
			}
		}
		// The tasks not completed yet, in a random order: completions reach across the
		// whole ledger, its oldest tasks as well as its newest.
		rest := b.growthPool[b.growthNext:]
		rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
		if err := b.measureGrowth(pt); err != nil {
			return err
		}
		if err := b.db.QueryRow(b.ctx, `SELECT count(*) FROM ledger_events WHERE workspace_id = $1`, b.growth.WorkspaceID).Scan(&have); err != nil {
			return err
		}
		pt.End = have
	}
	return b.verifyGrowth()
}

// measureGrowth measures pt's size: BENCH_RUNS rounds of a completion run, a run of the
// newest page and a run of the first page.
func (b *bench) measureGrowth(pt *growthPoint) error {
	ws := b.growth.WorkspaceID
	if err := b.db.QueryRow(b.ctx, `SELECT count(*) FROM ledger_events WHERE workspace_id = $1`, ws).Scan(&pt.Start); err != nil {
		return err
	}
	if err := b.db.QueryRow(b.ctx, `SELECT count(*) FROM ledger_events`).Scan(&pt.Table); err != nil {
		return err
	}
	// At most half as many completions as the ledger holds events, over all the runs: the
	// ledger grows by at most half while its size is measured (the report gives both ends).
	// Every size runs the first (smallest) size's number a run, so that the sizes compare runs of
	// one length: with each size's own budget, a run at 10,000 events ended after 0.4 s
	// while one at 1,000,000 ran the full duration, and its p99 took in ten to twenty times
	// as long a stretch of WAL writing and checkpoints.
	perRun := min(b.growthPoints[0].Start/2/b.s.Runs, (len(b.growthPool)-b.growthNext)/b.s.Runs)
	if perRun < 1 {
		return fmt.Errorf("growth: no tasks left to complete at %d events", pt.Start)
	}
	c := b.s.GrowthClients
	est := b.serviceRateEstimate()
	// A run that the budget ends early warms up for at most a quarter of it.
	warmup := min(b.s.Warmup, time.Duration(float64(perRun)/est/4*float64(time.Second)))
	logf("growth: %d events in the workspace (%d in the table): %d rounds of complete at %d clients (up to %d a run) and stream pages",
		pt.Start, pt.Table, b.s.Runs, c, perRun)
	auth := "Bearer " + b.growth.Key
	for r := 1; r <= b.s.Runs; r++ {
		if err := b.ctx.Err(); err != nil {
			return err
		}
		b.prepareRun()
		items := b.growthPool[b.growthNext : b.growthNext+perRun]
		wal0, err := b.walPosition()
		if err != nil {
			return err
		}
		mem := b.svc.sampleMemory()
		s := runLoad(b.ctx, b.svcAddr, c, warmup, b.s.Duration, b.completeTasks(b.svcAddr, b.growth.Key, len(items), func(i int) poolTask {
			t := items[i]
			return poolTask{id: t.id.String(), token: accountable.TaskVersion{AggregateVersion: 1, UpdatedAt: time.UnixMicro(t.updated)}.Token()}
		}, b.nextTag("growth-complete")))
		ms := mem.stop()
		wal, err := b.walSince(wal0)
		if err != nil {
			return err
		}
		b.growthNext += min(s.Issued, len(items))
		if err := sampleErr(s); err != nil {
			return fmt.Errorf("growth: completing at %d events: %w", pt.Start, err)
		}
		if s.Count == 0 {
			return fmt.Errorf("growth: no completion measured at %d events (raise BENCH_GROWTH_EVENTS' smallest size)", pt.Start)
		}
		walPer := wal / float64(s.Issued) // s.Issued ≥ s.Count > 0
		logf("  growth %d complete @%d run %d/%d: %s; serve RSS median %s MiB, peak %s MiB; WAL per completion %.1f KiB", pt.Target, c, r, b.s.Runs, s,
			mib(ms.Median), mib(ms.Peak), walPer/1024)
		pt.Complete = append(pt.Complete, s)
		pt.WAL = append(pt.WAL, walPer)
		pt.Mem = append(pt.Mem, ms)
		if s.Exhausted && r == 1 {
			pt.Notes = append(pt.Notes, fmt.Sprintf("completion runs were bounded by the budget of %d completions a run (%.1f s measured)", perRun, s.Window.Seconds()))
		}

		b.prepareRun()
		cursor, err := b.growthTailCursor()
		if err != nil {
			return err
		}
		s, err = b.growthPages(auth, "&cursor="+cursor)
		if err != nil {
			return fmt.Errorf("growth: the newest page at %d events: %w", pt.Start, err)
		}
		logf("  growth %d newest page run %d/%d: %s", pt.Target, r, b.s.Runs, s)
		pt.Newest = append(pt.Newest, s)

		b.prepareRun()
		if s, err = b.growthPages(auth, ""); err != nil {
			return fmt.Errorf("growth: the first page at %d events: %w", pt.Start, err)
		}
		logf("  growth %d first page run %d/%d: %s", pt.Target, r, b.s.Runs, s)
		pt.First = append(pt.First, s)
	}
	row := b.memRowFor(fmt.Sprintf("growth: complete @%d, %d events", c, pt.Target))
	row.Runs = append(row.Runs, pt.Mem...)
	return nil
}

// growthTailCursor is the cursor after which the growth workspace's newest PageLimit
// events follow: the position of the event PageLimit from the end.
func (b *bench) growthTailCursor() (string, error) {
	var p accountable.StreamPosition
	err := b.db.QueryRow(b.ctx, `SELECT stream_position, seq FROM ledger_events WHERE workspace_id = $1
		ORDER BY stream_position DESC, seq DESC OFFSET $2 LIMIT 1`, b.growth.WorkspaceID, b.s.PageLimit).Scan(&p.Position, &p.Seq)
	if err != nil {
		return "", fmt.Errorf("growth: the position of the newest page: %w", err)
	}
	return cursors.EncodeStream(p), nil
}

// growthPages reads one page of PageLimit events over and over, one client (after the
// cursor in query, or from the start): every answer must hold a full page.
func (b *bench) growthPages(auth, query string) (sample, error) {
	uri := "http://" + b.svcAddr + "/api/v1/events/stream?limit=" + strconv.Itoa(b.s.PageLimit) + query
	var short int
	var first string
	s := runLoad(b.ctx, b.svcAddr, 1, b.s.Warmup, b.s.Duration, workload{
		prepare: func(_ int, req *fasthttp.Request) bool {
			req.SetRequestURI(uri)
			req.Header.Set(fasthttp.HeaderAuthorization, auth)
			return true
		},
		ok: func(status int) bool { return status == fasthttp.StatusOK },
		onResponse: func(_ int, body []byte) {
			if n := lastInt(body, "count"); n != b.s.PageLimit {
				if short == 0 {
					first = fmt.Sprintf("a page of %d events, not %d: %s", n, b.s.PageLimit, truncate(string(body), 200))
				}
				short++
			}
		},
	})
	if short > 0 {
		return s, fmt.Errorf("%d short pages (first: %s)", short, first)
	}
	return s, sampleErr(s)
}

// verifyGrowth runs `accountable ledger verify` over the growth workspace.
func (b *bench) verifyGrowth() error {
	start := time.Now()
	out, err := output(b.ctx, []string{"DATABASE_URL=" + b.dbURL}, b.accountable, "ledger", "verify", "--workspace", b.growth.WorkspaceID)
	if err != nil {
		return fmt.Errorf("growth: the seeded ledger does not verify: %w: %s", err, truncate(out, 500))
	}
	if !strings.Contains(out, `"verified":true`) {
		return fmt.Errorf("growth: the seeded ledger does not verify: %s", truncate(out, 500))
	}
	count := lastInt([]byte(out), "eventCount")
	b.growthVerified = append(b.growthVerified, fmt.Sprintf("%d events in %s", count, time.Since(start).Round(100*time.Millisecond)))
	logf("growth: the ledger verifies (%d events, %s)", count, time.Since(start).Round(time.Millisecond))
	return nil
}

// seedGrowth appends n tasks to the growth workspace as POST /work creates them (the task,
// its work.created event, its ledger head), in chunks of growthChunk, each in its own
// transaction, growthSeedWorkers chunks at a time.
func (b *bench) seedGrowth(n int) error {
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	chunks := make(chan [2]int)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel()
	}
	base := b.growthSeeded
	for range growthSeedWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ch := range chunks {
				rows, err := growthRows(b.growth.WorkspaceID, b.growth.UserID, ch[0], ch[1], time.Now())
				if err != nil {
					fail(err)
					continue
				}
				if err := b.copyGrowth(ctx, rows); err != nil {
					fail(fmt.Errorf("growth: copying events %d to %d: %w", ch[0], ch[1], err))
					continue
				}
				mu.Lock()
				b.growthPool = append(b.growthPool, rows.tasks...)
				mu.Unlock()
			}
		}()
	}
	for from := base; from < base+n && ctx.Err() == nil; from += growthChunk {
		select {
		case chunks <- [2]int{from, min(from+growthChunk, base+n)}:
		case <-ctx.Done():
		}
	}
	close(chunks)
	wg.Wait()
	if first != nil {
		return first
	}
	if err := b.ctx.Err(); err != nil {
		return err
	}
	b.growthSeeded += n
	return nil
}

// growthBatch is the rows of one chunk.
type growthBatch struct {
	events, tasks2, heads [][]any
	tasks                 []growthTask
}

var (
	growthEventColumns = []string{"workspace_id", "id", "aggregate_type", "aggregate_id", "aggregate_version", "event_type",
		"schema_version", "actor_type", "actor_id", "payload", "payload_digest", "occurred_at", "recorded_at", "idempotency_key",
		"causation_id", "correlation_id", "previous_hash", "event_hash"}
	growthTaskColumns = []string{"workspace_id", "id", "title", "description", "status", "priority", "metadata",
		"created_at", "updated_at", "aggregate_version"}
	growthHeadColumns = []string{"workspace_id", "aggregate_type", "aggregate_id", "version", "event_id", "event_hash", "updated_at"}
)

const (
	growthDescription = "Collect the figures, check them against the ledger and write the summary for the board."
	growthMetadata    = `{"batch":"growth","source":"bench"}`
)

// growthRows builds tasks from to to (exclusive) of the growth workspace as POST /work
// would (each a microsecond after the previous, from now): the task row, its work.created
// event (payload, payloadDigest and eventHash computed as the store computes them) and its
// ledger head.
func growthRows(ws, actorID string, from, to int, now time.Time) (growthBatch, error) {
	n := to - from
	out := growthBatch{events: make([][]any, 0, n), tasks2: make([][]any, 0, n), heads: make([][]any, 0, n), tasks: make([]growthTask, 0, n)}
	desc := growthDescription
	for k := from; k < to; k++ {
		at := accountable.TimeOf(now.Add(time.Duration(k-from) * time.Microsecond))
		id := uuid.Must(uuid.NewV7())
		t := accountable.Task{ID: id.String(), WorkspaceID: ws, Title: fmt.Sprintf("Prepare the quarterly report growth-%d", k),
			Description: &desc, Status: accountable.TaskTodo, Priority: accountable.PriorityHigh,
			Metadata: accountable.Object(growthMetadata), CreatedAt: at, UpdatedAt: at, AggregateVersion: 1}
		e, err := growthEvent(ws, actorID, t, "bench-growth-seed-"+strconv.Itoa(k))
		if err != nil {
			return out, err
		}
		out.events = append(out.events, []any{ws, e.ID, e.AggregateType, e.AggregateID, e.AggregateVersion, e.EventType,
			e.SchemaVersion, string(e.ActorType), e.ActorID, string(e.Payload), e.PayloadDigest, e.OccurredAt.Time, e.RecordedAt.Time,
			e.IdempotencyKey, e.CausationID, e.CorrelationID, e.PreviousHash, e.EventHash})
		out.tasks2 = append(out.tasks2, []any{ws, t.ID, t.Title, desc, string(t.Status), string(t.Priority), growthMetadata,
			at.Time, at.Time, int64(1)})
		out.heads = append(out.heads, []any{ws, accountable.AggregateTask, t.ID, int64(1), e.ID, e.EventHash, at.Time})
		out.tasks = append(out.tasks, growthTask{id: id, updated: at.UnixMicro()})
	}
	return out, nil
}

// growthEvent is the work.created event of t as the store builds it (newEvent in
// store/command.go): the canonical payload, its digest, the header's hash.
func growthEvent(ws, actorID string, t accountable.Task, key string) (accountable.Event, error) {
	body, err := canonical.JSON(payload.WorkCreated{Task: t})
	if err != nil {
		return accountable.Event{}, err
	}
	e := accountable.Event{EventHeader: accountable.EventHeader{
		ID: uuid.Must(uuid.NewV7()).String(), WorkspaceID: ws, AggregateType: accountable.AggregateTask, AggregateID: t.ID,
		AggregateVersion: 1, EventType: accountable.EventWorkCreated, SchemaVersion: accountable.SchemaVersion,
		ActorType: accountable.ActorHuman, ActorID: actorID, PayloadDigest: canonical.Digest(body),
		OccurredAt: t.CreatedAt, RecordedAt: t.CreatedAt, IdempotencyKey: &key,
	}, Payload: body}
	if e.EventHash, err = canonical.DigestOf(e.EventHeader); err != nil {
		return accountable.Event{}, err
	}
	return e, nil
}

// copyGrowth writes one chunk in one transaction.
func (b *bench) copyGrowth(ctx context.Context, rows growthBatch) error {
	tx, err := b.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it does nothing
	for _, c := range []struct {
		table string
		cols  []string
		rows  [][]any
	}{{"tasks", growthTaskColumns, rows.tasks2}, {"ledger_events", growthEventColumns, rows.events}, {"ledger_heads", growthHeadColumns, rows.heads}} {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{c.table}, c.cols, pgx.CopyFromRows(c.rows)); err != nil {
			return fmt.Errorf("COPY %s: %w", c.table, err)
		}
	}
	return tx.Commit(ctx)
}

// --- the report --------------------------------------------------------------------------

// growthCheck compares a figure at the largest ledger with the smallest: ratio is large /
// small; worse says it is more than growthTolerance worse (a rate lower, a latency or a
// size higher). Without both figures the ratio is 0 and nothing is flagged.
func growthCheck(small, large float64, higherIsBetter bool) (ratio float64, worse bool) {
	if small <= 0 || large <= 0 {
		return 0, false
	}
	ratio = large / small
	if higherIsBetter {
		return ratio, ratio < 1-growthTolerance
	}
	return ratio, ratio > 1+growthTolerance
}

// growthCell is a ratio cell of the growth table: "1.04x", or flagged.
func growthCell(small, large float64, higherIsBetter bool) string {
	r, worse := growthCheck(small, large, higherIsBetter)
	switch {
	case r == 0:
		return "–"
	case worse:
		return fmt.Sprintf("**%.2fx (grows)**", r)
	}
	return fmt.Sprintf("%.2fx", r)
}

func (pt *growthPoint) memMedian() int64 { m, _, _, _ := memRow{Runs: pt.Mem}.summary(); return m }
func (pt *growthPoint) memPeak() int64   { _, p, _, _ := memRow{Runs: pt.Mem}.summary(); return p }

// growthTable is the growth line's results in Markdown.
func (b *bench) growthTable() string {
	pts := b.measuredGrowth()
	if len(pts) == 0 {
		return ""
	}
	var w strings.Builder
	fmt.Fprintf(&w, "| events in the workspace's ledger (start → end) | in the table | complete @%d | complete p50 / p99 (ms) | WAL per completion (KiB) | newest page p50 / p99 (ms) | first page p50 / p99 (ms) | serve RSS median / peak (MiB) | seeded (events/s) |\n", b.s.GrowthClients)
	w.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, pt := range pts {
		seed := "–"
		if pt.Seeded > 0 {
			seed = fmt.Sprintf("%d in %s (%s)", pt.Seeded, pt.SeedTime.Round(100*time.Millisecond), rate(float64(pt.Seeded)/pt.SeedTime.Seconds()))
		}
		fmt.Fprintf(&w, "| %d → %d | %d | %s req/s | %s / %s | %s | %s / %s | %s / %s | %s / %s | %s |\n", pt.Start, pt.End, pt.Table,
			rate(median(pt.Complete, rateOf)), msec(median(pt.Complete, p50Of)), msec(median(pt.Complete, p99Of)), walCell(pt.WAL),
			msec(median(pt.Newest, p50Of)), msec(median(pt.Newest, p99Of)), msec(median(pt.First, p50Of)), msec(median(pt.First, p99Of)),
			mib(pt.memMedian()), mib(pt.memPeak()), seed)
	}
	if len(pts) > 1 {
		s, l := pts[0], pts[len(pts)-1]
		d := func(f func(sample) time.Duration, x []sample) float64 { return float64(median(x, f)) }
		fmt.Fprintf(&w, "| **%d / %d** (largest / smallest) | | %s | %s / %s | %s | %s / %s | %s / %s | %s / %s | |\n", l.Target, s.Target,
			growthCell(median(s.Complete, rateOf), median(l.Complete, rateOf), true),
			growthCell(d(p50Of, s.Complete), d(p50Of, l.Complete), false), growthCell(d(p99Of, s.Complete), d(p99Of, l.Complete), false),
			walRatio(s.WAL, l.WAL),
			growthCell(d(p50Of, s.Newest), d(p50Of, l.Newest), false), growthCell(d(p99Of, s.Newest), d(p99Of, l.Newest), false),
			growthCell(d(p50Of, s.First), d(p50Of, l.First), false), growthCell(d(p99Of, s.First), d(p99Of, l.First), false),
			growthCell(float64(s.memMedian()), float64(l.memMedian()), false), growthCell(float64(s.memPeak()), float64(l.memPeak()), false))
	}
	return w.String()
}

// walCell is the median WAL per completion of runs, in KiB.
func walCell(runs []float64) string {
	if len(runs) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", median(runs, identity)/1024)
}

// walRatio is the largest ledger's WAL per completion over the smallest's, shown
// unflagged: it explains the other figures, it is not the service's cost.
func walRatio(small, large []float64) string {
	if len(small) == 0 || len(large) == 0 || median(small, identity) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2fx", median(large, identity)/median(small, identity))
}

func identity(x float64) float64 { return x }

// measuredGrowth are the sizes that were measured.
func (b *bench) measuredGrowth() []*growthPoint {
	var out []*growthPoint
	for _, pt := range b.growthPoints {
		if len(pt.Complete) > 0 && len(pt.Newest) > 0 && len(pt.First) > 0 {
			out = append(out, pt)
		}
	}
	return out
}

// growthFlags names the figures the growth table flags ("" when none).
func (b *bench) growthFlags() []string {
	pts := b.measuredGrowth()
	if len(pts) < 2 {
		return nil
	}
	s, l := pts[0], pts[len(pts)-1]
	var out []string
	check := func(name string, small, large float64, higherIsBetter bool) {
		if r, worse := growthCheck(small, large, higherIsBetter); worse {
			out = append(out, fmt.Sprintf("%s %.2fx", name, r))
		}
	}
	check("complete req/s", median(s.Complete, rateOf), median(l.Complete, rateOf), true)
	for _, f := range []struct {
		name string
		x, y []sample
	}{{"complete", s.Complete, l.Complete}, {"newest page", s.Newest, l.Newest}, {"first page", s.First, l.First}} {
		check(f.name+" p50", float64(median(f.x, p50Of)), float64(median(f.y, p50Of)), false)
		check(f.name+" p99", float64(median(f.x, p99Of)), float64(median(f.y, p99Of)), false)
	}
	check("serve RSS median", float64(s.memMedian()), float64(l.memMedian()), false)
	check("serve RSS peak", float64(s.memPeak()), float64(l.memPeak()), false)
	return out
}

// growthHistory is the growth line's part of the history row.
func (b *bench) growthHistory() string {
	pts := b.measuredGrowth()
	if len(pts) < 2 {
		return ""
	}
	s, l := pts[0], pts[len(pts)-1]
	r, _ := growthCheck(median(s.Complete, rateOf), median(l.Complete, rateOf), true)
	np, _ := growthCheck(float64(median(s.Newest, p99Of)), float64(median(l.Newest, p99Of)), false)
	flags := "no figure grew"
	if f := b.growthFlags(); len(f) > 0 {
		flags = "grew: " + strings.Join(f, ", ")
	}
	return fmt.Sprintf("growth %d→%d events: complete %.2fx (%s req/s), newest page p99 %.2fx, %s", s.Target, l.Target, r,
		rate(median(l.Complete, rateOf)), np, flags)
}
