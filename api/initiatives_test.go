package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/activities"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/canonical"
	baseline "github.com/accountablework/accountable/planner"
	"github.com/accountablework/accountable/store/storetest"
	"github.com/google/uuid"
)

// The isolation matrix's lines of the area (isolation_test.go).
func init() {
	isolationCovers(isolationLines{
		fixtures: map[string]func(o *owner) string{
			"initiativeId": (*owner).initiative,
			"proposalId":   (*owner).proposal,
		},
		bodies: map[string]func(o *owner, ids map[string]string) map[string]any{
			"commitInitiative": func(o *owner, _ map[string]string) map[string]any {
				return map[string]any{"title": "Owner's new initiative", "summary": "from a title"}
			},
		},
	})
}

func (o *owner) initiative() string {
	o.t.Helper()
	r := o.e.do(request{method: "POST", path: "/initiatives", key: o.tenant.Key, headers: map[string]string{"Idempotency-Key": uniqueKey("owner")},
		body: map[string]any{"title": "Owner's initiative " + o.marker}})
	expect(o.t, r, http.StatusCreated, "")
	initiative := r.data()["initiative"].(map[string]any)["id"].(string)
	r = o.e.do(request{method: "POST", path: "/work", key: o.tenant.Key, headers: map[string]string{"Idempotency-Key": uniqueKey("owner")},
		body: map[string]any{"title": "Owner's planned task " + o.marker, "initiative_id": initiative,
			"workstream_id": uuid.Must(uuid.NewV7()).String(), "milestone_id": uuid.Must(uuid.NewV7()).String()}})
	expect(o.t, r, http.StatusCreated, "")
	return initiative
}

func (o *owner) proposal() string {
	o.t.Helper()
	r := o.e.do(request{method: "POST", path: "/initiatives/proposals", key: o.tenant.Key, body: map[string]any{"title": "Owner's plan " + o.marker},
		headers: map[string]string{"Idempotency-Key": uniqueKey("owner")}})
	expect(o.t, r, http.StatusCreated, "")
	return r.data()["proposal_id"].(string)
}

func propose(e *env, key, idemKey string, body any) response {
	headers := map[string]string{}
	if idemKey != "" {
		headers["Idempotency-Key"] = idemKey
	}
	return e.do(request{method: "POST", path: "/initiatives/proposals", key: key, headers: headers, body: body})
}

var statusPageRequest = map[string]any{"title": "Public status page",
	"prompt":      "Build an API of component health and a database of incidents; design the page; announce it in the newsletter.",
	"workstreams": []any{map[string]any{"name": "Incident process", "domain_hint": "operations", "milestones": []any{"Runbook written"}}}}

// A proposal is generated synchronously, stored immutable and addressed by its digest,
// replayed (not generated again) for the same key, and creates nothing else.
func TestProposeInitiative(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	r := propose(e, tenant.Key, "plan-status-page", statusPageRequest)
	expect(t, r, http.StatusCreated, "")
	if r.meta()["duplicate"] != false {
		t.Fatalf("meta: %s", r.raw)
	}
	var p accountable.InitiativeProposal
	if err := json.Unmarshal(mustJSON(t, r.data()), &p); err != nil {
		t.Fatal(err)
	}
	digest, err := canonical.DigestOf(p.ProposalContent())
	if err != nil || p.ProposalDigest != digest || !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("digest %s, content digest %s %v", p.ProposalDigest, digest, err)
	}
	if p.Status != accountable.ProposalProposed || p.AssignmentSource != accountable.AssignmentBaseline ||
		p.Plan.Initiative.Title != "Public status page" || len(p.Plan.Workstreams) < 2 ||
		p.Plan.Workstreams[0].Name != "Incident process" || p.Plan.Workstreams[0].Source != accountable.WorkstreamExplicit ||
		p.Plan.Workstreams[0].Milestones[0].Title != "Runbook written" || p.GenerationReceipt.Provider != "baseline" ||
		p.GenerationReceipt.ReceiptID == "" || p.Economics.HumanEquivalentUSD <= 0 {
		t.Fatalf("proposal %s", r.raw)
	}
	if d := time.Until(p.ExpiresAt.Time); d < accountable.ProposalLifetime-time.Minute || d > accountable.ProposalLifetime {
		t.Fatalf("expires in %v", d)
	}
	if n := e.planner.calls.Load(); n != 1 {
		t.Fatalf("planner called %d times", n)
	}

	// The same key and request: the stored proposal, without generating again.
	again := propose(e, tenant.Key, "plan-status-page", statusPageRequest)
	expect(t, again, http.StatusOK, "")
	if again.meta()["duplicate"] != true || toJSON(again.data()) != toJSON(r.data()) {
		t.Fatalf("replay: %s\noriginal: %s", again.raw, r.raw)
	}
	if n := e.planner.calls.Load(); n != 1 {
		t.Fatalf("the replay called the planner (%d calls)", n)
	}
	// The same key with another request.
	other := map[string]any{"title": "Something else"}
	expect(t, propose(e, tenant.Key, "plan-status-page", other), http.StatusConflict, accountable.ECodeIdempotencyKeyReused)

	// Readable by id; another workspace's caller gets the 404 of an unknown id.
	got := e.do(request{method: "GET", path: "/initiatives/proposals/{proposalId}", params: map[string]string{"proposalId": p.ProposalID}, key: tenant.Key})
	expect(t, got, http.StatusOK, "")
	if toJSON(got.data()) != toJSON(r.data()) {
		t.Fatalf("read %s", got.raw)
	}
	stranger := storetest.NewTenant(t, e.db)
	expect(t, e.do(request{method: "GET", path: "/initiatives/proposals/{proposalId}", params: map[string]string{"proposalId": p.ProposalID},
		key: stranger.Key}), http.StatusNotFound, accountable.ECodeNotFound)

	// Nothing but the proposal was written: no work item, one event.
	if l := e.do(request{method: "GET", path: "/work", key: tenant.Key}); len(l.dataList()) != 0 {
		t.Fatalf("a proposal created work: %s", l.raw)
	}
	events := e.streamEvents(tenant.Key, "aggregate_type=initiative_proposal", 1)
	if len(events) != 1 || events[0]["eventType"] != accountable.EventProposalGenerated || events[0]["aggregateId"] != p.ProposalID {
		t.Fatalf("events %v", events)
	}
	if v := e.do(request{method: "GET", path: "/events/verify", key: tenant.Key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}

	// Past expires_at it reads as expired.
	if _, err := storetest.Conn(t).Exec(context.Background(), `UPDATE initiative_proposals SET expires_at = now() - interval '1 second'
		WHERE workspace_id = $1 AND id = $2`, tenant.Principal.WorkspaceID, p.ProposalID); err != nil {
		t.Fatal(err)
	}
	got = e.do(request{method: "GET", path: "/initiatives/proposals/{proposalId}", params: map[string]string{"proposalId": p.ProposalID}, key: tenant.Key})
	if got.data()["status"] != string(accountable.ProposalExpired) {
		t.Fatalf("expired proposal reads %s", got.raw)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestProposalBoundsAndRateLimit(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	many := make([]any, 21)
	for i := range many {
		many[i] = map[string]any{"name": "lane " + string(rune('a'+i))}
	}
	for name, c := range map[string]struct {
		body map[string]any
		path string
	}{
		"empty title":      {map[string]any{"title": ""}, "/title"},
		"long title":       {map[string]any{"title": strings.Repeat("t", 201)}, "/title"},
		"long prompt":      {map[string]any{"title": "x", "prompt": strings.Repeat("p", 4001)}, "/prompt"},
		"21 workstreams":   {map[string]any{"title": "x", "workstreams": many}, "/workstreams"},
		"bad depth":        {map[string]any{"title": "x", "depth": "deep"}, "/depth"},
		"bad assignment":   {map[string]any{"title": "x", "agent_assignment": "some"}, "/agent_assignment"},
		"unknown depends":  {map[string]any{"title": "x", "workstreams": []any{map[string]any{"name": "a", "depends_on": []any{"b"}}}}, "/workstreams/0/depends_on/0"},
		"duplicate lanes":  {map[string]any{"title": "x", "workstreams": []any{map[string]any{"name": "a"}, map[string]any{"name": "a"}}}, "/workstreams/1/name"},
		"max_workstreams":  {map[string]any{"title": "x", "generation": map[string]any{"max_workstreams": 21}}, "/generation/max_workstreams"},
		"bad model_tier":   {map[string]any{"title": "x", "generation": map[string]any{"model_tier": "huge"}}, "/generation/model_tier"},
		"bad verification": {map[string]any{"title": "x", "source_evidence": map[string]any{"verification_state": "maybe"}}, "/source_evidence/verification_state"},
	} {
		r := propose(e, tenant.Key, "", c.body)
		expect(t, r, http.StatusBadRequest, accountable.ECodeValidationFailed)
		found := false
		for _, is := range r.errorObj()["details"].(map[string]any)["issues"].([]any) {
			found = found || is.(map[string]any)["path"] == c.path
		}
		if !found {
			t.Errorf("%s: no issue at %s: %s", name, c.path, r.raw)
		}
	}
	if n := e.planner.calls.Load(); n != 0 {
		t.Fatalf("refused requests reached the planner (%d calls)", n)
	}
	// Six a minute per workspace; the seventh waits.
	for i := range 6 {
		expect(t, propose(e, tenant.Key, "", map[string]any{"title": "Plan " + string(rune('A'+i))}), http.StatusCreated, "")
	}
	r := propose(e, tenant.Key, "", map[string]any{"title": "One too many"})
	expect(t, r, http.StatusTooManyRequests, accountable.ECodeRateLimited)
	if r.header.Get("Retry-After") == "" || r.errorObj()["retryAfter"] == nil {
		t.Fatalf("no retry-after: %s", r.raw)
	}
	// A replay costs no slot and is still answered.
	other := storetest.NewTenant(t, e.db)
	expect(t, propose(e, other.Key, "", map[string]any{"title": "Another workspace"}), http.StatusCreated, "")
}

// A model slower than a workflow task's timeout (Temporal's default, 10 s) still makes
// one proposal from one call: the planner runs as a local activity, inside the workflow
// task, which the worker keeps alive by heartbeating it.
func TestSlowModelOutlastsTheWorkflowTask(t *testing.T) {
	e := newEnv(t, nil)
	e.planner.use(slowPlanner{wait: 11 * time.Second, inner: baseline.NewBaseline()})
	tenant := storetest.NewTenant(t, e.db)
	expect(t, propose(e, tenant.Key, "slow-model", map[string]any{"title": "Patient plan"}), http.StatusCreated, "")
	if n := e.planner.calls.Load(); n != 1 {
		t.Fatalf("the planner was called %d times, want 1", n)
	}
}

type slowPlanner struct {
	wait  time.Duration
	inner activities.Planner
}

func (p slowPlanner) Plan(ctx context.Context, in accountable.ProposeInitiative) (accountable.GeneratedPlan, error) {
	select {
	case <-time.After(p.wait):
	case <-ctx.Done():
		return accountable.GeneratedPlan{}, ctx.Err()
	}
	return p.inner.Plan(ctx, in)
}

// attachSignallingRunner says when a request waits for a generation another request
// started (the handler's GetWorkflow).
type attachSignallingRunner struct {
	api.WorkflowRunner
	attaching chan<- struct{}
}

func (r attachSignallingRunner) GetWorkflow(ctx context.Context, workflowID, runID string) client.WorkflowRun {
	select {
	case r.attaching <- struct{}{}:
	default:
	}
	return r.WorkflowRunner.GetWorkflow(ctx, workflowID, runID)
}

// gatedPlanner blocks every plan until it is opened, and says when one is waiting.
type gatedPlanner struct {
	entered chan struct{}
	open    chan struct{}
	once    sync.Once
	fail    bool
}

func (g *gatedPlanner) Plan(ctx context.Context, in accountable.ProposeInitiative) (accountable.GeneratedPlan, error) {
	g.once.Do(func() { close(g.entered) })
	select {
	case <-g.open:
	case <-ctx.Done():
		return accountable.GeneratedPlan{}, ctx.Err()
	}
	if g.fail {
		return accountable.GeneratedPlan{}, errors.New("the model answered nonsense")
	}
	return accountable.GeneratedPlan{Plan: accountable.Plan{Initiative: accountable.PlannedInitiative{Title: in.Title, Summary: "Gated.", GoalIDs: []string{}},
		Workstreams: []accountable.PlannedWorkstream{}}, Source: accountable.AssignmentBaseline,
		Receipt: accountable.GenerationReceipt{Provider: "test", Model: "gated"}}, nil
}

// One generation per workspace at a time: another request meanwhile is 429
// generation_in_progress; a retry of the running request attaches to it.
func TestOneGenerationPerWorkspace(t *testing.T) {
	attaching := make(chan struct{}, 1)
	e := newEnv(t, nil, func(_ *api.Config, d *api.Deps) { d.Runner = attachSignallingRunner{d.Runner, attaching} })
	gate := &gatedPlanner{entered: make(chan struct{}), open: make(chan struct{})}
	e.planner.use(gate)
	tenant := storetest.NewTenant(t, e.db)
	body := map[string]any{"title": "Slow plan"}
	first := make(chan response, 1)
	go func() { first <- propose(e, tenant.Key, "slow-plan", body) }()
	<-gate.entered
	waitForRun(t, tenant.Principal.WorkspaceID, "slow-plan")

	busy := propose(e, tenant.Key, "other-plan", map[string]any{"title": "Another plan"})
	expect(t, busy, http.StatusTooManyRequests, accountable.ECodeGenerationInProgress)
	if busy.header.Get("Retry-After") == "" {
		t.Fatalf("no Retry-After: %s", busy.raw)
	}
	attached := make(chan response, 1)
	go func() { attached <- propose(e, tenant.Key, "slow-plan", body) }()
	// The retry waits for the running generation before the plan may finish; were the
	// generation done first, the retry would be a replay, or meet its storing (409).
	select {
	case <-attaching:
	case r := <-attached:
		t.Fatalf("the retry did not wait for the running generation: %s", r.raw)
	case <-time.After(20 * time.Second):
		t.Fatal("the retry did not attach to the running generation")
	}
	// Another workspace is not held back.
	other := storetest.NewTenant(t, e.db)
	otherDone := make(chan response, 1)
	go func() { otherDone <- propose(e, other.Key, "", map[string]any{"title": "Elsewhere"}) }()
	close(gate.open)
	r1, r2 := <-first, <-attached
	expect(t, r1, http.StatusCreated, "")
	expect(t, r2, http.StatusOK, "")
	if r2.meta()["duplicate"] != true || r2.data()["proposal_id"] != r1.data()["proposal_id"] {
		t.Fatalf("attached %s, first %s", r2.raw, r1.raw)
	}
	expect(t, <-otherDone, http.StatusCreated, "")
	// The refused request left no record: its key starts a generation now.
	expect(t, propose(e, tenant.Key, "other-plan", map[string]any{"title": "Another plan"}), http.StatusCreated, "")
}

// A generation that makes no proposal fails the request with nothing stored, and its key
// may be retried.
func TestFailedGenerationLeavesNoRecord(t *testing.T) {
	e := newEnv(t, nil)
	gate := &gatedPlanner{entered: make(chan struct{}), open: make(chan struct{}), fail: true}
	close(gate.open)
	e.planner.use(gate)
	tenant := storetest.NewTenant(t, e.db)
	body := map[string]any{"title": "Doomed"}
	expect(t, propose(e, tenant.Key, "doomed", body), http.StatusBadGateway, accountable.ECodeGenerationFailed)
	if n := e.planner.calls.Load(); n != 3 {
		t.Fatalf("the planner was tried %d times, want 3 (the workflow's bound)", n)
	}
	e.planner.use(&gatedPlanner{entered: make(chan struct{}), open: closedChan()})
	expect(t, propose(e, tenant.Key, "doomed", body), http.StatusCreated, "")
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// waitForRun waits until the pending record of key names its run (the handler records it
// right after Temporal accepted the start).
func waitForRun(t *testing.T, workspaceID, key string) {
	t.Helper()
	conn := storetest.Conn(t)
	storetest.WaitFor(t, 20*time.Second, "a run recorded for "+key, func() bool {
		var named bool
		err := conn.QueryRow(context.Background(), `SELECT workflow_run_id IS NOT NULL FROM idempotency_records
			WHERE workspace_id = $1 AND key = $2`, workspaceID, key).Scan(&named)
		return err == nil && named
	})
}

// Committing a proposal creates the initiative with every workstream, milestone and task
// of its plan, once; the tasks are ordinary work items.
func TestCommitInitiativeFromProposal(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	r := propose(e, key, "", statusPageRequest)
	expect(t, r, http.StatusCreated, "")
	var p accountable.InitiativeProposal
	if err := json.Unmarshal(mustJSON(t, r.data()), &p); err != nil {
		t.Fatal(err)
	}
	want := accountable.CreatedCounts{}
	for _, w := range p.Plan.Workstreams {
		want.Workstreams++
		for _, m := range w.Milestones {
			want.Milestones++
			want.Tasks += len(m.Tasks)
		}
	}
	commit := func(body map[string]any) response {
		return e.do(request{method: "POST", path: "/initiatives", key: key, body: body})
	}
	wrong := "sha256:" + strings.Repeat("0", 64)
	expect(t, commit(map[string]any{"proposal_id": p.ProposalID, "proposal_digest": wrong}), http.StatusConflict, accountable.ECodeProposalDigestMismatch)
	expect(t, commit(map[string]any{"proposal_id": p.ProposalID}), http.StatusBadRequest, accountable.ECodeValidationFailed)

	// Concurrent commits of one proposal: one wins.
	var wg sync.WaitGroup
	answers := make(chan response, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers <- commit(map[string]any{"proposal_id": p.ProposalID, "proposal_digest": p.ProposalDigest})
		}()
	}
	wg.Wait()
	close(answers)
	var won response
	for a := range answers {
		switch a.status {
		case http.StatusCreated:
			if won.status != 0 {
				t.Fatalf("two commits won: %s\n%s", won.raw, a.raw)
			}
			won = a
		default:
			expect(t, a, http.StatusConflict, accountable.ECodeProposalCommitted)
		}
	}
	if won.status != http.StatusCreated {
		t.Fatal("no commit won")
	}
	d := won.data()
	created := d["created"].(map[string]any)
	initiative := d["initiative"].(map[string]any)
	if created["workstreams"] != float64(want.Workstreams) || created["milestones"] != float64(want.Milestones) ||
		created["tasks"] != float64(want.Tasks) || want.Tasks == 0 || d["proposal_id"] != p.ProposalID ||
		initiative["status"] != "active" || initiative["title"] != "Public status page" || initiative["aggregateVersion"] != 1.0 {
		t.Fatalf("commit %s, want %+v", won.raw, want)
	}
	id := initiative["id"].(string)

	got := e.do(request{method: "GET", path: "/initiatives/proposals/{proposalId}", params: map[string]string{"proposalId": p.ProposalID}, key: key})
	if got.data()["status"] != string(accountable.ProposalInstantiated) {
		t.Fatalf("proposal after commit: %s", got.raw)
	}
	read := e.do(request{method: "GET", path: "/initiatives/{initiativeId}", params: map[string]string{"initiativeId": id}, key: key,
		query: "include=tree,launches"})
	expect(t, read, http.StatusOK, "")
	tree := read.data()["tree"].(map[string]any)["workstreams"].([]any)
	if len(tree) != want.Workstreams || read.data()["launches"] == nil {
		t.Fatalf("tree %s", read.raw)
	}
	first := tree[0].(map[string]any)
	if first["name"] != p.Plan.Workstreams[0].Name || len(first["milestones"].([]any)) != len(p.Plan.Workstreams[0].Milestones) {
		t.Fatalf("first workstream %v", first)
	}
	// The tasks are work items of the Work area, completable there.
	list := e.do(request{method: "GET", path: "/work", key: key, query: "limit=1000&initiative_id=" + id})
	if len(list.dataList()) != want.Tasks {
		t.Fatalf("%d work items for the initiative, want %d", len(list.dataList()), want.Tasks)
	}
	task := list.dataList()[0].(map[string]any)
	done := e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": task["id"].(string)}, key: key,
		body: map[string]any{"version_token": task["concurrency"].(map[string]any)["version_token"], "summary": "done"}})
	expect(t, done, http.StatusOK, "")
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}

	// A starter title makes an initiative without parts; an expired proposal is refused.
	starter := commit(map[string]any{"title": "Starter", "summary": "Just a start"})
	expect(t, starter, http.StatusCreated, "")
	if c := starter.data()["created"].(map[string]any); c["tasks"] != 0.0 || starter.data()["proposal_id"] != nil {
		t.Fatalf("starter %s", starter.raw)
	}
	r = propose(e, key, "", map[string]any{"title": "Old plan"})
	old := r.data()
	if _, err := storetest.Conn(t).Exec(context.Background(), `UPDATE initiative_proposals SET expires_at = now() - interval '1 second'
		WHERE workspace_id = $1 AND id = $2`, tenant.Principal.WorkspaceID, old["proposal_id"]); err != nil {
		t.Fatal(err)
	}
	expect(t, commit(map[string]any{"proposal_id": old["proposal_id"], "proposal_digest": old["proposal_digest"]}),
		http.StatusConflict, accountable.ECodeProposalExpired)

	// The live list: offset pages without a total, newest first.
	live := e.do(request{method: "GET", path: "/live/initiatives", root: "/api/client", key: key, query: "limit=1"})
	expect(t, live, http.StatusOK, "")
	items, page := live.data()["initiatives"].([]any), live.data()["pagination"].(map[string]any)
	if len(items) != 1 || items[0].(map[string]any)["title"] != "Starter" || page["has_more"] != true || page["limit"] != 1.0 ||
		page["offset"] != 0.0 || live.data()["total"] != nil {
		t.Fatalf("live page 1: %s", live.raw)
	}
	live = e.do(request{method: "GET", path: "/live/initiatives", root: "/api/client", key: key, query: "limit=1&offset=1"})
	if items := live.data()["initiatives"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != id ||
		live.data()["pagination"].(map[string]any)["has_more"] != false {
		t.Fatalf("live page 2: %s", live.raw)
	}
}
