package api_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
)

// browserImage is the Accept header of a browser's <img>.
const browserImage = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"

// svgOf fails unless r is a 200 SVG, well-formed XML with an <svg> root, that varies by
// Accept, and returns its text.
func svgOf(t *testing.T, r response) string {
	t.Helper()
	expect(t, r, http.StatusOK, "")
	if mt, _, _ := mime.ParseMediaType(r.header.Get("Content-Type")); mt != "image/svg+xml" {
		t.Fatalf("Content-Type %q: %s", r.header.Get("Content-Type"), r.raw)
	}
	if !strings.Contains(r.header.Get("Vary"), "Accept") {
		t.Fatalf("Vary %q", r.header.Get("Vary"))
	}
	dec := xml.NewDecoder(bytes.NewReader(r.raw))
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v\n%s", err, r.raw)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Fatalf("root %q", root)
	}
	return string(r.raw)
}

// isJSON fails unless r is JSON (the envelope), varying by Accept.
func isJSON(t *testing.T, r response) {
	t.Helper()
	if mt, _, _ := mime.ParseMediaType(r.header.Get("Content-Type")); mt != "application/json" || r.body == nil {
		t.Fatalf("Content-Type %q: %s", r.header.Get("Content-Type"), r.raw)
	}
	if !strings.Contains(r.header.Get("Vary"), "Accept") {
		t.Fatalf("Vary %q", r.header.Get("Vary"))
	}
}

// The operating map answers an SVG graph to a request that prefers it, the same bytes
// each time, with the workspace's stages and handoff counts, and JSON otherwise.
func TestOperatingMapSVG(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	r := e.do(request{method: "POST", path: "/operating-processes", key: key, headers: map[string]string{"Idempotency-Key": uniqueKey("p")},
		body: map[string]any{"name": "Onboarding <&> pictures", "purpose": "Bring a customer live.", "stages": []any{
			map[string]any{"key": "kickoff", "name": "Kickoff"}, map[string]any{"key": "setup", "name": "Set up"}, map[string]any{"key": "live", "name": "Go live"}}}})
	expect(t, r, http.StatusCreated, "")
	proc := r.data()["process"].(map[string]any)["id"].(string)
	for i := range 3 {
		h := createHandoff(t, e, key, map[string]any{"from_stage_key": "setup", "to_stage_key": "live"})
		if i == 0 {
			expect(t, handoffAct(e, key, h["id"].(string), "claim", nil), http.StatusOK, "")
			expect(t, handoffAct(e, key, h["id"].(string), "fulfill", map[string]any{}), http.StatusOK, "")
		}
	}
	get := func(key string, headers map[string]string) response {
		return e.do(request{method: "GET", path: "/operating-map", key: key, headers: headers})
	}
	m := get(key, map[string]string{"Accept": "application/json"})
	isJSON(t, m)
	edge := m.data()["handoffEdges"].([]any)[0].(map[string]any)
	if edge["handoffs"] != 3.0 || edge["open"] != 2.0 || edge["fulfilled"] != 1.0 || edge["breached"] != 0.0 || edge["medianFulfilmentSeconds"] == nil {
		t.Fatalf("edge %v", edge)
	}
	isJSON(t, get(key, nil))
	isJSON(t, get(key, map[string]string{"Accept": "*/*"}))

	svg := svgOf(t, get(key, map[string]string{"Accept": browserImage}))
	for _, want := range []string{"Onboarding &lt;&amp;&gt; pictures", "Kickoff", "Set up", "Go live", "3 handoffs", "2 open", "0 breached", "median fulfil",
		"proposed, not confirmed", "stroke-dasharray"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the map lacks %q:\n%s", want, svg)
		}
	}
	if again := svgOf(t, get(key, map[string]string{"Accept": "image/svg+xml"})); again != svg {
		t.Fatal("the same map drew two pictures")
	}
	// Confirmed, its border is solid.
	(&owner{t: t, e: e, tenant: tenant}).moveProcess(proc, "confirm")
	confirmed := svgOf(t, get(key, map[string]string{"Accept": "image/svg+xml"}))
	if !strings.Contains(confirmed, "confirmed · declared") || strings.Contains(confirmed, "proposed, not confirmed") {
		t.Fatalf("the confirmed map:\n%s", confirmed)
	}
	// Another workspace's map shows none of it.
	stranger := storetest.NewTenant(t, e.db)
	other := svgOf(t, get(stranger.Key, map[string]string{"Accept": "image/svg+xml"}))
	for _, s := range []string{"Onboarding", "Kickoff", "setup", tenant.Principal.WorkspaceID} {
		if strings.Contains(other, s) {
			t.Fatalf("the stranger's map shows %q", s)
		}
	}
	if !strings.Contains(other, "No processes or handoffs yet") {
		t.Fatalf("the stranger's map:\n%s", other)
	}
}

// A launch answers an SVG timeline to a request that prefers it: a row per job, the cost
// and the blocking decision as text, the same bytes each time; another workspace's launch
// is the JSON 404 whatever it accepts, and the owner's picture shows nothing of another
// workspace.
func TestLaunchTimelineSVG(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	initiative := launchable(t, e, key)
	id := launchIt(t, e, key, initiative, 1200)["launch_id"].(string)
	l := waitLaunch(t, e, key, id, "the blocked job and the other's run", func(l map[string]any) bool {
		return l["state"] == "blocked" && len(runsOf(l)) == 1
	})
	run := runsOf(l)[0].(map[string]any)
	if run["job_id"] == nil || run["created_at"] == nil || run["finalized_at"] != nil {
		t.Fatalf("run %v", run)
	}
	// A stranger with a launch of its own.
	stranger := storetest.NewTenant(t, e.db)
	theirs := launchIt(t, e, stranger.Key, launchable(t, e, stranger.Key), 100000)["launch_id"].(string)

	get := func(key, launch string, headers map[string]string) response {
		return e.do(request{method: "GET", path: "/launches/{launchId}", params: map[string]string{"launchId": launch}, key: key, headers: headers})
	}
	svg := svgOf(t, get(key, id, map[string]string{"Accept": browserImage}))
	for _, j := range l["jobs"].([]any) {
		if !strings.Contains(svg, `id="job-`+j.(map[string]any)["job_id"].(string)+`"`) {
			t.Errorf("no row for job %v", j)
		}
	}
	for _, want := range []string{"BLOCKED on decision", "budget_ceiling_exceeded", "reserved $10.00", "dispatched +", "not ended"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, svg)
		}
	}
	if again := svgOf(t, get(key, id, map[string]string{"Accept": "image/svg+xml"})); again != svg {
		t.Fatal("the same launch drew two pictures")
	}
	for _, s := range []string{theirs, stranger.Principal.WorkspaceID, stranger.Principal.UserID} {
		if strings.Contains(svg, s) {
			t.Fatalf("the owner's timeline shows the stranger's %q", s)
		}
	}
	isJSON(t, get(key, id, nil))

	// The run ends and, once the decision is declined, the launch settles: the timeline
	// says what each job cost.
	expect(t, finalize(e, key, run["id"].(string), map[string]any{"status": "succeeded", "outcome_kind": "shipped", "cost_cents": 800}), http.StatusOK, "")
	d := l["blocking_decision"].(map[string]any)
	expect(t, e.do(request{method: "POST", path: "/decisions/{decisionId}/decline", params: map[string]string{"decisionId": d["id"].(string)},
		key: key, body: map[string]any{}}), http.StatusOK, "")
	l = waitLaunch(t, e, key, id, "the settlement", func(l map[string]any) bool { return l["state"] == "completed" })
	receipt := l["receipts"].([]any)[0].(map[string]any)
	if receipt["job_id"] != run["job_id"] || receipt["settled_at"] == nil || receipt["settled_cents"] != 800.0 {
		t.Fatalf("receipt %v", receipt)
	}
	if runsOf(l)[0].(map[string]any)["finalized_at"] == nil {
		t.Fatalf("run %v", runsOf(l)[0])
	}
	settled := svgOf(t, get(key, id, map[string]string{"Accept": "image/svg+xml"}))
	for _, want := range []string{"No decision blocks this launch", "settled $8.00 settled", "ran ", "succeeded, shipped", "cancelled"} {
		if !strings.Contains(settled, want) {
			t.Errorf("the settled timeline lacks %q:\n%s", want, settled)
		}
	}

	// The stranger asking for the owner's launch as a picture gets the JSON 404 of a
	// launch never made.
	for _, accept := range []string{"image/svg+xml", browserImage, "application/json"} {
		refused := get(stranger.Key, id, map[string]string{"Accept": accept})
		expect(t, refused, http.StatusNotFound, accountable.ECodeNotFound)
		isJSON(t, refused)
		never := get(stranger.Key, "0190c7a2-0000-7000-8000-000000000000", map[string]string{"Accept": accept})
		expect(t, never, http.StatusNotFound, accountable.ECodeNotFound)
		if refused.errorObj()["message"] != never.errorObj()["message"] {
			t.Fatalf("another's launch %s, a launch never made %s", refused.raw, never.raw)
		}
		if strings.Contains(string(refused.raw), tenant.Principal.WorkspaceID) {
			t.Fatalf("the refusal shows the owner's workspace: %s", refused.raw)
		}
	}
}

// The document describes the pictures: image/svg+xml beside JSON in the success answers
// of getOperatingMap and getLaunch.
func TestPicturesDocumented(t *testing.T) {
	e := newEnv(t, nil)
	paths := e.oas.doc["paths"].(map[string]any)
	for _, p := range []string{"/operating-map", "/launches/{launchId}"} {
		content := paths[p].(map[string]any)["get"].(map[string]any)["responses"].(map[string]any)["200"].(map[string]any)["content"].(map[string]any)
		if content["image/svg+xml"] == nil || content["application/json"] == nil {
			t.Fatalf("%s: %v", p, content)
		}
	}
}

// A workspace has one picture drawn at a time: while its turn is held (a layout of its map
// running), its next picture waits, then is refused 429 rate_limited with Retry-After; its
// JSON and another workspace's pictures are not held up.
func TestPicturesOneAtATimePerWorkspace(t *testing.T) {
	e := newEnv(t, nil)
	e.server.SetPictureWait(200 * time.Millisecond)
	busy, other := storetest.NewTenant(t, e.db), storetest.NewTenant(t, e.db)
	get := func(key, accept string) response {
		return e.do(request{method: "GET", path: "/operating-map", key: key, headers: map[string]string{"Accept": accept}})
	}
	release, ok := e.server.HoldPictureTurn(busy.Principal.WorkspaceID)
	if !ok {
		t.Fatal("no turn for a workspace drawing nothing")
	}
	started := time.Now()
	r := get(busy.Key, "image/svg+xml")
	expect(t, r, http.StatusTooManyRequests, accountable.ECodeRateLimited)
	if waited := time.Since(started); waited < 200*time.Millisecond || r.header.Get("Retry-After") == "" {
		t.Fatalf("refused after %s, Retry-After %q", waited, r.header.Get("Retry-After"))
	}
	isJSON(t, get(busy.Key, "application/json"))
	svgOf(t, get(other.Key, "image/svg+xml"))
	release()
	svgOf(t, get(busy.Key, "image/svg+xml"))
}
