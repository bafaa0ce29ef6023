package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// The lines of the report. Each measures the service and its limit in turn, BENCH_RUNS
// times, each run bounded (BENCH_WARMUP + BENCH_DURATION, and the work items it was given).

const seedClients = 8 // client count of unmeasured seeding through the API

func (b *bench) window() time.Duration { return b.s.Warmup + b.s.Duration }

// --- POST /work ------------------------------------------------------------------------

func (b *bench) createLine() error {
	for _, c := range b.s.CreateClients {
		l := &line{ID: "create", Name: "POST /work", Clients: c, Unit: "req/s", Latency: "request / transaction",
			LimitName: "pgbench: the same row writes, one transaction, prepared"}
		b.lines = append(b.lines, l)
		logf("POST /work at %d clients", c)
		err := b.measure(l, func() (sample, error) {
			s := runLoad(b.ctx, b.svcAddr, c, b.s.Warmup, b.s.Duration, b.createWork(b.main.Key, b.nextTag("create"), 0, b.addToPool))
			b.noteRate("svc-create", s.Rate)
			if !b.haveTmpl.created {
				if err := b.captureCreated(); err != nil {
					return s, err
				}
			}
			return s, nil
		}, func() (sample, error) { return b.pgbenchCreate(c, "create-writes", createWritesScript()) },
			func() (sample, error) { return b.pgbenchCreate(c, "create", createScript()) })
		if err != nil {
			return err
		}
	}
	return nil
}

// createWork is POST /work with a realistic body and a fresh Idempotency-Key per request;
// capture receives the id and version token of every created task. limit > 0 bounds the
// count.
func (b *bench) createWork(key, tag string, limit int, capture func(id, token string)) workload {
	uri := "http://" + b.svcAddr + "/api/v1/work"
	auth := "Bearer " + key
	w := workload{
		prepare: func(i int, req *fasthttp.Request) bool {
			if limit > 0 && i >= limit {
				return false
			}
			req.Header.SetMethod(fasthttp.MethodPost)
			req.SetRequestURI(uri)
			req.Header.Set(fasthttp.HeaderAuthorization, auth)
			req.Header.SetContentType("application/json")
			req.Header.Set("Idempotency-Key", tag+"-"+strconv.Itoa(i))
			req.SetBodyRaw(fmt.Appendf(nil, `{"title":"Prepare the quarterly report %s-%d","description":"Collect the figures, check them against the ledger and write the summary for the board.","priority":"high","metadata":{"source":"bench","batch":%q}}`, tag, i, tag))
			return true
		},
		ok: func(status int) bool { return status == fasthttp.StatusCreated },
	}
	if capture != nil {
		w.onResponse = func(_ int, body []byte) {
			capture(jsonString(body, "taskId"), jsonString(body, "version_token"))
		}
	}
	return w
}

func (b *bench) pgbenchCreate(c int, name, script string) (sample, error) {
	base := b.pgbCreateBase
	res, err := b.pgb.run(b.ctx, name, script, c, base, b.s.Warmup, b.s.Duration, nil)
	b.pgbCreateBase = base + int64(c*(res.PerClient+1))
	b.pgbCreated += res.Processed
	b.rememberCommand(name, res)
	if err != nil {
		return res.sample, err
	}
	b.noteRate("pgb-total", float64(res.Processed)/b.window().Seconds())
	n, err := b.countTasks(pgbCreateTask, "")
	if err != nil {
		return res.sample, err
	}
	if n != b.pgbCreated {
		return res.sample, fmt.Errorf("pgbench reported %d create transactions but %d of its tasks exist", b.pgbCreated, n)
	}
	return res.sample, nil
}

// --- POST /work/{id}/complete ----------------------------------------------------------

func (b *bench) completeLine() error {
	for _, c := range b.s.CompleteClients {
		l := &line{ID: "complete", Name: "POST /work/{id}/complete", Clients: c, Unit: "req/s", Latency: "request / transaction",
			LimitName: "pgbench: the same row writes, one transaction, prepared"}
		b.lines = append(b.lines, l)
		logf("POST /work/{id}/complete at %d clients", c)
		if err := b.ensureServicePool(b.runsNeed(b.serviceRateEstimate(), b.s.Runs)); err != nil {
			return err
		}
		// Both pgbench scripts (the limit and the mirror) complete seeded tasks.
		if err := b.ensurePgbenchPool(b.runsNeed(b.pgbenchRateEstimate(), 2*b.s.Runs)); err != nil {
			return err
		}
		err := b.measure(l, func() (sample, error) {
			mem := b.svc.sampleMemory()
			s := b.serviceComplete(c)
			row := b.memRowFor(fmt.Sprintf("POST /work/{id}/complete @%d", c))
			row.Runs = append(row.Runs, mem.stop())
			if s.Exhausted {
				l.Notes = append(l.Notes, fmt.Sprintf("a service run ran out of seeded work items after %.1f s", s.Window.Seconds()))
			}
			if !b.haveTmpl.completed {
				if err := b.captureCompleted(); err != nil {
					return s, err
				}
			}
			return s, nil
		}, func() (sample, error) { return b.pgbenchComplete(c, l, "complete-writes", completeWritesScript()) },
			func() (sample, error) { return b.pgbenchComplete(c, l, "complete", completeScript()) })
		if err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) serviceComplete(c int) sample {
	items := b.pool[b.poolNext:]
	s := runLoad(b.ctx, b.svcAddr, c, b.s.Warmup, b.s.Duration, b.completeWork(items, b.nextTag("complete")))
	b.poolNext += min(s.Issued, len(items))
	b.noteRate("svc-complete", s.Rate)
	return s
}

// completeWork completes items in order, each with its own version token and key.
func (b *bench) completeWork(items []poolTask, tag string) workload {
	return b.completeTasks(b.svcAddr, b.main.Key, len(items), func(i int) poolTask { return items[i] }, tag)
}

// completeTasks completes n tasks of key's workspace in order at the service at addr, task
// i being item(i), each with its own version token and Idempotency-Key.
func (b *bench) completeTasks(addr, key string, n int, item func(i int) poolTask, tag string) workload {
	prefix := "http://" + addr + "/api/v1/work/"
	auth := "Bearer " + key
	return workload{
		prepare: func(i int, req *fasthttp.Request) bool {
			if i >= n {
				return false
			}
			t := item(i)
			req.Header.SetMethod(fasthttp.MethodPost)
			req.SetRequestURI(prefix + t.id + "/complete")
			req.Header.Set(fasthttp.HeaderAuthorization, auth)
			req.Header.SetContentType("application/json")
			req.Header.Set("Idempotency-Key", tag+"-"+strconv.Itoa(i))
			req.SetBodyRaw(fmt.Appendf(nil, `{"version_token":%q,"summary":"Shipped the quarterly report; the figures were checked against the ledger.","measured_duration_hours":1.5,"cost_cents":1200,"evidence":{"links":["https://example.com/pr/1234","https://example.com/reports/q3.pdf"],"notes":"Reviewed by finance."}}`, t.token))
			return true
		},
		ok: func(status int) bool { return status == fasthttp.StatusOK },
	}
}

func (b *bench) pgbenchComplete(c int, l *line, name, script string) (sample, error) {
	for attempt := 1; ; attempt++ {
		base := b.pgbPoolNext
		res, err := b.pgb.run(b.ctx, name, script, c, base, b.s.Warmup, b.s.Duration, nil)
		b.pgbPoolNext = base + int64(c*(res.PerClient+1))
		b.pgbComplete += res.Processed
		b.rememberCommand(name, res)
		if err != nil {
			if attempt == 1 && b.pgbPoolNext >= b.pgbPoolEnd && b.ctx.Err() == nil {
				// It ran out of seeded tasks: seed more and run again.
				logf("  pgbench ran out of seeded tasks (%d); seeding more and running again", b.pgbPoolEnd)
				l.Notes = append(l.Notes, "a pgbench run ran out of seeded tasks and was run again")
				if err := b.ensurePgbenchPool(2 * max(res.Processed, 1000)); err != nil {
					return sample{}, err
				}
				b.prepareRun()
				continue
			}
			return res.sample, err
		}
		b.noteRate("pgb-total", float64(res.Processed)/b.window().Seconds())
		n, err := b.countTasks(pgbPoolTask, "completed")
		if err != nil {
			return res.sample, err
		}
		if n != b.pgbComplete {
			return res.sample, fmt.Errorf("pgbench reported %d complete transactions but completed %d tasks: its UPDATE did not match", b.pgbComplete, n)
		}
		return res.sample, nil
	}
}

// --- GET /work/{id} --------------------------------------------------------------------

func (b *bench) readLine() error {
	ids, err := b.readTaskIDs()
	if err != nil {
		return err
	}
	for _, c := range b.s.ReadClients {
		l := &line{ID: "read", Name: "GET /work/{id}", Clients: c, Unit: "req/s", Latency: "request",
			LimitName: "bare Fiber + pgx: the same primary-key SELECT, similar JSON"}
		b.lines = append(b.lines, l)
		logf("%s at %d clients", l.Name, c)
		err := b.measure(l, func() (sample, error) {
			return runLoad(b.ctx, b.svcAddr, c, b.s.Warmup, b.s.Duration,
				readWork("http://"+b.svcAddr+"/api/v1/work/", fasthttp.HeaderAuthorization, "Bearer "+b.main.Key, ids)), nil
		}, func() (sample, error) { return b.bareRead(c, ids), nil })
		if err != nil {
			return err
		}
	}
	return nil
}

// bareRead is the read line's limit: the bare Fiber + pgx read of the same rows.
func (b *bench) bareRead(clients int, ids []string) sample {
	return runLoad(b.ctx, b.baseAddr, clients, b.s.Warmup, b.s.Duration,
		readWork("http://"+b.baseAddr+"/work/", "X-Workspace-Id", b.main.WorkspaceID, ids))
}

// readTaskIDs are the 1000 tasks the read lines read.
func (b *bench) readTaskIDs() ([]string, error) {
	if len(b.pool) < 1000 {
		if err := b.ensureServicePool(1000); err != nil {
			return nil, err
		}
	}
	return b.poolIDs(), nil
}

// poolIDs are the ids of the first 1000 tasks of the pool (all, when it has fewer).
func (b *bench) poolIDs() []string {
	ids := make([]string, 0, 1000)
	for _, t := range b.pool[:min(1000, len(b.pool))] {
		ids = append(ids, t.id)
	}
	return ids
}

// --- MCP: tools/call get_work ---------------------------------------------------------

// mcpLine reads the same tasks as the read line, through the MCP endpoint: a JSON-RPC
// tools/call of get_work, which the service decodes, dispatches in-process to GET
// /work/{taskId} and wraps in a tool result (structured content and its text). The limit
// is the bare MCP Go SDK server's get_work (baselineMCP): what the SDK costs before the
// service does its own work. The mirror, a stricter reference, is the read line's limit:
// the bare Fiber + pgx REST read of the same row, which speaks no MCP.
func (b *bench) mcpLine() error {
	ids, err := b.readTaskIDs()
	if err != nil {
		return err
	}
	for _, c := range b.s.ReadClients {
		l := &line{ID: "mcp", Name: "MCP tools/call get_work", Clients: c, Unit: "req/s", Latency: "request",
			LimitName: "bare MCP Go SDK server (stateless, JSON answers, Fiber's net/http adaptor): get_work with the same SELECT, its JSON as text and structured content"}
		b.lines = append(b.lines, l)
		logf("%s at %d clients", l.Name, c)
		call := func(addr, header, value string) func() (sample, error) {
			return func() (sample, error) {
				var toolErrors atomic.Int64
				s := runLoad(b.ctx, addr, c, b.s.Warmup, b.s.Duration, mcpGetWork("http://"+addr+"/mcp", header, value, ids, &toolErrors))
				if n := toolErrors.Load(); n > 0 {
					return s, fmt.Errorf("%d tool calls answered without a result or with a tool error", n)
				}
				return s, sampleErr(s)
			}
		}
		err := b.measure(l, call(b.svcAddr, fasthttp.HeaderAuthorization, "Bearer "+b.main.Key),
			call(b.baseAddr, "X-Workspace-Id", b.main.WorkspaceID),
			func() (sample, error) { return b.bareRead(c, ids), nil })
		if err != nil {
			return err
		}
	}
	return nil
}

// mcpGetWork is a stateless MCP client's tools/call of get_work, its credential in the
// header; answers without a result, or with a tool error, are counted in toolErrors.
func mcpGetWork(uri, header, value string, ids []string, toolErrors *atomic.Int64) workload {
	return workload{
		prepare: func(i int, req *fasthttp.Request) bool {
			req.Header.SetMethod(fasthttp.MethodPost)
			req.SetRequestURI(uri)
			req.Header.Set(header, value)
			req.Header.SetContentType("application/json")
			req.Header.Set(fasthttp.HeaderAccept, "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			req.SetBodyRaw(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_work","arguments":{"taskId":%q}}}`,
				i, ids[i%len(ids)]))
			return true
		},
		ok: func(status int) bool { return status == fasthttp.StatusOK },
		onResponse: func(_ int, body []byte) {
			if !bytes.Contains(body, []byte(`"structuredContent"`)) || bytes.Contains(body, []byte(`"isError":true`)) {
				toolErrors.Add(1)
			}
		},
	}
}

func readWork(prefix, header, value string, ids []string) workload {
	return workload{
		prepare: func(i int, req *fasthttp.Request) bool {
			req.SetRequestURI(prefix + ids[i%len(ids)])
			req.Header.Set(header, value)
			return true
		},
		ok: func(status int) bool { return status == fasthttp.StatusOK },
	}
}

// --- paging the event stream -----------------------------------------------------------

func (b *bench) pagingLine() error {
	var have int
	if err := b.db.QueryRow(b.ctx, `SELECT count(*) FROM ledger_events WHERE workspace_id = $1`, b.paging.WorkspaceID).Scan(&have); err != nil {
		return err
	}
	if missing := b.s.PagingEvents - have; missing > 0 {
		logf("seeding %d work.created events in the paging workspace through POST /work", missing)
		s := runLoad(b.ctx, b.svcAddr, seedClients, 0, 30*time.Minute, b.createWork(b.paging.Key, b.nextTag("page-seed"), missing, nil))
		if s.Errors > 0 || s.Count < missing {
			return fmt.Errorf("seeding the paging workspace: %d of %d created, %d errors (first: %s)", s.Count, missing, s.Errors, s.FirstErr)
		}
	}
	if err := b.analyze(); err != nil {
		return err
	}
	l := &line{ID: "paging", Name: fmt.Sprintf("GET /events/stream: %d events at limit=%d", b.s.PagingEvents, b.s.PageLimit),
		Clients: 1, Unit: "events/s", Latency: "page",
		LimitName: "bare Fiber + pgx: the same SQL page reads"}
	b.lines = append(b.lines, l)
	logf("paging %d events at limit %d", b.s.PagingEvents, b.s.PageLimit)
	return b.measure(l, func() (sample, error) {
		return b.pageRun(b.svcAddr, "/api/v1/events/stream", fasthttp.HeaderAuthorization, "Bearer "+b.paging.Key, b.s.PagingEvents, b.s.Warmup)
	}, func() (sample, error) {
		return b.pageRun(b.baseAddr, "/events/stream", "X-Workspace-Id", b.paging.WorkspaceID, b.s.PagingEvents, b.s.Warmup)
	})
}

// pageRun reads the stream from its start, following meta.nextCursor, until events events
// were read (one pass); passes repeat through warmup and then the window (at least one
// measured pass). The rate is events per second of the measured passes.
func (b *bench) pageRun(addr, path, header, value string, events int, warmup time.Duration) (sample, error) {
	hc := &fasthttp.HostClient{Addr: addr, MaxConns: 1, ReadTimeout: time.Minute, WriteTimeout: time.Minute,
		NoDefaultUserAgentHeader: true, DisablePathNormalizing: true}
	defer hc.CloseIdleConnections()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	base := "http://" + addr + path + "?limit=" + strconv.Itoa(b.s.PageLimit)
	var lat []time.Duration
	pass := func(record bool) (int, error) {
		cursor, read := "", 0
		for read < events {
			req.Reset()
			uri := base
			if cursor != "" {
				uri += "&cursor=" + cursor
			}
			req.SetRequestURI(uri)
			req.Header.Set(header, value)
			t0 := time.Now()
			err := hc.Do(req, resp)
			d := time.Since(t0)
			if err != nil {
				return read, err
			}
			if resp.StatusCode() != fasthttp.StatusOK {
				return read, fmt.Errorf("GET %s: %d %s", uri, resp.StatusCode(), truncate(string(resp.Body()), 300))
			}
			body := resp.Body()
			n, next := lastInt(body, "count"), lastString(body, "nextCursor")
			if n <= 0 || next == "" {
				return read, fmt.Errorf("the stream of %s ended after %d events", addr, read)
			}
			if record {
				lat = append(lat, d)
			}
			read += n
			cursor = next
		}
		return read, nil
	}
	warmEnd := time.Now().Add(warmup)
	for time.Now().Before(warmEnd) {
		if _, err := pass(false); err != nil {
			return sample{}, err
		}
	}
	start := time.Now()
	end := start.Add(b.s.Duration)
	total := 0
	for total == 0 || time.Now().Before(end) {
		if b.ctx.Err() != nil {
			return sample{}, b.ctx.Err()
		}
		n, err := pass(true)
		if err != nil {
			return sample{}, err
		}
		total += n
	}
	s := sample{Count: total, Window: time.Since(start)}
	s.Rate = float64(total) / s.Window.Seconds()
	s.P50, s.P99 = percentiles(lat)
	return s, nil
}

// --- the CPU profile -------------------------------------------------------------------

// profile runs complete-work once more at ProfileClients clients (not counted in the
// table) while the service's CPU profile is taken over the measured window.
func (b *bench) profile() error {
	c := b.s.ProfileClients
	if pl := b.s.ProfileLine; pl == "complete" || pl == "read" || pl == "mcp" {
		if err := b.ensureServicePool(b.runsNeed(b.serviceRateEstimate(), 1)); err != nil {
			return err
		}
	}
	path := filepath.Join(b.dir, fmt.Sprintf("cpu-%s-%d.pprof", b.s.ProfileLine, c))
	secs := int(math.Max(1, math.Round(b.s.Duration.Seconds())))
	done := make(chan error, 1)
	go func() {
		time.Sleep(b.s.Warmup)
		body, err := get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", b.s.PprofPort, secs))
		if err == nil {
			err = os.WriteFile(path, body, 0o644)
		}
		done <- err
	}()
	logf("profiling the service: %s at %d clients", b.s.ProfileLine, c)
	b.prepareRun()
	var s sample
	switch b.s.ProfileLine {
	case "create":
		s = runLoad(b.ctx, b.svcAddr, c, b.s.Warmup, b.s.Duration, b.createWork(b.main.Key, b.nextTag("profile"), 0, nil))
	case "read":
		ids := b.poolIDs()
		s = runLoad(b.ctx, b.svcAddr, c, b.s.Warmup, b.s.Duration,
			readWork("http://"+b.svcAddr+"/api/v1/work/", fasthttp.HeaderAuthorization, "Bearer "+b.main.Key, ids))
	case "mcp":
		ids := b.poolIDs()
		var toolErrors atomic.Int64
		s = runLoad(b.ctx, b.svcAddr, c, b.s.Warmup, b.s.Duration, mcpGetWork("http://"+b.svcAddr+"/mcp", fasthttp.HeaderAuthorization, "Bearer "+b.main.Key, ids, &toolErrors))
	case "doctor", "validate":
		path, fixture := "/api/v1/doctor/workload", doctorFixture
		if b.s.ProfileLine == "validate" {
			path, fixture = "/api/v1/agent-work-receipts/validate", receiptFixture
		}
		body, err := os.ReadFile(fixture)
		if err != nil {
			return err
		}
		s = runLoad(b.ctx, b.svcAddr, c, b.s.Warmup, b.s.Duration, postJSON("http://"+b.svcAddr+path, body))
	case "context":
		// The context line's full capsule, on the scope and workspace the line made (it
		// runs before the profile: BENCH_LINES must hold context).
		cl := b.ctxLine
		if cl == nil {
			return errors.New("BENCH_PROFILE_LINE=context: the context line did not run")
		}
		var err error
		s, err = b.contextFullRun(b.svcAddr, c, "/api/v1/context-pack", fasthttp.HeaderAuthorization, "Bearer "+b.context.Key,
			contextBody(b.context.WorkspaceID, cl.task, "full", ""), func([]byte) error { return nil })
		if err != nil {
			return err
		}
	default:
		s = b.serviceComplete(c)
	}
	if err := <-done; err != nil {
		return err
	}
	b.profileRun = &s
	var views []string
	for _, args := range [][]string{{"-top", "-nodecount=25"}, {"-top", "-cum", "-nodecount=45"}} {
		top, err := output(b.ctx, nil, "go", append(append([]string{"tool", "pprof"}, args...), b.accountable, path)...)
		if err != nil {
			return err
		}
		views = append(views, "$ go tool pprof "+strings.Join(args, " ")+" accountable "+filepath.Base(path)+"\n"+shortenShapes(top))
	}
	b.profileTop = strings.Join(views, "\n")
	logf("profile written to %s", path)
	return nil
}

var reShape = regexp.MustCompile(`\[go\.shape\.[^\n]*`)

// shortenShapes cuts the type arguments of generic functions (runOnce[go.shape.struct {
// …every field…}]) from pprof's lines.
func shortenShapes(s string) string { return reShape.ReplaceAllString(s, "[…]") }
