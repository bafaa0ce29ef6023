package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
)

// Exactly once, under concurrency (issue 11), generated from the served OpenAPI document
// like the isolation matrix, whose tables (fixtures, preparations, bodies) build the
// owner's valid request for every operation:
//
//   - Every operation that takes an Idempotency-Key: N identical requests (one key, one
//     body, one path), released together, make one effect and N equivalent answers: one
//     first answer (meta.duplicate false) and N-1 replays of it (meta.duplicate true, 200)
//     with the same data. One effect: the ledger events carrying the key were committed
//     by one transaction and are as many as the very same request sent once (a control,
//     on a second workspace with its own fixtures) makes, and every table of the
//     workspace gained the rows the control's gained, no more.
//   - Every other mutating operation is classified in withoutIdempotencyKey, and run the
//     same way when it is idempotent by nature.
//   - Every command that names the version of its aggregate (expected_aggregate_version,
//     version_token; the ledger head's version is added where the body may leave it out):
//     versionRacers requests with different keys on one version have one winner; the
//     others answer 409 with the version conflict, and the aggregate gains one event, at
//     the next version, carrying the winner's key.
//   - Afterwards the workspaces' ledgers verify.
//
// N is EXACTLY_ONCE_REQUESTS (default 100). A request that meets its key held by another
// (409 idempotency_request_in_progress, DESIGN.md section 3: "Same key while the first is
// still running") does what the answer tells a client to do: it retries, and its answer
// is the one its retry gets. The interim answers are counted and logged; any other
// interim answer fails the test.

// exactlyOnceRequests is N, the requests of one burst.
func exactlyOnceRequests(t *testing.T) int {
	t.Helper()
	s := os.Getenv("EXACTLY_ONCE_REQUESTS")
	if s == "" {
		return 100
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 2 {
		t.Fatalf("EXACTLY_ONCE_REQUESTS=%q: want an integer >= 2", s)
	}
	return n
}

// versionRacers is how many commands race for one aggregate version.
const versionRacers = 20

// keylessOperation classifies a mutating operation that takes no Idempotency-Key.
type keylessOperation struct {
	reason string
	// answers checks the N answers of a burst of identical requests (all 2xx); nil when
	// the operation is not run (reason says why).
	answers func(t *testing.T, rs []response)
}

// withoutIdempotencyKey lists every mutating operation with a credential that takes no
// Idempotency-Key, and why. A new one fails the test until it has a line here.
var withoutIdempotencyKey = map[string]keylessOperation{
	"reconcileController": {
		reason: "the body's idempotency_key names the run: the same key answers the same result with data.duplicate true",
		answers: func(t *testing.T, rs []response) {
			t.Helper()
			checkReplays(t, rs, func(r response) (bool, bool) { d, ok := r.data()["duplicate"].(bool); return d, ok },
				http.StatusOK, normaliseReplay("reconcileController"))
		},
	},
	"claimDedup": {
		reason: "first claimant wins: one claim (claimed true), every other claimant deduped true against it",
		answers: func(t *testing.T, rs []response) {
			t.Helper()
			winners := 0
			for i, r := range rs {
				d := r.data()
				switch {
				case d["claimed"] == true && d["deduped"] == false:
					winners++
				case d["claimed"] == false && d["deduped"] == true:
				default:
					t.Fatalf("answer %d is neither the claim nor deduped: %s", i, r.raw)
				}
				for _, k := range []string{"fingerprint_hash", "claim_id", "expires_at", "claimed_at"} {
					if d[k] != rs[0].data()[k] {
						t.Fatalf("answers 0 and %d name different claims (%s %v, %v): %s\n%s", i, k, rs[0].data()[k], d[k], rs[0].raw, r.raw)
					}
				}
			}
			if winners != 1 {
				t.Fatalf("%d claimants won, want 1", winners)
			}
		},
	},
	"checkoutStudio": {
		reason: "not offered: every request is 501 not_offered and changes nothing (TestStudioCheckoutIsNotOffered)",
	},
	"estimateStudio": {
		reason:  "a pure function of the body: nothing is stored, the same request gets the same estimate",
		answers: sameAnswers,
	},
	"prepareContext": {
		reason:  "reads only (a POST for its rich body): nothing is stored but the text served, in memory; the same scope read again is the same capsule",
		answers: sameAnswers,
	},
	"deleteWebhook": {
		reason:  "deleting a deleted endpoint answers it as it is: one webhook.deleted, the same endpoint every time",
		answers: sameAnswers,
	},
}

// sameAnswers checks that every answer is the same 200 with the same data (the same body,
// when it is bare).
func sameAnswers(t *testing.T, rs []response) {
	t.Helper()
	for i, r := range rs {
		if r.status != http.StatusOK {
			t.Fatalf("answer %d: %d %s", i, r.status, r.raw)
		}
		a, b := toJSON(rs[0].body["data"]), toJSON(r.body["data"])
		if _, enveloped := rs[0].body["data"]; !enveloped { // a bare answer (the studio estimate) is compared whole
			a, b = string(rs[0].raw), string(r.raw)
		}
		if a != b {
			t.Fatalf("answers 0 and %d differ:\n%s\n%s", i, a, b)
		}
	}
}

// versionConflictCodes are the 409 codes of a command on a stale version, where they are
// not version_conflict (CONTRACT.md: a stale completion is task_version_stale).
var versionConflictCodes = map[string]string{"completeWork": accountable.ECodeTaskVersionStale}

func TestExactlyOnceUnderConcurrency(t *testing.T) {
	started := time.Now()
	// The quiet env: no relay moves anything in the background, so a workspace's rows
	// change only by the requests. Its API keys have no rate limit (Config.RateLimit 0)
	// and proposal generation's per-minute bound is raised.
	e := newQuietEnv(t)
	doc := fetchDocument(t, e)
	conn := storetest.Conn(t)
	r := &onceRun{e: e, conn: conn, tables: workspaceTables(t, conn), n: exactlyOnceRequests(t),
		burstWS: storetest.NewTenant(t, e.db), controlWS: storetest.NewTenant(t, e.db),
		// A client of its own, which keeps the burst's connections open between bursts.
		client: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxIdleConns: 512}}}
	t.Cleanup(r.client.CloseIdleConnections)
	r.warm(t)
	r.m = &matrix{e: e, doc: doc, conn: conn, tables: r.tables}
	t.Logf("%d identical requests per burst, %d racers per version", r.n, versionRacers)

	var keyed, keyless, races []string
	seenKeyless := map[string]bool{}
	for _, op := range doc.operations(t) {
		if op.Method == http.MethodGet || op.Method == http.MethodHead {
			continue
		}
		if op.Public {
			if _, ok := publicOperations[op.ID]; !ok {
				t.Fatalf("%s is account-free: add a line to publicOperations in the isolationLines of its area's test file (api/<area>_test.go)", op)
			}
			t.Logf("%s: account-free, not run (%s)", op, publicOperations[op.ID])
			continue
		}
		// Classified here, outside the subtests, so that a run of some of them (-run)
		// still checks every operation's line.
		k, listed := withoutIdempotencyKey[op.ID]
		switch {
		case op.Idempotency != "":
			keyed = append(keyed, op.ID)
		case !listed:
			t.Errorf("%s changes state and takes no Idempotency-Key: add a line to withoutIdempotencyKey in "+
				"api/exactlyonce_test.go saying why a retry is safe (and how to check it), or give it the key", op)
			continue
		default:
			seenKeyless[op.ID] = true
			if k.answers == nil {
				t.Logf("%s: no Idempotency-Key, not run: %s", op, k.reason)
			} else {
				keyless = append(keyless, op.ID)
			}
		}
		if op.namesVersion() {
			races = append(races, op.ID)
		}
		t.Run(op.ID, func(t *testing.T) {
			opStarted := time.Now()
			switch {
			case op.Idempotency != "":
				t.Run("one key", func(t *testing.T) { r.sameKey(t, op) })
			case k.answers != nil:
				t.Logf("no Idempotency-Key: %s", k.reason)
				t.Run("identical requests", func(t *testing.T) { r.keyless(t, op, k) })
			}
			if op.namesVersion() {
				t.Run("one version", func(t *testing.T) { r.race(t, op) })
			}
			r.verified(t, r.burstWS)
			t.Logf("%.1fs", time.Since(opStarted).Seconds())
		})
	}
	for id := range withoutIdempotencyKey {
		if !seenKeyless[id] {
			t.Errorf("withoutIdempotencyKey lists %s, which the document does not serve as a mutating operation without a key", id)
		}
	}
	r.verified(t, r.controlWS)
	t.Logf("one key: %d operations %v", len(keyed), keyed)
	t.Logf("without a key, run: %d operations %v", len(keyless), keyless)
	t.Logf("one version: %d operations %v", len(races), races)
	t.Logf("interim in-progress answers, retried: %d; wall time %.1fs", r.inProgress, time.Since(started).Seconds())
}

// onceRun is the state of one run: the env, two workspaces (the bursts' and the
// controls'), the client of the bursts.
type onceRun struct {
	e                  *env
	m                  *matrix
	conn               *pgx.Conn
	tables             []string
	n                  int
	burstWS, controlWS storetest.Tenant
	client             *http.Client
	mu                 sync.Mutex
	inProgress         int
}

// namesVersion reports whether the body names the version of the aggregate it changes.
func (o docOperation) namesVersion() bool {
	props, _ := o.Body["properties"].(map[string]any)
	_, v := props["expected_aggregate_version"]
	_, tok := props["version_token"]
	return v || tok
}

// ownerRequest is the owner's valid request for op, as the isolation matrix makes it:
// fixtures for the path parameters, the preparation, the body.
type ownerRequest struct {
	ids  map[string]string
	body map[string]any
	// aggregate is the id of the resource the path names (the last, when several).
	aggregate string
}

func (r *onceRun) ownerRequest(t *testing.T, op docOperation, tenant storetest.Tenant) ownerRequest {
	t.Helper()
	o := &owner{t: t, e: r.e.as(t), tenant: tenant, conn: r.conn, marker: "once-" + uuid.NewString()}
	req := ownerRequest{ids: map[string]string{}}
	for _, p := range op.PathParams {
		if v, ok := pathValues[p.Name]; ok {
			req.ids[p.Name] = v
			continue
		}
		fx, ok := fixtureFor(op.Path, p.Name)
		if !ok {
			t.Fatalf("%s: no fixture for the path parameter %q: add a line to fixtures in the isolationLines of its area's test file (api/<area>_test.go)", op, p.Name)
		}
		req.ids[p.Name] = fx(o)
		req.aggregate = req.ids[p.Name]
	}
	if prepare, ok := preparations[op.ID]; ok {
		prepare(o, req.ids)
	}
	req.body = r.m.bodyFor(t, op, o, req.ids)
	return req
}

// encode is the body as sent (once: some bodies make a fresh value each time they are
// encoded, a receipt's id).
func encode(t *testing.T, body map[string]any) []byte {
	t.Helper()
	if body == nil {
		return nil
	}
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// warm opens the connections of a burst, so that its requests leave together rather than
// one connection handshake after another.
func (r *onceRun) warm(t *testing.T) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, max(r.n, versionRacers))
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := r.client.Get(r.e.base + "/healthz")
			if err == nil {
				_, err = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// send sends op once; it fails no test (it runs on the burst's goroutines).
func (r *onceRun) send(op docOperation, key string, ids map[string]string, raw []byte, idemKey string) (response, error) {
	url := r.e.base + strings.TrimSuffix(op.Mounts[0], "/") + strings.TrimSuffix(op.pathOf(ids), "/")
	var body io.Reader
	if raw != nil {
		body = bytes.NewReader(raw)
	}
	hr, err := http.NewRequest(op.Method, url, body)
	if err != nil {
		return response{}, err
	}
	if raw != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Header.Set("Authorization", "Bearer "+key)
	if idemKey != "" {
		hr.Header.Set("Idempotency-Key", idemKey)
	}
	res, err := r.client.Do(hr)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	out := response{status: res.StatusCode, header: res.Header}
	if out.raw, err = io.ReadAll(res.Body); err != nil {
		return out, err
	}
	if err := json.Unmarshal(out.raw, &out.rawBody); err != nil {
		return out, fmt.Errorf("%d: not JSON: %v: %s", res.StatusCode, err, out.raw)
	}
	out.body, _ = out.rawBody.(map[string]any)
	if err := r.e.oas.validate(op.Method, op.Path, res.StatusCode, out.rawBody); err != nil {
		return out, err
	}
	return out, nil
}

// burst sends op once per key in idemKeys ("" for none), all released together, and
// returns the answers in the order of the keys. With retry, an answer
// idempotency_request_in_progress is retried until it is another.
func (r *onceRun) burst(t *testing.T, op docOperation, tenant storetest.Tenant, ids map[string]string, raw []byte, idemKeys []string, retry bool) []response {
	t.Helper()
	out := make([]response, len(idemKeys))
	errs := make([]error, len(idemKeys))
	interim := make([]int, len(idemKeys))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, k := range idemKeys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			deadline := time.Now().Add(60 * time.Second)
			for {
				out[i], errs[i] = r.send(op, tenant.Key, ids, raw, k)
				if errs[i] != nil || !retry || out[i].status != http.StatusConflict ||
					out[i].errorCode() != accountable.ECodeIdempotencyInProgress || time.Now().After(deadline) {
					return
				}
				interim[i]++
				// A client's jittered backoff before it retries (not a wait of the test's): the
				// answers, interim ones too, are what the test checks, so it runs on this goroutine.
				time.Sleep(time.Duration(2+rand.IntN(10)) * time.Millisecond)
			}
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: request %d: %v", op, i, err)
		}
	}
	total := 0
	for _, n := range interim {
		total += n
	}
	r.mu.Lock()
	r.inProgress += total
	r.mu.Unlock()
	t.Logf("%d requests in %.2fs (%d interim answers in progress, retried)", len(idemKeys), time.Since(began).Seconds(), total)
	return out
}

// checkReplays checks a burst's answers: all 2xx, exactly one first answer (with status
// first) and replays of it (200), whose data are the first's. replayed says whether an
// answer says it is a replay (and whether it says so at all); normalise, when set,
// removes from an answer's data what legitimately differs between a first answer and a
// replay.
func checkReplays(t *testing.T, rs []response, replayed func(response) (bool, bool), first int, normalise func(data any, dup bool) error) {
	t.Helper()
	firsts := []int{}
	for i, r := range rs {
		if r.status < 200 || r.status >= 300 {
			t.Fatalf("answer %d: %d %s", i, r.status, r.raw)
		}
		dup, ok := replayed(r)
		switch {
		case !ok:
			t.Fatalf("answer %d does not say whether it is a replay: %s", i, r.raw)
		case !dup:
			firsts = append(firsts, i)
			if r.status != first {
				t.Fatalf("the first answer is %d, not %d (the control's): %s", r.status, first, r.raw)
			}
		case r.status != http.StatusOK:
			t.Fatalf("a replay answers %d, not 200: %s", r.status, r.raw)
		}
	}
	if len(firsts) != 1 {
		t.Fatalf("%d first answers (answers %v), want 1 and %d replays", len(firsts), firsts, len(rs)-1)
	}
	data := func(i int) string {
		t.Helper()
		var d any
		if err := json.Unmarshal(rs[i].raw, &d); err != nil { // a copy to normalise
			t.Fatal(err)
		}
		d = d.(map[string]any)["data"]
		dup, _ := replayed(rs[i])
		if normalise != nil {
			if err := normalise(d, dup); err != nil {
				t.Fatalf("answer %d: %v: %s", i, err, rs[i].raw)
			}
		}
		return toJSON(d)
	}
	want := data(firsts[0])
	for i := range rs {
		if got := data(i); got != want {
			t.Fatalf("answer %d differs from the first (answer %d):\nfirst: %s\nthis:  %s", i, firsts[0], want, got)
		}
	}
}

// replayNormalisers remove from an answer's data the members that legitimately differ
// between the first answer and its replays, having checked them.
var replayNormalisers = map[string]func(data any, dup bool) error{
	// CONTRACT.md, receipt import: "201 new / 200 replay {..., idempotent}": idempotent
	// says whether the answer replays an import.
	"importReceipt": func(data any, dup bool) error {
		d := data.(map[string]any)
		if d["idempotent"] != dup {
			return fmt.Errorf("idempotent is %v in an answer whose meta.duplicate is %v", d["idempotent"], dup)
		}
		delete(d, "idempotent")
		return nil
	},
	// CONTRACT.md, webhooks: the endpoint's secret is "shown once", to the request that
	// registered it; a replay answers null.
	"registerWebhook": func(data any, dup bool) error {
		d := data.(map[string]any)
		if secret, _ := d["secret"].(string); dup != (d["secret"] == nil) || !dup && secret == "" {
			return fmt.Errorf("the secret is %v in an answer whose meta.duplicate is %v (shown once, to the first)", d["secret"], dup)
		}
		delete(d, "secret")
		return nil
	},
}

// normaliseReplay removes what legitimately differs between a first answer and a replay:
// the event reference's duplicate flag (the specification: "duplicate (boolean)", true
// when the answer replays an earlier request), wherever the data carries one, after
// checking that it says what meta.duplicate says; and what an operation's own line in
// replayNormalisers removes.
func normaliseReplay(opID string) func(data any, dup bool) error {
	return func(data any, dup bool) error {
		var walk func(v any) error
		walk = func(v any) error {
			switch v := v.(type) {
			case map[string]any:
				if d, ok := v["duplicate"].(bool); ok {
					if d != dup {
						return fmt.Errorf("a duplicate member says %v in an answer whose meta.duplicate is %v", d, dup)
					}
					delete(v, "duplicate")
				}
				for _, x := range v {
					if err := walk(x); err != nil {
						return err
					}
				}
			case []any:
				for _, x := range v {
					if err := walk(x); err != nil {
						return err
					}
				}
			}
			return nil
		}
		if err := walk(data); err != nil {
			return err
		}
		if f, ok := replayNormalisers[opID]; ok {
			return f(data, dup)
		}
		return nil
	}
}

// ledgerEvent is a row of ledger_events, as the effect checks read it.
type ledgerEvent struct {
	Type, Aggregate, AggregateType string
	Version                        int64
	Key                            *string
	Tx                             int64
}

// workspaceCounts counts the rows of every workspace table of ws, and returns the highest
// ledger seq of ws.
func (r *onceRun) workspaceCounts(t *testing.T, ws string) (map[string]int64, int64) {
	t.Helper()
	var q strings.Builder
	for i, table := range r.tables {
		if i > 0 {
			q.WriteString(" UNION ALL ")
		}
		fmt.Fprintf(&q, "SELECT '%s'::text, count(*) FROM %s WHERE workspace_id = $1",
			strings.ReplaceAll(table, "'", "''"), pgx.Identifier{table}.Sanitize())
	}
	rows, err := r.conn.Query(context.Background(), q.String(), ws)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for rows.Next() {
		var table string
		var n int64
		if err := rows.Scan(&table, &n); err != nil {
			t.Fatal(err)
		}
		counts[table] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var seq int64
	if err := r.conn.QueryRow(context.Background(), `SELECT coalesce(max(seq), 0) FROM ledger_events WHERE workspace_id = $1`, ws).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	return counts, seq
}

// events reads ledger events of ws: those after seq, or those carrying key.
func (r *onceRun) events(t *testing.T, ws string, afterSeq int64, key string) []ledgerEvent {
	t.Helper()
	sql := `SELECT event_type, aggregate_id, aggregate_type, aggregate_version, idempotency_key, stream_position
		FROM ledger_events WHERE workspace_id = $1 AND seq > $2 ORDER BY seq`
	args := []any{ws, afterSeq}
	if key != "" {
		sql = `SELECT event_type, aggregate_id, aggregate_type, aggregate_version, idempotency_key, stream_position
			FROM ledger_events WHERE workspace_id = $1 AND idempotency_key = $2 ORDER BY seq`
		args = []any{ws, key}
	}
	rows, err := r.conn.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ledgerEvent, error) {
		var ev ledgerEvent
		err := row.Scan(&ev.Type, &ev.Aggregate, &ev.AggregateType, &ev.Version, &ev.Key, &ev.Tx)
		return ev, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// effect is what one request (or burst) did to a workspace: the tables whose row counts
// changed, by how much, and the ledger events it appended.
type effect struct {
	rows   map[string]int64
	events []ledgerEvent
}

// measure runs do and returns its effect on ws.
func (r *onceRun) measure(t *testing.T, ws string, do func()) effect {
	t.Helper()
	before, seq := r.workspaceCounts(t, ws)
	do()
	after, _ := r.workspaceCounts(t, ws)
	eff := effect{rows: map[string]int64{}, events: r.events(t, ws, seq, "")}
	for table, n := range after {
		if d := n - before[table]; d != 0 {
			eff.rows[table] = d
		}
	}
	return eff
}

// types lists the events' types, sorted.
func types(evs []ledgerEvent) []string {
	out := []string{}
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	slices.Sort(out)
	return out
}

// transactions counts the transactions that committed evs.
func transactions(evs []ledgerEvent) int {
	seen := map[int64]bool{}
	for _, ev := range evs {
		seen[ev.Tx] = true
	}
	return len(seen)
}

// sameEffect fails unless the burst did what the control's one request did: the same
// change in every table's row count, the same events, committed by as many transactions.
// Row counts see rows inserted and deleted, not rows updated; an update made twice would
// be a second command, which writes its events in its own transaction (DESIGN.md: one
// transaction per command, every accepted mutation appends an event): the event checks
// see it.
func sameEffect(t *testing.T, control, burst effect) {
	t.Helper()
	if !maps.Equal(control.rows, burst.rows) {
		t.Fatalf("the burst changed the workspace's row counts by %v, one request by %v", burst.rows, control.rows)
	}
	if c, b := types(control.events), types(burst.events); !slices.Equal(c, b) {
		t.Fatalf("the burst appended the events %v, one request %v", b, c)
	}
	if c, b := transactions(control.events), transactions(burst.events); c != b {
		t.Fatalf("the burst's events were committed by %d transactions, one request's by %d", b, c)
	}
}

// sameKey: N identical requests with one Idempotency-Key.
func (r *onceRun) sameKey(t *testing.T, op docOperation) {
	// The control: the same request, once, on the control workspace's own fixtures.
	creq := r.ownerRequest(t, op, r.controlWS)
	craw, ckey := encode(t, creq.body), uniqueKey("once-control")
	var control response
	ceff := r.measure(t, r.controlWS.Principal.WorkspaceID, func() {
		control = r.burst(t, op, r.controlWS, creq.ids, craw, []string{ckey}, false)[0]
	})
	if control.status < 200 || control.status >= 300 {
		t.Fatalf("%s: the owner's request is refused (%d); give it a valid body in bodies in the isolationLines of its area's test file (api/<area>_test.go): %s", op, control.status, control.raw)
	}
	if dup, _ := control.meta()["duplicate"].(bool); dup {
		t.Fatalf("%s: a first request answers as a replay: %s", op, control.raw)
	}
	ckeyed := r.events(t, r.controlWS.Principal.WorkspaceID, 0, ckey)

	// The burst.
	req := r.ownerRequest(t, op, r.burstWS)
	raw, key := encode(t, req.body), uniqueKey("once")
	keys := make([]string, r.n)
	for i := range keys {
		keys[i] = key
	}
	var rs []response
	eff := r.measure(t, r.burstWS.Principal.WorkspaceID, func() { rs = r.burst(t, op, r.burstWS, req.ids, raw, keys, true) })
	checkReplays(t, rs, func(r response) (bool, bool) { d, ok := r.meta()["duplicate"].(bool); return d, ok },
		control.status, normaliseReplay(op.ID))

	// One effect.
	keyed := r.events(t, r.burstWS.Principal.WorkspaceID, 0, key)
	if len(keyed) == 0 || len(keyed) != len(ckeyed) {
		t.Fatalf("%d events carry the burst's key, %d the control's (one request's): %v vs %v", len(keyed), len(ckeyed), keyed, ckeyed)
	}
	if n := transactions(keyed); n != 1 {
		t.Fatalf("the events carrying the key were committed by %d transactions, want 1: %+v", n, keyed)
	}
	sameEffect(t, ceff, eff)
	t.Logf("one effect: %d event(s) %v in one transaction; rows %v", len(keyed), types(keyed), eff.rows)
}

// keyless: N identical requests of an operation without a key, idempotent by nature.
func (r *onceRun) keyless(t *testing.T, op docOperation, k keylessOperation) {
	creq := r.ownerRequest(t, op, r.controlWS)
	craw := encode(t, creq.body)
	var control response
	ceff := r.measure(t, r.controlWS.Principal.WorkspaceID, func() {
		control = r.burst(t, op, r.controlWS, creq.ids, craw, []string{""}, false)[0]
	})
	if control.status < 200 || control.status >= 300 {
		t.Fatalf("%s: the owner's request is refused (%d): %s", op, control.status, control.raw)
	}
	req := r.ownerRequest(t, op, r.burstWS)
	raw := encode(t, req.body)
	var rs []response
	eff := r.measure(t, r.burstWS.Principal.WorkspaceID, func() { rs = r.burst(t, op, r.burstWS, req.ids, raw, make([]string, r.n), false) })
	for i, a := range rs {
		if a.status < 200 || a.status >= 300 {
			t.Fatalf("answer %d: %d %s", i, a.status, a.raw)
		}
	}
	k.answers(t, rs)
	if n := transactions(eff.events); n > 1 {
		t.Fatalf("the burst's events were committed by %d transactions, want at most 1: %+v", n, eff.events)
	}
	sameEffect(t, ceff, eff)
	t.Logf("one effect: %d event(s) %v; rows %v", len(eff.events), types(eff.events), eff.rows)
}

// race: versionRacers commands on one version of one aggregate, each with its own key.
func (r *onceRun) race(t *testing.T, op docOperation) {
	req := r.ownerRequest(t, op, r.burstWS)
	ws := r.burstWS.Principal.WorkspaceID
	if req.aggregate == "" {
		t.Fatalf("%s names a version but its path names no aggregate", op)
	}
	rows, err := r.conn.Query(context.Background(), `SELECT aggregate_type, version FROM ledger_heads
		WHERE workspace_id = $1 AND aggregate_id = $2`, ws, req.aggregate)
	if err != nil {
		t.Fatal(err)
	}
	type headRow struct {
		Type    string
		Version int64
	}
	heads, err := pgx.CollectRows(rows, pgx.RowToStructByPos[headRow])
	if err != nil || len(heads) != 1 {
		t.Fatalf("the head of %s: %v %v", req.aggregate, heads, err)
	}
	version := heads[0].Version
	switch v, ok := req.body["expected_aggregate_version"]; {
	case ok && v != float64(version):
		t.Fatalf("the body names version %v, the ledger's head is at %d", v, version)
	case !ok && req.body["version_token"] == nil:
		req.body["expected_aggregate_version"] = version
	}
	raw := encode(t, req.body)
	keys := make([]string, versionRacers)
	if op.Idempotency != "" {
		for i := range keys {
			keys[i] = uniqueKey("racer")
		}
	}
	rs := r.burst(t, op, r.burstWS, req.ids, raw, keys, false)
	code := accountable.ECodeVersionConflict
	if c, ok := versionConflictCodes[op.ID]; ok {
		code = c
	}
	winner := -1
	for i, a := range rs {
		switch {
		case a.status >= 200 && a.status < 300:
			if winner >= 0 {
				t.Fatalf("answers %d and %d both won version %d: %s\n%s", winner, i, version, rs[winner].raw, a.raw)
			}
			winner = i
		case a.status == http.StatusConflict && a.errorCode() == code:
		default:
			t.Fatalf("racer %d: %d %s, want the winner's 2xx or 409 %s: %s", i, a.status, a.errorCode(), code, a.raw)
		}
	}
	if winner < 0 {
		t.Fatalf("no racer won version %d", version)
	}
	evs, err := r.conn.Query(context.Background(), `SELECT aggregate_version, idempotency_key FROM ledger_events
		WHERE workspace_id = $1 AND aggregate_type = $2 AND aggregate_id = $3 AND aggregate_version > $4`,
		ws, heads[0].Type, req.aggregate, version)
	if err != nil {
		t.Fatal(err)
	}
	type eventRow struct {
		Version int64
		Key     *string
	}
	after, err := pgx.CollectRows(evs, pgx.RowToStructByPos[eventRow])
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 1 || after[0].Version != version+1 {
		t.Fatalf("the %s %s gained the events %+v since version %d, want one at %d", heads[0].Type, req.aggregate, after, version, version+1)
	}
	if keys[winner] != "" && (after[0].Key == nil || *after[0].Key != keys[winner]) {
		t.Fatalf("the %s's event at %d carries the key %v, not the winner's %s", heads[0].Type, version+1, after[0].Key, keys[winner])
	}
	t.Logf("one winner of %d at %s version %d; %d answered 409 %s", len(rs), heads[0].Type, version, len(rs)-1, code)
}

// verified fails unless the tenant's ledger verifies.
func (r *onceRun) verified(t *testing.T, tenant storetest.Tenant) {
	t.Helper()
	a := r.e.as(t).do(request{method: "GET", path: "/events/verify", key: tenant.Key})
	expect(t, a, http.StatusOK, "")
	if a.data()["verified"] != true {
		t.Fatalf("the ledger does not verify: %s", a.raw)
	}
}
