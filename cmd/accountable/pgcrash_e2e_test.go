package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// PostgreSQL crashes (pg_ctl stop -m immediate: every connection cut, no shutdown
// checkpoint) while a bounded generator creates and reads work through a running `serve`,
// then starts again and recovers from its WAL. While it is down every answer is 503
// (ledger_unavailable, or authorization_unavailable where a credential had to be looked
// up) and /readyz says so; the same process serves again once it is back, without a
// restart; every acknowledged write is in the ledger; every refused one, sent again with
// its key, either makes its effect (201) or answers the one the crash hid (200 duplicate);
// no key has two effects, and the ledger verifies.
func TestPostgresCrashUnderLoad(t *testing.T) {
	ctx := context.Background()
	cluster, owner, service := storetest.NewMigratedCluster(t)
	db, err := store.Open(ctx, store.Config{URL: service})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	tenant := storetest.NewTenant(t, db)
	base := startServeWithDatabase(t, service, owner, fmt.Sprintf("e2e-pgcrash-%d", time.Now().UnixNano()))
	c := apiClient{t: t, base: base, key: tenant.Key}
	readID := func() string {
		status, body := c.call("POST", "/work", "pgcrash-read", map[string]any{"title": "read during the crash"})
		if status != http.StatusCreated {
			t.Fatalf("create: %d %v", status, body)
		}
		return body["data"].(map[string]any)["taskId"].(string)
	}()

	// The generator: 4 writers and 1 reader, each pausing 2 ms between requests, until
	// stopped (the test bounds it to under a minute).
	const writers = 4
	type answer struct {
		key    string
		status int
		code   string
		at     time.Time
	}
	var (
		mu      sync.Mutex
		writes  []answer
		reads   []answer
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		hc      = &http.Client{Timeout: 15 * time.Second}
		refused = func(a answer) bool {
			return a.status == http.StatusServiceUnavailable && (a.code == "ledger_unavailable" || a.code == "authorization_unavailable")
		}
	)
	send := func(method, path, key string, body any) answer {
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, base+"/api/v1"+path, rd)
		req.Header.Set("Authorization", "Bearer "+tenant.Key)
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		a := answer{key: key}
		res, err := hc.Do(req)
		a.at = time.Now()
		if err != nil {
			t.Errorf("%s %s: the process answers while PostgreSQL is down, but: %v", method, path, err)
			return a
		}
		defer res.Body.Close()
		var env struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		raw, _ := io.ReadAll(res.Body)
		json.Unmarshal(raw, &env) //nolint:errcheck // a 2xx has no error member
		a.status, a.code = res.StatusCode, env.Error.Code
		return a
	}
	for w := range writers {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
				}
				key := fmt.Sprintf("pgcrash-%d-%d", w, n)
				a := send("POST", "/work", key, map[string]any{"title": "written around the crash " + key})
				mu.Lock()
				writes = append(writes, a)
				mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			a := send("GET", "/work/"+readID, "", nil)
			mu.Lock()
			reads = append(reads, a)
			mu.Unlock()
		}
	})
	readyz := func() int {
		res, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}

	// The schedule of the fault, on purpose: a second of load, the crash, 500 ms for the
	// requests in flight to end (the analysis below counts answers from down+500ms as
	// inside the outage), then PostgreSQL stays down 3 s in all.
	time.Sleep(time.Second)
	cluster.Crash()
	down := time.Now()
	time.Sleep(500 * time.Millisecond) // in-flight requests end
	if s := readyz(); s != http.StatusServiceUnavailable {
		t.Errorf("/readyz while PostgreSQL is down: %d", s)
	}
	time.Sleep(2500 * time.Millisecond)
	upFrom := time.Now()
	cluster.Start()
	t.Cleanup(func() {
		select {
		case <-stop:
		default:
			close(stop) // the test failed before it stopped the generator
			wg.Wait()
		}
	})
	storetest.WaitFor(t, 30*time.Second, "the same process to serve writes again", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(writes) > 0 && writes[len(writes)-1].status == http.StatusCreated && writes[len(writes)-1].at.After(upFrom)
	})
	recovered := time.Now()
	time.Sleep(500 * time.Millisecond) // load after the recovery too, on purpose
	close(stop)
	wg.Wait()
	if s := readyz(); s != http.StatusOK {
		t.Errorf("/readyz after PostgreSQL is back: %d", s)
	}

	// Every answer was a success or the outage's 503; strictly inside the outage, none
	// was a success.
	var acked, refusedWrites []answer
	var duringOK, during int
	for _, a := range append(append([]answer{}, writes...), reads...) {
		switch {
		case a.status >= 200 && a.status < 300:
		case refused(a):
		default:
			t.Errorf("answer %d %q (want 2xx, or 503 ledger_unavailable/authorization_unavailable)", a.status, a.code)
		}
		if a.at.After(down.Add(500*time.Millisecond)) && a.at.Before(upFrom) {
			during++
			if a.status < 300 {
				duringOK++
			}
		}
	}
	for _, a := range writes {
		if a.status == http.StatusCreated {
			acked = append(acked, a)
		} else if refused(a) {
			refusedWrites = append(refusedWrites, a)
		}
	}
	if duringOK > 0 || during == 0 || len(refusedWrites) == 0 {
		t.Fatalf("%d answers inside the outage, %d of them successes; %d writes refused", during, duringOK, len(refusedWrites))
	}

	// The refused writes again, with their keys: each makes its effect, or answers the one
	// the crash hid from its first answer.
	var committedHidden, madeNow int
	for _, a := range refusedWrites {
		status, body := c.call("POST", "/work", a.key, map[string]any{"title": "written around the crash " + a.key})
		switch {
		case status == http.StatusCreated:
			madeNow++
		case status == http.StatusOK && body["meta"].(map[string]any)["duplicate"] == true:
			committedHidden++
		default:
			t.Fatalf("resend %s: %d %v", a.key, status, body)
		}
	}

	// One work.created per key, for every acknowledged and every resent write.
	conn, err := pgx.Connect(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	events := map[string]int{}
	rows, err := conn.Query(ctx, `SELECT idempotency_key, count(*) FROM ledger_events
		WHERE workspace_id = $1 AND event_type = 'work.created' AND idempotency_key LIKE 'pgcrash-%' GROUP BY 1`, tenant.Principal.WorkspaceID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var key string
		var n int
		if err := rows.Scan(&key, &n); err != nil {
			t.Fatal(err)
		}
		events[key] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, a := range append(append([]answer{}, acked...), refusedWrites...) {
		if events[a.key] != 1 {
			t.Errorf("%s: %d work.created events", a.key, events[a.key])
		}
	}
	if want := len(acked) + len(refusedWrites) + 1; len(events) != want {
		t.Errorf("%d keys with a work.created event, want %d", len(events), want)
	}
	var tasks int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE workspace_id = $1`, tenant.Principal.WorkspaceID).Scan(&tasks); err != nil {
		t.Fatal(err)
	}
	if tasks != len(events) {
		t.Errorf("%d tasks for %d work.created events", tasks, len(events))
	}
	status, body := c.call("GET", "/events/verify", "", nil)
	if status != http.StatusOK || body["data"].(map[string]any)["verified"] != true {
		t.Fatalf("verify: %d %v", status, body)
	}
	t.Logf("writes: %d acknowledged, %d refused with 503 (of which %d had committed before the crash hid the answer, %d made on resend); "+
		"reads: %d; answers inside the outage: %d, all 503; served again %.1fs after PostgreSQL was started, without a restart",
		len(acked), len(refusedWrites), committedHidden, madeNow, len(reads), during, recovered.Sub(upFrom).Seconds())
}

// startServeWithDatabase runs the `serve` app in-process against the given database (not
// the package's) and returns its base URL.
func startServeWithDatabase(t *testing.T, serviceURL, ownerURL, queue string) string {
	t.Helper()
	return startApp(t, serveOptions, func(cfg *Config) {
		cfg.DatabaseURL, cfg.MigrationDatabaseURL, cfg.TaskQueue = serviceURL, ownerURL, queue
	}).SiteURL
}
