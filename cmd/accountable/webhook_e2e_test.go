package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
)

// A worker killed (SIGKILL) while a receiver holds a delivery: after a new worker starts,
// the held event is delivered again with the same delivery id (at least once), and every
// event reaches the receiver, in order, accepted exactly once.
func TestWebhookDeliveriesSurviveAKilledWorker(t *testing.T) {
	requireTemporal(t)
	t.Setenv("WEBHOOK_SECRET_KEY", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
	t.Setenv("WEBHOOK_ALLOW_PRIVATE", "true")
	bin := buildBinary(t)
	queue := fmt.Sprintf("e2e-webhooks-%d", time.Now().UnixNano())
	cfg := startServe(t, queue)
	first := startWorkerProcess(t, bin, queue)
	db := storetest.Open(t)
	tenant := storetest.NewTenant(t, db)
	c := apiClient{t: t, base: cfg.SiteURL, key: tenant.Key}

	var (
		mu       sync.Mutex
		secret   string
		requests []string // delivery ids, as they arrived
		accepted []string // task ids, as they were accepted
		held     = make(chan struct{})
		holdOnce sync.Once
	)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		if accountable.VerifyWebhookSignature(secret, r.Header.Get(accountable.WebhookSignatureHeader), body, time.Now(),
			accountable.WebhookSignatureTolerance) != nil {
			mu.Unlock()
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var d accountable.WebhookBody
		json.Unmarshal(body, &d) //nolint:errcheck // checked below
		requests = append(requests, d.ID)
		hold := len(requests) == 2
		mu.Unlock()
		if hold { // the second delivery is held until its worker dies
			holdOnce.Do(func() { close(held) })
			<-r.Context().Done()
			return
		}
		mu.Lock()
		accepted = append(accepted, d.Event.AggregateID)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)

	status, body := c.call("POST", "/webhooks", "", map[string]any{"url": rcv.URL, "event_types": []string{"work.created"}})
	if status != http.StatusCreated {
		t.Fatalf("register: %d %v", status, body)
	}
	data := body["data"].(map[string]any)
	mu.Lock()
	secret = data["secret"].(string)
	mu.Unlock()
	var tasks []string
	for i := range 5 {
		status, body := c.call("POST", "/work", fmt.Sprintf("wh-e2e-%d", i), map[string]any{"title": fmt.Sprintf("Delivered %d", i)})
		if status != http.StatusCreated {
			t.Fatalf("create: %d %v", status, body)
		}
		tasks = append(tasks, body["data"].(map[string]any)["taskId"].(string))
	}
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the second delivery never arrived")
	}
	load := startBackgroundLoad(t, cfg.SiteURL, db)
	first.kill()
	startWorkerProcess(t, bin, queue)
	waitFor(t, 60*time.Second, "every event accepted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted) >= len(tasks)
	})
	load.stopAndCheck()
	time.Sleep(3 * time.Second) // nothing more may come
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(accepted) != fmt.Sprint(tasks) {
		t.Fatalf("accepted %v, want each of %v once, in order", accepted, tasks)
	}
	if len(requests) != len(tasks)+1 || requests[1] != requests[2] {
		t.Fatalf("requests %v: want the held delivery repeated once with its id, nothing else twice", requests)
	}
}

// The webhook settings: ports 80 and 443 by default (every port with private addresses
// allowed), WEBHOOK_PORTS names others or "*", a cap of 20 endpoints unless
// WEBHOOK_MAX_ENDPOINTS says otherwise; nonsense is refused.
func TestWebhookConfig(t *testing.T) {
	t.Setenv("WEBHOOK_ALLOW_PRIVATE", "false")
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.webhookTargets(); !p.AllowsPort(443) || !p.AllowsPort(80) || p.AllowsPort(8080) || cfg.WebhookMaxEndpoints != 20 {
		t.Fatalf("defaults: %+v, %d endpoints", p, cfg.WebhookMaxEndpoints)
	}
	t.Setenv("WEBHOOK_ALLOW_PRIVATE", "true")
	if cfg, _ = LoadConfig(); !cfg.webhookTargets().AllowsPort(8080) {
		t.Fatal("private addresses allowed: any port by default")
	}
	t.Setenv("WEBHOOK_PORTS", "443, 8443")
	t.Setenv("WEBHOOK_MAX_ENDPOINTS", "3")
	if cfg, err = LoadConfig(); err != nil || cfg.webhookTargets().AllowsPort(80) || !cfg.webhookTargets().AllowsPort(8443) || cfg.WebhookMaxEndpoints != 3 {
		t.Fatalf("configured: %+v %d %v", cfg.webhookTargets(), cfg.WebhookMaxEndpoints, err)
	}
	t.Setenv("WEBHOOK_PORTS", "*")
	if cfg, err = LoadConfig(); err != nil || !cfg.webhookTargets().AnyPort {
		t.Fatalf("*: %+v %v", cfg.webhookTargets(), err)
	}
	for name, bad := range map[string]string{"WEBHOOK_PORTS": "80,http", "WEBHOOK_MAX_ENDPOINTS": "0"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, bad)
			if _, err := LoadConfig(); err == nil || !strings.Contains(err.Error(), name) {
				t.Fatalf("%s=%s: %v", name, bad, err)
			}
		})
	}
	for _, bad := range []string{"0", "65536", "-1", ""} {
		if _, _, err := parseWebhookPorts("443," + bad); err == nil {
			t.Errorf("port %q accepted", bad)
		}
	}
}
