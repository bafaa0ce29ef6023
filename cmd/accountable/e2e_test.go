package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	temporallog "go.temporal.io/sdk/log"

	"github.com/accountablework/accountable/store/storetest"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startDev runs the `dev` app (API + worker) in-process against this package's database
// and the Temporal server of `make test`, reached through temporalAddr.
func startDev(t *testing.T, temporalAddr string) Config {
	t.Helper()
	return startApp(t, devOptions, func(cfg *Config) {
		cfg.TemporalAddress = temporalAddr
		cfg.TaskQueue = fmt.Sprintf("e2e-%d", time.Now().UnixNano()) // never shared with a `make run` worker
	})
}

type apiClient struct {
	t    *testing.T
	base string
	key  string
}

func (c apiClient) call(method, path, idemKey string, body any) (int, map[string]any) {
	c.t.Helper()
	status, out, err := faultClient{site: c.base, key: c.key, http: http.DefaultClient}.do(method, path, idemKey, body)
	if err != nil {
		c.t.Fatal(err)
	}
	return status, out
}

// requireTemporal is the address of the Temporal server the test command started.
func requireTemporal(t *testing.T) string {
	t.Helper()
	addr := os.Getenv("TEMPORAL_ADDRESS")
	if addr == "" {
		t.Fatal("TEMPORAL_ADDRESS is not set: run the tests with `make test`, which starts Temporal")
	}
	return addr
}

// waitVerification polls the verification until the workflow has recorded its result.
func (c apiClient) waitVerification(id string, within time.Duration) map[string]any {
	c.t.Helper()
	var data map[string]any
	storetest.WaitFor(c.t, within, "verification "+id+" completed", func() bool {
		status, body := c.call("GET", "/events/verifications/"+id, "", nil)
		if status != http.StatusOK {
			c.t.Fatalf("GET verification: %d %v", status, body)
		}
		data = body["data"].(map[string]any)
		return data["status"] == "completed"
	})
	return data
}

// workflowsOf counts the workflows Temporal has for a workspace (its WorkspaceId search
// attribute), waiting until the count is want or the deadline passes.
func workflowsOf(t *testing.T, c client.Client, workspaceID string, want int) int {
	t.Helper()
	n := -1
	storetest.WaitFor(t, 10*time.Second, fmt.Sprintf("%d workflows of workspace %s", want, workspaceID), func() bool {
		res, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkspaceId = '%s'", workspaceID)})
		if err != nil {
			t.Fatal(err)
		}
		n = len(res.Executions)
		return n == want
	})
	return n
}

// The API commits a verification's request together with the message that starts its
// workflow (the transactional outbox); the relay starts the workflow on the real Temporal
// server, whose activity verifies the ledger in PostgreSQL and records the result.
func TestLedgerVerificationRunsThroughTemporal(t *testing.T) {
	temporalAddr := requireTemporal(t)
	tc, err := client.Dial(client.Options{HostPort: temporalAddr, Logger: temporallog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	proxy := storetest.NewProxy(t, temporalAddr)
	cfg := startDev(t, proxy.Addr())
	db := storetest.Open(t)
	tenant := storetest.NewTenant(t, db)
	c := apiClient{t: t, base: cfg.SiteURL, key: tenant.Key}

	status, body := c.call("POST", "/work", "e2e-create", map[string]any{"title": "e2e"})
	if status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, body)
	}

	status, body = c.call("POST", "/events/verifications", "", nil)
	if status != http.StatusAccepted {
		t.Fatalf("start: %d %v", status, body)
	}
	job := body["data"].(map[string]any)
	done := c.waitVerification(job["id"].(string), 30*time.Second)
	result := done["result"].(map[string]any)
	// The tenant's events, work.created, ledger.verification_requested.
	if result["verified"] != true || result["eventCount"] != float64(storetest.TenantEvents+2) || done["completedAt"] == nil {
		t.Fatalf("result: %v", done)
	}
	// The result is itself a ledger event, chained to the request. The stream serves it once
	// every transaction older than it has ended (its horizon), so wait for that.
	var events []any
	storetest.WaitFor(t, 10*time.Second, "the stream serves the verification's events", func() bool {
		status, body = c.call("GET", "/events/stream?aggregate_type=ledger_verification", "", nil)
		events = body["data"].([]any)
		return status != http.StatusOK || len(events) >= 2
	})
	if status != http.StatusOK || len(events) != 2 || events[1].(map[string]any)["eventType"] != "ledger.verification_completed" ||
		events[1].(map[string]any)["previousHash"] != events[0].(map[string]any)["eventHash"] {
		t.Fatalf("verification events: %d %v", status, body)
	}
	if n := workflowsOf(t, tc, tenant.Principal.WorkspaceID, 1); n != 1 {
		t.Fatalf("%d workflows carry the workspace's id, want 1", n)
	}

	// The main failure: Temporal stopped in the middle of a command. The command commits
	// (202: its request and the message that starts its workflow), a retry with the same
	// key replays it, and the workflow starts once Temporal is back, not later than the
	// relay's next poll.
	conn := storetest.Conn(t)
	pending := func() int {
		var n int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE workspace_id = $1`,
			tenant.Principal.WorkspaceID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	proxy.Down()
	status, body = c.call("POST", "/events/verifications", "verify-during-outage", nil)
	if status != http.StatusAccepted || body["data"].(map[string]any)["status"] != "running" {
		t.Fatalf("start during outage: %d %v", status, body)
	}
	id := body["data"].(map[string]any)["id"].(string)
	status, body = c.call("POST", "/events/verifications", "verify-during-outage", nil)
	if status != http.StatusOK || body["meta"].(map[string]any)["duplicate"] != true || body["data"].(map[string]any)["id"] != id {
		t.Fatalf("replay during outage: %d %v", status, body)
	}
	// The relay tried and failed, and keeps the message.
	storetest.WaitFor(t, 10*time.Second, "a failed delivery recorded", func() bool {
		var attempts int
		err := conn.QueryRow(context.Background(), `SELECT COALESCE(max(attempts), 0) FROM outbox
			WHERE workspace_id = $1 AND last_error IS NOT NULL`, tenant.Principal.WorkspaceID).Scan(&attempts)
		return err == nil && attempts >= 1
	})
	if n := pending(); n != 1 {
		t.Fatalf("%d workflow messages wait during the outage, want 1", n)
	}
	// A command refused during the outage commits nothing, so no workflow ever acts on it.
	status, _ = c.call("POST", "/events/verifications", "e2e-create", nil) // the key of another request
	if status != http.StatusConflict {
		t.Fatalf("reused key during outage: %d", status)
	}
	if n := pending(); n != 1 {
		t.Fatalf("the refused command left a workflow message (%d)", n)
	}
	back := time.Now()
	proxy.Up(t)
	done = c.waitVerification(id, 20*time.Second)
	if done["result"].(map[string]any)["verified"] != true {
		t.Fatalf("after outage: %v", done)
	}
	t.Logf("the workflow of the command committed during the outage finished %s after Temporal came back", time.Since(back).Round(time.Millisecond))
	storetest.WaitFor(t, 5*time.Second, "the outbox emptied", func() bool { return pending() == 0 })
	if n := workflowsOf(t, tc, tenant.Principal.WorkspaceID, 2); n != 2 {
		t.Fatalf("%d workflows for the workspace, want 2 (one per committed verification)", n)
	}
	// Another workspace cannot see it.
	other := storetest.NewTenant(t, db)
	status, body = apiClient{t: t, base: cfg.SiteURL, key: other.Key}.call("GET", "/events/verifications/"+id, "", nil)
	if status != http.StatusNotFound {
		t.Fatalf("another workspace reads the verification: %d %v", status, body)
	}

	// The operators' view of all that, at GET /metrics.
	res, err := http.Get(cfg.SiteURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{
		`accountable_http_requests_total{method="POST",route="/api/v1/work",status="201"} 1`,
		`accountable_http_requests_total{method="POST",route="/api/v1/events/verifications",status="409"} 1`,
		`accountable_idempotent_replays_total{operation="startLedgerVerification"} 1`,
		`accountable_workflow_messages_total{kind="start",result="delivered",workflow="LedgerVerification"} 2`,
		`accountable_workflow_messages_total{kind="start",result="failed",workflow="LedgerVerification"}`,
		`accountable_ledger_events_appended_total`, `accountable_http_request_duration_seconds_bucket{method="GET"`,
		`accountable_db_pool_acquired_connections`, `accountable_outbox_pending_messages 0`,
	} {
		if res.StatusCode != http.StatusOK || !strings.Contains(string(raw), want) {
			t.Errorf("/metrics (%d) lacks %s", res.StatusCode, want)
		}
	}
}
