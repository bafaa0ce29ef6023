package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"go.uber.org/fx"

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
	t.Setenv("DATABASE_URL", storetest.URL(t))
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.HTTPAddr = freeAddr(t)
	cfg.SiteURL = "http://" + cfg.HTTPAddr
	cfg.TemporalAddress = temporalAddr
	cfg.TaskQueue = fmt.Sprintf("e2e-%d", time.Now().UnixNano()) // never shared with a `make run` worker
	cfg.LogLevel = slog.LevelWarn
	app := fx.New(devOptions(cfg), fx.NopLogger)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := app.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return cfg
}

type apiClient struct {
	t    *testing.T
	base string
	key  string
}

func (c apiClient) call(method, path, idemKey string, body any) (int, map[string]any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.base+"/api/v1"+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		c.t.Fatal(err)
	}
	return res.StatusCode, out
}

// waitVerification polls the verification until the workflow has recorded its result.
func (c apiClient) waitVerification(id string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		status, body := c.call("GET", "/events/verifications/"+id, "", nil)
		if status != http.StatusOK {
			c.t.Fatalf("GET verification: %d %v", status, body)
		}
		data := body["data"].(map[string]any)
		if data["status"] == "completed" {
			return data
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("verification %s still %v after 60s", id, data["status"])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The API starts a workflow on the real Temporal server; the worker's activity verifies
// the ledger in PostgreSQL and records the result, which the API then reads back.
func TestLedgerVerificationRunsThroughTemporal(t *testing.T) {
	temporal := os.Getenv("TEMPORAL_ADDRESS")
	if temporal == "" {
		t.Fatal("TEMPORAL_ADDRESS is not set: run the tests with `make test`, which starts Temporal")
	}
	proxy := storetest.NewProxy(t, temporal)
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
	done := c.waitVerification(job["id"].(string))
	result := done["result"].(map[string]any)
	// workspace.created, api_key.created, work.created, ledger.verification_requested
	if result["verified"] != true || result["eventCount"] != 4.0 || done["completedAt"] == nil {
		t.Fatalf("result: %v", done)
	}
	// The result is itself a ledger event, chained to the request.
	status, body = c.call("GET", "/events/stream?aggregate_type=ledger_verification", "", nil)
	events := body["data"].([]any)
	if status != http.StatusOK || len(events) != 2 || events[1].(map[string]any)["eventType"] != "ledger.verification_completed" ||
		events[1].(map[string]any)["previousHash"] != events[0].(map[string]any)["eventHash"] {
		t.Fatalf("verification events: %d %v", status, body)
	}

	// The main failure: Temporal unreachable. The start answers 503 and writes nothing;
	// a retry with the same Idempotency-Key, once Temporal is back, starts it, and another
	// retry replays it.
	proxy.Down()
	status, body = c.call("POST", "/events/verifications", "verify-during-outage", nil)
	if status != http.StatusServiceUnavailable || body["error"].(map[string]any)["code"] != "workflow_engine_unavailable" {
		t.Fatalf("start during outage: %d %v", status, body)
	}
	status, body = c.call("GET", "/events/stream?aggregate_type=ledger_verification", "", nil)
	if n := len(body["data"].([]any)); status != http.StatusOK || n != 2 {
		t.Fatalf("the refused start wrote to the ledger: %d events", n)
	}
	proxy.Up(t)
	deadline := time.Now().Add(60 * time.Second)
	for {
		status, body = c.call("POST", "/events/verifications", "verify-during-outage", nil)
		if status == http.StatusAccepted {
			break
		}
		if status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("retry after outage: %d %v", status, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	id := body["data"].(map[string]any)["id"].(string)
	status, body = c.call("POST", "/events/verifications", "verify-during-outage", nil)
	if status != http.StatusOK || body["meta"].(map[string]any)["duplicate"] != true || body["data"].(map[string]any)["id"] != id {
		t.Fatalf("replay: %d %v", status, body)
	}
	done = c.waitVerification(id)
	if done["result"].(map[string]any)["verified"] != true {
		t.Fatalf("after outage: %v", done)
	}
	// Another workspace cannot see it.
	other := storetest.NewTenant(t, db)
	status, body = apiClient{t: t, base: cfg.SiteURL, key: other.Key}.call("GET", "/events/verifications/"+id, "", nil)
	if status != http.StatusNotFound {
		t.Fatalf("another workspace reads the verification: %d %v", status, body)
	}
}
