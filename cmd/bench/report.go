package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Targets (DESIGN.md section 6): the first bar and the goal of service / limit.
const (
	targetBar  = 0.7
	targetGoal = 0.8
)

const (
	historyStart = "<!-- history:start (make bench adds one row per run; rows above this run are kept) -->"
	historyEnd   = "<!-- history:end -->"
)

// median of the values f takes over xs (0 when there are none).
func median[E any, T int64 | float64 | time.Duration](xs []E, f func(E) T) T {
	if len(xs) == 0 {
		return 0
	}
	v := make([]T, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func rateOf(s sample) float64      { return s.Rate }
func p50Of(s sample) time.Duration { return s.P50 }
func p99Of(s sample) time.Duration { return s.P99 }
func (l *line) ratio() float64 {
	lim := median(l.Limit, rateOf)
	if lim == 0 {
		return 0
	}
	return median(l.Service, rateOf) / lim
}

// mirrorCell is the table cell of the stricter reference: its rate and the service's
// ratio to it ("" for lines without one).
func (l *line) mirrorCell() string {
	m := median(l.Mirror, rateOf)
	if len(l.Mirror) == 0 || m == 0 {
		return "–"
	}
	return fmt.Sprintf("%s %s (%.2fx)", rate(m), l.limitUnit(), median(l.Service, rateOf)/m)
}

func rate(r float64) string {
	switch {
	case r >= 100:
		return strconv.FormatFloat(r, 'f', 0, 64)
	case r >= 10:
		return strconv.FormatFloat(r, 'f', 1, 64)
	}
	return strconv.FormatFloat(r, 'f', 2, 64)
}

func msec(d time.Duration) string {
	v := float64(d.Microseconds()) / 1000
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// verdict is the ratio r against the line's target: its own, or DESIGN §6's.
func (l *line) verdict(r float64) string {
	if l.Target > 0 {
		if r >= l.Target {
			return fmt.Sprintf("meets %.1f", l.Target)
		}
		return fmt.Sprintf("**below %.1f**", l.Target)
	}
	switch {
	case r >= targetGoal:
		return "meets 0.8"
	case r >= targetBar:
		return "meets 0.7"
	}
	return "**below 0.7**"
}

func (l *line) limitUnit() string {
	switch l.ID {
	case "create", "complete":
		return "tps"
	case "proposal":
		return "workflows/s"
	}
	return l.Unit
}

// table is the results table in Markdown.
func (b *bench) table() string {
	var w strings.Builder
	w.WriteString("| line | clients | service | limit | ratio | target | service p50 / p99 (ms) | limit p50 / p99 (ms) | latency of | mirror (ratio) |\n")
	w.WriteString("|---|---:|---:|---:|---:|---|---:|---:|---|---:|\n")
	for _, l := range b.lines {
		if len(l.Service) == 0 || len(l.Limit) == 0 {
			continue
		}
		fmt.Fprintf(&w, "| %s | %d | %s %s | %s %s | %.2fx | %s | %s / %s | %s / %s | %s | %s |\n",
			l.Name, l.Clients, rate(median(l.Service, rateOf)), l.Unit, rate(median(l.Limit, rateOf)), l.limitUnit(),
			l.ratio(), l.verdict(l.ratio()),
			msec(median(l.Service, p50Of)), msec(median(l.Service, p99Of)),
			msec(median(l.Limit, p50Of)), msec(median(l.Limit, p99Of)), l.Latency, l.mirrorCell())
	}
	return w.String()
}

// printTable prints the results so far to standard output.
func (b *bench) printTable() {
	if len(b.lines) > 0 {
		fmt.Println()
		fmt.Print(b.table())
	}
	if len(b.streams) > 0 {
		fmt.Println()
		fmt.Print(b.streamTable())
	}
	if t := b.contextTable(); t != "" {
		fmt.Println()
		fmt.Print(t)
	}
	if t := b.consoleTable(); t != "" {
		fmt.Println()
		fmt.Print(t)
	}
	if g := b.growthTable(); g != "" {
		fmt.Println()
		fmt.Print(g)
	}
	if t := b.fairTable(); t != "" {
		fmt.Println()
		fmt.Print(t)
	}
	if t := b.logTable(); t != "" {
		fmt.Println()
		fmt.Print(t)
	}
	if len(b.memory) > 0 {
		fmt.Println()
		fmt.Print(b.memTable())
	}
}

// historyRow is this run's line of the history table.
func (b *bench) historyRow() string {
	var parts []string
	for _, l := range b.lines {
		if len(l.Service) == 0 || len(l.Limit) == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s @%d: %.2fx (%s %s)", l.ID, l.Clients, l.ratio(), rate(median(l.Service, rateOf)), l.Unit))
	}
	if c := b.contextHistory(); c != "" {
		parts = append(parts, c)
	}
	if c := b.consoleHistory(); c != "" {
		parts = append(parts, c)
	}
	if g := b.growthHistory(); g != "" {
		parts = append(parts, g)
	}
	if f := b.fairHistory(); f != "" {
		parts = append(parts, f)
	}
	if l := b.logHistory(); l != "" {
		parts = append(parts, l)
	}
	for _, r := range b.memory {
		if r.Load == "POST /work/{id}/complete @32" {
			if med, peak, _, _ := r.summary(); med > 0 {
				parts = append(parts, fmt.Sprintf("serve RSS @32: %s MiB median, %s peak", mib(med), mib(peak)))
			}
		}
	}
	return fmt.Sprintf("| %s | %s | %s | fsync %s, %d×(%s+%s) | %s → %s |", b.started.UTC().Format("2006-01-02 15:04"),
		b.info.Commit, strings.Join(parts, "; "), b.info.setting("fsync"), b.s.Runs, b.s.Warmup, b.s.Duration, b.info.LoadStart, loadAvg())
}

// previousHistory returns the history rows of the existing report.
func previousHistory(path string) []string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	_, rest, ok := strings.Cut(string(raw), historyStart)
	if !ok {
		return nil
	}
	body, _, _ := strings.Cut(rest, historyEnd)
	var rows []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "| 2") { // a dated row
			rows = append(rows, l)
		}
	}
	return rows
}

// abbreviate shows a pgbench variable's value, or its start and length when it is long.
func abbreviate(v string) string {
	if len(v) <= 80 {
		return v
	}
	return fmt.Sprintf("%s… (%d bytes)", v[:60], len(v))
}

func (b *bench) writeReport() error {
	var w bytes.Buffer
	m := b.info
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	p("# Benchmarks\n\n")
	p("Written by `make bench` (`cmd/bench`) on %s UTC, commit %s (%q); the run took %s.\n",
		b.started.UTC().Format("2006-01-02 15:04"), m.Commit, m.CommitSubject, b.ended.Sub(b.started).Round(time.Second))
	p("Run `make bench` again to measure anew: it rewrites this file and adds a row to the [history](#history).\n\n")

	p("## Results\n\n")
	p("Medians of %d runs of each side; each run is %s of warm-up, then %s measured (bounded also by the work items seeded for it). "+
		"The runs of a line alternate: service, limit, service, limit, … Ratio = service median / limit median. "+
		"Target (DESIGN.md §6): ≥ %.1fx for every line, goal %.1fx.\n\n", b.s.Runs, b.s.Warmup, b.s.Duration, targetBar, targetGoal)
	w.WriteString(b.table())
	if len(b.streams) > 0 {
		p("\n**Live stream** (GET /events/stream?transport=sse): commit-to-frame latency, from each event's recordedAt (taken as its " +
			"command began) to the frame's arrival at each subscriber; subscribers follow one workspace, a writer commits " +
			"work.created events at an even pace. Targets are DESIGN.md §6's, absolute.\n\n")
		w.WriteString(b.streamTable())
	}
	w.WriteString(b.contextSection())
	w.WriteString(b.consoleSection())
	if g := b.growthTable(); g != "" {
		p("\n**Growth** (the cost of the service as its ledger grows; the `growth` line): one workspace's ledger grown to each size "+
			"in turn, then at each size POST /work/{id}/complete at %d clients on tasks picked at random across that ledger, and "+
			"GET /events/stream?limit=%d, one client, for its newest page and its first page. Medians of %d runs at each size; "+
			"the last row is each figure at the largest size over the smallest, flagged **(grows)** when more than %.0f%% worse "+
			"(a rate lower, a latency or memory higher). The ledger grows during a size's completion runs (start → end). "+
			"WAL per completion is the WAL the cluster wrote during a completion run (how far pg_current_wal_lsn() moved), "+
			"warm-up included, over the completions it sent: PostgreSQL writes a full-page image (8 KiB) for the first change of each page after a checkpoint "+
			"(one runs before every run), and completions spread across a larger ledger change more distinct pages of the "+
			"tasks, heads and indexes. Its ratio is not flagged: it is the database's cost of where the writes land, shown to "+
			"explain the other figures.\n\n",
			b.s.GrowthClients, b.s.PageLimit, b.s.Runs, growthTolerance*100)
		w.WriteString(g)
		p("\nThe growth line took %s, %s of it seeding (COPY, then VACUUM ANALYZE).\n", b.growthTook.Round(time.Second),
			seedTotal(b.growthPoints).Round(time.Second))
		if f := b.growthFlags(); len(f) > 0 {
			p("\nGrew by more than %.0f%% from the smallest ledger to the largest: %s.\n", growthTolerance*100, strings.Join(f, ", "))
		} else if len(b.measuredGrowth()) > 1 {
			p("\nNo figure is more than %.0f%% worse at the largest ledger than at the smallest.\n", growthTolerance*100)
		}
		for _, pt := range b.growthPoints {
			for _, n := range pt.Notes {
				p("* growth at %d events: %s\n", pt.Target, n)
			}
		}
	}
	if t := b.fairTable(); t != "" {
		f := b.fair
		p("\n**Fairness** (the `fairness` line; issue 11: one workspace writing as fast as it can does not raise the p99 of another): "+
			"%d workspaces, each with its own key; %d quiet ones share %s requests a second, open loop (%s a second each, half POST /work, "+
			"half GET /work/{id}), while in phases 2 to 4 the noisy one writes POST /work from %d closed-loop clients, in phases 2 and 3 "+
			"resending at once on a 429, in phase 4 waiting its Retry-After first. Phases 1 and 2 run on the service without a "+
			"per-workspace limit, phases 3 and 4 on a second `accountable serve` with "+
			"`WORKSPACE_RATE_LIMIT_RPS=%s` `WORKSPACE_RATE_LIMIT_BURST=%d` `WORKSPACE_MAX_IN_FLIGHT=%d` `RATE_LIMIT_HOLD=%s`. Medians of %d rounds of the four phases, each %s warm-up + %s "+
			"measured. The line meets its claim when the quiet p99 of phase 4 is within %.1fx of phase 1's; phase 3 shows what a "+
			"client that ignores refusals still costs the others.\n\n",
			b.s.FairWorkspaces, b.s.FairWorkspaces-1, rate(b.s.FairQuietRPS), rate(b.s.FairQuietRPS/float64(b.s.FairWorkspaces-1)),
			b.s.FairNoisyClients, rate(b.s.FairWorkspaceRPS), b.s.FairWorkspaceBurst, b.s.FairInFlight, b.s.FairHold, b.s.Runs, b.s.Warmup, b.s.Duration, fairTolerance)
		w.WriteString(t)
		p("\nSet-up: %d workspaces with their users and keys in %s (store.CreateKey, %d at a time), then a task per quiet workspace "+
			"through POST /work and VACUUM ANALYZE: %s in all.\n", b.s.FairWorkspaces, f.keysTook.Round(100*time.Millisecond),
			fairSetupWorkers, f.setup.Round(100*time.Millisecond))
		for _, n := range f.notes {
			p("* fairness: %s\n", n)
		}
	}
	w.WriteString(b.logSection())
	if len(b.memory) > 0 {
		p("\n**Memory** of `accountable serve` under load: VmRSS read from /proc/<pid>/status every %s during each measured service run "+
			"(warm-up included); the median and the largest sample over the runs (the median of the runs' medians), and VmHWM at the "+
			"end of the run, the run's own peak (reset at its start through /proc/<pid>/clear_refs; \"since start\" when the "+
			"kernel refused: the process's peak since it started).\n\n", memEvery)
		w.WriteString(b.memTable())
	}
	p("\n")
	for _, l := range b.lines {
		for _, n := range l.Notes {
			p("* %s @%d: %s\n", l.Name, l.Clients, n)
		}
	}
	for _, n := range b.notes {
		p("* %s\n", n)
	}

	p("\n## How to read this\n\n")
	p("* **The limit is measured in the same run, on the same machine, against the same database.** Absolute numbers on these " +
		"shared 2-core machines move from run to run (other work on the machine, the cloud host); the ratios are what to compare " +
		"across runs. The load average at the start and end of the run is below; a high one means the numbers are noisy.\n")
	p("* **Everything shares the 2 cores**: the load generator (this harness, or pgbench), the server under test and PostgreSQL. " +
		"A server that spends more CPU per request leaves less for PostgreSQL, so the write ratios are mostly CPU per request.\n")
	p("* **Writes** (POST /work, POST /work/{id}/complete): the limit is the one DESIGN.md §6 defines, pgbench running the same row " +
		"writes (for a completion: the version-checked task update, the ledger event, the receipt, the moved ledger head, the idempotency " +
		"record) in one transaction, prepared (`-M prepared`), one statement at a time as pgbench runs a transaction, against the same " +
		"tables, indexes and workspace, with the byte-for-byte values (payloads, digests, response documents) of a request the service " +
		"handled earlier in the same run, at the same number of clients. The **mirror** column is a stricter reference, shown for " +
		"what it tells: pgbench sending every statement the service sends (read from store/command.go and store/work.go, a test keeps " +
		"them in step; the completion's one statement is the store's own text), also the idempotency key's gate and the head lock, " +
		"pipelined into the same round trips as the service's batches (1 for a creation, 1 for a completion): what a client of the same design with no cost of its own would do. What the " +
		"service adds on top is the HTTP server, authentication, JSON decoding and validation, the idempotency fingerprint, building " +
		"the ledger event (canonical JSON and hashes), encoding the response, metrics and the request log. The scripts are " +
		"[below](#the-pgbench-scripts).\n")
	if b.s.Lines["floor"] {
		p("* **The floor of a write** (issue 30): the baseline server's `/floor/create`, a bare Fiber handler that decodes the " +
			"request's JSON and sends the mirror's statements for a creation in one round trip on pgconn, prepared, every value a " +
			"text parameter as pgbench sends them, and answers the stored response document: no authentication, validation, " +
			"fingerprint, event building, canonical JSON or hashes, pgx type encoding, metrics or log line. Against POST /work's " +
			"limit, its ratio is the most a service on Fiber and pgx reaches on this machine; POST /work's ratio beside it is what " +
			"the service's own work costs. Its rows are pgbench's (ids and keys from the same counter), and the next pgbench run's " +
			"count checks them.\n")
	}
	p("* **Reads** (GET /work/{id}, the event stream): the limit is a bare Fiber + pgx server (`bench baseline`, in cmd/bench) that "+
		"sends the same SQL and answers similar JSON with encoding/json, with no middleware (no authentication, request id, logging or metrics). "+
		"It runs with the garbage collector's setting `accountable serve` has by default (GOGC=%d), so that no ratio owes anything to a runtime setting.\n", serviceGCPercent)
	if b.s.Lines["mcp"] {
		p("* **MCP tools/call get_work** (a stateless client's JSON-RPC request to /mcp for the read line's rows; the service " +
			"authenticates, decodes, dispatches in-process to GET /work/{id} through the app's whole chain and answers its JSON as " +
			"text and structured content): the limit is a bare MCP Go SDK server in the same `bench baseline` (stateless, JSON " +
			"answers, behind Fiber's net/http adaptor, as the service serves /mcp) whose one tool runs the same SELECT and answers " +
			"the same JSON the same two ways, with nothing else (no authentication, scoping, rate limit, dispatch, logging or " +
			"metrics): what the SDK costs before the service does its own work. The mirror column is the bare REST read of the read " +
			"line, which speaks no MCP: a stricter reference.\n")
	}
	if b.s.Lines["doctor"] || b.s.Lines["validate"] {
		p("* **Account-free operations** (POST /doctor/workload with a workload of three systems and six actions; " +
			"POST /agent-work-receipts/validate with the shared Codex receipt fixture, `" + receiptFixture + "`): the limit is the bare " +
			"Fiber server's `/echo`, which decodes the same body with encoding/json and encodes it back: what any JSON endpoint on this " +
			"stack costs before it does its own work (the diagnosis: validation, scoring, canonical JSON and its digest; the validation: " +
			"the structural walk, JSON Schema 2020-12, the semantic rules and the integrity checks). Every answer must be 200.\n")
	}
	if b.s.Lines["projection"] {
		p("* **The work-ledger projection**: a workspace seeded through POST /decisions with %d decisions (one `decision.proposed` "+
			"event each), then GET /projections/work-ledger (the default 30 daily buckets, UTC; each answer is checked to count every "+
			"event), one client. The limit is the bare Fiber + pgx server sending the same aggregate query (the partial index "+
			"`ledger_events_projection`) and encoding the same buckets.\n", b.s.ProjectionEvents)
	}
	if b.s.Lines["proposal"] || b.s.Lines["launch"] {
		p("* **Workflow-backed operations** run on the same Temporal server as their limit (the pinned dev server `scripts/stack.sh` "+
			"started, persisting to a SQLite file), with the service's workflows on `accountable worker` (task queue `%s`, the planner "+
			"pointed at a fake OpenAI-compatible server in this harness that answers every request at once with the recorded completion "+
			"of the planner's tests) and the limit's on a worker inside the harness (task queue `%s`). One caller, closed loop; a run "+
			"measures every call started after the warm-up (and waits for it), at least %d launches. "+
			"**POST /initiatives/proposals**: the request through the ProposalGeneration workflow (the planner's local activity calling the "+
			"model with openai-go, the local activity storing the proposal with its ledger event, both inside one workflow task) until the "+
			"handler answers 201, beside an empty workflow round trip (start, run, result). **A launch of %d workstreams**: POST /initiatives/{id}/launch (202, the "+
			"workflow started through the outbox), then, as an agent would, GET /launches/{id} every %s and POST /runs/{id}/finalize for "+
			"each run that appears, until the launch is `completed` with every reservation settled to the reported cost (checked); "+
			"the limit is a workflow of the same shape (an activity listing the jobs, a reservation and a dispatch activity per job, "+
			"a signal and a settlement activity per run, an ending activity) whose activities do nothing, its runs signalled straight "+
			"to Temporal as they appear, polled alike. The ratio of the launch line is what the service's database work, outbox and "+
			"API calls cost beside Temporal's own round trips; with the dev server's SQLite persistence those round trips dominate.\n",
			serviceTaskQueue, limitTaskQueue, launchMinCount, launchWorkstreams, launchPoll)
	}
	if b.s.Lines["discovery"] {
		p("* **Discovery**: a workspace seeded through POST /handoffs with %d handoffs (one `handoff.proposed` event each, cases "+
			"intake → triage → fix or close), then `bounded_sync` discovery runs over all of them (the DiscoveryRun workflow reading the "+
			"ledger in pages of 2,000, mining, recording the result; each run is checked: succeeded, every event read, at least the 2 seeded variants found); the rate is events "+
			"mined per second (events per run over the run's time, at least %d runs), p50/p99 per run. The limit is the bare Fiber + pgx "+
			"server paging the same events (per page of %d).\n", b.s.DiscoveryEvents, launchMinCount, b.s.PageLimit)
	}
	if b.s.Lines["context"] {
		p("* **Context packs** (the `context` line): the workspace `Bench context` is made for the line. While the workflow lines' "+
			"worker runs, an initiative is proposed (the fake model's recorded plan: two workstreams, a task each) and committed; its "+
			"first task is the scope, with 12 pending decisions of mixed urgency and 4 decided ones on the initiative, 6 artifacts on "+
			"the task and 2 on the initiative; the worker then stops, and the workspace is seeded through the API to %s events "+
			"(70%% POST /work, 20%% POST /decisions and 10%% POST /handoffs outside the initiative, so the tables the capsule reads hold "+
			"a busy workspace's rows), then VACUUM ANALYZE. The full capsule is measured at %s clients beside the bare Fiber + pgx "+
			"server sending the same reads with the store's own code (store.ReadContextSources: one read-only REPEATABLE READ "+
			"snapshot, the scope, then every section in one batch) and answering what it read as JSON: the ratio is what the capsule "+
			"costs over its reads (ranking and trimming to %d tokens, counting them with %s, the canonical text, its sha256, the "+
			"transfer). Its capsule does not change during the full runs: every answer is checked to carry the version of a text "+
			"checked once before (its sha256, and its bytes and tokens against context_delivery.accounting). The delta turns follow, "+
			"one client (a turn of an agent: one event added, then a delta against the text it holds), after the full runs, so each "+
			"delta run starts from a capsule with the previous runs' events.\n", thousands(b.s.ContextEvents), intList(b.s.ContextClients),
			contextBudget, contextTokenizer)
	}
	if b.s.Lines["growth"] {
		p("* **Growth**: the workspace `Bench growth` is grown to each of %s events (the ledger_events table, shared by every "+
			"workspace, then holds at least as many; both counts are in the table). The events are bulk-seeded, not posted: the harness "+
			"builds what POST /work writes for a task, with the store's own construction of the event (the task row; its work.created "+
			"event with the canonical payload, payloadDigest and eventHash; its ledger head), and COPYs them in chunks of %s, two at "+
			"a time, then VACUUM ANALYZE; the idempotency records of those creations are left out (they expire after a day and the "+
			"ledger does not refer to them). `accountable ledger verify --workspace` checks the workspace's ledger after the first "+
			"size is seeded and again at the end of the line, after the completions (every digest, hash, chain link and anchored "+
			"head): %s. At each size a run of completions (every size's runs complete the same number: the smallest ledger's size / 2 / "+
			"runs, so that it grows by at most half while measured and the sizes compare runs of one length; a run that this "+
			"bounds warms up for at most a quarter of it), "+
			"a run of the newest page (the cursor of the event %d from the end, every answer checked to hold a full page) and a run "+
			"of the first page alternate, %d rounds. No limit is measured: the reference is the smallest ledger. The line runs last, "+
			"so the other lines are measured on the table as it always was.\n",
			intList(b.s.GrowthEvents), thousands(growthChunk), verifiedList(b.growthVerified), b.s.PageLimit, b.s.Runs)
	}
	if b.s.Lines["ledgerlog"] {
		p("* **Transparency log** (the `ledgerlog` line): its targets are issue 27's, absolute (the append path's against itself without "+
			"the sealer), beside no limit but the tiles'. Every process of the run has one checkpoint signing key, made by the harness "+
			"(`LEDGER_SIGNING_KEY`), and `LEDGER_LOG_NAME=%s`; the line's sealer is an `accountable worker` on a task queue of its own "+
			"(`%s`, which no other line starts workflows on), stopped during the runs without it and after the checkpoint latency. "+
			"Its witness is torchwood's litewitness (package ledgerlog/litewitness, a key made by the harness), told of every "+
			"workspace's log before each start of the sealer. The synthetic logs are written without the integrator (which appends "+
			"what it reads from the stream, some 20,000 leaves a second here: minutes for millions); their stored hashes are what it would write, the store computes "+
			"the same tree from them (checked), and only their real events have leaf rows. Proofs are of the first leaves (the real "+
			"events), so most of the hashes they read are shared and cached; a proof of a random old leaf reads colder pages.\n",
			benchLogName, logTaskQueue)
	}
	if b.s.Lines["fairness"] {
		p("* **Fairness**: %d workspaces made for the line (its own, with their own users and keys, created with store.CreateKey, "+
			"what `accountable keys create --new-workspace` runs, %d at a time), the first noisy, the other %d quiet, each quiet one with "+
			"a task made through POST /work. The quiet load is open loop: %s requests a second in all, evenly spaced and dealt to the "+
			"quiet workspaces in turn, each workspace alternating POST /work and GET /work/{id} of its task; a request is sent at its "+
			"instant whether earlier ones were answered or not, and its latency runs from that instant to the answer (so the "+
			"harness's own lateness, the sender lag column, counts against the service, never for it). Only 2xx answers are in the "+
			"percentiles; every other answer is counted in the not-2xx column. The noisy load is closed loop, %d clients sending "+
			"POST /work in the noisy workspace as fast as they are answered. Phase 1: the quiet load alone; phase 2: with the noisy "+
			"load, on the service without a per-workspace limit (the `accountable serve` of the other lines); phase 3: the same on a "+
			"second `accountable serve` with `WORKSPACE_RATE_LIMIT_RPS=%s`, `WORKSPACE_RATE_LIMIT_BURST=%d`, "+
			"`WORKSPACE_MAX_IN_FLIGHT=%d` (same database, same pool size; the writes the bucket admits together run that many "+
			"at a time, the others waiting their turn) and `RATE_LIMIT_HOLD=%s` (past as many prompt refusals a second as the "+
			"workspace is allowed requests, each refusal is held that long before it is written), where the noisy workspace gets "+
			"mostly 429 rate_limited and sends again at once, ignoring Retry-After (the worst case: its loop of refusals shares the "+
			"2 cores with everything else, so phase 3 measures what refusing costs); phase 4: as phase 3, but each noisy client waits a 429's Retry-After before its next request, as a client "+
			"following the protocol does, so the noisy workspace writes as fast as the limit lets it. Before each phase: "+
			"CHECKPOINT, and one GET per quiet workspace, unmeasured, so that every key is in the serving process's key cache. "+
			"The rounds of the four phases repeat %d times; the table gives medians. The claim \"does not raise the p99\" "+
			"**meets** when the quiet p99 of phase 4 is at most %.1fx phase 1's (phase 2's ratio shows what the limit prevents, "+
			"phase 3's what a client ignoring refusals still costs). The line runs after growth, so the other lines never see its rows.\n",
			b.s.FairWorkspaces, fairSetupWorkers, b.s.FairWorkspaces-1, rate(b.s.FairQuietRPS), b.s.FairNoisyClients,
			rate(b.s.FairWorkspaceRPS), b.s.FairWorkspaceBurst, b.s.FairInFlight, b.s.FairHold, b.s.Runs, fairTolerance)
	}
	p("* **p50 / p99** are the latency percentiles of one request (service) or one transaction (pgbench), as its client saw it, over "+
		"the measured part of each run; the table gives the median over runs. For paging they are per page of %d events, and the rate "+
		"is events per second while paging through %d events from the start of the stream, over and over.\n", b.s.PageLimit, b.s.PagingEvents)
	p("* A ratio below 0.7 means the service's own work per request dominates; `BENCH_PROFILE=1 make bench` adds a CPU profile of "+
		"complete-work at %d clients (`BENCH_PROFILE_LINE=create`, `read`, `mcp`, `doctor`, `validate` or `context` profiles those instead; printed, and in the [profile](#profile) section). "+
		"What the profiles of the lines below target showed, what was changed and what bounds them is in [profiling.md](profiling.md).\n", b.s.ProfileClients)

	p("\n## Machine\n\n")
	p("| | |\n|---|---|\n")
	p("| CPUs | %d × %s |\n| memory | %s |\n| kernel | %s |\n| OS | %s |\n| Go | %s |\n| PostgreSQL | %s |\n| pgbench | %s |\n| load average (1, 5, 15 min) | start %s, end %s |\n",
		m.NProc, m.CPU, m.Memory, m.Kernel, m.OS, m.Go, m.PostgreSQL, m.Pgbench, m.LoadStart, loadAvg())

	p("\n## Settings\n\n")
	p("* PostgreSQL (the server `scripts/stack.sh` started or reused; the service and pgbench use the same server, the same database "+
		"`%s` and therefore the same settings):", b.s.Database)
	for _, kv := range m.PGSettings {
		p(" `%s=%s`", kv[0], kv[1])
	}
	p(". With `fsync=on` every commit waits for the disk; the private cluster takes `ACCOUNTABLE_PG_FSYNC=off` when `make bench` starts it.\n")
	p("* The service: `accountable serve` as built by `make build`, default configuration except `HTTP_ADDR=%s`, "+
		"`DATABASE_MAX_CONNS=%d` (as many connections as pgbench's clients at the highest client count; the default pool is max(16, 2 × CPUs); the defaults line measures it) "+
		"`RATE_LIMIT_RPS=0`, `PUBLIC_RATE_LIMIT_RPS=0` (the account-free lines send from one address, as fast as it can), "+
		"`SSE_MAX_LEASES_PER_KEY=0` (the stream line's 500 subscribers share one key), "+
		"`TEMPORAL_TASK_QUEUE=%s`, `PROPOSALS_PER_MINUTE=1000000` (proposals are timed back to back, past the specification's 6 a minute), "+
		"and `LEDGER_SIGNING_KEY` with `LEDGER_LOG_NAME=%s` (one checkpoint signing key for every process of the run, made by the harness, "+
		"so that no process writes a key file and the workers that seal agree with the server that publishes the key); "+
		"it logs one line per request (the default `LOG_LEVEL=info`) to a file.\n", b.svcAddr, b.s.ServiceConns, serviceTaskQueue, benchLogName)
	p("* The load generator: this harness, closed loop (N clients, each on its own keep-alive connection, sending its next request " +
		"when the previous one is answered), fasthttp's client; every completion gets its own work item, version token and " +
		"Idempotency-Key, every creation its own key. Work items are made through POST /work before they are timed.\n")
	p("* Runs: %d per side and line, %s warm-up + %s measured; `CHECKPOINT` before every run; `VACUUM ANALYZE` after seeding; autovacuum off for the written tables (a vacuum starting in the middle of one run skewed that run alone).\n",
		b.s.Runs, b.s.Warmup, b.s.Duration)

	p("\n## Commands\n\n")
	p("```sh\nmake bench        # = make build; go build -o .data/bin/bench ./cmd/bench; scripts/stack.sh .data/bin/bench run\n")
	p("# settings (defaults shown): BENCH_RUNS=5 BENCH_WARMUP=2s BENCH_DURATION=10s BENCH_COMPLETE_CLIENTS=1,8,32\n")
	p("#   BENCH_CREATE_CLIENTS=8 BENCH_READ_CLIENTS=8 BENCH_LINES=%s BENCH_PROFILE=0\n", strings.Join(allLines, ","))
	p("#   BENCH_CONTEXT_EVENTS=100000 BENCH_CONTEXT_CLIENTS=1,8 BENCH_CONSOLE_PROCESSES=1000\n")
	p("#   BENCH_GROWTH_EVENTS=10000,100000,1000000 BENCH_GROWTH_CLIENTS=8 BENCH_PAGE_LIMIT=500\n")
	p("#   BENCH_FAIRNESS_WORKSPACES=1000 BENCH_FAIRNESS_QUIET_RPS=200 BENCH_FAIRNESS_NOISY_CLIENTS=32\n")
	p("#   BENCH_FAIRNESS_WORKSPACE_RPS=50 BENCH_FAIRNESS_WORKSPACE_BURST=100 BENCH_FAIRNESS_WORKSPACE_IN_FLIGHT=2 BENCH_FAIRNESS_PORT=18083\n")
	p("#   BENCH_LOG_SIZES=%s BENCH_LOG_CLIENTS=1,8 BENCH_LOG_WITNESS_PORT=18084\n", commaInts(defaultLogSizes))
	p("#   BENCH_HTTP_PORT=18080 BENCH_BASELINE_PORT=18081 BENCH_PPROF_PORT=18082 BENCH_DB=accountable_bench BENCH_KEEP_DB=0\n```\n\n")
	p("What it ran:\n\n```sh\n")
	p("DATABASE_URL=$BENCH_DATABASE_URL MIGRATION_DATABASE_URL=$BENCH_OWNER_URL accountable migrate     # DATABASE_URL and MIGRATION_DATABASE_URL with the database %s (dropped first)\n", b.s.Database)
	p("DATABASE_URL=$BENCH_DATABASE_URL accountable keys create --name bench --new-workspace Bench --user bench@example.com --json\n")
	p("DATABASE_URL=$BENCH_DATABASE_URL accountable keys create --name bench --new-workspace 'Bench paging' --user bench@example.com --json\n")
	p("DATABASE_URL=$BENCH_DATABASE_URL accountable keys create --name bench --new-workspace 'Bench discovery' --user bench@example.com --json\n")
	p("DATABASE_URL=$BENCH_DATABASE_URL accountable keys create --name bench --new-workspace 'Bench projection' --user bench@example.com --json\n")
	p("DATABASE_URL=$BENCH_DATABASE_URL accountable keys create --name bench --new-workspace 'Bench stream' --user bench@example.com --json\n")
	p("DATABASE_URL=$BENCH_DATABASE_URL accountable keys create --name bench --new-workspace 'Bench growth' --user bench@example.com --json\n")
	p("DATABASE_URL=$BENCH_DATABASE_URL accountable keys create --name bench --new-workspace 'Bench context' --user bench@example.com --json\n")
	if b.s.Lines["console"] {
		p("DATABASE_URL=$BENCH_DATABASE_URL accountable keys create --name bench --new-workspace 'Bench console' --user %s --json\n", consoleEmail)
		p("echo $BENCH_CONSOLE_PASSWORD | DATABASE_URL=$BENCH_DATABASE_URL accountable users set-password --email %s   # the console line's person\n", consoleEmail)
	}
	p("HTTP_ADDR=%s DATABASE_URL=$BENCH_DATABASE_URL DATABASE_MAX_CONNS=%d RATE_LIMIT_RPS=0 PUBLIC_RATE_LIMIT_RPS=0 SSE_MAX_LEASES_PER_KEY=0 TEMPORAL_TASK_QUEUE=%s PROPOSALS_PER_MINUTE=1000000 LEDGER_SIGNING_KEY=$BENCH_LEDGER_KEY LEDGER_LOG_NAME=%s accountable serve   # $BENCH_LEDGER_KEY: the run's signing key, made by the harness\n",
		b.svcAddr, b.s.ServiceConns, serviceTaskQueue, benchLogName)
	if b.s.Lines["proposal"] || b.s.Lines["launch"] || b.s.Lines["discovery"] || b.s.Lines["context"] {
		p("DATABASE_URL=$BENCH_DATABASE_URL TEMPORAL_TASK_QUEUE=%s OPENAI_API_KEY=%s OPENAI_BASE_URL=http://127.0.0.1:<port>/v1/ LEDGER_SIGNING_KEY=$BENCH_LEDGER_KEY LEDGER_LOG_NAME=%s accountable worker   # for the workflow lines\n", serviceTaskQueue, benchModelKey, benchLogName)
	}
	if b.s.Lines["ledgerlog"] {
		p("litewitness -name %s -db .data/bench/witness/litewitness.db -ssh-agent .data/bench/witness/agent.sock -key <its key> -listen 127.0.0.1:%d   # the ledgerlog line's witness (ledgerlog/litewitness)\n",
			benchWitnessName, b.s.LogWitnessPort)
		p("DATABASE_URL=$BENCH_DATABASE_URL TEMPORAL_TASK_QUEUE=%s LEDGER_SIGNING_KEY=$BENCH_LEDGER_KEY LEDGER_LOG_NAME=%s LEDGER_CHECKPOINT_INTERVAL=1s LEDGER_WITNESSES='http://127.0.0.1:%d <the witness key>' accountable worker   # the ledgerlog line's sealer\n",
			logTaskQueue, benchLogName, b.s.LogWitnessPort)
	}
	p("BENCH_BASELINE_ADDR=%s DATABASE_URL=$BENCH_DATABASE_URL BENCH_BASELINE_CONNS=%d GOGC=%d bench baseline   # GOGC: as accountable serve runs by default\n",
		b.baseAddr, b.s.ServiceConns, serviceGCPercent)
	if b.s.Lines["growth"] {
		p("DATABASE_URL=$BENCH_DATABASE_URL accountable ledger verify --workspace <the Bench growth workspace>   # after the first size and at the end of the growth line\n")
	}
	if b.s.Lines["defaults"] {
		p("HTTP_ADDR=127.0.0.1:%d DATABASE_URL=$BENCH_DATABASE_URL TEMPORAL_TASK_QUEUE=%s LEDGER_SIGNING_KEY=$BENCH_LEDGER_KEY LEDGER_LOG_NAME=%s %saccountable serve   # the defaults line: no settings but its addresses\n",
			b.s.DefaultsPort, serviceTaskQueue, benchLogName, strings.Join(append(strings.Fields(b.s.DefaultsEnv), ""), " "))
	}
	if b.s.Lines["fairness"] && b.fair != nil {
		p("HTTP_ADDR=%s DATABASE_URL=$BENCH_DATABASE_URL DATABASE_MAX_CONNS=%d RATE_LIMIT_RPS=0 PUBLIC_RATE_LIMIT_RPS=0 SSE_MAX_LEASES_PER_KEY=0 WORKSPACE_RATE_LIMIT_RPS=%s WORKSPACE_RATE_LIMIT_BURST=%d WORKSPACE_MAX_IN_FLIGHT=%d RATE_LIMIT_HOLD=%s TEMPORAL_TASK_QUEUE=%s PROPOSALS_PER_MINUTE=1000000 accountable serve   # the fairness line's phases 3 and 4\n",
			b.fair.limited, b.s.ServiceConns, strconv.FormatFloat(b.s.FairWorkspaceRPS, 'f', -1, 64), b.s.FairWorkspaceBurst, b.s.FairInFlight, b.s.FairHold, serviceTaskQueue)
	}
	for _, k := range []string{"create-writes", "create", "complete-writes", "complete"} {
		if c, ok := b.pgbCommands[k]; ok {
			p("%s\n", c)
		}
	}
	p("```\n\n")
	if len(b.pgbCommands) > 0 {
		p("pgbench's `-D` values (the same in every run; the long ones are copied from the service's rows of this run):\n\n")
		keys := make([]string, 0, len(b.pgb.vars))
		for k := range b.pgb.vars {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p("* `%s` = `%s`\n", k, abbreviate(b.pgb.vars[k]))
		}
		p("\n`n` counts a client's transactions, `k = base + client_id + clients × n` numbers the transaction across clients and runs (each run starts where the previous ended).\n")
	}

	p("\n## The pgbench scripts\n\n")
	p("The limit scripts send the row writes, one statement at a time; the mirror scripts send the service's statements for the operation, in its order and round trips (`\\startpipeline` … `\\endpipeline` is one round trip, as a pgx batch is). " +
		"Ids and keys that change per transaction are computed from `k` in the statement (the service sends them as parameters); every other value is a parameter, as in the service. " +
		"The completion scripts complete tasks seeded for them in bulk with the rows POST /work makes (the task, its work.created event, its ledger head, its idempotency record, with the values of a task the service created); " +
		"after every run the harness checks that as many of them are completed (or created) as pgbench counted transactions, so no UPDATE silently missed.\n\n")
	if b.s.Lines["create"] {
		p("### POST /work: the limit (the row writes)\n\n```sql\n%s```\n\n", createWritesScript())
		p("### POST /work: the mirror (store.CreateWork through runCommand)\n\nOne round trip and one implicit transaction (a blind command: it reads nothing): the idempotency gate (the Idempotency-Key's advisory lock and the check that it has no record), the work.created event, the task, its new ledger head, the idempotency record.\n\n```sql\n%s```\n\n", createScript())
	}
	if b.s.Lines["complete"] {
		p("### POST /work/{id}/complete: the limit (the row writes)\n\n```sql\n%s```\n\n", completeWritesScript())
		p("### POST /work/{id}/complete: the mirror (store.CompleteWork through runCommand)\n\n"+
			"One round trip and one implicit transaction, as the service completes a task whose version matches (store.runSingle): the idempotency gate, then one statement (store.CompleteWorkSQL, sent as the store's text) that locks the task's ledger head, "+
			"updates the task at its version and appends the work.completed event (its version, previous hash and hash made from the head in PostgreSQL), the receipt, the moved head and the idempotency record.\n\n```sql\n%s```\n\n", completeScript())
	}

	p("## All runs\n\n")
	p("Rates of each run in order, and the ratio of each service run to the limit run after it.\n\n")
	for _, l := range b.lines {
		p("* **%s @%d**: service (%s)", l.Name, l.Clients, l.Unit)
		for _, s := range l.Service {
			p(" %s", rate(s.Rate))
		}
		p("; limit (%s)", l.limitUnit())
		for _, s := range l.Limit {
			p(" %s", rate(s.Rate))
		}
		if len(l.Mirror) > 0 {
			p("; mirror (%s)", l.limitUnit())
			for _, s := range l.Mirror {
				p(" %s", rate(s.Rate))
			}
		}
		p("; ratios")
		for i := range min(len(l.Service), len(l.Limit)) {
			if l.Limit[i].Rate > 0 {
				p(" %.2f", l.Service[i].Rate/l.Limit[i].Rate)
			}
		}
		p("\n")
		for i, s := range l.Service {
			if s.Errors > 0 || s.Exhausted {
				p("  * service run %d: %s\n", i+1, s)
			}
		}
	}

	if b.fair.measured() {
		for _, ph := range b.fair.phases {
			p("* **fairness, phase %s**: quiet p50 / p99 (ms)", ph.Name)
			for _, q := range ph.Quiet {
				p(" %s / %s", msec(q.P50), msec(q.P99))
			}
			if ph.Noisy {
				p("; noisy 201 / 429 (req/s)")
				for _, n := range ph.NoisyR {
					p(" %s / %s", rate(n.okRate()), rate(n.limitedRate()))
				}
			}
			p("\n")
			for i, q := range ph.Quiet {
				if q.Errors > 0 {
					p("  * run %d: %d quiet requests not answered 2xx (first: %s)\n", i+1, q.Errors, q.FirstErr)
				}
			}
			for i, n := range ph.NoisyR {
				if n.Other > 0 {
					p("  * run %d: %d noisy answers neither 201 nor 429 (first: %s)\n", i+1, n.Other, n.FirstOther)
				}
			}
		}
	}

	if b.profileTop != "" {
		p("\n## Profile\n\nCPU profile of `accountable serve` during one more %s run at %d clients (not in the table: %s); flat, then cumulative:\n\n```\n%s```\n",
			b.s.ProfileLine, b.s.ProfileClients, b.profileRun, b.profileTop)
	}

	p("\n## History\n\nOne row per `make bench` run (ratios, then the service's median rate).\n\n%s\n", historyStart)
	p("| date (UTC) | commit | ratios | settings | load average at start → end |\n|---|---|---|---|---|\n")
	for _, r := range previousHistory(b.s.Out) {
		p("%s\n", r)
	}
	p("%s\n%s\n", b.historyRow(), historyEnd)

	if err := os.MkdirAll(filepath.Dir(b.s.Out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(b.s.Out, w.Bytes(), 0o644)
}

// intList writes sizes as 10,000, 100,000 and 1,000,000.
func intList(v []int) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = thousands(n)
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// commaInts writes v as a BENCH_* setting: 1000000,10000000.
func commaInts(v []int) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// verifiedList is what the growth line's verifications found, for the report.
func verifiedList(v []string) string {
	if len(v) == 0 {
		return "not run"
	}
	return "verified, " + strings.Join(v, ", then ")
}
