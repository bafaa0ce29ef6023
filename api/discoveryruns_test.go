package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
)

// The isolation matrix's lines of the area (isolation_test.go).
func init() {
	isolationCovers(isolationLines{
		fixtures: map[string]func(o *owner) string{
			"discoveryRunId": (*owner).discoveryRun,
		},
		listedBy: map[string]string{
			"listDiscoveryRuns": "discoveryRunId",
		},
		bodies: map[string]func(o *owner, ids map[string]string) map[string]any{
			"startDiscoveryRun": func(o *owner, _ map[string]string) map[string]any {
				return map[string]any{"mode": "bounded_sync", "query": "isolation", "observations": ownerObservations()}
			},
			"proposeDiscoveredProcess": func(o *owner, ids map[string]string) map[string]any {
				return map[string]any{"workspace_id": o.tenant.Principal.WorkspaceID, "process_candidate_id": o.candidate(ids["runId"])}
			},
		},
	})
}

func ownerObservations() []any {
	var obs []any
	for c := range 2 {
		for i, st := range []string{"draft", "review"} {
			obs = append(obs, map[string]any{"case_id": "case-" + strconv.Itoa(c), "stage": st, "at": "2026-11-0" + strconv.Itoa(c+1) + "T0" + strconv.Itoa(i) + ":00:00Z"})
		}
	}
	return obs
}

// discoveryRun is a finished run of the owner's with one candidate.
func (o *owner) discoveryRun() string {
	o.t.Helper()
	r := o.e.do(request{method: "POST", path: "/discovery-runs", key: o.tenant.Key, headers: map[string]string{"Idempotency-Key": uniqueKey("owner")},
		body: map[string]any{"observations": ownerObservations(), "query": o.marker}})
	expect(o.t, r, http.StatusCreated, "")
	return r.data()["run"].(map[string]any)["id"].(string)
}

func (o *owner) candidate(runID string) string {
	o.t.Helper()
	r := o.e.do(request{method: "GET", path: "/discovery-runs/{runId}", params: map[string]string{"runId": runID}, key: o.tenant.Key})
	expect(o.t, r, http.StatusOK, "")
	return r.data()["processCards"].([]any)[0].(map[string]any)["id"].(string)
}

func stageKeys(card map[string]any) []string {
	var out []string
	for _, s := range card["stages"].([]any) {
		out = append(out, s.(map[string]any)["key"].(string))
	}
	return out
}

// seedProcessLedger gives a workspace a ledger with a known answer: three tickets handed
// intake → triage → fix, two intake → triage → close, and two orders whose work items
// (tagged with process_stage and case_id) were completed pack then ship.
func seedProcessLedger(t *testing.T, e *env, key string) {
	t.Helper()
	handoff := func(ticket, from, to string) {
		expect(t, e.do(request{method: "POST", path: "/handoffs", key: key, body: map[string]any{"handoff_key": ticket,
			"from_stage_key": from, "to_stage_key": to, "title": ticket + ": " + from + " to " + to}}), http.StatusCreated, "")
	}
	for i := range 3 {
		handoff(fmt.Sprintf("ticket-fix-%d", i), "intake", "triage")
		handoff(fmt.Sprintf("ticket-fix-%d", i), "triage", "fix")
	}
	for i := range 2 {
		handoff(fmt.Sprintf("ticket-close-%d", i), "intake", "triage")
		handoff(fmt.Sprintf("ticket-close-%d", i), "triage", "close")
	}
	for i := range 2 {
		for _, stage := range []string{"pack", "ship"} {
			r := e.do(request{method: "POST", path: "/work", key: key, headers: map[string]string{"Idempotency-Key": uniqueKey("seed")},
				body: map[string]any{"title": stage, "metadata": map[string]any{"process_stage": stage, "case_id": fmt.Sprintf("order-%d", i),
					"process_stage_name": map[string]string{"pack": "Pack the order", "ship": "Ship it"}[stage]}}})
			expect(t, r, http.StatusCreated, "")
			id := r.data()["taskId"].(string)
			token := getWork(t, e, key, id)["concurrency"].(map[string]any)["version_token"]
			expect(t, e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id},
				key: key, body: map[string]any{"version_token": token, "summary": "done"}}), http.StatusOK, "")
		}
	}
	// Noise: a one-off handoff and a completed work item without a stage.
	handoff("ticket-odd", "triage", "intake")
	createWork(t, e, key, "untagged")
}

// Discovery on a seeded ledger finds the known processes (bounded_sync answers the finished
// result); a candidate is proposed exactly as the specification says and then confirmed.
func TestDiscoveryRunFindsAndProposes(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key, ws := tenant.Key, tenant.Principal.WorkspaceID
	seedProcessLedger(t, e, key)

	r := e.do(request{method: "POST", path: "/discovery-runs", key: key, body: map[string]any{"mode": "bounded_sync"}})
	expect(t, r, http.StatusCreated, "")
	run := r.data()["run"].(map[string]any)
	cards := r.data()["processCards"].([]any)
	if run["status"] != "succeeded" || len(cards) != 3 || run["counts"].(map[string]any)["candidates"] != 3.0 {
		t.Fatalf("run %s", r.raw)
	}
	want := [][]string{{"intake", "triage", "fix"}, {"intake", "triage", "close"}, {"pack", "ship"}}
	got := [][]string{stageKeys(cards[0].(map[string]any)), stageKeys(cards[1].(map[string]any)), stageKeys(cards[2].(map[string]any))}
	// Ordered by support, then by stages: close before pack (both 2).
	if !slices.EqualFunc(got, want, func(a, b []string) bool { return slices.Equal(a, b) }) {
		t.Fatalf("candidates %v, want %v", got, want)
	}
	fix, ship := cards[0].(map[string]any), cards[2].(map[string]any)
	if fix["support"] != 3.0 || ship["stages"].([]any)[0].(map[string]any)["name"] != "Pack the order" || len(fix["citations"].([]any)) == 0 {
		t.Fatalf("cards %s", r.raw)
	}
	runID := run["id"].(string)

	// The same ledger, the same candidates (another run, other ids).
	again := e.do(request{method: "POST", path: "/discovery-runs", key: key, body: map[string]any{}})
	expect(t, again, http.StatusCreated, "")
	if c := again.data()["processCards"].([]any); len(c) != 3 || c[0].(map[string]any)["confidence"] != fix["confidence"] {
		t.Fatalf("again %s", again.raw)
	}

	propose := func(run, candidate, idem string, body map[string]any) response {
		if body == nil {
			body = map[string]any{"workspace_id": ws, "process_candidate_id": candidate}
		}
		req := request{method: "POST", path: "/discovery-runs/{runId}/propose", params: map[string]string{"runId": run}, key: key, body: body,
			headers: map[string]string{}}
		if idem != "" {
			req.headers["Idempotency-Key"] = idem
		}
		return e.do(req)
	}
	candidate := fix["id"].(string)
	idem := uniqueKey("propose")
	p := propose(runID, candidate, idem, nil)
	expect(t, p, http.StatusCreated, "")
	proc, rev := p.data()["process"].(map[string]any), p.data()["revision"].(map[string]any)
	checkProcessShapes(t, ws, proc, rev, p.data()["ledger"].(map[string]any))
	if p.meta()["requiresConfirmation"] != true || proc["lifecycleState"] != "discovered" || proc["provenanceMode"] != "observed" ||
		rev["revisionNumber"] != 1.0 || p.data()["discoveryRunId"] != runID || p.data()["processCandidateId"] != candidate ||
		len(rev["stages"].([]any)) != 3 || proc["confidence"] != fix["confidence"] || !slices.Equal(keysOf(p.data()),
		[]string{"discoveryRunId", "ledger", "process", "processCandidateId", "revision"}) {
		t.Fatalf("proposal %s", p.raw)
	}
	replay := propose(runID, candidate, idem, nil)
	expect(t, replay, http.StatusOK, "")
	if replay.meta()["duplicate"] != true || replay.meta()["requiresConfirmation"] != true || replay.data()["ledger"].(map[string]any)["duplicate"] != true ||
		replay.data()["process"].(map[string]any)["id"] != proc["id"] {
		t.Fatalf("replay %s", replay.raw)
	}
	other := cards[1].(map[string]any)["id"].(string)
	expect(t, propose(runID, other, idem, nil), http.StatusConflict, accountable.ECodeIdempotencyKeyReused)
	expect(t, propose(runID, candidate, uniqueKey("again"), nil), http.StatusConflict, accountable.ECodeInvalidStateTransition)
	expect(t, propose(runID, candidate, "", nil), http.StatusBadRequest, accountable.ECodeIdempotencyKeyRequired)
	expect(t, propose(runID, other, uniqueKey("x"), map[string]any{"process_candidate_id": other}), http.StatusBadRequest, accountable.ECodeValidationFailed)
	expect(t, propose(runID, other, uniqueKey("x"), map[string]any{"workspace_id": ws, "process_candidate_id": other, "note": "x"}),
		http.StatusBadRequest, accountable.ECodeValidationFailed)
	// A candidate of another run (the second run's ids differ) is a 404.
	otherRun := again.data()["processCards"].([]any)[1].(map[string]any)["id"].(string)
	expect(t, propose(runID, otherRun, uniqueKey("x"), nil), http.StatusNotFound, accountable.ECodeNotFound)
	// Another workspace: its key, or naming this workspace, is a 404.
	stranger := storetest.NewTenant(t, e.db)
	r = e.do(request{method: "POST", path: "/discovery-runs/{runId}/propose", params: map[string]string{"runId": runID}, key: stranger.Key,
		headers: map[string]string{"Idempotency-Key": uniqueKey("s")}, body: map[string]any{"workspace_id": stranger.Principal.WorkspaceID, "process_candidate_id": other}})
	expect(t, r, http.StatusNotFound, accountable.ECodeNotFound)

	// The discovered process is confirmed, then activated.
	params := map[string]string{"processId": proc["id"].(string)}
	r = e.do(request{method: "POST", path: "/operating-processes/{processId}/confirm", params: params, key: key,
		headers: map[string]string{"Idempotency-Key": uniqueKey("c")}, body: map[string]any{"expected_aggregate_version": 1}})
	expect(t, r, http.StatusOK, "")
	if r.data()["process"].(map[string]any)["lifecycleState"] != "confirmed" {
		t.Fatalf("confirmed %s", r.raw)
	}
	g := e.do(request{method: "GET", path: "/discovery-runs/{runId}", params: map[string]string{"runId": runID}, key: key})
	if refs := g.data()["confirmedProcessRefs"].([]any); len(refs) != 1 || refs[0].(map[string]any)["id"] != proc["id"] {
		t.Fatalf("confirmed refs %s", g.raw)
	}
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}
}

// Other modes answer 202 at once; the run is read until it has finished. Observations
// alone (source_kinds) find their own process.
func TestDiscoveryRunObservationsAsync(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	t0 := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	var obs []any
	for c := range 3 {
		for i, st := range []string{"draft", "legal_review", "sign"} {
			obs = append(obs, map[string]any{"case_id": fmt.Sprintf("contract-%d", c), "stage": st, "at": t0.Add(time.Duration(c*10+i) * time.Hour)})
		}
	}
	r := e.do(request{method: "POST", path: "/discovery-runs", key: key, body: map[string]any{"mode": "deep_search",
		"source_kinds": []any{"observations"}, "observations": obs, "query": "contracts"}})
	expect(t, r, http.StatusAccepted, "")
	id := r.data()["run"].(map[string]any)["id"].(string)
	var got response
	storetest.WaitFor(t, 30*time.Second, "the run to finish", func() bool {
		got = e.do(request{method: "GET", path: "/discovery-runs/{runId}", params: map[string]string{"runId": id}, key: key})
		return got.data()["run"].(map[string]any)["status"] == "succeeded"
	})
	cards := got.data()["processCards"].([]any)
	if len(cards) != 1 || !slices.Equal(stageKeys(cards[0].(map[string]any)), []string{"draft", "legal_review", "sign"}) ||
		cards[0].(map[string]any)["stages"].([]any)[1].(map[string]any)["name"] != "Legal review" || len(got.data()["observations"].([]any)) != 9 {
		t.Fatalf("run %s", got.raw)
	}
	l := e.do(request{method: "GET", path: "/discovery-runs", key: key})
	if runs := l.dataList(); len(runs) != 1 || toJSON(runs[0]) != toJSON(got.rawBody.(map[string]any)["data"]) {
		t.Fatalf("list %s", l.raw)
	}
}

// A run mines everything committed before it was requested, even while an unrelated
// transaction, open since before those events were written, holds the event stream's
// horizon back: the run waits until the stream has passed its own request.
func TestDiscoveryRunWaitsForItsRequestToReachTheStream(t *testing.T) {
	e := newEnv(t, nil)
	key := storetest.NewTenant(t, e.db).Key
	blocker := storetest.Conn(t)
	tx, err := blocker.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `SELECT pg_current_xact_id()`); err != nil { // takes a transaction id: the horizon stops here
		t.Fatal(err)
	}
	for i := range 2 {
		for _, st := range [][2]string{{"intake", "triage"}, {"triage", "fix"}} {
			expect(t, e.do(request{method: "POST", path: "/handoffs", key: key, body: map[string]any{"handoff_key": fmt.Sprintf("held-%d", i),
				"from_stage_key": st[0], "to_stage_key": st[1], "title": "held"}}), http.StatusCreated, "")
		}
	}
	released := make(chan struct{})
	go func() {
		defer close(released)
		// Holding on purpose: the horizon stays held while the run is requested, so the run
		// has to wait for it (nothing reports that the run is waiting to release it after).
		time.Sleep(time.Second)
		tx.Rollback(context.Background()) //nolint:errcheck // only releases the horizon
	}()
	r := e.do(request{method: "POST", path: "/discovery-runs", key: key, body: map[string]any{"source_kinds": []any{"handoffs"}}})
	<-released
	expect(t, r, http.StatusCreated, "")
	run, cards := r.data()["run"].(map[string]any), r.data()["processCards"].([]any)
	if run["status"] != "succeeded" || run["counts"].(map[string]any)["eventsRead"] != 4.0 || len(cards) != 1 ||
		cards[0].(map[string]any)["support"] != 2.0 {
		t.Fatalf("run %s", r.raw)
	}
}

// A team that never sets case metadata: plain POST /work and completions (the concurrency
// block read from GET /work/{id}, as the clients do) of three posts, each drafted, reviewed
// and published, interleaved, beside one-off work. Discovery finds the process, says why
// its cases were grouped, and the candidate becomes a proposed operating process.
func TestDiscoveryFindsProcessInOrdinaryWork(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key, ws := tenant.Key, tenant.Principal.WorkspaceID
	create := func(title string) string {
		r := e.do(request{method: "POST", path: "/work", key: key, headers: map[string]string{"Idempotency-Key": uniqueKey("ordinary")},
			body: map[string]any{"title": title, "description": nil, "priority": "medium", "metadata": map[string]any{}}})
		expect(t, r, http.StatusCreated, "")
		return r.data()["taskId"].(string)
	}
	complete := func(id string) {
		c := getWork(t, e, key, id)["concurrency"].(map[string]any)
		expect(t, e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id}, key: key,
			body: map[string]any{"version_token": c["version_token"], "summary": "done"}}), http.StatusOK, "")
	}
	ids := map[string]string{}
	for _, n := range []int{12, 13, 14} {
		for _, stage := range []string{"Draft", "Review", "Publish"} {
			title := fmt.Sprintf("%s post %d", stage, n)
			ids[title] = create(title)
		}
	}
	create("Draft post 15") // not done yet: not mined
	for _, stage := range []string{"Draft", "Review", "Publish"} {
		for _, n := range []int{12, 13, 14} {
			complete(ids[fmt.Sprintf("%s post %d", stage, n)])
		}
		if stage == "Draft" {
			complete(create("Weekly sync")) // one-off work between the stages
		}
	}

	r := e.do(request{method: "POST", path: "/discovery-runs", key: key, body: map[string]any{"mode": "bounded_sync"}})
	expect(t, r, http.StatusCreated, "")
	run, cards := r.data()["run"].(map[string]any), r.data()["processCards"].([]any)
	counts := run["counts"].(map[string]any)
	if run["status"] != "succeeded" || counts["cases"] != 3.0 || counts["candidates"] != 1.0 || counts["eventsRead"] != 10.0 || len(cards) != 1 {
		t.Fatalf("run %s", r.raw)
	}
	card := cards[0].(map[string]any)
	var names []string
	for _, s := range card["stages"].([]any) {
		names = append(names, s.(map[string]any)["name"].(string))
	}
	if !slices.Equal(stageKeys(card), []string{"draft_post", "review_post", "publish_post"}) ||
		!slices.Equal(names, []string{"Draft post", "Review post", "Publish post"}) || card["support"] != 3.0 ||
		card["name"] != "Draft post → Publish post" || len(card["citations"].([]any)) != 9 {
		t.Fatalf("card %s", r.raw)
	}
	grouping := card["grouping"].([]any)
	if len(grouping) != 1 || toJSON(grouping[0]) != toJSON(map[string]any{"rule": "title_identifier", "cases": 3,
		"evidence": "shared identifier in titles: post 12, post 13, post 14"}) {
		t.Fatalf("grouping %s", r.raw)
	}

	// The same ledger read again (GET) says the same, grouping included.
	runID := run["id"].(string)
	g := e.do(request{method: "GET", path: "/discovery-runs/{runId}", params: map[string]string{"runId": runID}, key: key})
	expect(t, g, http.StatusOK, "")
	if toJSON(g.data()["processCards"]) != toJSON(cards) {
		t.Fatalf("read back %s", g.raw)
	}

	p := e.do(request{method: "POST", path: "/discovery-runs/{runId}/propose", params: map[string]string{"runId": runID}, key: key,
		headers: map[string]string{"Idempotency-Key": uniqueKey("propose-ordinary")},
		body:    map[string]any{"workspace_id": ws, "process_candidate_id": card["id"]}})
	expect(t, p, http.StatusCreated, "")
	proc, rev := p.data()["process"].(map[string]any), p.data()["revision"].(map[string]any)
	checkProcessShapes(t, ws, proc, rev, p.data()["ledger"].(map[string]any))
	if p.meta()["requiresConfirmation"] != true || proc["lifecycleState"] != "discovered" || proc["provenanceMode"] != "observed" ||
		proc["name"] != "Draft post → Publish post" || len(rev["stages"].([]any)) != 3 ||
		rev["stages"].([]any)[1].(map[string]any)["key"] != "review_post" {
		t.Fatalf("proposal %s", p.raw)
	}
	l := e.do(request{method: "GET", path: "/operating-processes/{processId}", params: map[string]string{"processId": proc["id"].(string)}, key: key})
	expect(t, l, http.StatusOK, "")

	// The OpenAPI document (and so MCP, whose tools are its operations) shows the member.
	doc := e.do(request{method: "GET", path: "/openapi.json"}).body
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	cardSchema, groupingSchema := schemas["ProcessCard"].(map[string]any), schemas["CaseGrouping"].(map[string]any)
	rules := schemas["GroupingRule"].(map[string]any)["enum"].([]any)
	if cardSchema["properties"].(map[string]any)["grouping"] == nil || !slices.Contains(cardSchema["required"].([]any), any("grouping")) ||
		!slices.Equal(sorted(keysOf(groupingSchema["properties"].(map[string]any))), []string{"cases", "evidence", "rule"}) ||
		!slices.Contains(rules, any("title_identifier")) || !slices.Contains(rules, any("case_metadata")) {
		t.Fatalf("document: ProcessCard %s, CaseGrouping %s, rules %v", toJSON(cardSchema), toJSON(groupingSchema), rules)
	}
}

// What the run reads besides the completion: the creating command's correlation_id (from
// the work item's first ledger event) and identifiers among the metadata's scalar members
// (a number here), each in a workspace of its own.
func TestDiscoveryGroupsOrdinaryWorkByItsLinks(t *testing.T) {
	e := newEnv(t, nil)
	for _, c := range []struct {
		name     string
		body     func(n int, title string) map[string]any
		grouping map[string]any
	}{
		{"correlation_id", func(n int, title string) map[string]any {
			return map[string]any{"title": title, "correlation_id": fmt.Sprintf("order-%d", n)}
		}, map[string]any{"rule": "correlation_id", "cases": 2, "evidence": "same correlation_id: order-1, order-2"}},
		{"metadata", func(n int, title string) map[string]any {
			return map[string]any{"title": title, "metadata": map[string]any{"order_number": n, "agent_id": "packer-bot"}}
		}, map[string]any{"rule": "metadata_identifier", "cases": 2, "evidence": "shared identifier in metadata: order_number=1, order_number=2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := storetest.NewTenant(t, e.db).Key
			for n := 1; n <= 2; n++ {
				for _, title := range []string{"Pick items", "Pack box", "Ship"} {
					r := e.do(request{method: "POST", path: "/work", key: key, headers: map[string]string{"Idempotency-Key": uniqueKey("link")}, body: c.body(n, title)})
					expect(t, r, http.StatusCreated, "")
					id := r.data()["taskId"].(string)
					token := getWork(t, e, key, id)["concurrency"].(map[string]any)["version_token"]
					expect(t, e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id}, key: key,
						body: map[string]any{"version_token": token}}), http.StatusOK, "")
				}
			}
			r := e.do(request{method: "POST", path: "/discovery-runs", key: key, body: map[string]any{"source_kinds": []any{"work"}}})
			expect(t, r, http.StatusCreated, "")
			cards := r.data()["processCards"].([]any)
			if len(cards) != 1 || !slices.Equal(stageKeys(cards[0].(map[string]any)), []string{"pick_items", "pack_box", "ship"}) ||
				toJSON(cards[0].(map[string]any)["grouping"]) != toJSON([]any{c.grouping}) {
				t.Fatalf("run %s", r.raw)
			}
		})
	}
}
