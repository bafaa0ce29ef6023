package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/accountablework/accountable/store"
)

// The limits of the write lines: pgbench sending the statements the service sends for the
// same operation (store/command.go and store/work.go), in the same transaction, grouped
// into the same round trips (pgbench pipelines where pgx sends a batch), prepared, against
// the same tables and indexes of the same database, at the same concurrency. What cannot
// be the same: pgbench has no strings that change per transaction, so the ids and keys of
// each transaction are computed inside the statement from its counter k
// (prefix || lpad(to_hex(k), 12, '0'), 'pgbench-…-' || k) where the service sends them
// as parameters; the other values are the byte-for-byte values of a request the service
// made in the same run (payloads, digests, hashes, the stored response document).

// Id prefixes of the rows pgbench writes; k fills the last 12 hex digits. They sort after
// the service's UUIDv7 ids, so inserts go to the right edge of the indexes, as the
// service's time-ordered ids do.
const (
	pgbCreateTask   = "f1000000-0000-7000-8000-"
	pgbCreateEvent  = "f2000000-0000-7000-8000-"
	pgbPoolTask     = "f3000000-0000-7000-8000-" // tasks seeded for pgbench to complete
	pgbPoolEvent    = "f4000000-0000-7000-8000-" // their work.created events
	pgbCompleteEvt  = "f5000000-0000-7000-8000-"
	pgbCompleteRcpt = "f6000000-0000-7000-8000-"
)

// idExpr is the SQL text of the id with prefix for the transaction's counter k.
func idExpr(prefix string) string {
	return fmt.Sprintf("('%s' || lpad(to_hex(:k::bigint), 12, '0'))", prefix)
}

// scriptHead numbers the transaction: n counts this client's transactions from 0 (-D n=-1),
// k is unique across clients and runs (base moves on after every run).
const scriptHead = `\set n :n + 1
\set k :base + :client_id + :clients * :n
`

// createWrites are the row writes of a creation: the work.created event, the task, its
// new ledger head and the idempotency record.
func createWrites() string {
	task, event := idExpr(pgbCreateTask), idExpr(pgbCreateEvent)
	return insertEvent(event, task, ":v1", ":created_type", ":created_payload", ":created_digest", "NULL", ":created_hash", "'pgbench-create-' || :k") + `
INSERT INTO tasks (workspace_id, id, title, description, status, priority, due_date,
	initiative_id, workstream_id, milestone_id, metadata, estimated_cost_cents, created_at, updated_at, aggregate_version)
	VALUES (:ws, ` + task + `::uuid, :title, :description, :todo, :priority, NULL, NULL, NULL, NULL, :metadata, NULL, :now, :now, :v1);
INSERT INTO ledger_heads (workspace_id, aggregate_type, aggregate_id, version, event_id, event_hash, updated_at)
	VALUES (:ws, :task_type, ` + task + `, :v1, ` + event + `::uuid, :created_hash, :now);
` + insertIdempotency("'pgbench-create-' || :k", ":create_op", ":create_digest", ":create_response") + "\n"
}

// completeUpdate is a completion's version-checked UPDATE of the task; gate is the
// condition the service adds to it (the prelude's idempotency gate), or "".
func completeUpdate(gate string) string {
	return `UPDATE tasks SET status = :completed, updated_at = :now, aggregate_version = aggregate_version + 1
	WHERE workspace_id = :ws AND id = ` + idExpr(pgbPoolTask) + `::uuid AND aggregate_version = :v1 AND updated_at = :seeded_at AND :exact
	  AND status IN ('todo', 'in_progress', 'blocked')` + gate + `
	RETURNING ` + taskColumns + ";\n"
}

// completeWrites are the row writes of a completion after its UPDATE: the work.completed
// event (chained to the head), the receipt, the moved head and the idempotency record.
func completeWrites() string {
	task, event, receipt := idExpr(pgbPoolTask), idExpr(pgbCompleteEvt), idExpr(pgbCompleteRcpt)
	return insertEvent(event, task, ":v2", ":completed_type", ":completed_payload", ":completed_digest", ":created_hash", ":completed_hash", "'pgbench-complete-' || :k") + `
INSERT INTO receipts (workspace_id, id, task_id, status, summary, measured_duration_hours,
	cost_cents, evidence, event_id, created_at) VALUES (:ws, ` + receipt + `::uuid, ` + task + `::uuid, :completed, :summary, :hours, :cost, :evidence, ` + event + `::uuid, :now);
UPDATE ledger_heads SET version = :v2, event_id = ` + event + `::uuid, event_hash = :completed_hash, updated_at = :now
	WHERE workspace_id = :ws AND aggregate_type = :task_type AND aggregate_id = ` + task + `;
` + insertIdempotency("'pgbench-complete-' || :k", ":complete_op", ":complete_digest", ":complete_response") + "\n"
}

// createScript is CreateWork, a blind command (runBlind): one round trip, one implicit
// transaction, of the idempotency gate (the key's advisory lock and the check that it has
// no record), the work.created event, the task, the new ledger head and the idempotency
// record.
func createScript() string {
	return scriptHead + `\startpipeline
SELECT idempotency_gate(:ws, 'pgbench-create-' || :k, :now);
` + createWrites() + `\endpipeline
`
}

// completeScript is CompleteWork as it runs when the completion matches (store.runSingle):
// one round trip and one implicit transaction, of the idempotency gate and
// store.CompleteWorkSQL, the one statement that locks the task's head, updates the task at
// its version, and appends the work.completed event (its hash made by PostgreSQL), the
// receipt, the moved head and the idempotency record. The statement is the store's own
// text, each parameter replaced by its pgbench value (completeParams).
func completeScript() string {
	statement := regexp.MustCompile(`\$\d+`).ReplaceAllStringFunc(store.CompleteWorkSQL, func(p string) string {
		n, _ := strconv.Atoi(p[1:])
		return completeParams[n-1]
	})
	return scriptHead + `\startpipeline
SELECT idempotency_gate(:ws, 'pgbench-complete-' || :k, :now);
` + statement + `;
\endpipeline
`
}

// completeParams are the pgbench values of store.CompleteWorkSQL's parameters, $1 first:
// the values of a completion the service made in this run (captureCompleted), with the ids
// and the key of the transaction's counter k.
var completeParams = []string{":ws", idExpr(pgbPoolTask) + "::uuid", ":task_type", idExpr(pgbPoolTask), ":v1", ":seeded_at",
	":completed", ":now", idExpr(pgbCompleteEvt), ":completed_type", ":schema_version", ":actor_type", ":actor_id",
	":completed_payload", ":completed_digest", "('pgbench-complete-' || :k)", "NULL", "NULL",
	":header_before", ":header_middle", ":header_after", idExpr(pgbCompleteRcpt), ":completed", ":summary", ":hours", ":cost",
	":evidence", ":complete_op", ":complete_digest", ":doc_a", ":doc_b", ":doc_c", ":doc_d", ":concurrency", ":expires"}

// createWritesScript is the limit of POST /work as DESIGN.md §6 defines it: the row writes
// of a creation in one transaction, prepared, one statement at a time, as pgbench runs a
// transaction. The service also passes the idempotency gate before them, and sends them
// pipelined.
func createWritesScript() string {
	return scriptHead + "BEGIN;\n" + createWrites() + "COMMIT;\n"
}

// completeWritesScript is the limit of POST /work/{id}/complete as DESIGN.md §6 defines
// it: the row writes of a completion (the version-checked task update, the work.completed
// event, the receipt, the moved ledger head, the idempotency record) in one transaction,
// prepared, one statement at a time. The service also takes the idempotency key's lock,
// reads its record and locks the task's head before them, and sends them pipelined.
func completeWritesScript() string {
	return scriptHead + "BEGIN;\n" + completeUpdate("") + completeWrites() + "COMMIT;\n"
}

const taskColumns = `id, workspace_id, title, description, status, priority, due_date, initiative_id,
	workstream_id, milestone_id, metadata::text, estimated_cost_cents, created_at, updated_at, aggregate_version`

func insertEvent(id, aggregateID, version, eventType, payload, digest, prev, hash, key string) string {
	return `INSERT INTO ledger_events (workspace_id, id, aggregate_type, aggregate_id,
	aggregate_version, event_type, schema_version, actor_type, actor_id, payload, payload_digest,
	occurred_at, recorded_at, idempotency_key, causation_id, correlation_id, previous_hash, event_hash)
	VALUES (:ws, ` + id + `::uuid, :task_type, ` + aggregateID + `, ` + version + `, ` + eventType + `, :schema_version, :actor_type, :actor_id, ` +
		payload + `, ` + digest + `, :now, :now, ` + key + `, NULL, NULL, ` + prev + `, ` + hash + `);`
}

func insertIdempotency(key, op, digest, response string) string {
	return `INSERT INTO idempotency_records (workspace_id, key, operation, request_digest, response,
		status, created_at, expires_at)
	VALUES (:ws, ` + key + `, ` + op + `, ` + digest + `, ` + response + `, 'completed', :now, :expires)
	ON CONFLICT (workspace_id, key) DO UPDATE SET operation = excluded.operation,
		request_digest = excluded.request_digest, response = excluded.response, status = 'completed',
		workflow_id = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at
	WHERE idempotency_records.expires_at <= excluded.created_at
	   OR (idempotency_records.status = 'pending' AND idempotency_records.operation = excluded.operation
	       AND idempotency_records.request_digest = excluded.request_digest);`
}

// pgbench runs pgbench scripts against the benchmark database.
type pgbench struct {
	bin    string
	dbURL  string
	dir    string            // scripts and logs
	vars   map[string]string // -D values common to every run
	logSeq int
}

// pgbResult is one pgbench run.
type pgbResult struct {
	sample
	Processed  int    // transactions in the whole run (warm-up included)
	PerClient  int    // the most transactions one client made (to move base on)
	Command    string // the command line, for the report (long values elided)
	Aborted    bool
	Output     string
	ScriptPath string
}

// run runs script at clients for warmup+window seconds with base as the first counter value.
func (p *pgbench) run(ctx context.Context, name, script string, clients int, base int64, warmup, window time.Duration, extra map[string]string) (pgbResult, error) {
	var res pgbResult
	scriptPath := filepath.Join(p.dir, "pgbench-"+name+".sql")
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		return res, err
	}
	res.ScriptPath = scriptPath
	p.logSeq++
	logPrefix := filepath.Join(p.dir, fmt.Sprintf("log-%s-%d", name, p.logSeq))
	secs := int(math.Ceil((warmup + window).Seconds()))
	args := []string{"-n", "-M", "prepared", "-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(clients, 2)),
		"-T", strconv.Itoa(secs), "-l", "--log-prefix=" + logPrefix, "-f", scriptPath,
		"-D", "n=-1", "-D", "base=" + strconv.FormatInt(base, 10), "-D", "clients=" + strconv.Itoa(clients)}
	vars := map[string]string{}
	for k, v := range p.vars {
		vars[k] = v
	}
	for k, v := range extra {
		vars[k] = v
	}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	shown := []string{"pgbench", "-n", "-M", "prepared", "-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(clients, 2)),
		"-T", strconv.Itoa(secs), "-l", "-f", filepath.Base(scriptPath), "-D n=-1 -D base=… -D clients=" + strconv.Itoa(clients)}
	for _, k := range keys {
		args = append(args, "-D", k+"="+vars[k])
	}
	shown = append(shown, "-D …(values below)", "$BENCH_DATABASE_URL")
	res.Command = strings.Join(shown, " ")
	args = append(args, p.dbURL)
	cmd := exec.CommandContext(ctx, p.bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	res.Output = out.String()
	if m := regexp.MustCompile(`number of transactions actually processed: (\d+)`).FindStringSubmatch(res.Output); m != nil {
		res.Processed, _ = strconv.Atoi(m[1])
	}
	res.Aborted = runErr != nil || strings.Contains(res.Output, "aborted")
	logs, _ := filepath.Glob(logPrefix + ".*")
	defer func() {
		for _, l := range logs {
			os.Remove(l)
		}
	}()
	if err := res.parseLogs(logs, window); err != nil {
		return res, err
	}
	if res.Aborted {
		return res, fmt.Errorf("pgbench %s: %v\n%s", name, runErr, truncate(res.Output, 3000))
	}
	return res, nil
}

// parseLogs reads pgbench's per-transaction logs ("client_id transaction_no time script_no
// time_epoch time_us": time is the latency in µs, the epoch pair when it ended) and takes
// the transactions that ended in the last window of the run (the rest was the warm-up).
func (r *pgbResult) parseLogs(files []string, window time.Duration) error {
	type txn struct {
		end int64 // µs since the epoch
		lat int64 // µs
	}
	var txns []txn
	perClient := map[int]int{}
	var last int64
	failed := 0
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 6 {
				continue
			}
			client, _ := strconv.Atoi(fs[0])
			perClient[client]++
			epoch, _ := strconv.ParseInt(fs[4], 10, 64)
			us, _ := strconv.ParseInt(fs[5], 10, 64)
			end := epoch*1e6 + us
			last = max(last, end)
			lat, err := strconv.ParseInt(fs[2], 10, 64)
			if err != nil { // "failed" or "skipped"
				failed++
				continue
			}
			txns = append(txns, txn{end: end, lat: lat})
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return err
		}
	}
	for _, n := range perClient {
		r.PerClient = max(r.PerClient, n)
	}
	from := last - window.Microseconds()
	var lat []time.Duration
	for _, t := range txns {
		if t.end > from {
			lat = append(lat, time.Duration(t.lat)*time.Microsecond)
		}
	}
	r.Count, r.Window, r.Errors = len(lat), window, failed
	if failed > 0 {
		r.FirstErr = "pgbench counted failed transactions"
	}
	if window > 0 {
		r.Rate = float64(r.Count) / window.Seconds()
	}
	r.P50, r.P99 = percentiles(lat)
	return nil
}

// findPgbench returns the newest pgbench of the machine's PostgreSQL binaries. When there
// are none (DATABASE_URL names a server elsewhere), it installs Debian's postgresql
// package as scripts/stack.sh does: only when root with apt.
func findPgbench() (string, error) {
	if p := os.Getenv("BENCH_PGBENCH"); p != "" {
		return p, nil
	}
	if p, err := lookPgbench(); err == nil {
		return p, nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil || os.Geteuid() != 0 {
		return lookPgbench()
	}
	logf("pgbench not found; installing Debian's postgresql package")
	for _, args := range [][]string{{"update", "-qq"}, {"install", "-y", "-qq", "postgresql"}} {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("apt-get %s: %w\n%s", strings.Join(args, " "), err, truncate(string(out), 2000))
		}
	}
	return lookPgbench()
}

func lookPgbench() (string, error) {
	var dirs []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(found, func(i, j int) bool { return pgVersionOf(found[i]) > pgVersionOf(found[j]) })
	dirs = append(dirs, found...)
	for _, d := range dirs {
		if p := filepath.Join(d, "pgbench"); isExecutable(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("pgbench not found: it comes with PostgreSQL's binaries (Debian: apt-get install postgresql); or set BENCH_PGBENCH")
}

func pgVersionOf(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
