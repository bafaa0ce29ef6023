package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valyala/fasthttp"
)

// The floor line (issue 30): what a write costs on this stack before any of the service's
// own work. The baseline server's /floor/create is a bare Fiber handler that decodes the
// request's JSON (as the echo does) and sends the statements the service sends for a
// creation (the mirror script, store.CreateWork through runBlind) in one round trip on
// pgconn, prepared, every value a text parameter, as pgbench sends them: no
// authentication, validation, fingerprint, event building, canonical JSON, hashes, metrics
// or log line, and no pgx type encoding. It answers the response document the service
// stored. Against the same limit as POST /work (pgbench's row writes), its ratio is the
// most a service on Fiber and pgx could reach on this machine; the create line's ratio
// over it is what the service's own work costs.

// floorPlan is a script of the mirror, compiled for pgconn: its statements, each with the
// names of the variables its $n parameters take, in order.
type floorPlan struct {
	statements []floorStatement
	vars       map[string]string
	base       int64
}

type floorStatement struct {
	name, sql string
	params    []string // variable names; "k" is the request's counter
}

// floorVar is a pgbench variable in a statement: ":name", but not the second colon of a
// "::type" cast.
var floorVar = regexp.MustCompile(`(^|[^:]):([a-z_][a-z0-9_]*)`)

// compileFloorPlan turns a one-pipeline pgbench script (scriptHead, \startpipeline, the
// statements, \endpipeline) into statements with positional parameters.
func compileFloorPlan(script string) ([]floorStatement, error) {
	var body strings.Builder
	pipelines := 0
	for _, line := range strings.Split(script, "\n") {
		switch {
		case strings.HasPrefix(line, `\startpipeline`):
			pipelines++
		case strings.HasPrefix(line, `\`):
		default:
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	if pipelines != 1 {
		return nil, fmt.Errorf("floor: the script has %d pipelines, want one round trip", pipelines)
	}
	var out []floorStatement
	for i, text := range strings.Split(body.String(), ";\n") {
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		st := floorStatement{name: "floor_" + strconv.Itoa(i)}
		index := map[string]int{}
		st.sql = floorVar.ReplaceAllStringFunc(text, func(m string) string {
			sub := floorVar.FindStringSubmatch(m)
			n, ok := index[sub[2]]
			if !ok {
				st.params = append(st.params, sub[2])
				n = len(st.params)
				index[sub[2]] = n
			}
			return sub[1] + "$" + strconv.Itoa(n)
		})
		out = append(out, st)
	}
	return out, nil
}

// baselineFloorRoutes serves the floor: POST /floor/plan {script, vars, base, conns} sets
// the statements and values (and opens a pool that prepares them on each connection),
// POST /floor/create runs them once for the next counter value.
func baselineFloorRoutes(app *fiber.App, dbURL string) {
	var (
		mu   sync.Mutex
		plan *floorPlan
		pool *pgxpool.Pool
		next atomic.Int64
	)
	app.Post("/floor/plan", func(c *fiber.Ctx) error {
		var in struct {
			Script string            `json:"script"`
			Vars   map[string]string `json:"vars"`
			Base   int64             `json:"base"`
			Conns  int32             `json:"conns"`
		}
		if err := json.Unmarshal(c.Body(), &in); err != nil {
			return fiber.NewError(fiber.StatusBadRequest, err.Error())
		}
		statements, err := compileFloorPlan(in.Script)
		if err != nil {
			return fiber.NewError(fiber.StatusBadRequest, err.Error())
		}
		for _, st := range statements {
			for _, v := range st.params {
				if _, ok := in.Vars[v]; !ok && v != "k" {
					return fiber.NewError(fiber.StatusBadRequest, "floor: no value for :"+v)
				}
			}
		}
		pc, err := pgxpool.ParseConfig(dbURL)
		if err != nil {
			return err
		}
		pc.MaxConns = max(in.Conns, 1)
		pc.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
			for _, st := range statements {
				if _, err := conn.PgConn().Prepare(ctx, st.name, st.sql, nil); err != nil {
					return fmt.Errorf("floor: prepare %s: %w", st.sql, err)
				}
			}
			return nil
		}
		p, err := pgxpool.NewWithConfig(c.UserContext(), pc)
		if err != nil {
			return err
		}
		mu.Lock()
		old := pool
		plan, pool = &floorPlan{statements: statements, vars: in.Vars, base: in.Base}, p
		next.Store(0)
		mu.Unlock()
		if old != nil {
			old.Close()
		}
		return c.SendStatus(fiber.StatusNoContent)
	})
	app.Post("/floor/create", func(c *fiber.Ctx) error {
		mu.Lock()
		pl, p := plan, pool
		mu.Unlock()
		if pl == nil {
			return fiber.NewError(fiber.StatusConflict, "floor: no plan")
		}
		var body any // the request is decoded, as any JSON endpoint must
		if err := json.Unmarshal(c.Body(), &body); err != nil {
			return fiber.NewError(fiber.StatusBadRequest, err.Error())
		}
		k := []byte(strconv.FormatInt(pl.base+next.Add(1)-1, 10))
		conn, err := p.Acquire(c.UserContext())
		if err != nil {
			return err
		}
		defer conn.Release()
		batch := &pgconn.Batch{}
		for _, st := range pl.statements {
			values := make([][]byte, len(st.params))
			for i, v := range st.params {
				if v == "k" {
					values[i] = k
				} else {
					values[i] = []byte(pl.vars[v])
				}
			}
			batch.ExecPrepared(st.name, values, nil, nil)
		}
		if _, err := conn.Conn().PgConn().ExecBatch(c.UserContext(), batch).ReadAll(); err != nil {
			return err
		}
		c.Status(fiber.StatusCreated).Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.SendString(pl.vars["create_response"])
	})
}

// floorLine measures the floor of POST /work at each of the create line's client counts,
// against the create line's limit (pgbench's row writes).
func (b *bench) floorLine() error {
	if !b.haveTmpl.created { // the floor sends the values of a task the service created
		s := runLoad(b.ctx, b.svcAddr, 1, 0, 2*time.Second, b.createWork(b.main.Key, b.nextTag("floor-template"), 1, nil))
		if s.Errors > 0 {
			return fmt.Errorf("creating a task to take the floor's values from: %s", s.FirstErr)
		}
		if err := b.captureCreated(); err != nil {
			return err
		}
	}
	for _, c := range b.s.CreateClients {
		l := &line{ID: "floor", Name: "POST /work's statements from a bare Fiber + pgconn handler (the floor)", Clients: c,
			Unit: "req/s", Latency: "request / transaction", LimitName: "pgbench: the same row writes, one transaction, prepared"}
		b.lines = append(b.lines, l)
		logf("%s at %d clients", l.Name, c)
		err := b.measure(l, func() (sample, error) { return b.floorRun(c) },
			func() (sample, error) { return b.pgbenchCreate(c, "create-writes", createWritesScript()) })
		if err != nil {
			return err
		}
	}
	return nil
}

// floorRun plans the floor for the next stretch of pgbench's counters (the rows it writes
// are pgbench's, so the create line's checks count them) and runs it at c clients.
func (b *bench) floorRun(c int) (sample, error) {
	plan, err := json.Marshal(map[string]any{"script": createScript(), "vars": b.pgb.vars, "base": b.pgbCreateBase, "conns": c})
	if err != nil {
		return sample{}, err
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI("http://" + b.baseAddr + "/floor/plan")
	req.Header.SetContentType("application/json")
	req.SetBodyRaw(plan)
	if err := fasthttp.Do(req, resp); err != nil {
		return sample{}, err
	}
	if resp.StatusCode() != fasthttp.StatusNoContent {
		return sample{}, errors.New("floor plan: " + strconv.Itoa(resp.StatusCode()) + " " + string(resp.Body()))
	}
	body := []byte(`{"title":"Prepare the quarterly report floor","description":"Collect the figures, check them against the ledger and write the summary for the board.","priority":"high","metadata":{"source":"bench","batch":"floor"}}`)
	var created atomic.Int64
	w := postJSON("http://"+b.baseAddr+"/floor/create", body)
	w.ok = func(status int) bool { return status == fasthttp.StatusCreated }
	w.onResponse = func(int, []byte) { created.Add(1) }
	s := runLoad(b.ctx, b.baseAddr, c, b.s.Warmup, b.s.Duration, w)
	b.pgbCreateBase += int64(s.Issued) + 1
	// The floor's tasks are pgbench's (its ids and keys): the next pgbench run's check
	// counts them too, so a floor that wrote nothing cannot pass for fast.
	b.pgbCreated += int(created.Load())
	return s, nil
}
