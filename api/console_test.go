package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// consolePages are the console's pages with the nav link that leads to each.
var consolePages = []struct{ name, path, heading string }{
	{"work", "/console", "Work at a glance"},
	{"handoffs", "/console/handoffs", "Handoffs at risk"},
	{"ledger", "/console/ledger", "The ledger"},
	{"launches", "/console/launches", "Launches"},
	{"map", "/console/map", "Operating map"},
}

// consoleSeed is what a workspace's console shows, seeded through the API.
type consoleSeed struct {
	ten      storetest.Tenant
	marker   string // in a task's title, a receipt's summary and the handoffs' titles
	launchID string
	receipt  string // the completed task's receipt, as GET /work/{taskId}/receipt answers it
}

func seedConsole(t *testing.T, e *env, ten storetest.Tenant, marker string, launch bool) consoleSeed {
	t.Helper()
	s := consoleSeed{ten: ten, marker: marker}
	key, ws := ten.Key, ten.Principal.WorkspaceID
	createWork(t, e, key, marker+" open task")
	done := createWork(t, e, key, marker+" done task")
	w := getWork(t, e, key, done)
	expect(t, e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": done}, key: key,
		body: map[string]any{"version_token": w["concurrency"].(map[string]any)["version_token"], "summary": marker + " shipped",
			"cost_cents": 420, "evidence": map[string]any{"links": []any{"https://example.com/pr/7"}}}}), http.StatusOK, "")

	breached := createHandoff(t, e, key, map[string]any{"title": marker + " overdue handoff", "sla_minutes": 1})
	if _, err := e.db.BreachHandoffSLA(context.Background(), ws, breached["id"].(string)); err != nil {
		t.Fatal(err)
	}
	createHandoff(t, e, key, map[string]any{"title": marker + " handoff with time", "sla_minutes": 600})
	createHandoff(t, e, key, map[string]any{"title": marker + " handoff without SLA"})

	expect(t, e.do(request{method: "POST", path: "/operating-processes", key: key, headers: map[string]string{"Idempotency-Key": uniqueKey("process")},
		body: map[string]any{"name": marker + " process", "purpose": "Review changes", "stages": []any{map[string]any{"key": "build", "name": "Build"},
			map[string]any{"key": "review", "name": "Review"}}}}), http.StatusCreated, "")
	if launch {
		s.launchID = launchIt(t, e, key, launchable(t, e, key), 100_000)["launch_id"].(string)
	}
	expect(t, e.do(request{method: "POST", path: "/events/verifications", key: key}), http.StatusAccepted, "")

	receiptOf := request{method: "GET", path: "/work/{taskId}/receipt", params: map[string]string{"taskId": done}, key: key}
	storetest.WaitFor(t, 20*time.Second, "the receipt's ledger proof", func() bool {
		r := e.do(receiptOf)
		if r.data()["ledger_proof"] == nil {
			return false
		}
		s.receipt = toJSON(r.data())
		return true
	})
	return s
}

// The console in headless Chromium: signed out, a console page leads to the sign-in page
// and back; every page renders the workspace's seeded data; the nav's links lead to their
// pages and are reached with Tab in order; a pasted receipt checks; the workspace switcher
// shows another workspace of the user's, without the first one's data; and a user of
// another workspace sees none of it on any page, nor the first one's launch by its URL.
// CONSOLE_SCREENSHOTS=1 writes each page to docs/console-<page>.png.
func TestConsoleInChromium(t *testing.T) {
	e := newEnv(t, nil)
	a := seedConsole(t, e, newPerson(t, e), "alpha-"+uniqueKey("m"), true)
	b := seedConsole(t, e, newPerson(t, e), "bravo-"+uniqueKey("m"), false)
	// A's user is a member of a second workspace too (the switcher's).
	other := storetest.NewTenant(t, e.db)
	if _, err := e.db.CreateUser(context.Background(), store.CreateKeyRequest{UserEmail: a.ten.Principal.UserEmail, WorkspaceID: other.Principal.WorkspaceID}); err != nil {
		t.Fatal(err)
	}
	createWork(t, e, other.Key, "charlie task of the second workspace")

	ctx := newChromium(t)
	var location string
	run := func(actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatal(err)
		}
	}
	signIn := func(email string) {
		t.Helper()
		run(chromedp.WaitVisible(`#email`, chromedp.ByID),
			chromedp.SendKeys(`#email`, email, chromedp.ByID),
			chromedp.SendKeys(`#password`, testPassword, chromedp.ByID),
			chromedp.Click(`#sign-in`, chromedp.ByID),
			chromedp.WaitVisible(`main h1`, chromedp.ByQuery),
			chromedp.Location(&location))
	}
	html := func() string {
		t.Helper()
		var h string
		run(chromedp.OuterHTML(`html`, &h, chromedp.ByQuery))
		return h
	}

	// Signed out: to the sign-in page, and back to the page asked for.
	run(chromedp.Navigate(e.base + "/console/handoffs"))
	signIn(a.ten.Principal.UserEmail)
	if !strings.HasSuffix(location, "/console/handoffs") {
		t.Fatalf("after sign-in at %s, not back at the handoffs", location)
	}

	screenshots := os.Getenv("CONSOLE_SCREENSHOTS") != ""
	shot := func(name string) {
		t.Helper()
		if !screenshots {
			return
		}
		var png []byte
		run(chromedp.FullScreenshot(&png, 100))
		if err := os.WriteFile(filepath.Join("..", "docs", "console-"+name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Each page by its nav link, with the workspace's data.
	wants := map[string][]string{
		"work":     {a.marker + " done task", a.marker + " shipped", `data-status="completed"`},
		"handoffs": {a.marker + " overdue handoff", "SLA breached", "escalated", "decision ", "pending", a.marker + " handoff with time", "left"},
		"ledger":   {"Tree size", "events", "Root hash", "Last verification", "Newest events", "sha256:"},
		"launches": {a.launchID[len(a.launchID)-8:], "Two lanes", "$1000.00"},
		"map": {`id="map-counts">1 process (1 discovered or proposed, not confirmed), 1 handoff edge (1 with a breached SLA).`,
			"Handoff edges", "build", "review", a.marker + " process", "Build → Review", "proposed, not confirmed (declared)"},
	}
	for _, p := range consolePages {
		var heading string
		run(chromedp.Click(`nav a[href="`+p.path+`"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`nav a[href="`+p.path+`"][aria-current=page]`, chromedp.ByQuery),
			chromedp.Location(&location),
			chromedp.Text(`main h1`, &heading, chromedp.ByQuery))
		if u, _ := url.Parse(location); u.Path != p.path || heading != p.heading {
			t.Fatalf("the nav link to %s led to %s (%q)", p.path, location, heading)
		}
		page := html()
		for _, want := range wants[p.name] {
			if !strings.Contains(page, want) {
				t.Errorf("the %s page lacks %q", p.name, want)
			}
		}
		if !strings.Contains(page, `href="`+p.path+`" class="nav-link" aria-current="page"`) {
			t.Errorf("the %s page does not mark its nav link as the current page", p.name)
		}
		if p.name == "handoffs" && (!strings.Contains(page, `<noscript><meta http-equiv="refresh" content="30"></noscript>`) ||
			!strings.Contains(page, `<script src="/console/live.js" data-after="`)) {
			t.Error("the handoffs page neither follows the stream nor, without script, refreshes itself")
		}
		if p.name == "handoffs" && strings.Index(page, a.marker+" overdue handoff") > strings.Index(page, a.marker+" handoff with time") {
			t.Error("the breached handoff is not listed first")
		}
		shot(p.name)
	}

	// Live: the handoffs page follows the stream; a handoff proposed elsewhere appears on it
	// with no reload by the user.
	run(chromedp.Navigate(e.base+"/console/handoffs"), chromedp.WaitVisible(`main h1`, chromedp.ByQuery))
	time.Sleep(500 * time.Millisecond) // the script's stream is open
	createHandoff(t, e, a.ten.Key, map[string]any{"title": a.marker + " live handoff"})
	storetest.WaitFor(t, 20*time.Second, "the handoffs page to show the new handoff by itself", func() bool {
		var h string // read between reloads: a read the reload interrupts is tried again
		return chromedp.Run(ctx, chromedp.OuterHTML(`html`, &h, chromedp.ByQuery)) == nil && strings.Contains(h, a.marker+" live handoff")
	})

	// The launch's own page: its jobs, and the timeline picture's place.
	run(chromedp.Navigate(e.base+"/console/launches"), chromedp.Click(`a.launch-link`, chromedp.ByQuery),
		chromedp.WaitVisible(`#jobs`, chromedp.ByID), chromedp.Location(&location))
	page := html()
	for _, want := range []string{a.launchID, `src="/api/v1/launches/` + a.launchID + `"`, "Timeline of launch", "Alpha", "Beta", "Blocking decision"} {
		if !strings.Contains(page, want) {
			t.Errorf("the launch page lacks %q", want)
		}
	}
	// The timeline picture loads: the API answers the browser's image Accept with SVG.
	var loaded bool
	run(chromedp.Poll(`document.querySelector('img.picture').complete && document.querySelector('img.picture').naturalWidth > 0`, &loaded,
		chromedp.WithPollingTimeout(10*time.Second)))
	shot("launch")

	// Keyboard: Tab from the top reaches the switcher, sign-out, then every nav link in order.
	run(chromedp.Navigate(e.base+"/console"), chromedp.WaitVisible(`main h1`, chromedp.ByQuery))
	var focused []string
	for range 12 {
		var label string
		run(chromedp.KeyEvent(kb.Tab), chromedp.Evaluate(`(document.activeElement.getAttribute('href') || document.activeElement.id || document.activeElement.tagName)`, &label))
		focused = append(focused, label)
	}
	order := []string{"workspace-id", "switch", "sign-out", "/console", "/console/handoffs", "/console/ledger", "/console/launches", "/console/map", "/settings/api-keys"}
	if strings.Join(focused[:len(order)], " ") != strings.Join(order, " ") {
		t.Fatalf("Tab focused %v, want %v first", focused, order)
	}

	// A receipt pasted into the ledger page checks; the same receipt changed does not.
	check := func(receipt string) string {
		t.Helper()
		var verdict string
		run(chromedp.Navigate(e.base+"/console/ledger"), chromedp.WaitVisible(`#receipt`, chromedp.ByID),
			chromedp.SetValue(`#receipt`, receipt, chromedp.ByID), chromedp.Click(`#check-receipt`, chromedp.ByID),
			chromedp.WaitVisible(`#verdict`, chromedp.ByID), chromedp.Text(`#verdict`, &verdict, chromedp.ByID))
		return verdict
	}
	if v := check(a.receipt); !strings.HasPrefix(v, "Valid:") {
		t.Fatalf("the receipt's verdict: %s", v)
	}
	shot("ledger-check")
	if v := check(strings.Replace(a.receipt, `"cost_cents":420`, `"cost_cents":4200`, 2)); !strings.HasPrefix(v, "Not valid") {
		t.Fatalf("a forged receipt's verdict: %s", v)
	}
	if v := check(b.receipt); !strings.HasPrefix(v, "Not valid") {
		t.Fatalf("another workspace's receipt's verdict: %s", v)
	}

	// The switcher: the second workspace's console, without the first one's data; and back.
	run(chromedp.Navigate(e.base+"/console/handoffs"), chromedp.WaitVisible(`#workspace-id`, chromedp.ByID),
		chromedp.SetValue(`#workspace-id`, other.Principal.WorkspaceID, chromedp.ByID), chromedp.Click(`#switch`, chromedp.ByID),
		chromedp.WaitReady(`option[value="`+other.Principal.WorkspaceID+`"][selected]`, chromedp.ByQuery), chromedp.Location(&location))
	if !strings.HasSuffix(location, "/console/handoffs") {
		t.Fatalf("after switching at %s", location)
	}
	seen := visitAll(t, ctx, e, html)
	if strings.Contains(seen, a.marker) || strings.Contains(seen, a.launchID) {
		t.Fatal("the second workspace's console shows the first one's data")
	}
	run(chromedp.Navigate(e.base+"/console/launches/"+a.launchID), chromedp.WaitVisible(`main h1`, chromedp.ByQuery))
	if p := html(); !strings.Contains(p, "no launch with that id") || strings.Contains(p, "Alpha") {
		t.Fatal("the first workspace's launch is shown in the second one's console")
	}
	run(chromedp.Navigate(e.base+"/console"), chromedp.WaitVisible(`#workspace-id`, chromedp.ByID),
		chromedp.SetValue(`#workspace-id`, a.ten.Principal.WorkspaceID, chromedp.ByID), chromedp.Click(`#switch`, chromedp.ByID),
		chromedp.WaitReady(`option[value="`+a.ten.Principal.WorkspaceID+`"][selected]`, chromedp.ByQuery))
	if p := html(); !strings.Contains(p, a.marker) {
		t.Fatal("switching back does not show the first workspace")
	}

	// From the settings page to the console and back.
	run(chromedp.Click(`nav a[href="/settings/api-keys"]`, chromedp.ByQuery), chromedp.WaitVisible(`#key-name`, chromedp.ByID),
		chromedp.Click(`#to-console`, chromedp.ByID), chromedp.WaitVisible(`main h1`, chromedp.ByQuery), chromedp.Location(&location))
	if u, _ := url.Parse(location); u.Path != "/console" {
		t.Fatalf("the settings page's console link led to %s", location)
	}

	// Another workspace's user sees none of A's data on any page.
	run(chromedp.Click(`#sign-out`, chromedp.ByID), chromedp.WaitVisible(`#email`, chromedp.ByID), chromedp.Navigate(e.base+"/console"))
	signIn(b.ten.Principal.UserEmail)
	seen = visitAll(t, ctx, e, html)
	for _, marker := range []string{a.marker, a.launchID, a.ten.Principal.WorkspaceID, a.ten.Principal.UserEmail, other.Principal.WorkspaceID} {
		if strings.Contains(seen, marker) {
			t.Errorf("workspace B's console shows %q of workspace A", marker)
		}
	}
	if !strings.Contains(seen, b.marker+" done task") || !strings.Contains(seen, b.marker+" overdue handoff") {
		t.Error("workspace B's console does not show its own data")
	}
	if strings.Contains(seen, `id="workspace-id"`) {
		t.Error("a member of one workspace is offered a switcher")
	}
	run(chromedp.Navigate(e.base+"/console/launches/"+a.launchID), chromedp.WaitVisible(`main h1`, chromedp.ByQuery))
	if p := html(); !strings.Contains(p, "no launch with that id") || strings.Contains(p, "Alpha") {
		t.Fatal("workspace A's launch is shown to workspace B")
	}
}

// visitAll reads every console page (and the launches' own) and returns them together.
func visitAll(t *testing.T, ctx context.Context, e *env, html func() string) string {
	t.Helper()
	var all strings.Builder
	for _, p := range consolePages {
		if err := chromedp.Run(ctx, chromedp.Navigate(e.base+p.path), chromedp.WaitVisible(`main h1`, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		all.WriteString(html())
		if p.name != "launches" {
			continue
		}
		var links []*cdp.Node
		if err := chromedp.Run(ctx, chromedp.Nodes(`a.launch-link`, &links, chromedp.ByQueryAll, chromedp.AtLeast(0))); err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			if err := chromedp.Run(ctx, chromedp.Navigate(e.base+l.AttributeValue("href")), chromedp.WaitVisible(`main h1`, chromedp.ByQuery)); err != nil {
				t.Fatal(err)
			}
			all.WriteString(html())
		}
	}
	return all.String()
}

// The console's sign-in and switcher over plain HTTP: signed out, a console page sends the
// browser to sign in and back (never to another site); the switcher needs the CSRF token
// and a workspace the user is a member of.
func TestConsoleSignInAndSwitcher(t *testing.T) {
	e := newEnv(t, nil)
	ten := newPerson(t, e)
	stranger := storetest.NewTenant(t, e.db)
	br := newBrowser(t, e)

	res, _ := br.get("/console/ledger")
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/sign-in?next=%2Fconsole%2Fledger" {
		t.Fatalf("signed out: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	for next, want := range map[string]string{
		"/console/ledger": "/console/ledger", "/console?x=1": "/console?x=1", "//evil.example/console": "/settings/api-keys",
		"https://evil.example/console": "/settings/api-keys", "/console/../settings": "/settings/api-keys",
		"/consolex": "/settings/api-keys", "/console\\@evil.example": "/settings/api-keys",
	} {
		_, page := br.get("/sign-in?next=" + url.QueryEscape(next))
		res, _ := br.post("/sign-in", url.Values{"csrf": {csrfOf(t, page)}, "email": {ten.Principal.UserEmail}, "password": {testPassword},
			"next": {next}})
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != want {
			t.Errorf("sign-in with next %q: %d to %s, want %s", next, res.StatusCode, res.Header.Get("Location"), want)
		}
	}

	res, page := br.get("/console")
	if res.StatusCode != http.StatusOK || !strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'none'") ||
		strings.Contains(page, "<script") || strings.Contains(page, `id="workspace-id"`) {
		t.Fatalf("the console: %d %s", res.StatusCode, page)
	}
	for _, p := range consolePages {
		if res, page := br.get(p.path); res.StatusCode != http.StatusOK || !strings.Contains(page, "<h1>"+p.heading+"</h1>") {
			t.Fatalf("%s: %d %s", p.path, res.StatusCode, page)
		}
	}
	csrf := csrfOf(t, page)
	switchTo := func(ws, token string) int {
		res, _ := br.post("/console/workspace", url.Values{"csrf": {token}, "workspace_id": {ws}, "back": {"/console/map"}})
		return res.StatusCode
	}
	for _, ws := range []string{stranger.Principal.WorkspaceID, "not-a-uuid", ""} {
		if code := switchTo(ws, csrf); code != http.StatusNotFound {
			t.Fatalf("switching to %q, not a workspace of the user's: %d", ws, code)
		}
	}
	if _, err := e.db.CreateUser(context.Background(), store.CreateKeyRequest{UserEmail: ten.Principal.UserEmail, WorkspaceID: stranger.Principal.WorkspaceID}); err != nil {
		t.Fatal(err)
	}
	if code := switchTo(stranger.Principal.WorkspaceID, "wrong"); code != http.StatusForbidden {
		t.Fatalf("switching without the CSRF token: %d", code)
	}
	res, _ = br.post("/console/workspace", url.Values{"csrf": {csrf}, "workspace_id": {stranger.Principal.WorkspaceID}, "back": {"/console/map"}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/map" {
		t.Fatalf("switching to a workspace of the user's: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	_, page = br.get("/console")
	if !strings.Contains(page, fmt.Sprintf(`<option value="%s" selected>`, stranger.Principal.WorkspaceID)) {
		t.Fatalf("after switching: %s", page)
	}
	// The session's API reads follow it.
	if res, _ := br.get("/api/v1/events/stream?limit=1"); res.StatusCode != http.StatusOK {
		t.Fatalf("the API with the switched session: %d", res.StatusCode)
	}
	// Removed from the workspace, the session ends (as every session whose user left).
	if _, err := e.db.RemoveMember(context.Background(), stranger.Principal.WorkspaceID, ten.Principal.UserEmail); err != nil {
		t.Fatal(err)
	}
	if res, _ := br.get("/console"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("after leaving the switched-to workspace: %d", res.StatusCode)
	}
}

// The map page stays bounded however large the map: it counts the whole map and lists the
// 50 processes with the most episodes and the 50 edges most at risk (the most breached,
// then the most open, then the busiest); another workspace's map is not in its counts.
func TestConsoleMapRanksAndBounds(t *testing.T) {
	e := newEnv(t, nil)
	ten := newPerson(t, e)
	other := storetest.NewTenant(t, e.db)
	key, ws := ten.Key, ten.Principal.WorkspaceID
	const n = 53
	stage := func(i int, s string) string { return fmt.Sprintf("map%02d-%s", i, s) }
	procs := make([]string, n)
	for i := range n {
		r := e.do(request{method: "POST", path: "/operating-processes", key: key, headers: map[string]string{"Idempotency-Key": uniqueKey("process")},
			body: map[string]any{"name": fmt.Sprintf("Mapped process %02d", i), "purpose": "Rank", "stages": []any{
				map[string]any{"key": stage(i, "in"), "name": "In"}, map[string]any{"key": stage(i, "out"), "name": "Out"}}}})
		expect(t, r, http.StatusCreated, "")
		procs[i] = r.data()["process"].(map[string]any)["id"].(string)
		createHandoff(t, e, key, map[string]any{"from_stage_key": stage(i, "in"), "to_stage_key": stage(i, "out")})
	}
	// Episodes: the last process has two, the one before it one; the others none.
	for i, p := range map[int]int{n - 1: 2, n - 2: 1} {
		for range p {
			expect(t, e.do(request{method: "POST", path: "/episodes", key: key, body: map[string]any{"process_id": procs[i], "case_id": uniqueKey("case"),
				"started_at": "2026-11-01T09:00:00Z", "ended_at": "2026-11-01T10:00:00Z", "stages": []any{
					map[string]any{"key": stage(i, "in"), "at": "2026-11-01T09:00:00Z"}, map[string]any{"key": stage(i, "out"), "at": "2026-11-01T10:00:00Z"}},
				"evidence": map[string]any{}}}), http.StatusCreated, "")
		}
	}
	// Edges at risk: the last but two breached, the last but three with two open handoffs.
	breached := createHandoff(t, e, key, map[string]any{"from_stage_key": stage(n-3, "in"), "to_stage_key": stage(n-3, "out"), "sla_minutes": 1})
	if _, err := e.db.BreachHandoffSLA(context.Background(), ws, breached["id"].(string)); err != nil {
		t.Fatal(err)
	}
	createHandoff(t, e, key, map[string]any{"from_stage_key": stage(n-4, "in"), "to_stage_key": stage(n-4, "out")})
	createHandoff(t, e, other.Key, map[string]any{"from_stage_key": "elsewhere-in", "to_stage_key": "elsewhere-out"})

	br := newBrowser(t, e)
	br.signIn(ten)
	res, page := br.get("/console/map")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the map page: %d", res.StatusCode)
	}
	if want := fmt.Sprintf(`id="map-counts">%d processes (%d discovered or proposed, not confirmed), %d handoff edges (1 with a breached SLA).`, n, n, n); !strings.Contains(page, want) {
		t.Fatalf("the map page lacks the counts %q:\n%s", want, page)
	}
	rows := func(table string) []string {
		i := strings.Index(page, `<table id="`+table+`">`)
		if i < 0 {
			t.Fatalf("no table %s", table)
		}
		body := page[i:]
		body = body[strings.Index(body, "<tbody>")+len("<tbody>") : strings.Index(body, "</tbody>")]
		return strings.Split(strings.TrimSpace(body), "</tr>\n")
	}
	p, ed := rows("processes"), rows("edges")
	if len(p) != 50 || len(ed) != 50 {
		t.Fatalf("%d process rows and %d edge rows, want 50 of each", len(p), len(ed))
	}
	for i, want := range []string{"Mapped process 52", "Mapped process 51", "Mapped process 00", "Mapped process 01"} {
		if !strings.Contains(p[i], want) {
			t.Errorf("process row %d is %q, want %s", i+1, p[i], want)
		}
	}
	if strings.Contains(page, "Mapped process 49") {
		t.Error("a 51st process is listed")
	}
	for i, want := range []string{stage(n-3, "in"), stage(n-4, "in"), stage(0, "in")} {
		if !strings.Contains(ed[i], want) {
			t.Errorf("edge row %d is %q, want %s", i+1, ed[i], want)
		}
	}
	if !strings.Contains(ed[0], "1 breached") || !strings.Contains(ed[1], `<td class="n">2</td><td class="n">2</td>`) {
		t.Errorf("the edges most at risk: %q, %q", ed[0], ed[1])
	}
	for _, want := range []string{"The 50 of 53 with the most episodes", "The 50 of 53 most at risk", "/api/v1/operating-map"} {
		if !strings.Contains(page, want) {
			t.Errorf("the map page lacks %q", want)
		}
	}
	if strings.Contains(page, "elsewhere-in") {
		t.Error("another workspace's edge is on the map page")
	}
}
