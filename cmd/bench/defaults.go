package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// The defaults line (issue 30: the default configuration as fast as the tuned one): a
// second `accountable serve` started with no settings but where it listens, its database
// and the harness's task queue and ledger key (addresses and identities, not speed), beside
// the service the other lines measure, which the harness tunes (DATABASE_MAX_CONNS as many
// as the most clients, the rate limits off). Both complete work at BENCH_DEFAULTS_COMPLETE_
// CLIENTS (32) and read it at BENCH_DEFAULTS_READ_CLIENTS (8), their runs alternating; the
// ratio is the default's over the tuned one's, and the target is 0.9 (within 10%).
// BENCH_DEFAULTS_ENV adds settings to the default server (space-separated NAME=value), to
// measure a candidate default before it is made one.

// defaultsTarget is the ratio the default configuration must reach of the tuned one.
const defaultsTarget = 0.9

func (b *bench) defaultsLine() error {
	addr := "127.0.0.1:" + strconv.Itoa(b.s.DefaultsPort)
	env := append([]string{"HTTP_ADDR=" + addr, "DATABASE_URL=" + b.dbURL, "TEMPORAL_TASK_QUEUE=" + serviceTaskQueue}, b.ledgerEnv()...)
	extra := strings.Fields(b.s.DefaultsEnv)
	env = append(env, extra...)
	logf("starting accountable serve with the default configuration on %s (%s)", addr, strings.Join(append([]string{"no settings"}, extra...), ", "))
	svc, err := startProc("accountable serve (defaults)", filepath.Join(b.dir, "serve-defaults.log"), env, b.accountable, "serve")
	if err != nil {
		return err
	}
	defer svc.stop()
	if err := svc.waitReady("http://"+addr+"/readyz", 60*time.Second); err != nil {
		return err
	}
	limitName := fmt.Sprintf("the same service, tuned (DATABASE_MAX_CONNS=%d)", b.s.ServiceConns)
	configured := "default configuration"
	if len(extra) > 0 {
		configured += ", " + strings.Join(extra, " ")
	}

	c := b.s.DefaultsCompleteClients
	l := &line{ID: "defaults", Name: "POST /work/{id}/complete (" + configured + ")", Clients: c, Unit: "req/s", Latency: "request",
		LimitName: limitName, Target: defaultsTarget}
	b.lines = append(b.lines, l)
	logf("%s at %d clients", l.Name, c)
	if err := b.ensureServicePool(b.runsNeed(b.serviceRateEstimate(), 2*b.s.Runs)); err != nil {
		return err
	}
	complete := func(at string) func() (sample, error) {
		return func() (sample, error) {
			items := b.pool[b.poolNext:]
			s := runLoad(b.ctx, at, c, b.s.Warmup, b.s.Duration,
				b.completeTasks(at, b.main.Key, len(items), func(i int) poolTask { return items[i] }, b.nextTag("defaults")))
			b.poolNext += min(s.Issued, len(items))
			if s.Exhausted {
				l.Notes = append(l.Notes, fmt.Sprintf("a run ran out of seeded work items after %.1f s", s.Window.Seconds()))
			}
			return s, nil
		}
	}
	if err := b.measure(l, complete(addr), complete(b.svcAddr)); err != nil {
		return err
	}

	ids, err := b.readTaskIDs()
	if err != nil {
		return err
	}
	c = b.s.DefaultsReadClients
	l = &line{ID: "defaults", Name: "GET /work/{id} (" + configured + ")", Clients: c, Unit: "req/s", Latency: "request",
		LimitName: limitName, Target: defaultsTarget}
	b.lines = append(b.lines, l)
	logf("%s at %d clients", l.Name, c)
	read := func(at string) func() (sample, error) {
		return func() (sample, error) {
			return runLoad(b.ctx, at, c, b.s.Warmup, b.s.Duration,
				readWork("http://"+at+"/api/v1/work/", fasthttp.HeaderAuthorization, "Bearer "+b.main.Key, ids)), nil
		}
	}
	return b.measure(l, read(addr), read(b.svcAddr))
}
