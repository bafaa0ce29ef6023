package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/accountablework/accountable/ledgerlog"
)

// bench is one run of `make bench`.
type bench struct {
	s       settings
	ctx     context.Context
	dir     string // .data/bench: scripts, profiles, logs of the servers
	started time.Time
	ended   time.Time

	dbURL, ownerURL, adminURL string
	db                        *pgxpool.Pool
	svc, base                 *proc
	svcAddr                   string
	baseAddr                  string
	accountable               string // the accountable binary

	main, paging, discovery, projection, stream, growth, context keyInfo
	pgb                                                          *pgbench

	// The work items the service completes: made through POST /work (by the create line
	// and, when those are not enough, by seeding), handed out in order.
	poolMu   sync.Mutex
	pool     []poolTask
	poolNext int

	// pgbench's counters: the next k of the create script, the seeded range of tasks the
	// complete script completes (k in [pgbPoolNext, pgbPoolEnd)) and the transactions done.
	pgbCreateBase           int64
	pgbPoolNext, pgbPoolEnd int64
	pgbCreated, pgbComplete int
	seededAt                string

	tmpl     templates
	haveTmpl struct{ created, completed bool }

	// Highest rates seen (per second), to size the seeding.
	maxRate map[string]float64

	pgbCommands map[string]string

	lines      []*line
	notes      []string
	info       machine
	runSeq     int
	profileTop string
	profileRun *sample
	streams    []streamLatency // the live stream's line

	// The growth line: the tasks it seeded (completed in order up to growthNext, the rest
	// shuffled at each size), how many, its measurements and its ledger verifications.
	growthPool     []growthTask
	growthNext     int
	growthSeeded   int
	growthPoints   []*growthPoint
	growthVerified []string
	growthTook     time.Duration

	memory []memRow // the service's memory under load (complete and growth runs)

	svcEnv []string // the environment accountable serve was started with
	// The transparency log's signing key of every process the harness starts (its
	// private key text and the key), and the ledgerlog line's measurements.
	ledgerSKey string
	ledgerKey  *ledgerlog.Key
	logLine    *logLine
	fair       *fairness
	fairSvc    *proc // the fairness line's accountable serve with the per-workspace limit
	ctxLine    *contextResult
	// The console line: its workspace's key and its measurements.
	consoleKey keyInfo
	console    *consoleResult
}

type keyInfo struct {
	Key         string `json:"key"`
	WorkspaceID string `json:"workspace_id"`
	UserID      string `json:"user_id"`
}

type poolTask struct{ id, token string }

// line is one row group of the report: the service and its limit at one client count.
type line struct {
	ID        string // create, complete, read, paging
	Name      string
	Clients   int
	Unit      string // req/s, events/s
	LimitName string
	Latency   string // what p50/p99 are of
	Service   []sample
	Limit     []sample
	// Mirror is the write lines' second, stricter reference: pgbench sending every
	// statement the service sends, in the same round trips (what a perfect client of the
	// same design could do). The ratio and the target are against Limit.
	Mirror []sample
	Notes  []string
	// Target is the ratio the line must reach, when not DESIGN §6's (0.7, goal 0.8).
	Target float64
}

func run() error {
	s, err := loadSettings()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b := &bench{s: s, ctx: ctx, started: time.Now(), maxRate: map[string]float64{}}
	err = b.run()
	b.shutdown()
	if err != nil {
		b.printTable()
		return err
	}
	b.ended = time.Now()
	if err := b.writeReport(); err != nil {
		return err
	}
	b.printTable()
	if b.profileTop != "" {
		fmt.Printf("\nCPU profile of the service, %s at %d clients (%s):\n%s\n", b.s.ProfileLine, b.s.ProfileClients, b.profileRun, b.profileTop)
	}
	fmt.Printf("\nwrote %s (make bench took %s)\n", b.s.Out, b.ended.Sub(b.started).Round(time.Second))
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench %s: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func (b *bench) run() error {
	if _, err := os.Stat("go.mod"); err != nil {
		return errors.New("run from the repository root (make bench)")
	}
	dbURL := os.Getenv("DATABASE_URL")
	if dbURL == "" {
		return errors.New("DATABASE_URL is not set: run through make bench (scripts/stack.sh sets it)")
	}
	// The service connects as its own role (DATABASE_URL); the owner role
	// (MIGRATION_DATABASE_URL) migrates, checkpoints and drops the database.
	ownerURL := os.Getenv("MIGRATION_DATABASE_URL")
	if ownerURL == "" {
		ownerURL = dbURL
	}
	var err error
	if b.dbURL, err = withDatabase(dbURL, b.s.Database); err != nil {
		return err
	}
	if b.ownerURL, err = withDatabase(ownerURL, b.s.Database); err != nil {
		return err
	}
	if b.adminURL, err = withDatabase(ownerURL, "postgres"); err != nil {
		return err
	}
	b.dir = filepath.Join(".data", "bench")
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return err
	}
	if b.accountable, err = filepath.Abs(b.s.Bin); err != nil {
		return err
	}
	pgbenchBin, err := findPgbench()
	if err != nil {
		return err
	}
	b.pgb = &pgbench{bin: pgbenchBin, dbURL: b.dbURL, dir: b.dir}
	diff, err := sameStatements(".")
	if err != nil {
		diff = "reading the store's statements: " + err.Error()
	}
	if diff != "" {
		// The test fails on this too; a run on a changed tree says so in the report.
		msg := "**The pgbench scripts may no longer send what the store sends** (update cmd/bench/pgbench.go): " + diff
		logf("%s", msg)
		b.notes = append(b.notes, strings.ReplaceAll(msg, "\n", " "))
	}

	logf("database %s: dropping and creating it, migrating", b.s.Database)
	if err := b.dropDatabase(); err != nil {
		return err
	}
	env := []string{"DATABASE_URL=" + b.dbURL, "MIGRATION_DATABASE_URL=" + b.ownerURL}
	if _, err := output(b.ctx, env, b.accountable, "migrate"); err != nil {
		return err
	}
	for _, k := range []struct {
		into *keyInfo
		ws   string
	}{{&b.main, "Bench"}, {&b.paging, "Bench paging"}, {&b.discovery, "Bench discovery"}, {&b.projection, "Bench projection"}, {&b.stream, "Bench stream"}, {&b.growth, "Bench growth"},
		{&b.context, "Bench context"}} {
		if *k.into, err = b.createKey(k.ws); err != nil {
			return err
		}
	}
	// One checkpoint signing key for every process the harness starts, made here: the
	// workers that seal and the servers that publish the key agree, and no process writes
	// a key file of its own into .data.
	if b.ledgerSKey, err = ledgerlog.GenerateKey(benchLogName); err != nil {
		return err
	}
	if b.ledgerKey, err = ledgerlog.ParseKey(b.ledgerSKey); err != nil {
		return err
	}
	pc, err := pgxpool.ParseConfig(b.ownerURL)
	if err != nil {
		return err
	}
	pc.MaxConns = 4
	if b.db, err = pgxpool.NewWithConfig(b.ctx, pc); err != nil {
		return err
	}
	b.info = readMachine(b.ctx, b.db, pgbenchBin)
	// Autovacuum starting in the middle of one run (the tables grow by hundreds of
	// thousands of rows) skewed that run alone: it is off for the written tables, and
	// VACUUM ANALYZE runs after every seeding instead, for both sides alike.
	if _, err := b.db.Exec(b.ctx, `ALTER TABLE tasks SET (autovacuum_enabled = false);
		ALTER TABLE receipts SET (autovacuum_enabled = false);
		ALTER TABLE ledger_events SET (autovacuum_enabled = false);
		ALTER TABLE ledger_heads SET (autovacuum_enabled = false);
		ALTER TABLE idempotency_records SET (autovacuum_enabled = false);
		ALTER TABLE ledger_log_leaves SET (autovacuum_enabled = false);
		ALTER TABLE ledger_log_hashes SET (autovacuum_enabled = false)`); err != nil {
		return fmt.Errorf("turn autovacuum off for the benchmark's tables: %w", err)
	}

	b.svcAddr = "127.0.0.1:" + strconv.Itoa(b.s.ServicePort)
	b.baseAddr = "127.0.0.1:" + strconv.Itoa(b.s.BaselinePort)
	// The doctor and validate lines send as fast as one loopback address can, which the
	// per-address limit of account-free operations exists to refuse; the stream line's 500
	// subscribers share one key, five times the leases a key may hold by default. The lines
	// measure what the service can do, so both limits are off (as the per-key rate is).
	svcEnv := []string{"HTTP_ADDR=" + b.svcAddr, "SITE_URL=http://" + b.svcAddr, "DATABASE_URL=" + b.dbURL,
		"DATABASE_MAX_CONNS=" + strconv.Itoa(b.s.ServiceConns), "RATE_LIMIT_RPS=0", "PUBLIC_RATE_LIMIT_RPS=0", "SSE_MAX_LEASES_PER_KEY=0",
		"TEMPORAL_TASK_QUEUE=" + serviceTaskQueue, "PROPOSALS_PER_MINUTE=1000000", "PPROF_ADDR="}
	if b.s.Profile {
		svcEnv[len(svcEnv)-1] = "PPROF_ADDR=127.0.0.1:" + strconv.Itoa(b.s.PprofPort)
	}
	svcEnv = append(svcEnv, b.ledgerEnv()...)
	b.svcEnv = svcEnv
	logf("starting accountable serve on %s", b.svcAddr)
	if b.svc, err = startProc("accountable serve", filepath.Join(b.dir, "serve.log"), svcEnv, b.accountable, "serve"); err != nil {
		return err
	}
	if err := b.svc.waitReady("http://"+b.svcAddr+"/readyz", 60*time.Second); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logf("starting the baseline server on %s", b.baseAddr)
	baseEnv := []string{"BENCH_BASELINE_ADDR=" + b.baseAddr, "DATABASE_URL=" + b.dbURL, "BENCH_BASELINE_CONNS=" + strconv.Itoa(b.s.ServiceConns)}
	if _, set := os.LookupEnv("GOGC"); !set { // the garbage collector's setting is not the service's work
		baseEnv = append(baseEnv, "GOGC="+strconv.Itoa(serviceGCPercent))
	}
	if b.base, err = startProc("bench baseline", filepath.Join(b.dir, "baseline.log"), baseEnv, self, "baseline"); err != nil {
		return err
	}
	if err := b.base.waitReady("http://"+b.baseAddr+"/healthz", 30*time.Second); err != nil {
		return err
	}
	b.seededAt = time.Now().UTC().Truncate(time.Microsecond).Format("2006-01-02T15:04:05.000000Z")
	b.pgb.vars = b.commonVars()

	steps := []struct {
		id string
		fn func() error
	}{{"create", b.createLine}, {"floor", b.floorLine}, {"complete", b.completeLine}, {"read", b.readLine}, {"defaults", b.defaultsLine}, {"mcp", b.mcpLine}, {"paging", b.pagingLine},
		{"projection", b.projectionLine}}
	for _, st := range steps {
		if !b.s.Lines[st.id] {
			continue
		}
		if err := st.fn(); err != nil {
			return fmt.Errorf("%s: %w", st.id, err)
		}
	}
	if err := b.accountFreeLines(); err != nil {
		return err
	}
	if b.s.Lines["stream"] {
		if err := b.streamLine(); err != nil {
			return fmt.Errorf("stream: %w", err)
		}
	}
	if b.s.Lines["proposal"] || b.s.Lines["launch"] || b.s.Lines["discovery"] || b.s.Lines["context"] {
		if err := b.workflowLines(); err != nil {
			return err
		}
	}
	// The context line's scope was committed while the workflow lines' worker ran; it is
	// measured with no worker running.
	if b.s.Lines["context"] {
		if err := b.contextLine(); err != nil {
			return fmt.Errorf("context: %w", err)
		}
	}
	if b.s.Lines["console"] {
		if err := b.consoleLine(); err != nil {
			return fmt.Errorf("console: %w", err)
		}
	}
	// The lines that grow the shared tables run last (the transparency log's by tens of
	// millions of stored hashes, growth the ledger by a million events or more, then fairness
	// by its noisy workspace's writes), so that the others are measured on the tables as
	// they always were.
	for _, st := range []struct {
		id string
		fn func() error
	}{{"ledgerlog", b.ledgerLogLine}, {"growth", b.growthLine}, {"fairness", b.fairnessLine}} {
		if !b.s.Lines[st.id] {
			continue
		}
		if err := st.fn(); err != nil {
			return fmt.Errorf("%s: %w", st.id, err)
		}
	}
	if b.s.Profile {
		if err := b.profile(); err != nil {
			return fmt.Errorf("profile: %w", err)
		}
	}
	return b.ctx.Err()
}

// shutdown stops what run started and drops the benchmark database (unless BENCH_KEEP_DB=1).
func (b *bench) shutdown() {
	b.base.stop()
	b.fairSvc.stop()
	b.svc.stop()
	if b.db != nil {
		b.db.Close()
	}
	if b.adminURL != "" && !b.s.KeepDB {
		if err := b.dropDatabase(); err != nil {
			logf("dropping %s: %v", b.s.Database, err)
		}
	}
}

// createKey makes a workspace named ws with a user and an API key (accountable keys
// create --new-workspace).
func (b *bench) createKey(ws string) (keyInfo, error) {
	var k keyInfo
	out, err := output(b.ctx, []string{"DATABASE_URL=" + b.dbURL, "MIGRATION_DATABASE_URL=" + b.ownerURL}, b.accountable,
		"keys", "create", "--name", "bench", "--new-workspace", ws, "--user", "bench@example.com", "--json")
	if err != nil {
		return k, err
	}
	if err := json.Unmarshal([]byte(out), &k); err != nil {
		return k, fmt.Errorf("keys create --json: %w: %q", err, out)
	}
	return k, nil
}

// benchLogName is the LEDGER_LOG_NAME of every process the harness starts (the default,
// set so that the sealers and the server agree whatever the environment says).
const benchLogName = "accountable.localhost"

// ledgerEnv is the transparency log's settings of every accountable process the harness
// starts.
func (b *bench) ledgerEnv() []string {
	return []string{"LEDGER_SIGNING_KEY=" + b.ledgerSKey, "LEDGER_LOG_NAME=" + benchLogName}
}

func withDatabase(raw, name string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("DATABASE_URL must be a postgres:// URL")
	}
	u.Path = "/" + name
	return u.String(), nil
}

func (b *bench) dropDatabase() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, b.adminURL)
	if err != nil {
		return fmt.Errorf("connect to the maintenance database: %w", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{b.s.Database}.Sanitize()+" WITH (FORCE)")
	return err
}

func (b *bench) nextTag(kind string) string {
	b.runSeq++
	return fmt.Sprintf("bench-%s-%d", kind, b.runSeq)
}

// prepareRun makes every run start alike: no dirty pages left by the previous one.
func (b *bench) prepareRun() {
	if _, err := b.db.Exec(b.ctx, "CHECKPOINT"); err != nil && b.runSeq <= 1 {
		b.notes = append(b.notes, "CHECKPOINT before each run failed (not a superuser?): "+err.Error())
	}
}

// analyze refreshes the planner's statistics after seeding (instead of autovacuum doing it
// in the middle of a run).
func (b *bench) analyze() error {
	_, err := b.db.Exec(b.ctx, "VACUUM ANALYZE tasks, receipts, ledger_events, ledger_heads, idempotency_records")
	return err
}

// serviceGCPercent is the GOGC `accountable serve` runs with when none is set
// (cmd/accountable's defaultGCPercent; a test keeps them equal). The baseline server runs
// with it too, so that a limit and the service collect garbage alike.
const serviceGCPercent = 400

// measure runs the service, its limit and (when given) the mirror in turn, runs times, and
// keeps every sample.
func (b *bench) measure(l *line, service, limit func() (sample, error), mirror ...func() (sample, error)) error {
	return b.measureRuns(l, b.s.Runs, service, limit, mirror...)
}

// measureRuns is measure with runs runs of each side.
func (b *bench) measureRuns(l *line, runs int, service, limit func() (sample, error), mirror ...func() (sample, error)) error {
	for r := 1; r <= runs; r++ {
		if err := b.ctx.Err(); err != nil {
			return err
		}
		b.prepareRun()
		s, err := service()
		if err != nil {
			return err
		}
		logf("  %s @%d run %d/%d service: %s", l.ID, l.Clients, r, runs, s)
		l.Service = append(l.Service, s)
		b.prepareRun()
		ls, err := limit()
		if err != nil {
			return err
		}
		logf("  %s @%d run %d/%d limit:   %s", l.ID, l.Clients, r, runs, ls)
		l.Limit = append(l.Limit, ls)
		for _, m := range mirror {
			b.prepareRun()
			ms, err := m()
			if err != nil {
				return err
			}
			logf("  %s @%d run %d/%d mirror:  %s", l.ID, l.Clients, r, runs, ms)
			l.Mirror = append(l.Mirror, ms)
		}
	}
	return nil
}

func (b *bench) noteRate(kind string, rate float64) {
	b.maxRate[kind] = max(b.maxRate[kind], rate)
}

// --- HTTP workloads --------------------------------------------------------------------

// jsonString returns the string value of the first "key": member in body.
func jsonString(body []byte, key string) string { return stringMember(body, key, bytes.Index) }

// stringMember returns the string value of the "key": member that find locates in body.
func stringMember(body []byte, key string, find func(s, sep []byte) int) string {
	return quotedAfter(body, `"`+key+`":"`, find)
}

// quotedAfter returns the text from the marker find locates in body to the next double
// quote ("" when either is missing): a JSON string member's value, an HTML attribute's.
func quotedAfter(body []byte, marker string, find func(s, sep []byte) int) string {
	i := find(body, []byte(marker))
	if i < 0 {
		return ""
	}
	rest := body[i+len(marker):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

func (b *bench) addToPool(id, token string) {
	b.poolMu.Lock()
	b.pool = append(b.pool, poolTask{id: id, token: token})
	b.poolMu.Unlock()
}

// get fetches a small resource from the service (set-up, not measured).
func get(u string) ([]byte, error) {
	resp, err := http.Get(u) // loopback, set-up only
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, truncate(string(body), 300))
	}
	return body, err
}

// lastInt returns the integer value of the last "key": member in body (0 when absent).
func lastInt(body []byte, key string) int {
	marker := []byte(`"` + key + `":`)
	i := bytes.LastIndex(body, marker)
	if i < 0 {
		return 0
	}
	rest := body[i+len(marker):]
	n := 0
	for _, c := range rest {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// lastString returns the string value of the last "key": member in body.
func lastString(body []byte, key string) string { return stringMember(body, key, bytes.LastIndex) }
