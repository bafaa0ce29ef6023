package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/accountablework/accountable/store/storetest"
)

// A handoff's SLA timer outlives its worker: the worker is killed before the handoff comes
// due, nothing escalates it while no worker runs, and the worker started after the due
// time escalates it, once.
func TestHandoffSLASurvivesAStoppedWorker(t *testing.T) {
	requireTemporal(t)
	bin := buildBinary(t)
	queue := fmt.Sprintf("e2e-sla-%d", time.Now().UnixNano())
	cfg := startServe(t, queue)
	w := startWorkerProcess(t, bin, queue)
	db := storetest.Open(t)
	tenant := storetest.NewTenant(t, db)
	c := apiClient{t: t, base: cfg.SiteURL, key: tenant.Key}

	due := time.Now().Add(4 * time.Second)
	status, body := c.call("POST", "/handoffs", "sla-create", map[string]any{"handoff_key": "review", "from_stage_key": "build",
		"to_stage_key": "review", "title": "Review before the deadline", "due_at": due.UTC().Format(time.RFC3339Nano)})
	if status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, body)
	}
	id := body["data"].(map[string]any)["id"].(string)
	read := func() string {
		status, body := c.call("GET", "/handoffs/"+id, "", nil)
		if status != http.StatusOK {
			t.Fatalf("read: %d %v", status, body)
		}
		return body["data"].(map[string]any)["status"].(string)
	}
	// The timer is started (by the relay) before the worker goes.
	conn := storetest.Conn(t)
	storetest.WaitFor(t, 30*time.Second, "the handoff's timer to start", func() bool {
		var n int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM outbox WHERE workspace_id = $1`,
			tenant.Principal.WorkspaceID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	load := startBackgroundLoad(t, cfg.SiteURL, db)
	w.kill()
	// The passage of time is the subject: the handoff comes due (and 2 s more) with no worker
	// running, so nothing can escalate it until one starts.
	time.Sleep(time.Until(due) + 2*time.Second)
	if s := read(); s != "proposed" {
		t.Fatalf("escalated with no worker running: %s", s)
	}
	startWorkerProcess(t, bin, queue)
	storetest.WaitFor(t, 60*time.Second, "the restarted worker to escalate the handoff", func() bool { return read() == "escalated" })
	load.stopAndCheck()
	// The stream shows a commit once every transaction older than it has ended (under the
	// load of other tests, a moment after the handoff reads escalated).
	var breaches []any
	storetest.WaitFor(t, 30*time.Second, "the breach in the event stream", func() bool {
		status, body = c.call("GET", "/events/stream?event_type=handoff.sla_breached", "", nil)
		if status != http.StatusOK {
			t.Fatalf("breaches: %d %v", status, body)
		}
		breaches = body["data"].([]any)
		return len(breaches) > 0
	})
	if len(breaches) != 1 {
		t.Fatalf("breaches: %d %v", status, body)
	}
	status, body = c.call("GET", "/events/verify", "", nil)
	if status != http.StatusOK || body["data"].(map[string]any)["verified"] != true {
		t.Fatalf("verify: %d %v", status, body)
	}
}
