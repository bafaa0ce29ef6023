package api_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/projection"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// projectionWorkspace fills a workspace with one of everything the projections count:
// two completed work items (3.5 h for 1,200 cents, and one without figures), a planning
// proposal (two workstreams), a launch whose two runs are finalized (800 + 300 cents), a
// decision proposed and approved, an artifact, an imported receipt (the shared Codex fixture:
// 0.08 USD), and three episodes of one process.
func projectionWorkspace(t *testing.T, e *env, key string) (processID string) {
	t.Helper()
	for i, extra := range []map[string]any{{"measured_duration_hours": 3.5, "cost_cents": 1200}, {}} {
		id := createWork(t, e, key, "Projected "+string(rune('A'+i)))
		body := completeBody(t, e, key, id)
		body["summary"] = "done"
		for k, v := range extra {
			body[k] = v
		}
		expect(t, e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id}, key: key, body: body}), http.StatusOK, "")
	}
	l := launchIt(t, e, key, launchable(t, e, key), 2000)
	l = waitLaunch(t, e, key, l["launch_id"].(string), "two runs", func(l map[string]any) bool { return len(runsOf(l)) == 2 })
	for i, cents := range []int{800, 300} {
		run := runsOf(l)[i].(map[string]any)["id"].(string)
		expect(t, finalize(e, key, run, map[string]any{"status": "succeeded", "outcome_kind": "shipped", "cost_cents": cents}), http.StatusOK, "")
	}
	d := e.do(request{method: "POST", path: "/decisions", key: key, body: map[string]any{"title": "Ship it", "shape": "budget_approval", "urgency": "standard"}})
	expect(t, d, http.StatusCreated, "")
	expect(t, e.do(request{method: "POST", path: "/decisions/{decisionId}/approve", key: key,
		params: map[string]string{"decisionId": d.data()["decision"].(map[string]any)["id"].(string)}, body: map[string]any{}}), http.StatusOK, "")
	expect(t, e.do(request{method: "POST", path: "/artifacts", key: key, headers: map[string]string{"Idempotency-Key": uniqueKey("a")},
		body: map[string]any{"entity_type": "project", "entity_id": "weekly", "name": "Weekly report", "artifact_type": "report",
			"external_url": "https://example.com/reports/weekly", "preview_markdown": "All green."}}), http.StatusCreated, "")
	receipt, err := os.ReadFile(filepath.Join("..", "testdata", "agent-work-receipt", "fixtures", "codex.json"))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, e.do(request{method: "POST", path: "/agent-work-receipts", key: key, body: wrapReceipt(receipt)}), http.StatusCreated, "")
	p := e.do(request{method: "POST", path: "/operating-processes", key: key, headers: map[string]string{"Idempotency-Key": uniqueKey("p")},
		body: map[string]any{"name": "Renewals", "purpose": "Keep customers.", "stages": []any{map[string]any{"key": "ask", "name": "Ask"}}}})
	expect(t, p, http.StatusCreated, "")
	processID = p.data()["process"].(map[string]any)["id"].(string)
	for _, ep := range []map[string]any{{"case_id": "a", "outcome": "succeeded"}, {"case_id": "a", "outcome": "failed"}, {"case_id": "b", "outcome": "succeeded"}} {
		ep["process_id"], ep["started_at"], ep["ended_at"] = processID, "2026-11-01T09:00:00Z", "2026-11-01T10:00:00Z"
		expect(t, e.do(request{method: "POST", path: "/episodes", key: key, body: ep}), http.StatusCreated, "")
	}
	return processID
}

// The four projections count what the workspace did, and nothing of another workspace.
func TestProjections(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	process := projectionWorkspace(t, e, key)

	wl := e.do(request{method: "GET", path: "/projections/work-ledger", key: key})
	expect(t, wl, http.StatusOK, "")
	totals := wl.data()["totals"].(map[string]any)
	want := map[string]float64{"receipts": 3, "completion_receipts": 2, "imported_receipts": 1, "runs_finalized": 2, "run_cost_cents": 1100,
		"decisions_proposed": 1, "decisions_resolved": 1, "artifacts": 1}
	for k, v := range want {
		if totals[k] != v {
			t.Fatalf("work-ledger totals %s = %v, want %v: %s", k, totals[k], v, wl.raw)
		}
	}
	buckets := wl.data()["buckets"].([]any)
	today := buckets[len(buckets)-1].(map[string]any)
	if len(buckets) != 30 || wl.data()["bucket"] != "day" || wl.data()["time_zone"] != "UTC" || today["receipts"] != 3.0 ||
		today["label"] != time.Now().UTC().Format("2006-01-02") || len(wl.data()["limitations"].([]any)) == 0 {
		t.Fatalf("work-ledger %s", wl.raw)
	}
	if f := wl.data()["freshness"].(map[string]any); f["mode"] != "computed_on_read" || f["events_considered"] != 8.0 || f["latest_event_at"] == nil {
		t.Fatalf("freshness %v", f)
	}

	// Weeks and months in a zone far from UTC: the counts land in the bucket of today there.
	kiritimati, _ := time.LoadLocation("Pacific/Kiritimati")
	for bucket, label := range map[string]string{"week": "", "month": time.Now().In(kiritimati).Format("2006-01")} {
		r := e.do(request{method: "GET", path: "/projections/work-ledger", key: key, query: "bucket=" + bucket + "&time_zone=Pacific/Kiritimati"})
		expect(t, r, http.StatusOK, "")
		bs := r.data()["buckets"].([]any)
		last := bs[len(bs)-1].(map[string]any)
		start, _ := time.Parse(time.RFC3339, last["start"].(string))
		if len(bs) != 12 || last["receipts"] != 3.0 || (label != "" && last["label"] != label) || (bucket == "week" && start.In(kiritimati).Weekday() != time.Monday) ||
			start.In(kiritimati).Hour() != 0 {
			t.Fatalf("%s buckets %s", bucket, r.raw)
		}
	}
	for _, q := range []string{"bucket=hour", "time_zone=Mars/Olympus", "time_zone=../../etc/passwd", "from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z",
		"from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z"} {
		expect(t, e.do(request{method: "GET", path: "/projections/work-ledger", key: key, query: q}), http.StatusBadRequest, accountable.ECodeValidationFailed)
	}
	// A window before any of it is empty, bucket by bucket.
	old := e.do(request{method: "GET", path: "/projections/work-ledger", key: key, query: "bucket=month&from=2020-01-01T00:00:00Z&to=2020-04-01T00:00:00Z"})
	expect(t, old, http.StatusOK, "")
	if bs := old.data()["buckets"].([]any); len(bs) != 3 || bs[0].(map[string]any)["label"] != "2020-01" || old.data()["totals"].(map[string]any)["receipts"] != 0.0 {
		t.Fatalf("old window %s", old.raw)
	}

	ad := e.do(request{method: "GET", path: "/projections/adoption", key: key})
	expect(t, ad, http.StatusOK, "")
	procs := ad.data()["processes"].([]any)
	if len(procs) != 1 {
		t.Fatalf("adoption %s", ad.raw)
	}
	a := procs[0].(map[string]any)
	if a["process_id"] != process || a["name"] != "Renewals" || a["episodes"] != 3.0 || a["cases"] != 2.0 || a["success_rate"] != 0.6667 ||
		a["outcomes"].(map[string]any)["failed"] != 1.0 || a["episodes_last_30_days"] != 3.0 || a["active_days"] != 1.0 {
		t.Fatalf("adoption %s", ad.raw)
	}

	vc := e.do(request{method: "GET", path: "/projections/value-case", key: key})
	expect(t, vc, http.StatusOK, "")
	v := vc.data()
	rec, runs, props := v["receipts"].(map[string]any), v["runs"].(map[string]any), v["proposals"].(map[string]any)
	rate := accountable.HumanHourlyRateRangeUSD
	hours := rec["measured_hours"].(float64) // 3.5 + the imported receipt's elapsed time
	if rec["count"] != 3.0 || rec["with_measured_duration"] != 2.0 || hours <= 3.5 || rec["cost_usd"] != 12.08 ||
		rec["human_equivalent_usd"].(map[string]any)["low"] != math.Round(hours*rate.Low*100)/100 || runs["count"] != 2.0 || runs["cost_usd"] != 11.0 ||
		props["count"] != 1.0 || props["expected_budget_usd"] != 15.0 || v["agent_cost_usd"] != math.Round((23.08+props["generation_cost_usd"].(float64))*100)/100 ||
		v["realised_value_usd"].(map[string]any)["high"] != math.Round((math.Round(hours*rate.High*100)/100-v["agent_cost_usd"].(float64))*100)/100 {
		t.Fatalf("value case %s", vc.raw)
	}

	mu := e.do(request{method: "GET", path: "/projections/meter-usage", key: key})
	expect(t, mu, http.StatusOK, "")
	gens := mu.data()["generations"].([]any)
	if mu.data()["billingReady"] != false || len(gens) != 1 || gens[0].(map[string]any)["generations"] != 1.0 ||
		mu.data()["runs"].(map[string]any)["cost_usd"] != 11.0 {
		t.Fatalf("meter usage %s", mu.raw)
	}
	// A period that ends before everything counts nothing.
	none := e.do(request{method: "GET", path: "/projections/meter-usage", key: key, query: "to=2020-01-01T00:00:00Z"})
	if len(none.data()["generations"].([]any)) != 0 || none.data()["runs"].(map[string]any)["count"] != 0.0 {
		t.Fatalf("meter usage before %s", none.raw)
	}
	expect(t, e.do(request{method: "GET", path: "/projections/value-case", key: key, query: "from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z"}),
		http.StatusBadRequest, accountable.ECodeValidationFailed)

	// The ledger's projection index covers exactly the event types the projections read.
	var def string
	if err := storetest.Conn(t).QueryRow(context.Background(), `SELECT indexdef FROM pg_indexes WHERE indexname = 'ledger_events_projection'`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	if strings.Count(def, "'::text") != len(projection.EventTypes) {
		t.Fatalf("index %s, types %v", def, projection.EventTypes)
	}
	for _, et := range projection.EventTypes {
		if !strings.Contains(def, "'"+et+"'") {
			t.Fatalf("index %s lacks %s", def, et)
		}
	}

	// Another workspace sees none of it.
	stranger := storetest.NewTenant(t, e.db)
	if s := e.do(request{method: "GET", path: "/projections/work-ledger", key: stranger.Key}); s.data()["totals"].(map[string]any)["receipts"] != 0.0 {
		t.Fatalf("stranger's work ledger %s", s.raw)
	}
	if s := e.do(request{method: "GET", path: "/projections/adoption", key: stranger.Key}); len(s.data()["processes"].([]any)) != 0 {
		t.Fatalf("stranger's adoption %s", s.raw)
	}
}

// A database holding nothing but the workspace's ledger events gives the very same
// figures: the projections are derived from the ledger alone.
func TestProjectionsRebuildFromLedger(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	projectionWorkspace(t, e, key)
	ws := tenant.Principal.WorkspaceID

	ownerURL, serviceURL := storetest.NewDatabase(t)
	if err := store.Migrate(context.Background(), store.MigrateConfig{OwnerURL: ownerURL, ServiceURL: serviceURL}); err != nil {
		t.Fatal(err)
	}
	copyLedger(t, storetest.OwnerURL(t), ownerURL, ws)
	rebuilt, err := store.Open(context.Background(), store.Config{URL: serviceURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rebuilt.Close)

	ctx := context.Background()
	window, err := projection.WorkLedgerQuery{Bucket: accountable.BucketWeek, TimeZone: "America/New_York", Now: time.Now()}.Window()
	if err != nil {
		t.Fatal(err)
	}
	read := func(db *store.DB) map[string]string {
		out := map[string]string{}
		put := func(name string, v any, err error) {
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			b, _ := json.Marshal(v)
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			f := m["freshness"].(map[string]any)
			delete(f, "computed_at") // the time of the read
			b, _ = json.Marshal(m)
			out[name] = string(b)
		}
		wl, err := db.WorkLedger(ctx, ws, window)
		put("work-ledger", wl, err)
		ad, err := db.Adoption(ctx, ws, accountable.ProjectionPeriod{})
		put("adoption", ad, err)
		vc, err := db.ValueCase(ctx, ws, accountable.ProjectionPeriod{})
		put("value-case", vc, err)
		mu, err := db.MeterUsage(ctx, ws, accountable.ProjectionPeriod{})
		put("meter-usage", mu, err)
		return out
	}
	live, again := read(e.db), read(rebuilt)
	for name, figures := range live {
		if again[name] != figures {
			t.Errorf("%s rebuilt from the ledger differs:\n live    %s\n rebuilt %s", name, figures, again[name])
		}
	}
	if live["work-ledger"] == "" || !json.Valid([]byte(live["adoption"])) {
		t.Fatal("no figures")
	}
}

// copyLedger copies the workspace's ledger events, and nothing else, from one database
// into another.
func copyLedger(t *testing.T, fromURL, toURL, workspaceID string) {
	t.Helper()
	ctx := context.Background()
	from, err := pgx.Connect(ctx, fromURL)
	if err != nil {
		t.Fatal(err)
	}
	defer from.Close(ctx)
	to, err := pgx.Connect(ctx, toURL)
	if err != nil {
		t.Fatal(err)
	}
	defer to.Close(ctx)
	cols := []string{"workspace_id", "id", "stream_position", "aggregate_type", "aggregate_id", "aggregate_version", "event_type", "schema_version",
		"actor_type", "actor_id", "payload", "payload_digest", "occurred_at", "recorded_at", "idempotency_key", "causation_id",
		"correlation_id", "previous_hash", "event_hash"}
	rows, err := from.Query(ctx, `SELECT workspace_id, id, stream_position, aggregate_type, aggregate_id, aggregate_version, event_type,
		schema_version, actor_type, actor_id, payload, payload_digest, occurred_at, recorded_at, idempotency_key, causation_id,
		correlation_id, previous_hash, event_hash FROM ledger_events WHERE workspace_id = $1 ORDER BY stream_position, seq`, workspaceID)
	if err != nil {
		t.Fatal(err)
	}
	var batch [][]any
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, vals)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	for _, v := range batch {
		if _, err := to.Exec(ctx, `INSERT INTO ledger_events (workspace_id, id, stream_position, aggregate_type, aggregate_id, aggregate_version,
			event_type, schema_version, actor_type, actor_id, payload, payload_digest, occurred_at, recorded_at, idempotency_key,
			causation_id, correlation_id, previous_hash, event_hash)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`, v...); err != nil {
			t.Fatalf("copy %v: %v", cols, err)
		}
	}
	var others int
	if err := to.QueryRow(ctx, `SELECT count(*) FROM tasks`).Scan(&others); err != nil || others != 0 || len(batch) < 10 {
		t.Fatalf("the rebuilt database holds %d tasks and %d events (%v)", others, len(batch), err)
	}
}
