package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/accountablework/accountable/store/storetest"
)

// startServe runs the `serve` app (API and relay, no worker) in-process on its own task
// queue.
func startServe(t *testing.T, queue string) Config {
	t.Helper()
	return startApp(t, serveOptions, func(cfg *Config) { cfg.TaskQueue = queue })
}

// startApp runs an app (serveOptions, devOptions) in-process against the package's
// database, on a free loopback address, logging at info into the kept logs (the secrets
// check of the suite's logs), after configure adjusts its configuration. It stops when the
// test ends.
func startApp(t *testing.T, options func(Config) fx.Option, configure func(*Config)) Config {
	t.Helper()
	t.Setenv("DATABASE_URL", storetest.URL(t))
	t.Setenv("MIGRATION_DATABASE_URL", storetest.OwnerURL(t))
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.HTTPAddr = freeAddr(t)
	cfg.SiteURL = "http://" + cfg.HTTPAddr
	cfg.LogLevel = slog.LevelInfo
	cfg.LogOutput = storetest.LogFile(t, "service")
	configure(&cfg)
	app := fx.New(options(cfg), fx.NopLogger)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := app.Stop(ctx); err != nil {
			// Which hook held the stop up is in the goroutines still running.
			var stacks strings.Builder
			pprof.Lookup("goroutine").WriteTo(&stacks, 2) //nolint:errcheck // a strings.Builder
			t.Errorf("stop: %v; goroutines:\n%s", err, stacks.String())
		}
	})
	return cfg
}

// process is a subcommand of the accountable binary running as its own process, killed
// (if still running) when the test ends; exited closes when it has ended.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// startProcess runs `bin sub` with this process's environment plus env, its output in the
// kept logs (the secrets check of the suite's logs).
func startProcess(t *testing.T, bin, sub string, env ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, sub)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = storetest.LogFile(t, sub)
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait() //nolint:errcheck // killed, or ended by the cleanup
		close(p.exited)
	}()
	t.Cleanup(p.kill)
	return p
}

// kill ends the process as a crash would (SIGKILL) and waits until it has ended.
func (p *process) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL) //nolint:errcheck // it may be dead already
	<-p.exited
}

// startWorkerProcess runs `accountable worker` as its own process on queue, with env added
// (another TEMPORAL_ADDRESS, say).
func startWorkerProcess(t *testing.T, bin, queue string, env ...string) *process {
	t.Helper()
	return startProcess(t, bin, "worker", append([]string{"DATABASE_URL=" + storetest.URL(t), "TEMPORAL_TASK_QUEUE=" + queue, "LOG_LEVEL=info"}, env...)...)
}

var (
	binaryDir  string // made and removed by TestMain
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// buildBinary builds the accountable binary once for the package's tests.
func buildBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		binaryPath = filepath.Join(binaryDir, "accountable")
		if out, err := exec.Command("go", "build", "-o", binaryPath, ".").CombinedOutput(); err != nil {
			binaryErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// Two worker processes serve a launch; one is killed (SIGKILL) while the launch runs. The
// other carries it on: every reservation is made and settled exactly once, the totals are
// exact, and the ledger verifies.
func TestLaunchSurvivesAKilledWorker(t *testing.T) {
	requireTemporal(t)
	bin := buildBinary(t)
	queue := fmt.Sprintf("e2e-kill-%d", time.Now().UnixNano())
	cfg := startServe(t, queue)
	first := startWorkerProcess(t, bin, queue)
	startWorkerProcess(t, bin, queue)
	db := storetest.Open(t)
	tenant := storetest.NewTenant(t, db)
	c := apiClient{t: t, base: cfg.SiteURL, key: tenant.Key}

	lanes := []any{}
	for i, usd := range []float64{4, 3, 2} {
		lanes = append(lanes, map[string]any{"name": fmt.Sprintf("Lane %d", i), "expected_budget_usd": usd})
	}
	status, body := c.call("POST", "/initiatives/proposals", "kill-plan", map[string]any{"title": "Survive a crash", "depth": "workstreams",
		"generation": map[string]any{"max_workstreams": 3}, "workstreams": lanes})
	if status != http.StatusCreated {
		t.Fatalf("propose: %d %v", status, body)
	}
	p := body["data"].(map[string]any)
	status, body = c.call("POST", "/initiatives", "kill-commit", map[string]any{"proposal_id": p["proposal_id"], "proposal_digest": p["proposal_digest"]})
	if status != http.StatusCreated {
		t.Fatalf("commit: %d %v", status, body)
	}
	initiative := body["data"].(map[string]any)["initiative"].(map[string]any)["id"].(string)
	status, body = c.call("POST", "/initiatives/"+initiative+"/launch", "kill-launch", map[string]any{"cost_ceiling_cents": 100000})
	if status != http.StatusAccepted {
		t.Fatalf("launch: %d %v", status, body)
	}
	launch := body["data"].(map[string]any)["launch_id"].(string)
	read := func() map[string]any {
		status, body := c.call("GET", "/launches/"+launch, "", nil)
		if status != http.StatusOK {
			t.Fatalf("read: %d %v", status, body)
		}
		return body["data"].(map[string]any)
	}
	// Kill a worker as soon as the launch has begun (a reservation made), in the middle of it.
	load := startBackgroundLoad(t, cfg.SiteURL, db)
	storetest.WaitFor(t, 60*time.Second, "the launch to begin", func() bool { return read()["cost"].(map[string]any)["reserved_cents"].(float64) > 0 })
	first.kill()

	var l map[string]any
	storetest.WaitFor(t, 90*time.Second, "three runs", func() bool { l = read(); return len(l["runs"].([]any)) == 3 })
	costs := []float64{350, 250, 150} // within the estimates of 400, 300 and 200
	for i, run := range l["runs"].([]any) {
		id := run.(map[string]any)["id"].(string)
		status, body := c.call("POST", "/runs/"+id+"/finalize", fmt.Sprintf("kill-fin-%d", i), map[string]any{"status": "succeeded", "cost_cents": costs[i]})
		if status != http.StatusOK {
			t.Fatalf("finalize: %d %v", status, body)
		}
		// The same finalisation again (a client retry): a replay, no second signal's effect.
		if status, _ := c.call("POST", "/runs/"+id+"/finalize", fmt.Sprintf("kill-fin-%d", i), map[string]any{"status": "succeeded", "cost_cents": costs[i]}); status != http.StatusOK {
			t.Fatalf("finalize replay: %d", status)
		}
	}
	storetest.WaitFor(t, 90*time.Second, "the launch to settle", func() bool { l = read(); return l["state"] == "completed" })
	load.stopAndCheck()
	cost := l["cost"].(map[string]any)
	if cost["reserved_cents"] != 900.0 || cost["settled_cents"] != 750.0 || cost["server_estimate_cents"] != 900.0 {
		t.Fatalf("totals %v", cost)
	}
	for _, r := range l["receipts"].([]any) {
		if r.(map[string]any)["settlement_status"] != "settled" {
			t.Fatalf("receipt %v", r)
		}
	}
	// Each job changed exactly three times (reserved, running, settled), once each.
	changes := 0
	storetest.WaitFor(t, 20*time.Second, "the stream serves the launch's events", func() bool {
		status, body := c.call("GET", "/events/stream?limit=1000&aggregate_type=launch", "", nil)
		if status != http.StatusOK {
			t.Fatalf("stream: %d %v", status, body)
		}
		changes = 0
		for _, e := range body["data"].([]any) {
			if e.(map[string]any)["eventType"] == "launch.job_changed" {
				changes++
			}
		}
		return changes >= 9
	})
	if changes != 9 {
		t.Fatalf("%d job changes, want 9 (3 jobs × reserved, running, settled)", changes)
	}
	status, body = c.call("GET", "/events/verify", "", nil)
	if status != http.StatusOK || body["data"].(map[string]any)["verified"] != true {
		t.Fatalf("verify: %d %v", status, body)
	}
}
