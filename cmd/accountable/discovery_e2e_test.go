package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/accountablework/accountable/store/storetest"
)

// A discovery run outlives the worker that took it: the worker is killed (SIGKILL) as soon
// as the run's workflow has started (as it takes the run or mines it), another worker
// finishes the run, once, with the seeded ledger's known candidates.
func TestDiscoveryRunSurvivesAKilledWorker(t *testing.T) {
	requireTemporal(t)
	bin := buildBinary(t)
	queue := fmt.Sprintf("e2e-discovery-%d", time.Now().UnixNano())
	cfg := startServe(t, queue)
	first := startWorkerProcess(t, bin, queue)
	db := storetest.Open(t)
	tenant := storetest.NewTenant(t, db)
	c := apiClient{t: t, base: cfg.SiteURL, key: tenant.Key}
	for i := range 40 {
		for _, st := range [][2]string{{"intake", "triage"}, {"triage", "fix"}} {
			status, body := c.call("POST", "/handoffs", "", map[string]any{"handoff_key": fmt.Sprintf("case-%d", i), "from_stage_key": st[0],
				"to_stage_key": st[1], "title": "seed"})
			if status != http.StatusCreated {
				t.Fatalf("seed: %d %v", status, body)
			}
		}
	}
	status, body := c.call("POST", "/discovery-runs", "", map[string]any{"mode": "deep_search"})
	if status != http.StatusAccepted {
		t.Fatalf("start: %d %v", status, body)
	}
	run := body["data"].(map[string]any)["run"].(map[string]any)["id"].(string)
	// Kill the worker once the run's workflow has been started (its outbox message
	// delivered: a relay killed while holding a message's lease would leave it for the
	// lease's 30 s), as it takes the run or mines it.
	conn := storetest.Conn(t)
	outbox := func() (int, string) {
		var n int
		var kinds string
		if err := conn.QueryRow(t.Context(), `SELECT count(*), coalesce(string_agg(kind || ' ' || workflow_name, '; '), '')
			FROM outbox WHERE workspace_id = $1`, tenant.Principal.WorkspaceID).Scan(&n, &kinds); err != nil {
			t.Fatal(err)
		}
		return n, kinds
	}
	load := startBackgroundLoad(t, cfg.SiteURL, db)
	storetest.WaitFor(t, 20*time.Second, "the run's workflow to start", func() bool { n, _ := outbox(); return n == 0 })
	first.kill()
	startWorkerProcess(t, bin, queue)
	var result map[string]any
	storetest.WaitFor(t, 90*time.Second, "the run to finish on the second worker", func() bool {
		status, body := c.call("GET", "/discovery-runs/"+run, "", nil)
		if status != http.StatusOK {
			t.Fatalf("read: %d %v", status, body)
		}
		result = body["data"].(map[string]any)
		return result["run"].(map[string]any)["status"] != "queued" && result["run"].(map[string]any)["status"] != "running"
	})
	load.stopAndCheck()
	cards := result["processCards"].([]any)
	if result["run"].(map[string]any)["status"] != "succeeded" || len(cards) != 1 || cards[0].(map[string]any)["support"] != 40.0 {
		t.Fatalf("run %v", result)
	}
	// The stream serves the event once every transaction older than it has ended.
	storetest.WaitFor(t, 10*time.Second, "the stream serves the run's completion", func() bool {
		status, body = c.call("GET", "/events/stream?event_type=discovery_run.completed", "", nil)
		return status != http.StatusOK || len(body["data"].([]any)) >= 1
	})
	if status != http.StatusOK || len(body["data"].([]any)) != 1 {
		t.Fatalf("completions: %d %v", status, body)
	}
	if n, kinds := outbox(); n != 0 {
		t.Fatalf("left in the outbox: %s", kinds)
	}
	status, body = c.call("GET", "/events/verify", "", nil)
	if status != http.StatusOK || body["data"].(map[string]any)["verified"] != true {
		t.Fatalf("verify: %d %v", status, body)
	}
}
