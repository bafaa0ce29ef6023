package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	temporallog "go.temporal.io/sdk/log"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/webhook"
	"github.com/accountablework/accountable/workflows"
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
		if webhook.VerifySignature(secret, r.Header.Get(accountable.WebhookSignatureHeader), body, time.Now(),
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
	storetest.WaitFor(t, 60*time.Second, "every event accepted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted) >= len(tasks)
	})
	load.stopAndCheck()
	// Nothing more may come. The endpoint's events are delivered one at a time, in stream
	// order, each until accepted: once one more event, committed after all of them, is
	// accepted, any repeat of an earlier one would have come before it.
	status, body = c.call("POST", "/work", "wh-e2e-last", map[string]any{"title": "Delivered last"})
	if status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, body)
	}
	last := body["data"].(map[string]any)["taskId"].(string)
	tasks = append(tasks, last)
	storetest.WaitFor(t, 30*time.Second, "the last event accepted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(accepted, last)
	})
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

// Idle endpoints cost nothing, attacked: workspace A registers as many endpoints as it
// may (WEBHOOK_MAX_ENDPOINTS) and B one, with the API and the worker in separate processes
// as deployed. While nothing is committed, their delivery workflows run no workflow task
// and no activity (each activity is a read of the database), and B's commits cost A's
// endpoints nothing either. A new event still reaches the endpoints promptly: the API
// process's commit is announced through the ledger feed (NOTIFY), and the worker process
// wakes the endpoints of that workspace.
func TestWebhookIdleEndpointsCostNothing(t *testing.T) {
	temporalAddr := requireTemporal(t)
	t.Setenv("WEBHOOK_SECRET_KEY", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
	t.Setenv("WEBHOOK_ALLOW_PRIVATE", "true")
	bin := buildBinary(t)
	queue := fmt.Sprintf("e2e-webhook-idle-%d", time.Now().UnixNano())
	cfg := startServe(t, queue)
	startWorkerProcess(t, bin, queue)
	db := storetest.Open(t)
	tc, err := client.Dial(client.Options{HostPort: temporalAddr, Logger: temporallog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)

	// One receiver; each endpoint has its own path. It notes when each endpoint first
	// received each task's work.created.
	var mu sync.Mutex
	arrived := map[string]map[string]time.Time{} // task id -> path -> when
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		var d accountable.WebhookBody
		if err := json.NewDecoder(r.Body).Decode(&d); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		if arrived[d.Event.AggregateID] == nil {
			arrived[d.Event.AggregateID] = map[string]time.Time{}
		}
		if _, ok := arrived[d.Event.AggregateID][r.URL.Path]; !ok {
			arrived[d.Event.AggregateID][r.URL.Path] = now
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)

	type workspace struct {
		c         apiClient
		workflows []string
	}
	register := func(name string, n int) workspace {
		tenant := storetest.NewTenant(t, db)
		w := workspace{c: apiClient{t: t, base: cfg.SiteURL, key: tenant.Key}}
		for i := range n {
			status, body := w.c.call("POST", "/webhooks", "", map[string]any{"url": fmt.Sprintf("%s/%s/%d", rcv.URL, name, i), "event_types": []string{"work.created"}})
			if status != http.StatusCreated {
				t.Fatalf("register %s %d: %d %v", name, i, status, body)
			}
			w.workflows = append(w.workflows, workflows.WebhookDeliveryID(tenant.Principal.WorkspaceID, body["data"].(map[string]any)["id"].(string)))
		}
		return w
	}
	a := register("a", accountable.DefaultWebhookMaxEndpoints)
	b := register("b", 1)
	all := append(slices.Clone(a.workflows), b.workflows...)

	// lengths returns each workflow's history length (waiting for the workflows to exist).
	lengths := func(ids []string) []int64 {
		out := make([]int64, len(ids))
		for i, id := range ids {
			storetest.WaitFor(t, 30*time.Second, "workflow "+id, func() bool {
				d, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
				if err == nil {
					out[i] = d.WorkflowExecutionInfo.HistoryLength
				}
				return err == nil
			})
		}
		return out
	}
	// cost counts the workflow tasks and activities the workflows ran while f ran.
	cost := func(ids []string, f func()) (tasks, activities int) {
		before := lengths(ids)
		f()
		for i, id := range ids {
			it := tc.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case ev.EventId <= before[i]:
				case ev.EventType == enums.EVENT_TYPE_WORKFLOW_TASK_STARTED:
					tasks++
				case ev.EventType == enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
					activities++
				}
			}
		}
		return tasks, activities
	}
	// deliver creates a task in w and returns how long after the request each of w's
	// endpoints received it (after an idle pause: the endpoints are woken from idle).
	deliver := func(w workspace, round int) []time.Duration {
		time.Sleep(time.Second) // kept: see "idle" below
		sent := time.Now()
		status, body := w.c.call("POST", "/work", fmt.Sprintf("idle-%d", round), map[string]any{"title": fmt.Sprintf("Wakes the endpoints %d", round)})
		if status != http.StatusCreated {
			t.Fatalf("create: %d %v", status, body)
		}
		task := body["data"].(map[string]any)["taskId"].(string)
		storetest.WaitFor(t, 30*time.Second, "every endpoint received the event", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(arrived[task]) == len(w.workflows)
		})
		mu.Lock()
		defer mu.Unlock()
		var out []time.Duration
		for _, at := range arrived[task] {
			out = append(out, at.Sub(sent))
		}
		return out
	}
	summary := func(ds []time.Duration) (p50, worst time.Duration) {
		slices.Sort(ds)
		return ds[len(ds)/2], ds[len(ds)-1]
	}
	// settle waits (within 30 s) until the endpoints' histories have stopped growing for 2 s.
	settle := func() {
		settled := lengths(all)
		storetest.WaitFor(t, 30*time.Second, "the endpoints' histories to stop growing", func() bool {
			time.Sleep(2 * time.Second)
			now := lengths(all)
			same := slices.Equal(now, settled)
			settled = now
			return same
		})
	}
	const window = 6 * time.Second
	// Kept on purpose: the endpoints must be idle before the window. Each workflow reads once
	// when it starts, and each registration's commit wakes the endpoints parked before it,
	// which read again; a wake still on its way (NOTIFY, the worker's waker, the signal)
	// leaves no trace to wait for until it arrives, so an idle-looking history proves no
	// more than a pause does. The windows of cost() are the subject: idle for that long.
	// On a busy machine the registrations' wakes run seconds late (a loaded fresh-clone
	// run: 31 workflow tasks in the window), so the window also waits for the histories to
	// have stopped growing for 2 s, as the second one does.
	time.Sleep(3 * time.Second)
	settle()
	tasks, acts := cost(all, func() { time.Sleep(window) })
	t.Logf("%d idle endpoints over %s: %d workflow tasks, %d activities (database reads)", len(all), window, tasks, acts)
	if tasks != 0 || acts != 0 {
		t.Errorf("idle endpoints ran %d workflow tasks and %d activities in %s, want none", tasks, acts, window)
	}

	// B's endpoint, woken from idle five times; A's endpoints are not woken by B's commits.
	var single []time.Duration
	tasks, acts = cost(a.workflows, func() {
		for round := range 5 {
			single = append(single, deliver(b, round)...)
		}
	})
	p50, worst := summary(single)
	t.Logf("commit to delivery, one endpoint woken from idle, %d rounds: p50 %s, max %s; meanwhile A's %d endpoints ran %d workflow tasks, %d activities",
		len(single), p50.Round(time.Millisecond), worst.Round(time.Millisecond), len(a.workflows), tasks, acts)
	if p50 > 750*time.Millisecond || worst > 2*time.Second {
		t.Errorf("one endpoint woken from idle: p50 %s, max %s; want within 750 ms and 2 s", p50, worst)
	}
	if tasks != 0 || acts != 0 {
		t.Errorf("another workspace's commits cost A's idle endpoints %d workflow tasks and %d activities, want none", tasks, acts)
	}

	// A's 20 endpoints, woken together: the fan-out of one commit.
	var fanout []time.Duration
	for round := range 3 {
		fanout = append(fanout, deliver(a, 100+round)...)
	}
	p50, worst = summary(fanout)
	t.Logf("commit to delivery, %d endpoints woken from idle together, 3 rounds: p50 %s, max %s", len(a.workflows),
		p50.Round(time.Millisecond), worst.Round(time.Millisecond))
	if worst > 10*time.Second {
		t.Errorf("the fan-out to %d endpoints took up to %s, want within 10 s", len(a.workflows), worst)
	}

	// The endpoints go idle again after the deliveries (see above): on a busy machine their
	// last workflow tasks run seconds after the last delivery arrived, so the idle window
	// starts once their histories have stopped growing for 2 s (within 30 s).
	settle()
	tasks, acts = cost(all, func() { time.Sleep(window) })
	t.Logf("idle again over %s: %d workflow tasks, %d activities", window, tasks, acts)
	if tasks != 0 || acts != 0 {
		t.Errorf("after delivering, the endpoints ran %d workflow tasks and %d activities in %s, want none", tasks, acts, window)
	}
}
