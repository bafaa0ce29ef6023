package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valyala/fasthttp"

	"github.com/accountablework/accountable/projection"
	"github.com/accountablework/accountable/store"
)

// The lines of the account-free operations (workload diagnosis, receipt validation) and of
// the work-ledger projection. The account-free operations are measured against a bare
// Fiber handler that decodes the same JSON body and encodes it back (the least any JSON
// endpoint on this stack does); the projection against a bare Fiber + pgx handler sending
// the same aggregate query and encoding its buckets.

// doctorFixture is the workload the diagnosis line posts (three systems, six actions;
// package workload's BenchmarkDiagnose diagnoses it too).
const doctorFixture = "workload/testdata/release-notes-agent.json"

// receiptFixture is the receipt the validation line posts: the shared Codex fixture.
const receiptFixture = "testdata/agent-work-receipt/fixtures/codex.json"

func (b *bench) accountFreeLines() error {
	if b.s.Lines["doctor"] {
		body, err := os.ReadFile(doctorFixture)
		if err != nil {
			return fmt.Errorf("doctor: %w", err)
		}
		if err := b.postLine("doctor", "POST /doctor/workload", "/api/v1/doctor/workload", body); err != nil {
			return fmt.Errorf("doctor: %w", err)
		}
	}
	if b.s.Lines["validate"] {
		body, err := os.ReadFile(receiptFixture)
		if err != nil {
			return fmt.Errorf("validate: %w", err)
		}
		if err := b.postLine("validate", "POST /agent-work-receipts/validate", "/api/v1/agent-work-receipts/validate", body); err != nil {
			return fmt.Errorf("validate: %w", err)
		}
	}
	return nil
}

// postLine measures an account-free POST of body against the echo handler, at the read
// lines' client counts. The service must answer 200 (a valid request).
func (b *bench) postLine(id, name, path string, body []byte) error {
	for _, c := range b.s.ReadClients {
		l := &line{ID: id, Name: name, Clients: c, Unit: "req/s", Latency: "request",
			LimitName: "bare Fiber: decode the same JSON body, encode it back"}
		b.lines = append(b.lines, l)
		logf("%s at %d clients, beside a JSON echo", name, c)
		err := b.measure(l, func() (sample, error) {
			s := runLoad(b.ctx, b.svcAddr, c, b.s.Warmup, b.s.Duration, postJSON("http://"+b.svcAddr+path, body))
			return s, sampleErr(s)
		}, func() (sample, error) {
			s := runLoad(b.ctx, b.baseAddr, c, b.s.Warmup, b.s.Duration, postJSON("http://"+b.baseAddr+"/echo", body))
			return s, sampleErr(s)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func postJSON(uri string, body []byte) workload {
	return workload{
		prepare: func(_ int, req *fasthttp.Request) bool {
			req.Header.SetMethod(fasthttp.MethodPost)
			req.SetRequestURI(uri)
			req.Header.SetContentType("application/json")
			req.SetBodyRaw(body)
			return true
		},
		ok: func(status int) bool { return status == fasthttp.StatusOK },
	}
}

// sampleErr fails a line whose requests failed (a wrong body would measure error paths).
func sampleErr(s sample) error {
	if s.Errors > 0 {
		return fmt.Errorf("%d requests failed (first: %s)", s.Errors, s.FirstErr)
	}
	return nil
}

// --- GET /projections/work-ledger over ProjectionEvents events ---------------------------

func (b *bench) projectionLine() error {
	var have int
	if err := b.db.QueryRow(b.ctx, `SELECT count(*) FROM ledger_events WHERE workspace_id = $1 AND event_type = 'decision.proposed'`,
		b.projection.WorkspaceID).Scan(&have); err != nil {
		return err
	}
	if missing := b.s.ProjectionEvents - have; missing > 0 {
		if err := b.seedPosts("decisions (the projection workspace)", b.projection, "/decisions", missing, false, func(i int) []byte {
			return fmt.Appendf(nil, `{"title":"Approve budget %d","shape":"budget_approval","urgency":"standard"}`, i)
		}); err != nil {
			return err
		}
	}
	if err := b.analyze(); err != nil {
		return err
	}
	l := &line{ID: "projection", Name: fmt.Sprintf("GET /projections/work-ledger over %d events", b.s.ProjectionEvents), Clients: 1,
		Unit: "req/s", Latency: "request", LimitName: "bare Fiber + pgx: the same aggregate query, its buckets as JSON"}
	b.lines = append(b.lines, l)
	logf("the work-ledger projection over %d events, beside its query on a bare server", b.s.ProjectionEvents)
	want := b.s.ProjectionEvents
	check := func(body []byte) error {
		if n := lastInt(body, "decisions_proposed"); n != want {
			return fmt.Errorf("the projection counted %d decisions, not %d: %s", n, want, truncate(string(body), 300))
		}
		return nil
	}
	return b.measure(l, func() (sample, error) {
		return b.projectionRun(b.svcAddr, "/api/v1/projections/work-ledger", fasthttp.HeaderAuthorization, "Bearer "+b.projection.Key, check)
	}, func() (sample, error) {
		return b.projectionRun(b.baseAddr, "/projections/work-ledger", "X-Workspace-Id", b.projection.WorkspaceID, check)
	})
}

func (b *bench) projectionRun(addr, path, header, value string, check func([]byte) error) (sample, error) {
	var bad error
	uri := "http://" + addr + path
	s := runLoad(b.ctx, addr, 1, b.s.Warmup, b.s.Duration, workload{
		prepare: func(_ int, req *fasthttp.Request) bool {
			req.SetRequestURI(uri)
			req.Header.Set(header, value)
			return true
		},
		ok: func(status int) bool { return status == fasthttp.StatusOK },
		onResponse: func(_ int, body []byte) {
			if err := check(body); err != nil && bad == nil {
				bad = err
			}
		},
	})
	if bad != nil {
		return s, bad
	}
	return s, sampleErr(s)
}

// baselineRoutes adds the echo and projection handlers to the baseline server.
func baselineRoutes(app *fiber.App, pool *pgxpool.Pool) {
	app.Post("/echo", func(c *fiber.Ctx) error {
		var v any
		if err := json.Unmarshal(c.Body(), &v); err != nil {
			return c.Status(fiber.StatusBadRequest).JSON(fiber.Map{"error": err.Error()})
		}
		return c.JSON(v)
	})
	app.Get("/projections/work-ledger", func(c *fiber.Ctx) error {
		ws := c.Get("X-Workspace-Id")
		w, err := projection.WorkLedgerQuery{Now: time.Now()}.Window()
		if err != nil {
			return err
		}
		p := projection.NewWorkLedger(w)
		rows, err := pool.Query(c.UserContext(), store.WorkLedgerSQL, ws, w.Bounds, store.WorkLedgerCountedTypes, w.Bounds[0], w.Bounds[len(w.Bounds)-1])
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				bucket    int
				eventType string
				n, cost   int64
				latest    time.Time
			)
			if err := rows.Scan(&bucket, &eventType, &n, &cost, &latest); err != nil {
				return err
			}
			if bucket >= 1 && bucket <= len(p.Buckets) {
				projection.Count(&p.Buckets[bucket-1].WorkLedgerCounts, eventType, n, cost)
				projection.Count(&p.Totals, eventType, n, cost)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return c.JSON(baseEnvelope{Data: p, Meta: baseMeta{APIVersion: "1", WorkspaceID: ws}})
	})
}
