package main

import (
	"context"
	"crypto/ed25519"
	cryptorand "crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"filippo.io/torchwood"
	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valyala/fasthttp"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/ledgerlog"
	"github.com/accountablework/accountable/ledgerlog/litewitness"
	"github.com/accountablework/accountable/store"
)

// The ledgerlog line: issue 27's targets for the transparency log of each workspace's
// ledger, each measured on the running service and reported beside its target.
//
//  1. The append path's cost with the log (at most 10%): POST /work/{id}/complete at
//     logLoadClients clients (the complete line's workload and seeding) with no ledger
//     sealer running, then with an `accountable worker` sealing (a checkpoint a second,
//     each submitted to a witness), alternating, BENCH_RUNS times. Before each run with
//     the sealer it has caught up (every event a leaf, every log signed and cosigned), so
//     that the run measures sealing as the writes come, not a backlog of them.
//  2. Checkpoint latency with a witness (p99 under 2 s): while one client creates work in
//     the bench workspace, one more POST /work every checkpointSampleEvery; a sample is the
//     time from its answer to the first GET /events/{eventId}/proof answering 200 with a
//     checkpoint that carries the witness's cosignature. Where the API serves the log's
//     signature alone, the sample ends instead when ledger_cosignatures holds the witness's
//     cosignature of a tree that includes the event (the report says which was measured).
//  3. Proofs at 1M and 10M leaves (p99 under 5 ms from the API): a synthetic log of each
//     size of BENCH_LOG_SIZES in a workspace of its own, its first leaves the workspace's
//     real events (logRealEvents work items made through POST /work, after the events of
//     the workspace's making), the others random leaf hashes, written straight to the
//     log's tables (the integrator, some 20,000 leaves a second on these machines, would
//     take minutes), with checkpoints of a few sizes signed by the service's key; then
//     GET /events/{id}/proof
//     of the real events and GET /events/consistency from each signed size to the largest,
//     at BENCH_LOG_CLIENTS clients. A sample of the answers is checked (the signatures, the
//     proofs against the roots the harness computed), so the line cannot time wrong answers.
//  4. Tiles (at the bare server's rate): a full hash tile and a full entry bundle of the
//     bench workspace's log at logLoadClients clients, beside the bare Fiber + pgx server
//     sending the same SQL; every answer is compared with the expected bytes.

const (
	benchWitnessName = "witness.bench.accountable.localhost" // the line's witness's key name
	logTaskQueue     = "bench-ledgerlog"                     // the line's worker polls a queue no other line starts workflows on
	logLoadClients   = 8                                     // the append path's and the tiles' client count

	checkpointSampleEvery = 100 * time.Millisecond
	checkpointPollEvery   = 20 * time.Millisecond
	// checkpointGiveUp ends the wait for a sample's cosigned proof: counted as a miss.
	checkpointGiveUp = 30 * time.Second
	// sealerCatchUp bounds how long the sealer may take to integrate, sign and have
	// cosigned what the runs before wrote.
	sealerCatchUp = 5 * time.Minute

	logRealEvents  = 1000   // real events at the start of each synthetic log
	logCopyLeaves  = 250000 // leaves whose stored hashes one COPY writes
	logCopyWorkers = 2
	logVerifyEvery = 16 // one answer in logVerifyEvery is checked
	logTileRounds  = 2

	// The targets of issue 27.
	appendCostTarget = 0.10
	checkpointTarget = 2 * time.Second
	proofTarget      = 5 * time.Millisecond
)

// logLine is the ledgerlog line's state and measurements.
type logLine struct {
	store   *store.DB
	witness *litewitness.Process
	worker  *proc

	// 1: the append path.
	without, with []sample
	catchUps      []catchUp
	sealerCPU     []float64 // the sealer's process's CPU time over each run with it, in cores

	// 2: checkpoint latency.
	viaAPI       bool // measured through the proof's checkpoint (else ledger_cosignatures)
	latencies    []time.Duration
	missed       int // samples not cosigned within checkpointGiveUp
	sampleErrs   int
	firstSampErr string
	background   float64 // the background writer's rate (req/s)

	// 3: proofs.
	sizes []*logSize

	// 4: tiles.
	tiles []*line

	notes []string
	took  time.Duration
}

// catchUp is what the sealer integrated after a start before it had caught up.
type catchUp struct {
	leaves int64
	took   time.Duration
}

// logSize is one synthetic log and its measurements.
type logSize struct {
	N               int64
	Signed          []int64 // the sizes of its checkpoints, the last N
	Rows            int64   // stored hashes written
	Seed, Analyze   time.Duration
	Cells           []proofCell
	Verified, Asked int64 // answers checked, answers received
}

// proofCell is one endpoint at one client count.
type proofCell struct {
	What    string
	Clients int
	S       sample
}

func (b *bench) ledgerLogLine() (err error) {
	start := time.Now()
	ll := &logLine{}
	b.logLine = ll
	defer func() {
		ll.took = time.Since(start)
		logf("ledgerlog: the line took %s", ll.took.Round(time.Second))
	}()
	if ll.store, err = store.Open(b.ctx, store.Config{URL: b.dbURL, MaxConns: 2}); err != nil {
		return err
	}
	defer ll.store.Close()
	if err := b.removeLimitEvents(); err != nil {
		return err
	}
	if err := b.startWitness(ll); err != nil {
		return err
	}
	defer ll.witness.Stop()
	defer func() { ll.worker.stop(); ll.worker = nil }()
	if err := b.logAppendCost(ll); err != nil {
		return fmt.Errorf("the append path: %w", err)
	}
	if err := b.logCheckpointLatency(ll); err != nil {
		return fmt.Errorf("checkpoint latency: %w", err)
	}
	// The proofs and tiles are reads of what was signed: no sealer runs beside them.
	ll.worker.stop()
	ll.worker = nil
	for _, n := range b.s.LogSizes {
		if err := b.logProofs(ll, int64(n)); err != nil {
			return fmt.Errorf("proofs at %d leaves: %w", n, err)
		}
	}
	if err := b.logTiles(ll); err != nil {
		return fmt.Errorf("tiles: %w", err)
	}
	return nil
}

// removeLimitEvents deletes from the ledger the events the limits' pgbench scripts wrote
// (ids of the prefixes of pgbench.go, f1… to f6…): they reuse one request's payload,
// digest and hash under ids of their own, so none matches its hash, and a sealer rightly
// refuses to make them leaves (a log stops at an event that does not match its own hash:
// the full make bench of 3648865 stopped there, the line's sealer never catching up). They
// measured the database's limit in the lines before; they are no history to seal. The
// append-only trigger is off for this transaction only (the bench connects as the owner).
func (b *bench) removeLimitEvents() error {
	tx, err := b.db.Begin(b.ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(b.ctx) //nolint:errcheck // after the commit, a no-op
	if _, err := tx.Exec(b.ctx, `SET LOCAL session_replication_role = replica`); err != nil {
		return fmt.Errorf("remove the limits' events: %w", err)
	}
	tag, err := tx.Exec(b.ctx, `DELETE FROM ledger_events
		WHERE workspace_id = $1 AND id >= $2::uuid AND id < $3::uuid`, b.main.WorkspaceID, pgbCreateTask+"000000000000",
		"f7000000-0000-7000-8000-000000000000")
	if err != nil {
		return fmt.Errorf("remove the limits' events: %w", err)
	}
	if err := tx.Commit(b.ctx); err != nil {
		return err
	}
	logf("ledgerlog: removed the %d events the limits' pgbench scripts wrote (they match no hash: no history to seal)", tag.RowsAffected())
	return nil
}

// startWitness starts the line's litewitness with a key of its own, in a fresh directory.
func (b *bench) startWitness(ll *logLine) error {
	_, key, err := ed25519.GenerateKey(cryptorand.Reader)
	if err != nil {
		return err
	}
	// A relative directory keeps the witness's ssh-agent socket path short.
	o := litewitness.Options{Bin: os.Getenv("ACCOUNTABLE_LITEWITNESS_BIN"), Ctl: os.Getenv("ACCOUNTABLE_WITNESSCTL_BIN"),
		Dir: filepath.Join(b.dir, "witness"), Name: benchWitnessName, Addr: "127.0.0.1:" + strconv.Itoa(b.s.LogWitnessPort), Key: key}
	if err := os.RemoveAll(o.Dir); err != nil {
		return err
	}
	logf("ledgerlog: starting litewitness on %s", o.Addr)
	if ll.witness, err = litewitness.Start(o); err != nil {
		return err
	}
	return nil
}

// --- 1: the append path with and without the sealer -------------------------------------

func (b *bench) logAppendCost(ll *logLine) error {
	c := logLoadClients
	logf("ledgerlog: POST /work/{id}/complete at %d clients without and with the ledger sealer (%d rounds)", c, b.s.Runs)
	for r := 1; r <= b.s.Runs; r++ {
		if err := b.ctx.Err(); err != nil {
			return err
		}
		ll.worker.stop()
		ll.worker = nil
		// The work items of this round's two runs, seeded round by round: after the first,
		// the estimate is the rate this line saw, and far fewer items are made unused.
		if err := b.ensureServicePool(b.runsNeed(b.serviceRateEstimate(), 2)); err != nil {
			return err
		}
		b.prepareRun()
		s := b.serviceComplete(c)
		if err := sampleErr(s); err != nil {
			return err
		}
		logf("  ledgerlog complete @%d run %d/%d without the sealer: %s", c, r, b.s.Runs, s)
		ll.without = append(ll.without, s)

		if err := b.startSealer(ll); err != nil {
			return err
		}
		b.prepareRun()
		pid := ll.worker.cmd.Process.Pid
		cpu0, err := procCPU(pid)
		if err != nil {
			return err
		}
		t0 := time.Now()
		s = b.serviceComplete(c)
		cpu1, err := procCPU(pid)
		if err != nil {
			return err
		}
		if err := sampleErr(s); err != nil {
			return err
		}
		share := float64(cpu1-cpu0) / float64(time.Since(t0))
		logf("  ledgerlog complete @%d run %d/%d with the sealer:    %s; the sealer's process used %.0f%% of a core", c, r, b.s.Runs, s, 100*share)
		ll.with = append(ll.with, s)
		ll.sealerCPU = append(ll.sealerCPU, share)
		if s.Exhausted || ll.without[len(ll.without)-1].Exhausted {
			ll.notes = append(ll.notes, fmt.Sprintf("a completion run of round %d ran out of seeded work items", r))
		}
	}
	return nil
}

// startSealer tells the witness of every workspace's log, starts `accountable worker` with
// the witness, and waits until it has caught up.
func (b *bench) startSealer(ll *logLine) error {
	ids, err := ll.store.ListWorkspaceIDs(b.ctx)
	if err != nil {
		return err
	}
	origins := make([]string, len(ids))
	for i, id := range ids {
		origins[i] = ledgerlog.Origin(benchLogName, id)
	}
	if err := ll.witness.AddLogs(b.ctx, b.ledgerKey.VerifierKey, origins...); err != nil {
		return err
	}
	before, err := b.logLeaves()
	if err != nil {
		return err
	}
	w := ll.witness.Witness
	env := append([]string{"DATABASE_URL=" + b.dbURL, "TEMPORAL_TASK_QUEUE=" + logTaskQueue, "PPROF_ADDR=", "METRICS_ADDR=",
		"LEDGER_CHECKPOINT_INTERVAL=1s", "LEDGER_WITNESSES=" + w.URL + " " + w.Key}, b.ledgerEnv()...)
	start := time.Now()
	if ll.worker, err = startProc("accountable worker (ledger sealer)", filepath.Join(b.dir, "worker-ledgerlog.log"), env, b.accountable, "worker"); err != nil {
		return err
	}
	if err := b.waitSealed(ll); err != nil {
		return err
	}
	after, err := b.logLeaves()
	if err != nil {
		return err
	}
	ll.catchUps = append(ll.catchUps, catchUp{leaves: after - before, took: time.Since(start)})
	logf("  the sealer caught up in %s (%d leaves appended)", time.Since(start).Round(time.Millisecond), after-before)
	return nil
}

// waitSealed waits until every workspace's log holds all its events, is signed at its
// size and is cosigned by the witness (the store's own queries of what the sealer does).
func (b *bench) waitSealed(ll *logLine) error {
	deadline := time.Now().Add(sealerCatchUp)
	for {
		behind, err := ll.store.LedgerLogsBehind(b.ctx, 1)
		if err != nil {
			return err
		}
		unwitnessed, err := ll.store.LedgerLogsUnwitnessed(b.ctx, 1, []string{benchWitnessName})
		if err != nil {
			return err
		}
		if len(behind) == 0 && len(unwitnessed) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the sealer did not catch up within %s (behind: %v, not cosigned: %v; log: %s)%s", sealerCatchUp,
				behind, unwitnessed, ll.worker.log.Name(), tail(ll.worker.log.Name()))
		}
		select {
		case <-ll.worker.done:
			return fmt.Errorf("%s exited (log: %s)%s", ll.worker.name, ll.worker.log.Name(), tail(ll.worker.log.Name()))
		case <-b.ctx.Done():
			return b.ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// procCPU is the CPU time (user and system) process pid has used, from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The fields after the command's name, which is in parentheses and may hold spaces:
	// utime and stime are the 14th and 15th of the line, in clock ticks (USER_HZ, 100 on
	// every architecture Linux runs Go on).
	i := strings.LastIndexByte(string(raw), ')')
	f := strings.Fields(string(raw[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, truncate(string(raw), 200))
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, truncate(string(raw), 200))
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// logLeaves is the number of leaves of every workspace's log.
func (b *bench) logLeaves() (int64, error) {
	var n int64
	err := b.db.QueryRow(b.ctx, `SELECT coalesce(sum(tree_size), 0)::bigint FROM ledger_logs`).Scan(&n)
	return n, err
}

// --- 2: checkpoint latency with a witness ------------------------------------------------

// checkpointSample is one commit whose cosigned proof is waited for.
type checkpointSample struct {
	eventID, eventHash string
	answered           time.Time
	leaf               int64 // from its first proof (-1 before)
	latency            time.Duration
	done               bool
}

func (b *bench) logCheckpointLatency(ll *logLine) error {
	if err := b.waitSealed(ll); err != nil {
		return err
	}
	var err error
	if ll.viaAPI, err = b.proofsCarryCosignatures(ll); err != nil {
		return err
	}
	how := "the cosignature in the proof's checkpoint"
	if !ll.viaAPI {
		how = "the witness's cosignature in ledger_cosignatures (the API's checkpoints carry the log's signature alone)"
	}
	logf("ledgerlog: checkpoint latency (until %s), one commit every %s for %s, beside one client creating work", how,
		checkpointSampleEvery, b.s.Duration)
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	bg := make(chan sample, 1)
	bgStart := time.Now()
	go func() {
		bg <- runLoad(ctx, b.svcAddr, 1, 0, time.Hour, b.createWork(b.main.Key, b.nextTag("log-background"), 0, nil))
	}()
	select {
	case <-time.After(b.s.Warmup):
	case <-b.ctx.Done():
		return b.ctx.Err()
	}

	var (
		mu      sync.Mutex
		samples []*checkpointSample
		sending = true
	)
	polled := make(chan error, 1)
	go func() { polled <- b.pollCosigned(ll, &mu, &samples, &sending) }()
	tag := b.nextTag("log-sample")
	uri := "http://" + b.svcAddr + "/api/v1/work"
	tick := time.NewTicker(checkpointSampleEvery)
	end := time.Now().Add(b.s.Duration)
	for i := 0; time.Now().Before(end) && b.ctx.Err() == nil; i++ {
		status, body, err := b.post(uri, b.main.Key, tag+"-"+strconv.Itoa(i),
			fmt.Sprintf(`{"title":"Checkpoint latency sample %s-%d","priority":"low","metadata":{"source":"bench"}}`, tag, i))
		at := time.Now()
		if err == nil && status != http.StatusCreated {
			err = fmt.Errorf("POST /work: %d %s", status, truncate(body, 300))
		}
		if err != nil {
			mu.Lock()
			ll.sampleErrs++
			if ll.firstSampErr == "" {
				ll.firstSampErr = err.Error()
			}
			mu.Unlock()
		} else {
			mu.Lock()
			samples = append(samples, &checkpointSample{eventID: jsonString([]byte(body), "eventId"),
				eventHash: jsonString([]byte(body), "eventHash"), answered: at, leaf: -1})
			mu.Unlock()
		}
		<-tick.C
	}
	tick.Stop()
	mu.Lock()
	sending = false
	mu.Unlock()
	perr := <-polled
	cancel()
	s := <-bg
	ll.background = float64(s.Count) / time.Since(bgStart).Seconds()
	if perr != nil {
		return perr
	}
	for _, s := range samples {
		if s.done {
			ll.latencies = append(ll.latencies, s.latency)
		} else {
			ll.missed++
		}
	}
	p50, p99 := percentiles(slices.Clone(ll.latencies))
	logf("  %d samples: p50 %s, p99 %s, max %s; %d not cosigned within %s, %d commits failed; the background writer %s req/s",
		len(ll.latencies), ms(p50), ms(p99), ms(slices.Max(append([]time.Duration{0}, ll.latencies...))), ll.missed,
		checkpointGiveUp, ll.sampleErrs, rate(ll.background))
	if len(ll.latencies) == 0 {
		return errors.New("no sample was cosigned")
	}
	return nil
}

// proofsCarryCosignatures reports whether the proofs the API answers carry the witness's
// cosignature: with the log sealed and cosigned, the proof of the bench workspace's newest
// event is read once.
func (b *bench) proofsCarryCosignatures(ll *logLine) (bool, error) {
	var id string
	if err := b.db.QueryRow(b.ctx, `SELECT id::text FROM ledger_events WHERE workspace_id = $1
		ORDER BY stream_position DESC, seq DESC LIMIT 1`, b.main.WorkspaceID).Scan(&id); err != nil {
		return false, err
	}
	status, body, err := b.getAuth("http://"+b.svcAddr+"/api/v1/events/"+id+"/proof", b.main.Key)
	if err != nil {
		return false, err
	}
	if status != http.StatusOK {
		return false, fmt.Errorf("the proof of a sealed event: %d %s", status, truncate(string(body), 300))
	}
	var p accountable.LedgerInclusionProof
	if err := decodeData(body, &p); err != nil {
		return false, err
	}
	return cosignedBy(p.Checkpoint, ll.witness.Witness.Name()), nil
}

// cosignedBy reports whether a signed note carries a signature line of the witness named.
func cosignedBy(signed, witness string) bool {
	return strings.Contains(signed, "\n— "+witness+" ")
}

// pollCosigned resolves the samples, oldest first, every checkpointPollEvery, until the
// sender is done and every sample is resolved or given up. Commits from one sender reach
// the stream in order, so a round stops at the first sample not yet cosigned: the later
// ones cannot be either.
func (b *bench) pollCosigned(ll *logLine, mu *sync.Mutex, samples *[]*checkpointSample, sending *bool) error {
	origin := ledgerlog.Origin(benchLogName, b.main.WorkspaceID)
	verifiers := note.VerifierList(b.ledgerKey.Verifier(), ll.witness.Witness.Verifier)
	for {
		mu.Lock()
		var open []*checkpointSample
		for _, s := range *samples {
			if !s.done && time.Since(s.answered) < checkpointGiveUp {
				open = append(open, s)
			}
		}
		more := *sending
		mu.Unlock()
		if !more && len(open) == 0 {
			return nil
		}
		for _, s := range open {
			ok, err := b.checkCosigned(ll, s, origin, verifiers)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
		}
		select {
		case <-b.ctx.Done():
			return b.ctx.Err()
		case <-time.After(checkpointPollEvery):
		}
	}
}

// checkCosigned asks for s's proof and reports whether it is cosigned; a cosigned proof is
// checked (the log's signature, the witness's, the inclusion of the event's entry).
func (b *bench) checkCosigned(ll *logLine, s *checkpointSample, origin string, verifiers note.Verifiers) (bool, error) {
	status, body, err := b.getAuth("http://"+b.svcAddr+"/api/v1/events/"+s.eventID+"/proof", b.main.Key)
	at := time.Now()
	if err != nil {
		return false, err
	}
	if status == http.StatusNotFound {
		return false, nil
	}
	if status != http.StatusOK {
		return false, fmt.Errorf("GET /events/%s/proof: %d %s", s.eventID, status, truncate(string(body), 300))
	}
	var p accountable.LedgerInclusionProof
	if err := decodeData(body, &p); err != nil {
		return false, err
	}
	if ll.viaAPI {
		if !cosignedBy(p.Checkpoint, ll.witness.Witness.Name()) {
			return false, nil
		}
		n, err := note.Open([]byte(p.Checkpoint), verifiers)
		if err != nil || len(n.Sigs) != 2 {
			return false, fmt.Errorf("the checkpoint of event %s does not carry both the log's signature and the witness's: %v", s.eventID, err)
		}
	} else {
		if s.leaf < 0 {
			s.leaf = p.LeafIndex
		}
		var cosigned int64
		if err := b.db.QueryRow(b.ctx, `SELECT coalesce(max(tree_size), 0)::bigint FROM ledger_cosignatures
			WHERE workspace_id = $1 AND witness = $2`, b.main.WorkspaceID, ll.witness.Witness.Name()).Scan(&cosigned); err != nil {
			return false, err
		}
		at = time.Now()
		if cosigned <= s.leaf {
			return false, nil
		}
	}
	if err := checkInclusion(p, origin, b.ledgerKey.Verifier(), s.eventHash); err != nil {
		return false, fmt.Errorf("event %s: %w", s.eventID, err)
	}
	s.latency, s.done = at.Sub(s.answered), true
	return true, nil
}

// checkInclusion checks an inclusion proof as a client would: the checkpoint's signature
// and origin, the entry's hash (the event's eventHash), the proof against the root.
func checkInclusion(p accountable.LedgerInclusionProof, origin string, log note.Verifier, eventHash string) error {
	cp, _, err := ledgerlog.OpenCheckpoint([]byte(p.Checkpoint), origin, log)
	if err != nil {
		return err
	}
	if cp.N != p.TreeSize {
		return fmt.Errorf("the proof says tree size %d, its checkpoint %d", p.TreeSize, cp.N)
	}
	if got := ledgerlog.EventHashOf([]byte(p.Entry)); got != eventHash {
		return fmt.Errorf("the entry hashes to %s, not the event's %s", got, eventHash)
	}
	proof, err := proofHashes(p.Proof)
	if err != nil {
		return err
	}
	return ledgerlog.VerifyInclusion(cp.Tree, p.LeafIndex, []byte(p.Entry), proof)
}

// proofHashes decodes a proof's base64 hashes.
func proofHashes(in []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(in))
	for i, s := range in {
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(raw) != tlog.HashSize {
			return nil, fmt.Errorf("proof hash %d is not a base64 hash: %q", i, s)
		}
		out[i] = tlog.Hash(raw)
	}
	return out, nil
}

// getAuth GETs a resource of the service with an API key (unmeasured).
func (b *bench) getAuth(u, key string) (int, []byte, error) {
	req, _ := http.NewRequestWithContext(b.ctx, http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return res.StatusCode, body, err
}

// --- 3: proofs in large logs --------------------------------------------------------------

// logFrontier is a tlog.HashReader over the newest stored hash of each level of a tree
// being built leaf by leaf: all that appending a leaf (tlog.StoredHashesForRecordHash) and
// the root of the tree as it stands (tlog.TreeHash) read. A tree of millions of leaves is
// built in memory of a few kilobytes.
type logFrontier [64]struct {
	n  int64
	h  tlog.Hash
	ok bool
}

func (f *logFrontier) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		level, n := tlog.SplitStoredHashIndex(x)
		if e := f[level]; !e.ok || e.n != n {
			return nil, fmt.Errorf("stored hash %d (level %d, node %d) is not the newest of its level", x, level, n)
		}
		out[i] = f[level].h
	}
	return out, nil
}

// add appends leaf n (the next) with leaf hash h and returns its stored hashes: those of
// stored indexes tlog.StoredHashIndex(0, n) on, the j-th the node of level j that the leaf
// completes.
func (f *logFrontier) add(n int64, h tlog.Hash) ([]tlog.Hash, error) {
	stored, err := tlog.StoredHashesForRecordHash(n, h, f)
	if err != nil {
		return nil, err
	}
	for j, s := range stored {
		f[j].n, f[j].h, f[j].ok = n>>j, s, true
	}
	return stored, nil
}

// logSignSizes are the sizes a synthetic log of n leaves, real events first, is signed
// at: its real events alone, about a quarter and a half of it (odd sizes, whose proofs are
// the longest), and n.
func logSignSizes(n, real int64) []int64 {
	sizes := []int64{real, n/4 | 1, n/2 | 1, n}
	slices.Sort(sizes)
	return slices.Compact(sizes)
}

// realEvent is a real event of a synthetic log: its id, eventHash and leaf hash.
type realEvent struct {
	id, hash string
	leaf     tlog.Hash
}

func (b *bench) logProofs(ll *logLine, n int64) error {
	sz := &logSize{N: n}
	ll.sizes = append(ll.sizes, sz)
	k, err := b.createKey("Bench log " + strconv.FormatInt(n, 10))
	if err != nil {
		return err
	}
	logf("ledgerlog: a log of %d leaves: %d events through POST /work, then the stored hashes of %d leaves (COPY)", n, logRealEvents, n)
	s := runLoad(b.ctx, b.svcAddr, seedClients, 0, 30*time.Minute, b.createWork(k.Key, b.nextTag("log-seed"), logRealEvents, nil))
	if s.Errors > 0 || s.Count < logRealEvents {
		return fmt.Errorf("seeding the log's events: %d of %d created, %d errors (first: %s)", s.Count, logRealEvents, s.Errors, s.FirstErr)
	}
	events, last, err := b.readLogEvents(ll, k.WorkspaceID)
	if err != nil {
		return err
	}
	sz.Signed = logSignSizes(n, int64(len(events)))
	start := time.Now()
	trees, rows, err := b.seedLogHashes(k.WorkspaceID, n, events, sz.Signed)
	if err != nil {
		return err
	}
	sz.Rows = rows
	if err := b.finishLog(ll, k.WorkspaceID, n, events, last, trees); err != nil {
		return err
	}
	sz.Seed = time.Since(start)
	start = time.Now()
	if _, err := b.db.Exec(b.ctx, `ANALYZE ledger_log_hashes, ledger_log_leaves`); err != nil {
		return err
	}
	sz.Analyze = time.Since(start)
	logf("  seeded %d stored hashes in %s (%s leaves/s), ANALYZE %s", rows, sz.Seed.Round(time.Millisecond),
		rate(float64(n)/sz.Seed.Seconds()), sz.Analyze.Round(time.Millisecond))

	origin := ledgerlog.Origin(benchLogName, k.WorkspaceID)
	froms := sz.Signed[:len(sz.Signed)-1]
	base := "http://" + b.svcAddr + "/api/v1/events/"
	auth := "Bearer " + k.Key
	for _, c := range b.s.LogClients {
		for _, ep := range []struct {
			what  string
			uri   func(i int) string
			check func(i int, body []byte) error
		}{
			{"GET /events/{eventId}/proof", func(i int) string { return base + events[i%len(events)].id + "/proof" },
				func(i int, body []byte) error {
					return checkProofAnswer(body, i%len(events), events, origin, b.ledgerKey.Verifier(), trees[n])
				}},
			{"GET /events/consistency", func(i int) string {
				return base + "consistency?from=" + strconv.FormatInt(froms[i%len(froms)], 10) + "&to=" + strconv.FormatInt(n, 10)
			}, func(i int, body []byte) error {
				return checkConsistencyAnswer(body, froms[i%len(froms)], origin, b.ledgerKey.Verifier(), trees)
			}},
		} {
			b.prepareRun()
			var verified, asked atomic.Int64
			var bad atomic.Value
			s := runLoad(b.ctx, b.svcAddr, c, b.s.Warmup, b.s.Duration, workload{
				prepare: func(i int, req *fasthttp.Request) bool {
					req.SetRequestURI(ep.uri(i))
					req.Header.Set(fasthttp.HeaderAuthorization, auth)
					return true
				},
				ok: func(status int) bool { return status == fasthttp.StatusOK },
				onResponse: func(i int, body []byte) {
					asked.Add(1)
					if i%logVerifyEvery != 0 {
						return
					}
					if err := ep.check(i, body); err != nil {
						bad.CompareAndSwap(nil, err.Error())
						return
					}
					verified.Add(1)
				},
			})
			if f := bad.Load(); f != nil {
				return fmt.Errorf("%s at %d leaves answered a wrong proof: %v", ep.what, n, f)
			}
			if err := sampleErr(s); err != nil {
				return fmt.Errorf("%s at %d leaves: %w", ep.what, n, err)
			}
			sz.Verified += verified.Load()
			sz.Asked += asked.Load()
			sz.Cells = append(sz.Cells, proofCell{What: ep.what, Clients: c, S: s})
			logf("  %s at %d leaves @%d: %s (%d answers checked)", ep.what, n, c, s, verified.Load())
		}
	}
	return nil
}

// readLogEvents reads the workspace's events in stream order (its first leaves: the
// work items, after the events of the workspace's making) and the stream position of the
// last.
func (b *bench) readLogEvents(ll *logLine, ws string) ([]realEvent, accountable.StreamPosition, error) {
	var out []realEvent
	var after accountable.StreamPosition
	for deadline := time.Now().Add(time.Minute); ; {
		page, err := ll.store.StreamEvents(b.ctx, ws, accountable.EventFilter{After: after, Limit: 1000})
		if err != nil {
			return nil, after, err
		}
		for _, e := range page.Events {
			entry, err := ledgerlog.Entry(e.EventHeader)
			if err != nil {
				return nil, after, err
			}
			if ledgerlog.EventHashOf(entry) != e.EventHash {
				return nil, after, fmt.Errorf("event %s: its entry does not hash to its eventHash", e.ID)
			}
			out = append(out, realEvent{id: e.ID, hash: e.EventHash, leaf: ledgerlog.LeafHash(entry)})
		}
		after = page.Next
		switch {
		case page.HasMore:
		case page.Held || len(out) < logRealEvents:
			// An older transaction holds the stream's horizon.
			if time.Now().After(deadline) {
				return nil, after, fmt.Errorf("read %d of the workspace's events, at least %d were made", len(out), logRealEvents)
			}
			time.Sleep(10 * time.Millisecond)
		default:
			return out, after, nil
		}
	}
}

// hashChunk is the stored hashes of a run of leaves: consecutive stored indexes from first.
type hashChunk struct {
	first  int64
	hashes []tlog.Hash
}

// seedLogHashes writes the stored hashes of a log of n leaves (the real events' leaf
// hashes, then random ones) with COPY, logCopyLeaves leaves at a time, logCopyWorkers
// COPYs at once while the next chunks are computed. It returns the trees of the sizes to
// sign, computed as the leaves are added, and the rows written.
func (b *bench) seedLogHashes(ws string, n int64, events []realEvent, signAt []int64) (map[int64]tlog.Tree, int64, error) {
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	chunks := make(chan hashChunk, logCopyWorkers)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		rows  atomic.Int64
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel()
	}
	for range logCopyWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ch := range chunks {
				if ctx.Err() != nil {
					continue
				}
				i := 0
				row := make([]any, 3)
				src := pgx.CopyFromFunc(func() ([]any, error) {
					if i == len(ch.hashes) {
						return nil, nil
					}
					row[0], row[1], row[2] = ws, ch.first+int64(i), ch.hashes[i][:]
					i++
					return row, nil
				})
				nr, err := b.db.CopyFrom(ctx, pgx.Identifier{"ledger_log_hashes"}, []string{"workspace_id", "hash_index", "hash"}, src)
				if err != nil {
					fail(fmt.Errorf("COPY ledger_log_hashes from stored hash %d: %w", ch.first, err))
					continue
				}
				rows.Add(nr)
			}
		}()
	}
	trees := map[int64]tlog.Tree{}
	rng := rand.NewChaCha8([32]byte{27}) // the synthetic leaves, not a secret
	var f logFrontier
	ch := hashChunk{first: 0}
	var err error
	for i := int64(0); i < n && ctx.Err() == nil; i++ {
		var h tlog.Hash
		if i < int64(len(events)) {
			h = events[i].leaf
		} else {
			rng.Read(h[:]) //nolint:errcheck // ChaCha8's Read never fails
		}
		var stored []tlog.Hash
		if stored, err = f.add(i, h); err != nil {
			fail(err)
			break
		}
		ch.hashes = append(ch.hashes, stored...)
		if slices.Contains(signAt, i+1) {
			root, err := tlog.TreeHash(i+1, &f)
			if err != nil {
				fail(err)
				break
			}
			trees[i+1] = tlog.Tree{N: i + 1, Hash: root}
		}
		if (i+1)%logCopyLeaves == 0 || i+1 == n {
			select {
			case chunks <- ch:
			case <-ctx.Done():
			}
			ch = hashChunk{first: tlog.StoredHashIndex(0, i+1), hashes: make([]tlog.Hash, 0, 2*logCopyLeaves+64)}
		}
	}
	close(chunks)
	wg.Wait()
	if first != nil {
		return nil, 0, first
	}
	if err := b.ctx.Err(); err != nil {
		return nil, 0, err
	}
	if want := tlog.StoredHashCount(n); rows.Load() != want {
		return nil, 0, fmt.Errorf("wrote %d stored hashes, a tree of %d leaves has %d", rows.Load(), n, want)
	}
	return trees, rows.Load(), nil
}

// finishLog writes the rest of a synthetic log as the integrator and the sealer would: the
// real events' leaves, the log's cursor (its size, and the position of its newest event, so
// that an integrator appends nothing), and the checkpoints, signed with the service's key.
// The tree the store then computes from the stored hashes must be the harness's.
func (b *bench) finishLog(ll *logLine, ws string, n int64, events []realEvent, last accountable.StreamPosition, trees map[int64]tlog.Tree) error {
	idx := make([]int64, len(events))
	ids := make([]string, len(events))
	for i, e := range events {
		idx[i], ids[i] = int64(i), e.id
	}
	if _, err := b.db.Exec(b.ctx, `INSERT INTO ledger_log_leaves (workspace_id, leaf_index, event_id)
		SELECT $1, unnest($2::bigint[]), unnest($3::uuid[])`, ws, idx, ids); err != nil {
		return err
	}
	if _, err := b.db.Exec(b.ctx, `INSERT INTO ledger_logs (workspace_id, tree_size, last_position, last_seq, updated_at)
		VALUES ($1, $2, $3, $4, now()) ON CONFLICT (workspace_id) DO UPDATE
		SET tree_size = excluded.tree_size, last_position = excluded.last_position, last_seq = excluded.last_seq, updated_at = now()`,
		ws, n, last.Position, last.Seq); err != nil {
		return err
	}
	origin := ledgerlog.Origin(benchLogName, ws)
	sizes := make([]int64, 0, len(trees))
	for size := range trees {
		sizes = append(sizes, size)
	}
	slices.Sort(sizes)
	for _, size := range sizes {
		signed, err := b.ledgerKey.SignCheckpoint(origin, trees[size])
		if err != nil {
			return err
		}
		if err := ll.store.SaveLedgerCheckpoint(b.ctx, ws, trees[size], signed); err != nil {
			return err
		}
	}
	got, err := ll.store.LedgerLogTree(b.ctx, ws)
	if err != nil {
		return err
	}
	if got != trees[n] {
		return fmt.Errorf("the store computes the tree %d %s from the seeded hashes, the harness %d %s", got.N, got.Hash, n, trees[n].Hash)
	}
	return nil
}

// checkProofAnswer checks an answer of GET /events/{eventId}/proof for events[i].
func checkProofAnswer(body []byte, i int, events []realEvent, origin string, log note.Verifier, tree tlog.Tree) error {
	var p accountable.LedgerInclusionProof
	if err := decodeData(body, &p); err != nil {
		return err
	}
	if p.EventID != events[i].id || p.LeafIndex != int64(i) || p.TreeSize != tree.N {
		return fmt.Errorf("asked for event %s (leaf %d) in the tree of %d, got %s (leaf %d) in %d", events[i].id, i, tree.N, p.EventID, p.LeafIndex, p.TreeSize)
	}
	if err := checkInclusion(p, origin, log, events[i].hash); err != nil {
		return err
	}
	cp, _, _ := ledgerlog.OpenCheckpoint([]byte(p.Checkpoint), origin, log) // checked above
	if cp.Tree != tree {
		return fmt.Errorf("the checkpoint's root %s is not the seeded tree's %s", cp.Hash, tree.Hash)
	}
	return nil
}

// checkConsistencyAnswer checks an answer of GET /events/consistency?from=from&to=N: both
// checkpoints are the log's, of the seeded trees, and the proof holds.
func checkConsistencyAnswer(body []byte, from int64, origin string, log note.Verifier, trees map[int64]tlog.Tree) error {
	var p accountable.LedgerConsistencyProof
	if err := decodeData(body, &p); err != nil {
		return err
	}
	if p.From != from || p.FromCheckpoint == nil {
		return fmt.Errorf("asked from %d, got from %d (checkpoint %v)", from, p.From, p.FromCheckpoint != nil)
	}
	earlier, _, err := ledgerlog.OpenCheckpoint([]byte(*p.FromCheckpoint), origin, log)
	if err != nil {
		return err
	}
	later, _, err := ledgerlog.OpenCheckpoint([]byte(p.ToCheckpoint), origin, log)
	if err != nil {
		return err
	}
	if earlier.Tree != trees[from] || later.Tree != trees[p.To] {
		return fmt.Errorf("the checkpoints of %d and %d are not the seeded trees", from, p.To)
	}
	proof, err := proofHashes(p.Proof)
	if err != nil {
		return err
	}
	return ledgerlog.VerifyConsistency(earlier.Tree, later.Tree, proof)
}

// --- 4: tiles -----------------------------------------------------------------------------

// logTiles measures a full hash tile and a full entry bundle of the bench workspace's log,
// beside the baseline's.
func (b *bench) logTiles(ll *logLine) error {
	cp, err := ll.store.LedgerCheckpoint(b.ctx, b.main.WorkspaceID)
	if err != nil {
		return err
	}
	if cp.TreeSize < torchwood.TileWidth {
		return fmt.Errorf("the bench workspace's log has %d leaves signed, fewer than a tile's %d", cp.TreeSize, torchwood.TileWidth)
	}
	want, err := b.expectedTiles()
	if err != nil {
		return err
	}
	c := logLoadClients
	for _, t := range []struct{ path, name string }{{"0/000", "a hash tile"}, {"entries/000", "an entry bundle"}} {
		body := want[t.path]
		l := &line{ID: "ledgerlog-tile", Name: fmt.Sprintf("GET /events/log/tile/%s (%s, %d bytes)", t.path, t.name, len(body)),
			Clients: c, Unit: "req/s", Latency: "request", LimitName: "bare Fiber + pgx: the same SQL, the same bytes"}
		ll.tiles = append(ll.tiles, l)
		logf("ledgerlog: %s at %d clients, beside the bare server", l.Name, c)
		get := func(addr, path, header, value string) func() (sample, error) {
			return func() (sample, error) {
				var wrong atomic.Int64
				s := runLoad(b.ctx, addr, c, b.s.Warmup, b.s.Duration, workload{
					prepare: func(_ int, req *fasthttp.Request) bool {
						req.SetRequestURI("http://" + addr + path)
						req.Header.Set(header, value)
						return true
					},
					ok: func(status int) bool { return status == fasthttp.StatusOK },
					onResponse: func(_ int, got []byte) {
						if string(got) != string(body) {
							wrong.Add(1)
						}
					},
				})
				if n := wrong.Load(); n > 0 {
					return s, fmt.Errorf("%d answers of %s were not the tile", n, path)
				}
				return s, sampleErr(s)
			}
		}
		if err := b.measureRuns(l, b.logTileRuns(), get(b.svcAddr, "/api/v1/events/log/tile/"+t.path, fasthttp.HeaderAuthorization, "Bearer "+b.main.Key),
			get(b.baseAddr, "/events/log/tile/"+t.path, "X-Workspace-Id", b.main.WorkspaceID)); err != nil {
			return err
		}
	}
	return nil
}

// logTileRuns is the runs of each side of a tile: at most logTileRounds, to keep the line
// short (the tiles are measured beside their limit, and their ratio moves less from run
// to run than an absolute figure).
func (b *bench) logTileRuns() int { return min(b.s.Runs, logTileRounds) }

// expectedTiles reads the two tiles from the service and the baseline and checks them: the
// same bytes from both, 256 entries in the bundle, and each hash of the hash tile the leaf
// hash of the entry of the same index.
func (b *bench) expectedTiles() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, path := range []string{"0/000", "entries/000"} {
		status, svc, err := b.getAuth("http://"+b.svcAddr+"/api/v1/events/log/tile/"+path, b.main.Key)
		if err != nil {
			return nil, err
		}
		if status != http.StatusOK {
			return nil, fmt.Errorf("GET /events/log/tile/%s: %d %s", path, status, truncate(string(svc), 300))
		}
		req, _ := http.NewRequestWithContext(b.ctx, http.MethodGet, "http://"+b.baseAddr+"/events/log/tile/"+path, nil)
		req.Header.Set("X-Workspace-Id", b.main.WorkspaceID)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		base, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return nil, err
		}
		if res.StatusCode != http.StatusOK || string(base) != string(svc) {
			return nil, fmt.Errorf("the baseline's tile %s (%d, %d bytes) is not the service's (%d bytes)", path, res.StatusCode, len(base), len(svc))
		}
		out[path] = svc
	}
	hashes, rest := out["0/000"], out["entries/000"]
	if len(hashes) != torchwood.TileWidth*tlog.HashSize {
		return nil, fmt.Errorf("the hash tile has %d bytes, not %d", len(hashes), torchwood.TileWidth*tlog.HashSize)
	}
	for i := range torchwood.TileWidth {
		var entry []byte
		var err error
		if entry, rest, err = torchwood.ReadTileEntry(rest); err != nil {
			return nil, fmt.Errorf("entry %d of the bundle: %w", i, err)
		}
		if h := ledgerlog.LeafHash(entry); string(h[:]) != string(hashes[i*tlog.HashSize:(i+1)*tlog.HashSize]) {
			return nil, fmt.Errorf("hash %d of the hash tile is not the leaf hash of entry %d of the bundle", i, i)
		}
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("the entry bundle has %d bytes after its %d entries", len(rest), torchwood.TileWidth)
	}
	return out, nil
}

// --- the report ---------------------------------------------------------------------------

// appendRatios are the append path's rate and p99 with the sealer over without (0 without
// both).
func (ll *logLine) appendRatios() (rateRatio, p99Ratio float64) {
	w, wo := median(ll.with, rateOf), median(ll.without, rateOf)
	if w == 0 || wo == 0 {
		return 0, 0
	}
	p, po := median(ll.with, p99Of), median(ll.without, p99Of)
	if po > 0 {
		p99Ratio = float64(p) / float64(po)
	}
	return w / wo, p99Ratio
}

// appendHolds: the sealer costs the append path at most appendCostTarget of its rate.
func appendHolds(rateRatio float64) bool {
	return rateRatio > 0 && rateRatio >= 1-appendCostTarget-1e-9
}

func holds(ok bool) string {
	if ok {
		return "holds"
	}
	return "**misses**"
}

// checkpointFigures are the checkpoint latencies' p50, p99 and max.
func (ll *logLine) checkpointFigures() (p50, p99, maxLat time.Duration) {
	if len(ll.latencies) == 0 {
		return 0, 0, 0
	}
	p50, p99 = percentiles(slices.Clone(ll.latencies))
	return p50, p99, slices.Max(ll.latencies)
}

// checkpointHolds: every sample cosigned, the p99 under the target.
func (ll *logLine) checkpointHolds() bool {
	_, p99, _ := ll.checkpointFigures()
	return len(ll.latencies) > 0 && ll.missed == 0 && p99 < checkpointTarget
}

// logTable is the ledgerlog line's results in Markdown.
func (b *bench) logTable() string {
	ll := b.logLine
	if ll == nil || len(ll.with) == 0 {
		return ""
	}
	var w strings.Builder
	w.WriteString("| issue 27 target | measured | figure | target | verdict |\n|---|---|---|---|---|\n")
	r, p := ll.appendRatios()
	fmt.Fprintf(&w, "| the append path's cost with the log | POST /work/{id}/complete @%d, without → with the sealer | %s → %s req/s (**%.2fx**); p99 %s → %s ms (%.2fx) | at most %.0f%% (rate ≥ %.2fx) | %s |\n",
		logLoadClients, rate(median(ll.without, rateOf)), rate(median(ll.with, rateOf)), r,
		msec(median(ll.without, p99Of)), msec(median(ll.with, p99Of)), p, appendCostTarget*100, 1-appendCostTarget, holds(appendHolds(r)))
	if len(ll.latencies) > 0 {
		p50, p99, mx := ll.checkpointFigures()
		how := "a cosigned proof from the API"
		if !ll.viaAPI {
			how = "the witness's cosignature in the database (proof 200 first)"
		}
		missed := ""
		if ll.missed > 0 {
			missed = fmt.Sprintf("; **%d not cosigned within %s**", ll.missed, checkpointGiveUp)
		}
		fmt.Fprintf(&w, "| checkpoint latency with a witness | commit answered → %s, %d samples | p50 %s, **p99 %s**, max %s ms%s | p99 < %s s | %s |\n",
			how, len(ll.latencies), msec(p50), msec(p99), msec(mx), missed, strconv.FormatFloat(checkpointTarget.Seconds(), 'f', -1, 64), holds(ll.checkpointHolds()))
	}
	for _, sz := range ll.sizes {
		for _, c := range sz.Cells {
			fmt.Fprintf(&w, "| proofs from the API | %s at %s leaves @%d | %s req/s; p50 %s, **p99 %s** ms | p99 < %s ms | %s |\n",
				c.What, thousands(int(sz.N)), c.Clients, rate(c.S.Rate), msec(c.S.P50), msec(c.S.P99), strconv.FormatFloat(float64(proofTarget)/1e6, 'f', -1, 64),
				holds(c.S.Count > 0 && c.S.P99 < proofTarget))
		}
	}
	for _, l := range ll.tiles {
		if len(l.Service) == 0 || len(l.Limit) == 0 {
			continue
		}
		fmt.Fprintf(&w, "| tiles at the bare server's rate | %s @%d | %s req/s beside %s (**%.2fx**); p99 %s / %s ms | the bare server's rate (≥ %.1fx, goal %.1fx) | %s |\n",
			l.Name, l.Clients, rate(median(l.Service, rateOf)), rate(median(l.Limit, rateOf)), l.ratio(),
			msec(median(l.Service, p99Of)), msec(median(l.Limit, p99Of)), targetBar, targetGoal, l.verdict(l.ratio()))
	}
	return w.String()
}

// logHistory is the ledgerlog line's part of the history row.
func (b *bench) logHistory() string {
	ll := b.logLine
	if ll == nil || len(ll.with) == 0 {
		return ""
	}
	r, _ := ll.appendRatios()
	parts := []string{fmt.Sprintf("ledgerlog: append with the sealer %.2fx", r)}
	if len(ll.latencies) > 0 {
		_, p99, _ := ll.checkpointFigures()
		parts = append(parts, "checkpoint p99 "+msec(p99)+" ms")
	}
	for _, sz := range ll.sizes {
		var worst time.Duration
		for _, c := range sz.Cells {
			worst = max(worst, c.S.P99)
		}
		parts = append(parts, fmt.Sprintf("proof p99 ≤ %s ms at %s", msec(worst), thousands(int(sz.N))))
	}
	for _, l := range ll.tiles {
		if len(l.Service) > 0 && len(l.Limit) > 0 {
			parts = append(parts, fmt.Sprintf("tile %.2fx", l.ratio()))
		}
	}
	return strings.Join(parts, ", ")
}

// --- the baseline's tiles -----------------------------------------------------------------

// The statements the service sends for a tile (store/ledgerlog.go; a test keeps them in
// step): the newest checkpoint with its cosignatures, then for a hash tile the tile's
// stored hashes of a log that has reached the checkpoint's size, for an entry bundle the
// entries' events.
const (
	baseCheckpointColumns = `SELECT c.tree_size, c.root_hash, c.signed_note, c.signed_at,
		ARRAY(SELECT k.signature FROM ledger_cosignatures k
			WHERE k.workspace_id = c.workspace_id AND k.tree_size = c.tree_size ORDER BY k.witness)
	FROM ledger_checkpoints c`
	baseNewestCheckpoint = ` WHERE c.workspace_id = $1 ORDER BY c.tree_size DESC LIMIT 1`
	baseCheckpointSQL    = baseCheckpointColumns + baseNewestCheckpoint
	baseLogHashesSQL     = `SELECT h.hash_index, h.hash FROM ledger_log_hashes h
	WHERE h.workspace_id = $1 AND h.hash_index = ANY ($2)
		AND EXISTS (SELECT FROM ledger_logs l WHERE l.workspace_id = $1 AND l.tree_size >= $3)`
	baseEventColumns = `id, workspace_id, aggregate_type, aggregate_id, aggregate_version, event_type,
	schema_version, actor_type, actor_id, payload::text, payload_digest, occurred_at, recorded_at,
	idempotency_key, causation_id, correlation_id, previous_hash, event_hash, stream_position, seq`
	baseLogEntriesTail = `, l.leaf_index FROM ledger_log_leaves l
		JOIN ledger_events USING (workspace_id)
		WHERE l.workspace_id = $1 AND ledger_events.id = l.event_id AND l.leaf_index >= $2 AND l.leaf_index < $2 + $3
		ORDER BY l.leaf_index`
	baseLogEntriesSQL = `SELECT ` + baseEventColumns + baseLogEntriesTail
)

// baselineLogRoutes adds the tiles of the C2SP layout to the baseline server: what
// GET /events/log/tile/{tilePath} does (the same SQL, tlog's tile data, the entries'
// canonical JSON in a bundle) without authentication, middleware or the API's envelope
// checks; the workspace comes from the X-Workspace-Id header.
func baselineLogRoutes(app *fiber.App, pool *pgxpool.Pool) {
	app.Get("/events/log/tile/+", func(c *fiber.Ctx) error {
		ctx, ws := c.UserContext(), c.Get("X-Workspace-Id")
		t, err := torchwood.ParseTilePath("tile/" + c.Params("+"))
		if err != nil {
			return c.Status(fiber.StatusNotFound).SendString("no such tile")
		}
		var size int64
		var root []byte
		var signed string
		var signedAt time.Time
		var cosignatures []string
		if err := pool.QueryRow(ctx, baseCheckpointSQL, ws).Scan(&size, &root, &signed, &signedAt, &cosignatures); err != nil {
			return err
		}
		level := max(t.L, 0)
		if have := size >> (level * t.H); t.N*torchwood.TileWidth+int64(t.W) > have {
			return c.Status(fiber.StatusNotFound).SendString("not within the checkpoint")
		}
		var data []byte
		if t.L == -1 {
			rows, err := pool.Query(ctx, baseLogEntriesSQL, ws, t.N*torchwood.TileWidth, int64(t.W))
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var h accountable.EventHeader
				var payload, actorType, eventHash string
				var pos, seq, idx int64
				if err := rows.Scan(&h.ID, &h.WorkspaceID, &h.AggregateType, &h.AggregateID, &h.AggregateVersion, &h.EventType,
					&h.SchemaVersion, &actorType, &h.ActorID, &payload, &h.PayloadDigest, &h.OccurredAt, &h.RecordedAt,
					&h.IdempotencyKey, &h.CausationID, &h.CorrelationID, &h.PreviousHash, &eventHash, &pos, &seq, &idx); err != nil {
					return err
				}
				h.ActorType = accountable.ActorType(actorType)
				entry, err := ledgerlog.Entry(h)
				if err != nil {
					return err
				}
				if data, err = torchwood.AppendTileEntry(data, entry); err != nil {
					return err
				}
			}
			if err := rows.Err(); err != nil {
				return err
			}
		} else {
			if data, err = tlog.ReadTileData(t, baseHashReader{ctx, pool, ws, size}); err != nil {
				return err
			}
		}
		c.Set(fiber.HeaderContentType, fiber.MIMEOctetStream)
		return c.Send(data)
	})
}

// baseHashReader reads a workspace's stored hashes as the store does (one query a read).
type baseHashReader struct {
	ctx  context.Context
	pool *pgxpool.Pool
	ws   string
	size int64 // the tree's, which the log must hold
}

func (r baseHashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	rows, err := r.pool.Query(r.ctx, baseLogHashesSQL, r.ws, indexes, r.size)
	if err != nil {
		return nil, err
	}
	found := make(map[int64]tlog.Hash, len(indexes))
	for rows.Next() {
		var x int64
		var h []byte
		if err := rows.Scan(&x, &h); err != nil {
			rows.Close()
			return nil, err
		}
		found[x] = tlog.Hash(h)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		h, ok := found[x]
		if !ok {
			return nil, fmt.Errorf("stored hash %d is missing", x)
		}
		out[i] = h
	}
	return out, nil
}

// logSection is the ledgerlog line's part of the report: what it measured, its table and
// what else it found.
func (b *bench) logSection() string {
	ll := b.logLine
	t := b.logTable()
	if t == "" {
		return ""
	}
	var w strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	p("\n**Transparency log** (the `ledgerlog` line; issue 27's targets, each beside its figure). "+
		"*The append path*: POST /work/{id}/complete at %d clients (the complete line's workload) with no ledger sealer running, then with "+
		"an `accountable worker` sealing (`LEDGER_CHECKPOINT_INTERVAL=1s`, every checkpoint submitted to a litewitness), %d rounds "+
		"alternating, medians; before each run with the sealer it had caught up (every event a leaf, every log signed and cosigned). "+
		"*Checkpoint latency*: while one client creates work in the same workspace, a POST /work every %s for %s; each sample runs from "+
		"its answer to ", logLoadClients, len(ll.with), checkpointSampleEvery, b.s.Duration)
	if ll.viaAPI {
		p("the first GET /events/{eventId}/proof (polled every %s) answering 200 with a checkpoint that carries the witness's cosignature "+
			"(both signatures and the proof checked). ", checkpointPollEvery)
	} else {
		p("the witness's cosignature of a tree holding the event in ledger_cosignatures, after GET /events/{eventId}/proof (polled every %s) "+
			"answered 200 (the proof checked): the API's checkpoints carried the log's signature alone, so this is the database's view, "+
			"not yet a client's. ", checkpointPollEvery)
	}
	p("*Proofs*: a synthetic log of each size in a workspace of its own (its first leaves the workspace's events: %s work items made "+
		"through POST /work after the events of the workspace's making; the others "+
		"random leaf hashes, stored hashes written with COPY, checkpoints signed with the service's key at %s); one run of %s + %s at each "+
		"client count, GET /events/{eventId}/proof of the real events in turn (proofs in the largest tree) and GET /events/consistency from "+
		"each smaller signed size to the largest in turn; one answer in %d is checked (signatures, the proof against the root the harness "+
		"computed). *Tiles*: the bench workspace's first hash tile and entry bundle, beside the bare Fiber + pgx server sending the "+
		"same SQL (every answer compared with the tile's bytes), %d runs of each side.\n\n",
		thousands(logRealEvents), "its events alone, about a quarter, about a half and all of it", b.s.Warmup, b.s.Duration, logVerifyEvery, b.logTileRuns())
	w.WriteString(t)
	p("\n")
	if len(ll.catchUps) > 0 {
		first := ll.catchUps[0]
		p("* ledgerlog: the sealer's first start caught up %s leaves (every event of the run so far) in %s", thousands(int(first.leaves)),
			first.took.Round(100*time.Millisecond))
		if len(ll.catchUps) > 1 {
			p("; each later start, after a run without it, a median of %s leaves in %s", thousands(int(median(ll.catchUps[1:], func(c catchUp) int64 { return c.leaves }))),
				median(ll.catchUps[1:], func(c catchUp) time.Duration { return c.took }).Round(100*time.Millisecond))
		}
		p(" (start included).\n")
	}
	if len(ll.sealerCPU) > 0 {
		p("* ledgerlog: during the completion runs with the sealer, its process (`accountable worker`) used a median of %.0f%% of a core "+
			"(its database work, in PostgreSQL's processes, and the witness's not included).\n", 100*median(ll.sealerCPU, identity))
	}
	if len(ll.latencies) > 0 || ll.sampleErrs > 0 {
		p("* ledgerlog: checkpoint latency over %d samples; the background writer created %s req/s", len(ll.latencies)+ll.missed, rate(ll.background))
		if ll.sampleErrs > 0 {
			p("; %d sample commits failed (first: %s)", ll.sampleErrs, ll.firstSampErr)
		}
		p(".\n")
	}
	for _, sz := range ll.sizes {
		p("* ledgerlog at %s leaves: %s stored hashes seeded in %s (%s leaves/s; ANALYZE %s); signed at %s; %d of %d answers checked.\n",
			thousands(int(sz.N)), thousands(int(sz.Rows)), sz.Seed.Round(100*time.Millisecond), rate(float64(sz.N)/sz.Seed.Seconds()),
			sz.Analyze.Round(100*time.Millisecond), sizeList(sz.Signed), sz.Verified, sz.Asked)
	}
	for _, n := range ll.notes {
		p("* ledgerlog: %s\n", n)
	}
	p("* ledgerlog: the line took %s.\n", ll.took.Round(time.Second))
	return w.String()
}

// sizeList writes tree sizes as 1,000, 250,001 and 500,001.
func sizeList(sizes []int64) string {
	v := make([]int, len(sizes))
	for i, s := range sizes {
		v[i] = int(s)
	}
	return intList(v)
}
