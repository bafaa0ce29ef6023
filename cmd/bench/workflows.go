package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/accountablework/accountable"
)

// The workflow-backed lines (DESIGN.md §6): proposal generation end to end with a fake
// model server, and a launch of launchWorkstreams workstreams from dispatch to settlement,
// each beside the same Temporal server doing the least the operation could ask of it:
//
//   - proposal: POST /initiatives/proposals (the ProposalGeneration workflow: the planner's
//     activity calling the fake model through openai-go, the activity storing the proposal
//     and its ledger event; the handler waits) beside an empty workflow round trip (start,
//     run, wait for the result);
//   - launch: POST /initiatives/{id}/launch, then, as an agent would, GET /launches/{id}
//     every launchPoll and POST /runs/{id}/finalize for each run that appears, until the
//     launch is completed with every reservation settled; beside a workflow of the same
//     shape (one activity to list the jobs, two per job to reserve and dispatch, a signal
//     per run, one activity per settlement, one to end) whose activities do nothing, its
//     runs finalised by signals sent straight to Temporal as they appear, polled alike.
//
// The service's side runs `accountable worker` (on its own task queue, with OPENAI_API_KEY
// and OPENAI_BASE_URL pointing at the fake model server this harness serves); the limit's
// side is a worker inside this harness on another task queue.

const (
	launchWorkstreams = 20
	launchPoll        = 10 * time.Millisecond
	launchMinCount    = 3 // launches measured per run at least, however long they take
	serviceTaskQueue  = "bench-service"
	limitTaskQueue    = "bench-limit"
	benchModelKey     = "sk-bench"
	laneAnswerMarker  = "Bench lane 01" // a request naming it gets the 20-lane answer
)

// workflowBench is what the workflow lines share: the fake model server, the service's
// worker process, the harness's Temporal client and worker, and the dispatched runs of the
// limit's launches.
type workflowBench struct {
	model   *http.Server
	modelLn net.Listener
	worker  *proc
	tc      client.Client
	tw      worker.Worker
	http    *http.Client

	mu         sync.Mutex
	dispatched map[string][]string // limit launch workflow id -> its run ids, in order
}

func (b *bench) workflowLines() error {
	wb, err := b.startWorkflowBench()
	if wb != nil {
		defer wb.stop()
	}
	if err != nil {
		return err
	}
	if b.s.Lines["proposal"] {
		if err := b.proposalLine(wb); err != nil {
			return fmt.Errorf("proposal: %w", err)
		}
	}
	if b.s.Lines["launch"] {
		if err := b.launchLine(wb); err != nil {
			return fmt.Errorf("launch: %w", err)
		}
	}
	if b.s.Lines["discovery"] {
		if err := b.discoveryLine(wb); err != nil {
			return fmt.Errorf("discovery: %w", err)
		}
	}
	if b.s.Lines["context"] {
		if err := b.contextScope(wb); err != nil {
			return fmt.Errorf("context: %w", err)
		}
	}
	return nil
}

// --- a discovery run over a ledger of DiscoveryEvents events ----------------------------

// discoveryLine seeds a workspace with DiscoveryEvents handoffs (one handoff.proposed event
// each: cases intake → triage → fix or close), then times bounded_sync discovery runs over
// it, beside the bare Fiber + pgx server paging the same events.
func (b *bench) discoveryLine(wb *workflowBench) error {
	var have int
	if err := b.db.QueryRow(b.ctx, `SELECT count(*) FROM ledger_events WHERE workspace_id = $1`, b.discovery.WorkspaceID).Scan(&have); err != nil {
		return err
	}
	if missing := b.s.DiscoveryEvents - have; missing > 0 {
		stages := [][2]string{{"intake", "triage"}, {"triage", "fix"}, {"intake", "triage"}, {"triage", "close"}}
		if err := b.seedPosts("handoffs (the discovery workspace)", b.discovery, "/handoffs", missing, false, func(i int) []byte {
			st := stages[i%4]
			return fmt.Appendf(nil, `{"handoff_key":"case-%d","from_stage_key":%q,"to_stage_key":%q,"title":"Case %d: %s to %s"}`,
				i/2, st[0], st[1], i/2, st[0], st[1])
		}); err != nil {
			return err
		}
	}
	if err := b.analyze(); err != nil {
		return err
	}
	var handoffs int
	if err := b.db.QueryRow(b.ctx, `SELECT count(*) FROM ledger_events WHERE workspace_id = $1 AND event_type = 'handoff.proposed'`,
		b.discovery.WorkspaceID).Scan(&handoffs); err != nil {
		return err
	}
	l := &line{ID: "discovery", Name: fmt.Sprintf("POST /discovery-runs (bounded_sync) over %d events", b.s.DiscoveryEvents), Clients: 1,
		Unit: "events/s", Latency: "run / page",
		LimitName: "bare Fiber + pgx paging the same events"}
	b.lines = append(b.lines, l)
	logf("discovery runs over %d events, beside paging them", b.s.DiscoveryEvents)
	return b.measure(l, func() (sample, error) {
		var read int
		s := runCalls(b.ctx, b.s.Warmup, b.s.Duration, launchMinCount, func(int) error {
			raw, err := wb.call(http.MethodPost, "http://"+b.svcAddr+"/api/v1/discovery-runs", b.discovery.Key, "", `{"mode":"bounded_sync"}`, http.StatusCreated)
			if err != nil {
				return err
			}
			var res struct {
				Run struct {
					Status string `json:"status"`
					Counts struct {
						EventsRead int `json:"eventsRead"`
					} `json:"counts"`
				} `json:"run"`
				Cards []json.RawMessage `json:"processCards"`
			}
			if err := decodeData(raw, &res); err != nil {
				return err
			}
			// (Concurrent seeding may create a case's two handoffs in either order: more
			// variants than the two seeded are possible, fewer are not.)
			if res.Run.Status != "succeeded" || len(res.Cards) < 2 || res.Run.Counts.EventsRead != handoffs {
				return fmt.Errorf("a discovery run ended %s with %d candidates over %d events", res.Run.Status, len(res.Cards), res.Run.Counts.EventsRead)
			}
			read = res.Run.Counts.EventsRead
			return nil
		})
		// The rate in events mined per second: runs per second × events per run.
		s.Rate *= float64(read)
		return s, nil
	}, func() (sample, error) {
		return b.pageRun(b.baseAddr, "/events/stream", "X-Workspace-Id", b.discovery.WorkspaceID, b.s.DiscoveryEvents, b.s.Warmup)
	})
}

func (b *bench) startWorkflowBench() (*workflowBench, error) {
	wb := &workflowBench{dispatched: map[string][]string{},
		http: &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
	answers, err := modelAnswers()
	if err != nil {
		return wb, err
	}
	if wb.modelLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return wb, err
	}
	wb.model = &http.Server{Handler: answers, ReadHeaderTimeout: 10 * time.Second}
	go wb.model.Serve(wb.modelLn) //nolint:errcheck // ends with Close
	modelURL := "http://" + wb.modelLn.Addr().String() + "/v1/"

	logf("starting accountable worker (task queue %s, the fake model server at %s)", serviceTaskQueue, modelURL)
	// (It seals the workspaces' logs too, with the key every process of the run has.)
	if wb.worker, err = startProc("accountable worker", filepath.Join(b.dir, "worker.log"),
		append([]string{"DATABASE_URL=" + b.dbURL, "TEMPORAL_TASK_QUEUE=" + serviceTaskQueue, "OPENAI_API_KEY=" + benchModelKey,
			"OPENAI_BASE_URL=" + modelURL, "PPROF_ADDR=", "METRICS_ADDR="}, b.ledgerEnv()...), b.accountable, "worker"); err != nil {
		return wb, err
	}
	addr := os.Getenv("TEMPORAL_ADDRESS")
	if addr == "" {
		return wb, fmt.Errorf("TEMPORAL_ADDRESS is not set: run through make bench (scripts/stack.sh sets it)")
	}
	if wb.tc, err = client.Dial(client.Options{HostPort: addr, Logger: quietLogger{}}); err != nil {
		return wb, fmt.Errorf("connect to Temporal at %s: %w", addr, err)
	}
	wb.tw = worker.New(wb.tc, limitTaskQueue, worker.Options{})
	wb.tw.RegisterWorkflowWithOptions(emptyWorkflow, workflow.RegisterOptions{Name: "BenchEmpty"})
	wb.tw.RegisterWorkflowWithOptions(launchShapeWorkflow, workflow.RegisterOptions{Name: "BenchLaunchShape"})
	wb.tw.RegisterActivity(&shapeActivities{wb: wb})
	if err := wb.tw.Start(); err != nil {
		return wb, err
	}
	return wb, nil
}

func (wb *workflowBench) stop() {
	if wb.tw != nil {
		wb.tw.Stop()
	}
	if wb.tc != nil {
		wb.tc.Close()
	}
	wb.worker.stop()
	if wb.model != nil {
		wb.model.Close()
	}
}

// modelAnswers serves chat completions as the recorded good completion of the planner's
// tests (planner/testdata/completion-good.json) does, or, to a request naming the bench's
// lanes, the same completion answering with launchWorkstreams workstreams of those names.
func modelAnswers() (http.Handler, error) {
	recorded, err := os.ReadFile(filepath.Join("planner", "testdata", "completion-good.json"))
	if err != nil {
		return nil, err
	}
	var completion map[string]any
	if err := json.Unmarshal(recorded, &completion); err != nil {
		return nil, err
	}
	lanes := make([]map[string]any, launchWorkstreams)
	for i := range lanes {
		lanes[i] = map[string]any{"name": laneName(i), "goal": "Ship lane " + strconv.Itoa(i+1) + ".", "domain": "engineering",
			"agent_id": "agent-engineering", "confidence": 0.8, "rationale": "An engineering lane.", "expected_tokens": 100000,
			"expected_duration_hours": 4, "expected_budget_usd": 1.5, "depends_on": []string{}, "deliverables": []string{"A change"},
			"milestones": []any{}}
	}
	content, err := json.Marshal(map[string]any{"summary": "Twenty lanes of engineering work.", "workstreams": lanes})
	if err != nil {
		return nil, err
	}
	completion["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"] = string(content)
	laneAnswer, err := json.Marshal(completion)
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+benchModelKey {
			http.Error(w, "unexpected request", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if bytes.Contains(body, []byte(laneAnswerMarker)) {
			w.Write(laneAnswer) //nolint:errcheck // a client gone mid-answer is the load generator's to count
			return
		}
		w.Write(recorded) //nolint:errcheck // a client gone mid-answer is the load generator's to count
	}), nil
}

func laneName(i int) string { return fmt.Sprintf("Bench lane %02d", i+1) }

// --- proposal generation -----------------------------------------------------------------

func (b *bench) proposalLine(wb *workflowBench) error {
	l := &line{ID: "proposal", Name: "POST /initiatives/proposals (fake model)", Clients: 1, Unit: "req/s", Latency: "request / round trip",
		LimitName: "an empty workflow round trip on the same Temporal server"}
	b.lines = append(b.lines, l)
	logf("POST /initiatives/proposals at 1 client, beside an empty workflow round trip")
	return b.measure(l, func() (sample, error) {
		tag := b.nextTag("proposal")
		return runCalls(b.ctx, b.s.Warmup, b.s.Duration, 1, func(i int) error {
			body := fmt.Sprintf(`{"title":"Public status page %s-%d","prompt":"Ship a public status page that shows the health of the API and its incidents."}`, tag, i)
			_, err := wb.call(http.MethodPost, "http://"+b.svcAddr+"/api/v1/initiatives/proposals", b.main.Key,
				fmt.Sprintf("%s-%d", tag, i), body, http.StatusCreated)
			return err
		}), nil
	}, func() (sample, error) {
		tag := b.nextTag("empty")
		return runCalls(b.ctx, b.s.Warmup, b.s.Duration, 1, func(i int) error {
			run, err := wb.tc.ExecuteWorkflow(b.ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("%s-%d", tag, i),
				TaskQueue: limitTaskQueue}, "BenchEmpty")
			if err != nil {
				return err
			}
			return run.Get(b.ctx, nil)
		}), nil
	})
}

func emptyWorkflow(workflow.Context) error { return nil }

// --- a launch from dispatch to settlement ------------------------------------------------

func (b *bench) launchLine(wb *workflowBench) error {
	initiative, err := b.launchableInitiative(wb)
	if err != nil {
		return err
	}
	l := &line{ID: "launch", Name: fmt.Sprintf("a launch of %d workstreams, dispatch to settlement", launchWorkstreams), Clients: 1,
		Unit: "launches/s", Latency: "launch",
		LimitName: "a workflow of the same shape whose activities do nothing"}
	b.lines = append(b.lines, l)
	logf("launches of %d workstreams at 1 client, beside a workflow of the same shape", launchWorkstreams)
	return b.measure(l, func() (sample, error) {
		tag := b.nextTag("launch")
		return runCalls(b.ctx, b.s.Warmup, b.s.Duration, launchMinCount, func(i int) error {
			return b.serviceLaunch(wb, initiative, fmt.Sprintf("%s-%d", tag, i))
		}), nil
	}, func() (sample, error) {
		tag := b.nextTag("shape")
		return runCalls(b.ctx, b.s.Warmup, b.s.Duration, launchMinCount, func(i int) error {
			return wb.limitLaunch(b.ctx, fmt.Sprintf("%s-%d", tag, i))
		}), nil
	})
}

// launchableInitiative proposes (through the model, with launchWorkstreams explicit
// workstreams) and commits the initiative every launch of the line launches.
func (b *bench) launchableInitiative(wb *workflowBench) (string, error) {
	lanes := make([]map[string]any, launchWorkstreams)
	for i := range lanes {
		lanes[i] = map[string]any{"name": laneName(i), "expected_budget_usd": 1.5}
	}
	body, _ := json.Marshal(map[string]any{"title": "Bench lanes", "depth": "workstreams",
		"generation": map[string]any{"max_workstreams": launchWorkstreams}, "workstreams": lanes})
	raw, err := wb.call(http.MethodPost, "http://"+b.svcAddr+"/api/v1/initiatives/proposals", b.main.Key, b.nextTag("lanes"), string(body), http.StatusCreated)
	if err != nil {
		return "", err
	}
	var proposal struct {
		ID     string `json:"proposal_id"`
		Digest string `json:"proposal_digest"`
	}
	if err := decodeData(raw, &proposal); err != nil {
		return "", err
	}
	body, _ = json.Marshal(map[string]any{"proposal_id": proposal.ID, "proposal_digest": proposal.Digest})
	raw, err = wb.call(http.MethodPost, "http://"+b.svcAddr+"/api/v1/initiatives", b.main.Key, b.nextTag("commit"), string(body), http.StatusCreated)
	if err != nil {
		return "", err
	}
	var committed struct {
		Initiative struct {
			ID string `json:"id"`
		} `json:"initiative"`
		Workstreams []json.RawMessage `json:"workstreams"`
	}
	if err := decodeData(raw, &committed); err != nil {
		return "", err
	}
	if committed.Initiative.ID == "" {
		return "", fmt.Errorf("POST /initiatives answered without an initiative id: %s", truncate(string(raw), 300))
	}
	return committed.Initiative.ID, nil
}

// serviceLaunch launches the initiative and finalises its runs as they appear, until the
// launch is completed; it checks the settlement: every job succeeded, settled = reported.
func (b *bench) serviceLaunch(wb *workflowBench, initiative, key string) error {
	base := "http://" + b.svcAddr + "/api/v1"
	raw, err := wb.call(http.MethodPost, base+"/initiatives/"+initiative+"/launch", b.main.Key, key,
		`{"model_tier":"balanced","autonomy":"autopilot","cost_ceiling_cents":100000000}`, http.StatusAccepted)
	if err != nil {
		return err
	}
	var launch accountable.Launch
	if err := decodeData(raw, &launch); err != nil {
		return err
	}
	if len(launch.Jobs) != launchWorkstreams {
		return fmt.Errorf("the launch has %d jobs, not %d", len(launch.Jobs), launchWorkstreams)
	}
	finalized := map[string]bool{}
	var reported int64
	deadline := time.Now().Add(2 * time.Minute)
	for {
		raw, err := wb.call(http.MethodGet, base+"/launches/"+launch.LaunchID, b.main.Key, "", "", http.StatusOK)
		if err != nil {
			return err
		}
		if err := decodeData(raw, &launch); err != nil {
			return err
		}
		if launch.State == accountable.LaunchCompleted {
			break
		}
		for _, r := range launch.Runs {
			if finalized[r.ID] || r.Status != accountable.RunRunning {
				continue
			}
			cost := int64(100 + len(finalized))
			if _, err := wb.call(http.MethodPost, base+"/runs/"+r.ID+"/finalize", b.main.Key, "",
				fmt.Sprintf(`{"status":"succeeded","outcome_kind":"shipped","cost_cents":%d,"summary":"Done."}`, cost), http.StatusOK); err != nil {
				return err
			}
			finalized[r.ID] = true
			reported += cost
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("launch %s is still %s after 2 minutes", launch.LaunchID, launch.State)
		}
		time.Sleep(launchPoll)
	}
	if len(finalized) != launchWorkstreams || launch.Cost.SettledCents != reported {
		return fmt.Errorf("launch %s completed with %d runs finalised and %d cents settled of %d reported", launch.LaunchID, len(finalized), launch.Cost.SettledCents, reported)
	}
	return nil
}

// call sends one request and checks its status; it returns the body.
func (wb *workflowBench) call(method, url, key, idemKey, body string, want int) ([]byte, error) {
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := wb.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return out, fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, truncate(string(out), 300))
	}
	return out, nil
}

func decodeData(raw []byte, into any) error {
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return err
	}
	return json.Unmarshal(env.Data, into)
}

// limitLaunch runs the launch-shaped workflow and signals each run's finalisation as it
// appears (polled like the service's runs), until the workflow ends.
func (wb *workflowBench) limitLaunch(ctx context.Context, id string) error {
	run, err := wb.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: limitTaskQueue}, "BenchLaunchShape", launchWorkstreams)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- run.Get(ctx, nil) }()
	signalled := 0
	defer func() {
		wb.mu.Lock()
		delete(wb.dispatched, id)
		wb.mu.Unlock()
	}()
	for {
		select {
		case err := <-done:
			if err == nil && signalled != launchWorkstreams {
				err = fmt.Errorf("the launch-shaped workflow ended after %d signals", signalled)
			}
			return err
		case <-time.After(launchPoll):
		}
		wb.mu.Lock()
		runs := wb.dispatched[id][signalled:]
		wb.mu.Unlock()
		for _, r := range runs {
			if err := wb.tc.SignalWorkflow(ctx, id, "", "run-finalized", r); err != nil {
				return err
			}
			signalled++
		}
	}
}

// launchShapeWorkflow is LaunchDispatch's choreography with nothing behind it.
func launchShapeWorkflow(ctx workflow.Context, jobs int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second})
	var a *shapeActivities
	if err := workflow.ExecuteActivity(ctx, a.Noop, "jobs").Get(ctx, nil); err != nil {
		return err
	}
	runs := map[string]bool{}
	for i := range jobs {
		if err := workflow.ExecuteActivity(ctx, a.Noop, "reserve").Get(ctx, nil); err != nil {
			return err
		}
		var run string
		if err := workflow.ExecuteActivity(ctx, a.Dispatch, i).Get(ctx, &run); err != nil {
			return err
		}
		runs[run] = false
	}
	finalized := workflow.GetSignalChannel(ctx, "run-finalized")
	for settled := 0; settled < jobs; {
		var run string
		finalized.Receive(ctx, &run)
		if done, ok := runs[run]; !ok || done {
			continue
		}
		runs[run] = true
		settled++
		if err := workflow.ExecuteActivity(ctx, a.Noop, "settle").Get(ctx, nil); err != nil {
			return err
		}
	}
	return workflow.ExecuteActivity(ctx, a.Noop, "end").Get(ctx, nil)
}

type shapeActivities struct{ wb *workflowBench }

func (*shapeActivities) Noop(context.Context, string) error { return nil }

// Dispatch names the job's run and makes it visible to the harness, as DispatchJob makes a
// run visible to GET /launches/{id}.
func (a *shapeActivities) Dispatch(ctx context.Context, job int) (string, error) {
	id := activity.GetInfo(ctx).WorkflowExecution.ID
	run := id + "/run-" + strconv.Itoa(job)
	a.wb.mu.Lock()
	defer a.wb.mu.Unlock()
	if !slices.Contains(a.wb.dispatched[id], run) { // a retried activity
		a.wb.dispatched[id] = append(a.wb.dispatched[id], run)
	}
	return run, nil
}

// runCalls calls call in a closed loop (one caller): through warmup, then through window
// and on until at least minCount calls were measured. Calls that start after the warm-up
// are measured (each is waited for, so the measured span ends when the last one ends); the
// rate is measured calls per second of that span. It suits operations that take a good
// part of a second or more, where dropping the one in flight at the end of the window
// would bias the rate. A failed call, warm-up included, is counted as an error.
func runCalls(ctx context.Context, warmup, window time.Duration, minCount int, call func(i int) error) sample {
	start := time.Now()
	from, end := start.Add(warmup), start.Add(warmup+window)
	var s sample
	var lat []time.Duration
	last := from
	for i := 0; ctx.Err() == nil; i++ {
		t0 := time.Now()
		if !t0.Before(end) && (len(lat) >= minCount || s.Errors > 0) {
			break
		}
		err := call(i)
		t1 := time.Now()
		s.Issued++
		if err != nil {
			if s.Errors == 0 {
				s.FirstErr = truncate(err.Error(), 300)
			}
			s.Errors++
			if s.Errors >= 3 && len(lat) == 0 {
				break // it does not work at all: say so rather than retry for the whole window
			}
		}
		if t0.Before(from) {
			continue
		}
		if err == nil {
			if len(lat) == 0 {
				from = t0 // the span starts with the first measured call
			}
			last = t1
			lat = append(lat, t1.Sub(t0))
		}
	}
	s.Window = last.Sub(from)
	s.Count = len(lat)
	if s.Window > 0 {
		s.Rate = float64(s.Count) / s.Window.Seconds()
	}
	s.P50, s.P99 = percentiles(lat)
	return s
}

// quietLogger keeps the Temporal SDK's logs of the harness's own client and worker out of
// the report's output.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(msg string, kv ...any) {
	logf("temporal: %s %v", msg, kv)
}
