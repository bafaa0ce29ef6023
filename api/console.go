package api

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/cursors"
	"github.com/accountablework/accountable/ledgerlog"
	"github.com/accountablework/accountable/pictures"
	"github.com/accountablework/accountable/projection"
)

// The workspace console: {site_url}/console, server-rendered (html/template, no script:
// the pages' CSP has no script-src), behind the settings page's session sign-in. Each
// page reads the store directly, always scoped by the session's workspace: work at a
// glance (/console), handoffs at risk (/console/handoffs), the ledger (/console/ledger,
// with a form that checks a receipt against the log's public key), launches
// (/console/launches, /console/launches/{id}) and the operating map (/console/map). The
// pictures of a launch's timeline and of the operating map are the API's own SVG
// representations (<img src="/api/v1/...">, same-site: img-src 'self'); every page is
// complete without them, its tables carrying the data.
//
// A member of several workspaces switches between them with a form (POST
// /console/workspace, with the session's CSRF token) that re-scopes the session itself,
// and only to a workspace the user is a member of: no page takes a workspace from its URL.

// ConsoleStore is what the console needs of the store.
type ConsoleStore interface {
	SessionWorkspaces(ctx context.Context, userID string) ([]accountable.Workspace, error)
	SwitchSessionWorkspace(ctx context.Context, tokenHash []byte, workspaceID string) error
	TaskCounts(ctx context.Context, workspaceID string) (map[accountable.TaskStatus]int64, error)
	RecentReceipts(ctx context.Context, workspaceID string, limit int) ([]accountable.ConsoleReceipt, error)
	OpenHandoffs(ctx context.Context, workspaceID string, limit int) ([]accountable.ConsoleHandoff, error)
	RecentEvents(ctx context.Context, workspaceID string, limit int) ([]accountable.ConsoleEvent, error)
	LatestLedgerVerification(ctx context.Context, workspaceID string) (accountable.LedgerVerificationJob, error)
	RecentLaunches(ctx context.Context, workspaceID string, limit int) ([]accountable.ConsoleLaunch, error)
	LaunchJobs(ctx context.Context, workspaceID, launchID string) ([]accountable.ConsoleJob, error)
	GetLaunch(ctx context.Context, workspaceID, id string) (accountable.Launch, error)
	ConsoleMap(ctx context.Context, workspaceID string, limit int) (accountable.ConsoleMap, error)
	WorkLedger(ctx context.Context, workspaceID string, w projection.WorkLedgerWindow) (accountable.WorkLedgerProjection, error)
	LedgerCheckpoint(ctx context.Context, workspaceID string) (accountable.LedgerCheckpoint, error)
	LedgerWitnessStatus(ctx context.Context, workspaceID string) ([]accountable.LedgerWitness, error)
	StreamEnd(ctx context.Context, workspaceID string) (accountable.StreamPosition, error)
}

// consoleStore is the console's store.
var consoleStore = needsStore[ConsoleStore]()

// Paths of the console.
const (
	ConsolePath          = "/console"
	consoleHandoffsPath  = ConsolePath + "/handoffs"
	consoleLedgerPath    = ConsolePath + "/ledger"
	consoleLaunchesPath  = ConsolePath + "/launches"
	consoleMapPath       = ConsolePath + "/map"
	consoleWorkspacePath = ConsolePath + "/workspace"
)

// ConsoleRoutes are the console's routes (web pages, not operations of the API).
var ConsoleRoutes = []string{"GET " + ConsolePath, "GET " + consoleHandoffsPath, "GET " + consoleLivePath, "GET " + consoleLedgerPath,
	"POST " + consoleLedgerPath, "GET " + consoleLaunchesPath, "GET " + consoleLaunchesPath + "/{launchId}",
	"GET " + consoleMapPath, "POST " + consoleWorkspacePath}

// Bounds of the console's lists and of a pasted receipt.
const (
	consoleListLimit   = 50
	consoleEventLimit  = 25
	consoleReceiptMax  = 256 << 10
	throughputDays     = 14
	handoffsRefreshSec = 30
)

func (s *Server) consoleRoutes() {
	s.app.Get(ConsolePath, s.withConsole(s.consoleWork))
	s.app.Get(consoleHandoffsPath, s.withConsole(s.consoleHandoffs))
	s.app.Get(consoleLedgerPath, s.withConsole(s.consoleLedger))
	s.app.Post(consoleLedgerPath, s.withConsole(s.consoleCheckReceipt))
	s.app.Get(consoleLaunchesPath, s.withConsole(s.consoleLaunches))
	s.app.Get(consoleLaunchesPath+"/:launchId", s.withConsole(s.consoleLaunch))
	s.app.Get(consoleMapPath, s.withConsole(s.consoleMap))
	s.app.Get(consoleLivePath, func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, "text/javascript; charset=utf-8")
		c.Set(fiber.HeaderCacheControl, "max-age=300")
		return c.SendString(consoleLiveScript)
	})
	s.app.Post(consoleWorkspacePath, s.withConsole(s.consoleSwitchWorkspace))
}

// consoleRequest is a console request of a signed-in browser.
type consoleRequest struct {
	c         *fiber.Ctx
	ctx       context.Context
	sess      accountable.Session
	tokenHash []byte
	store     ConsoleStore
}

// withConsole serves h to a signed-in browser; others go to the sign-in page, which comes
// back here after. A POST must carry the session's CSRF token.
func (s *Server) withConsole(h func(*consoleRequest) error) fiber.Handler {
	return func(c *fiber.Ctx) error {
		sess, hash, ok := s.session(c)
		if !ok {
			next := c.OriginalURL()
			if c.Method() != fiber.MethodGet {
				next = ConsolePath
			}
			return c.Redirect(SignInPath+"?next="+url.QueryEscape(next), fiber.StatusSeeOther)
		}
		if c.Method() == fiber.MethodPost && subtle.ConstantTimeCompare([]byte(c.FormValue("csrf")), []byte(sess.CSRFToken)) != 1 {
			return page(c, fiber.StatusForbidden, messageTemplate, "The form is not from this page (CSRF check failed); reload the page.")
		}
		ctx, cancel := context.WithTimeout(c.UserContext(), s.deadline(DeadlineRead))
		defer cancel()
		return h(&consoleRequest{c: c, ctx: ctx, sess: sess, tokenHash: hash, store: consoleStore.of(s)})
	}
}

// isConsolePath reports whether next is a page of the console of this site (where a
// sign-in may continue): a path, never another site's URL.
func isConsolePath(next string) bool {
	if strings.ContainsAny(next, "\\\r\n") || strings.Contains(next, "..") {
		return false
	}
	return next == ConsolePath || strings.HasPrefix(next, ConsolePath+"/") || strings.HasPrefix(next, ConsolePath+"?")
}

// consolePage is what every console page shows around its own data.
type consolePage struct {
	Title, Current string
	Session        accountable.Session
	Workspace      accountable.Workspace
	Workspaces     []accountable.Workspace
	Nav            []navLink
	Refresh        int
	LiveAfter      string // the stream's cursor the live page follows events after
	Data           any
}

type navLink struct{ Key, Href, Label string }

var consoleNav = []navLink{{"work", ConsolePath, "Work"}, {"handoffs", consoleHandoffsPath, "Handoffs at risk"},
	{"ledger", consoleLedgerPath, "Ledger"}, {"launches", consoleLaunchesPath, "Launches"}, {"map", consoleMapPath, "Operating map"}}

// render renders a console page: the shell (nav, workspace switcher) around t.
func (r *consoleRequest) render(status int, t *template.Template, title, current string, data any) error {
	list, err := r.store.SessionWorkspaces(r.ctx, r.sess.UserID)
	if err != nil {
		return err
	}
	p := consolePage{Title: title, Current: current, Session: r.sess, Workspaces: list, Nav: consoleNav, Data: data,
		Workspace: accountable.Workspace{ID: r.sess.WorkspaceID}}
	for _, w := range list {
		if w.ID == r.sess.WorkspaceID {
			p.Workspace = w
		}
	}
	if current == "handoffs" {
		p.Refresh = handoffsRefreshSec
		end, err := r.store.StreamEnd(r.ctx, r.sess.WorkspaceID)
		if err != nil {
			return err
		}
		p.LiveAfter = cursors.EncodeStream(end)
	}
	if err := page(r.c, status, t, p); err != nil {
		return err
	}
	if p.Refresh > 0 {
		// The live page's one script, of this site, and its stream, of this site.
		r.c.Set("Content-Security-Policy", strings.Replace(pageHeaders("")["Content-Security-Policy"], "default-src 'none';",
			"default-src 'none'; script-src 'self'; connect-src 'self';", 1))
	}
	return nil
}

// consoleSwitchWorkspace: POST /console/workspace re-scopes the session to another of the
// user's workspaces (a workspace they are not a member of is refused, as an unknown one).
func (s *Server) consoleSwitchWorkspace(r *consoleRequest) error {
	id := strings.TrimSpace(r.c.FormValue("workspace_id"))
	if _, err := uuid.Parse(id); err != nil {
		return page(r.c, fiber.StatusNotFound, messageTemplate, "You are not a member of that workspace.")
	}
	err := r.store.SwitchSessionWorkspace(r.ctx, r.tokenHash, id)
	if accountable.ErrorCode(err) == accountable.ECodeNotFound {
		return page(r.c, fiber.StatusNotFound, messageTemplate, "You are not a member of that workspace.")
	}
	if err != nil {
		return err
	}
	back := r.c.FormValue("back")
	if !isConsolePath(back) || strings.HasPrefix(back, consoleLaunchesPath+"/") {
		back = ConsolePath // a launch is one workspace's: not the next one's page
	}
	return r.c.Redirect(back, fiber.StatusSeeOther)
}

// Work at a glance.

type statusCount struct {
	Status accountable.TaskStatus
	Count  int64
}

type dayBar struct {
	Label   string
	Count   int64
	Percent int
}

type workData struct {
	Counts     []statusCount
	Total      int64
	Days       []dayBar
	DaysTotal  int64
	Receipts   []accountable.ConsoleReceipt
	TimeZone   string
	Throughput string
}

func (s *Server) consoleWork(r *consoleRequest) error {
	ws := r.sess.WorkspaceID
	counts, err := r.store.TaskCounts(r.ctx, ws)
	if err != nil {
		return err
	}
	d := workData{TimeZone: "UTC"}
	for _, st := range accountable.TaskStatuses {
		d.Counts = append(d.Counts, statusCount{st, counts[st]})
		d.Total += counts[st]
	}
	now := time.Now()
	from := now.AddDate(0, 0, -(throughputDays - 1))
	w, err := projection.WorkLedgerQuery{Bucket: accountable.BucketDay, From: &from, Now: now}.Window()
	if err != nil {
		return err
	}
	ledger, err := r.store.WorkLedger(r.ctx, ws, w)
	if err != nil {
		return err
	}
	var most int64
	for _, b := range ledger.Buckets {
		most = max(most, b.Receipts)
	}
	for _, b := range ledger.Buckets {
		bar := dayBar{Label: b.Label, Count: b.Receipts}
		if most > 0 {
			bar.Percent = int(b.Receipts * 100 / most)
		}
		d.Days = append(d.Days, bar)
		d.DaysTotal += b.Receipts
	}
	if d.Receipts, err = r.store.RecentReceipts(r.ctx, ws, 10); err != nil {
		return err
	}
	return r.render(fiber.StatusOK, workTemplate, "Work at a glance", "work", d)
}

// Handoffs at risk.

type handoffRow struct {
	accountable.ConsoleHandoff
	Risk, TimeLeft string
}

func (s *Server) consoleHandoffs(r *consoleRequest) error {
	list, err := r.store.OpenHandoffs(r.ctx, r.sess.WorkspaceID, consoleListLimit)
	if err != nil {
		return err
	}
	now := time.Now()
	rows := make([]handoffRow, 0, len(list))
	for _, h := range list {
		row := handoffRow{ConsoleHandoff: h}
		switch {
		case h.BreachedAt != nil:
			row.Risk = "SLA breached"
		case h.Handoff.DueAt == nil:
			row.Risk = "no SLA"
		case h.Handoff.DueAt.Before(now):
			row.Risk = "overdue"
		case h.Handoff.DueAt.Sub(now) < time.Hour:
			row.Risk = "due within the hour"
		default:
			row.Risk = "on time"
		}
		if h.Handoff.DueAt != nil {
			left := h.Handoff.DueAt.Sub(now).Round(time.Minute)
			if left < 0 {
				row.TimeLeft = "overdue by " + duration(-left)
			} else {
				row.TimeLeft = duration(left) + " left"
			}
		} else {
			row.TimeLeft = "no due time"
		}
		rows = append(rows, row)
	}
	return r.render(fiber.StatusOK, handoffsTemplate, "Handoffs at risk", "handoffs", rows)
}

// duration is d in hours and minutes, as a person reads it.
func duration(d time.Duration) string {
	d = d.Round(time.Minute)
	h, m := int(d.Hours()), int(d.Minutes())%60
	switch {
	case h >= 48:
		return fmt.Sprintf("%dd %dh", h/24, h%24)
	case h > 0:
		return fmt.Sprintf("%dh %dm", h, m)
	default:
		return fmt.Sprintf("%dm", m)
	}
}

// The ledger.

type checkpointView struct {
	Origin, RootHash, Note string
	TreeSize               int64
	SignedAt               time.Time
	Witnesses              []accountable.LedgerWitness
}

type verificationView struct {
	accountable.LedgerVerificationJob
	Duration string
}

type verdict struct {
	Valid   bool
	Message string
	Receipt string
}

type ledgerData struct {
	Checkpoint   *checkpointView
	Verification *verificationView
	Events       []accountable.ConsoleEvent
	PublicKey    string
	Verdict      *verdict
}

func (s *Server) consoleLedger(r *consoleRequest) error {
	return s.renderLedger(r, fiber.StatusOK, nil)
}

func (s *Server) renderLedger(r *consoleRequest, status int, v *verdict) error {
	ws := r.sess.WorkspaceID
	d := ledgerData{PublicKey: s.cfg.LedgerVerifierKey, Verdict: v}
	stored, err := r.store.LedgerCheckpoint(r.ctx, ws)
	if err != nil && accountable.ErrorCode(err) != accountable.ECodeNotFound {
		return err
	}
	if err == nil && stored.TreeSize > 0 {
		cp, err := checkpointOf(stored.SignedNote)
		if err != nil {
			return err
		}
		witnesses, err := r.store.LedgerWitnessStatus(r.ctx, ws)
		if err != nil {
			return err
		}
		d.Checkpoint = &checkpointView{Origin: cp.Origin, TreeSize: cp.N, RootHash: base64.StdEncoding.EncodeToString(cp.Hash[:]),
			Note: stored.Note(), SignedAt: stored.SignedAt.Time, Witnesses: witnesses}
	}
	job, err := r.store.LatestLedgerVerification(r.ctx, ws)
	if err != nil && accountable.ErrorCode(err) != accountable.ECodeNotFound {
		return err
	}
	if err == nil {
		d.Verification = &verificationView{LedgerVerificationJob: job}
		if job.CompletedAt != nil {
			d.Verification.Duration = job.CompletedAt.Sub(job.RequestedAt.Time).Round(time.Millisecond).String()
		}
	}
	if d.Events, err = r.store.RecentEvents(r.ctx, ws, consoleEventLimit); err != nil {
		return err
	}
	return r.render(status, ledgerTemplate, "The ledger", "ledger", d)
}

// consoleCheckReceipt: POST /console/ledger checks a pasted receipt (as GET
// /work/{taskId}/receipt or GET /agent-work-receipts/{receiptId} hands it out) offline
// against the log's public key and this workspace's origin (ledgerlog's CheckReceipt,
// what `accountable ledger audit --receipt` runs): another workspace's receipt fails.
func (s *Server) consoleCheckReceipt(r *consoleRequest) error {
	text := strings.TrimSpace(r.c.FormValue("receipt"))
	v := &verdict{Receipt: text}
	switch {
	case text == "":
		v.Message = "Paste a receipt to check."
		return s.renderLedger(r, fiber.StatusBadRequest, v)
	case len(text) > consoleReceiptMax:
		v.Receipt, v.Message = "", fmt.Sprintf("That receipt is longer than %d KiB; no receipt is.", consoleReceiptMax>>10)
		return s.renderLedger(r, fiber.StatusBadRequest, v)
	case s.cfg.LedgerVerifierKey == "":
		v.Message = "This server publishes no ledger key: there is nothing to check the receipt against."
		return s.renderLedger(r, fiber.StatusOK, v)
	}
	auditor, err := ledgerlog.NewAuditor(s.cfg.LedgerVerifierKey, ledgerlog.Origin(s.cfg.LedgerLogName, r.sess.WorkspaceID))
	if err != nil {
		return err
	}
	tree, header, err := auditor.CheckReceipt([]byte(text))
	switch {
	case errors.Is(err, ledgerlog.ErrReceiptNotProved):
		v.Message = "Not checked yet: the receipt carries no ledger proof (it was read before a checkpoint held its event). Read it again in a few seconds."
	case err != nil:
		v.Message = "Not valid for this workspace's ledger: " + err.Error()
	default:
		v.Valid = true
		v.Message = fmt.Sprintf("Valid: event %s (%s, %s %s) is a leaf of the checkpoint of %d events signed by the log's key, "+
			"and the receipt is the one its payload records.", header.ID, header.EventType, header.AggregateType, header.AggregateID, tree.N)
	}
	return s.renderLedger(r, fiber.StatusOK, v)
}

// Launches.

func (s *Server) consoleLaunches(r *consoleRequest) error {
	list, err := r.store.RecentLaunches(r.ctx, r.sess.WorkspaceID, consoleListLimit)
	if err != nil {
		return err
	}
	return r.render(fiber.StatusOK, launchesTemplate, "Launches", "launches", list)
}

type launchData struct {
	Launch    accountable.Launch
	Jobs      []accountable.ConsoleJob
	Timeline  string
	APILaunch string
}

func (s *Server) consoleLaunch(r *consoleRequest) error {
	id := r.c.Params("launchId")
	var l accountable.Launch
	var err error = accountable.NotFound("launch")
	if _, perr := uuid.Parse(id); perr == nil {
		l, err = r.store.GetLaunch(r.ctx, r.sess.WorkspaceID, id)
	}
	if accountable.ErrorCode(err) == accountable.ECodeNotFound {
		return r.render(fiber.StatusNotFound, notFoundTemplate, "Launch not found", "launches", "This workspace has no launch with that id.")
	}
	if err != nil {
		return err
	}
	jobs, err := r.store.LaunchJobs(r.ctx, r.sess.WorkspaceID, l.LaunchID)
	if err != nil {
		return err
	}
	return r.render(fiber.StatusOK, launchTemplate, "Launch "+short(l.LaunchID), "launches",
		launchData{Launch: l, Jobs: jobs, APILaunch: V1Root + "/launches/" + l.LaunchID})
}

// The operating map.

// consoleMapRows is how many processes and edges the map page lists: a page that stays
// small (and fast) however large the map; the picture and GET /operating-map hold it all.
const consoleMapRows = 50

type mapData struct {
	Map     accountable.ConsoleMap
	Rows    int
	Picture string
	API     string
	Note    string
}

func (s *Server) consoleMap(r *consoleRequest) error {
	m, err := r.store.ConsoleMap(r.ctx, r.sess.WorkspaceID, consoleMapRows)
	if err != nil {
		return err
	}
	return r.render(fiber.StatusOK, mapTemplate, "Operating map", "map", mapData{Map: m, Rows: consoleMapRows,
		Picture: V1Root + "/operating-map", API: V1Root + "/operating-map", Note: accountable.HandoffEdgesByStageKeys})
}

// confirmation says in words whether a process is only discovered (or proposed) or was
// confirmed by a person, and how it came to be known.
func confirmation(p accountable.MapProcess) string {
	switch p.LifecycleState {
	case accountable.ProcessDiscovered, accountable.ProcessProposed:
		return string(p.LifecycleState) + ", not confirmed (" + string(p.ProvenanceMode) + ")"
	}
	return "confirmed (" + string(p.LifecycleState) + ", " + string(p.ProvenanceMode) + ")"
}

// short is the last 8 characters of an id (the first ones of UUIDv7s made together are
// their shared time).
func short(id string) string {
	if len(id) > 8 {
		return "…" + id[len(id)-8:]
	}
	return id
}

// when formats an instant as the console shows it (UTC, to the second).
func when(v any) string {
	switch t := v.(type) {
	case time.Time:
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	case *time.Time:
		if t != nil {
			return when(*t)
		}
	case accountable.Time:
		return when(t.Time)
	case *accountable.Time:
		if t != nil {
			return when(t.Time)
		}
	}
	return "—"
}

// money formats cents as dollars.
func money(v any) string {
	var c int64
	switch n := v.(type) {
	case int64:
		c = n
	case *int64:
		if n == nil {
			return "—"
		}
		c = *n
	default:
		return "—"
	}
	sign := ""
	if c < 0 {
		sign, c = "-", -c
	}
	return fmt.Sprintf("%s$%d.%02d", sign, c/100, c%100)
}

// deref reads an optional string ("" for none).
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

var consoleFuncs = template.FuncMap{"inc": func(i int) int { return i + 1 }, "when": when, "money": money, "short": short, "deref": deref, "confirmation": confirmation,
	"seconds": func(sec *int64) string {
		if sec == nil {
			return "—"
		}
		return pictures.Duration(*sec)
	},
	"stages": func(st []accountable.CandidateStage) string {
		names := make([]string, 0, len(st))
		for _, s := range st {
			names = append(names, s.Name)
		}
		return strings.Join(names, " → ")
	},
}

const consoleStyle = `<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:64rem;margin:1.5rem auto;padding:0 1rem;color:#1b1f24}
table{border-collapse:collapse;width:100%;margin-bottom:1.5rem}th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #d0d7de;vertical-align:top}
th{background:#f6f8fa}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
code,pre,.hash{font-family:ui-monospace,monospace;font-size:13px}.hash{word-break:break-all}
pre{background:#f6f8fa;border:1px solid #d0d7de;padding:.6rem;white-space:pre-wrap;word-break:break-all}
nav ul{list-style:none;display:flex;flex-wrap:wrap;gap:.25rem 1rem;padding:0;margin:.5rem 0 1rem;border-bottom:1px solid #d0d7de}
nav a{display:inline-block;padding:.35rem .2rem;color:#0550ae}nav a[aria-current=page]{font-weight:700;color:#1b1f24;border-bottom:3px solid #1b1f24}
a:focus-visible,button:focus-visible,select:focus-visible,textarea:focus-visible{outline:3px solid #0969da;outline-offset:2px}
header{display:flex;flex-wrap:wrap;justify-content:space-between;align-items:center;gap:.5rem}header form{display:inline}
.bar{display:inline-block;height:.9rem;background:#1f6feb;vertical-align:middle;min-width:1px}
.bad{color:#b42318;font-weight:700}.good{color:#1a7f37;font-weight:700}.muted{color:#57606a}
textarea{width:100%;min-height:8rem;font-family:ui-monospace,monospace}img.picture{max-width:100%;border:1px solid #d0d7de}
</style>`

const consoleShell = `{{define "top"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} · Console · Accountable</title>
{{if .Refresh}}<noscript><meta http-equiv="refresh" content="{{.Refresh}}"></noscript>
<script src="/console/live.js" data-after="{{.LiveAfter}}" defer></script>{{end}}` + consoleStyle + `</head><body>
<header><p><strong>Accountable console</strong> · workspace <span id="workspace-name">{{with .Workspace.Name}}{{.}}{{else}}{{.Workspace.ID}}{{end}}</span></p>
<div>{{if gt (len .Workspaces) 1}}<form method="post" action="/console/workspace" id="switch-workspace">
<input type="hidden" name="csrf" value="{{.Session.CSRFToken}}"><input type="hidden" name="back" value="{{range .Nav}}{{if eq .Key $.Current}}{{.Href}}{{end}}{{end}}">
<label for="workspace-id">Workspace</label> <select name="workspace_id" id="workspace-id">{{range .Workspaces}}
<option value="{{.ID}}"{{if eq .ID $.Session.WorkspaceID}} selected{{end}}>{{.Name}}</option>{{end}}</select>
<button type="submit" id="switch">Switch</button></form>{{end}}
<form method="post" action="/sign-out"><input type="hidden" name="csrf" value="{{.Session.CSRFToken}}">
<span class="muted">{{.Session.UserEmail}}</span> <button type="submit" id="sign-out">Sign out</button></form></div></header>
<nav aria-label="Console"><ul>{{range .Nav}}<li><a href="{{.Href}}" class="nav-link"{{if eq .Key $.Current}} aria-current="page"{{end}}>{{.Label}}</a></li>{{end}}
<li><a href="/settings/api-keys" class="nav-link">API keys</a></li></ul></nav>
<main id="main"><h1>{{.Title}}</h1>{{end}}
{{define "bottom"}}</main></body></html>{{end}}`

func consoleTemplate(name, body string) *template.Template {
	return template.Must(template.New(name).Funcs(consoleFuncs).Parse(consoleShell + `{{template "top" .}}` + body + `{{template "bottom" .}}`))
}

var workTemplate = consoleTemplate("work", `{{with .Data}}
<section aria-labelledby="tasks-h"><h2 id="tasks-h">Tasks by status</h2>
<table id="task-counts"><thead><tr><th scope="col">Status</th><th scope="col" class="n">Tasks</th></tr></thead><tbody>
{{range .Counts}}<tr data-status="{{.Status}}"><th scope="row">{{.Status}}</th><td class="n">{{.Count}}</td></tr>{{end}}
<tr><th scope="row">all</th><td class="n" id="task-total">{{.Total}}</td></tr></tbody></table></section>
<section aria-labelledby="throughput-h"><h2 id="throughput-h">Throughput, last 14 days</h2>
<p class="muted">Receipts (work completed here and receipts imported) per day ({{.TimeZone}}), from the work-ledger projection: {{.DaysTotal}} in all.</p>
<table id="throughput"><thead><tr><th scope="col">Day</th><th scope="col" class="n">Receipts</th><th scope="col"><span class="muted">Bar</span></th></tr></thead><tbody>
{{range .Days}}<tr><th scope="row">{{.Label}}</th><td class="n">{{.Count}}</td><td aria-hidden="true"><span class="bar" style="width:{{.Percent}}%"></span></td></tr>{{end}}
</tbody></table></section>
<section aria-labelledby="receipts-h"><h2 id="receipts-h">Newest receipts</h2>
<table id="receipts"><thead><tr><th scope="col">Completed</th><th scope="col">Task</th><th scope="col">Status</th><th scope="col">Summary</th><th scope="col" class="n">Cost</th><th scope="col">Event</th></tr></thead><tbody>
{{range .Receipts}}<tr><td>{{when .CreatedAt}}</td><td>{{.TaskTitle}}</td><td>{{.Status}}</td><td>{{.Summary}}</td><td class="n">{{money .CostCents}}</td><td><code title="{{.EventID}}">{{short .EventID}}</code></td></tr>
{{else}}<tr><td colspan="6" class="muted">No receipts yet.</td></tr>{{end}}</tbody></table></section>
{{end}}`)

var handoffsTemplate = consoleTemplate("handoffs", `
<p class="muted">Open handoffs (not fulfilled or cancelled), breached first, then by the time left on their SLA. This page reloads itself when a handoff changes (it follows the event stream) or, without JavaScript, every {{.Refresh}} seconds.</p>
<table id="handoffs"><thead><tr><th scope="col">Risk</th><th scope="col">Handoff</th><th scope="col">Stages</th><th scope="col">Status</th><th scope="col">Priority</th><th scope="col">Due</th><th scope="col">Time left</th><th scope="col">Escalation decision</th></tr></thead><tbody>
{{range .Data}}<tr data-handoff="{{.Handoff.ID}}"><td class="{{if .BreachedAt}}bad{{end}}">{{.Risk}}</td><td>{{.Handoff.Title}}<br><span class="muted">{{.Handoff.HandoffKey}}</span></td>
<td>{{.Handoff.FromStageKey}} → {{.Handoff.ToStageKey}}</td><td>{{.Handoff.Status}}</td><td>{{.Handoff.Priority}}</td><td>{{when .Handoff.DueAt}}</td><td>{{.TimeLeft}}</td>
<td>{{if .DecisionID}}decision <code title="{{deref .DecisionID}}">{{short (deref .DecisionID)}}</code>: {{deref .DecisionStatus}}{{with .DecisionSelected}}, chose {{.}}{{end}}{{else if .BreachedAt}}none yet{{else}}—{{end}}</td></tr>
{{else}}<tr><td colspan="8" class="muted">No open handoffs.</td></tr>{{end}}</tbody></table>`)

var ledgerTemplate = consoleTemplate("ledger", `{{with .Data}}
<section aria-labelledby="cp-h"><h2 id="cp-h">Latest signed checkpoint</h2>
{{with .Checkpoint}}<table id="checkpoint"><tbody>
<tr><th scope="row">Origin</th><td><code>{{.Origin}}</code></td></tr>
<tr><th scope="row">Tree size</th><td id="tree-size">{{.TreeSize}} events</td></tr>
<tr><th scope="row">Root hash</th><td class="hash">{{.RootHash}}</td></tr>
<tr><th scope="row">Signed</th><td>{{when .SignedAt}}</td></tr>
<tr><th scope="row">Witnesses</th><td>{{range .Witnesses}}<div>{{.Name}}: cosigned size {{.CosignedTreeSize}}{{with .Refusal}} — <span class="bad">refused: {{.}}</span>{{end}}</div>{{else}}no witness has cosigned{{end}}</td></tr>
</tbody></table>
<details><summary>The signed note</summary><pre id="note">{{.Note}}</pre></details>
{{else}}<p id="no-checkpoint">No signed checkpoint yet: the ledger sealer signs one within seconds of the workspace's first events.</p>{{end}}
</section>
<section aria-labelledby="ver-h"><h2 id="ver-h">Last verification</h2>
{{with .Verification}}<p id="verification">Requested {{when .RequestedAt}}: {{.Status}}{{with .Result}} — {{if .Verified}}<span class="good">verified</span>{{else}}<span class="bad">not verified</span>{{end}},
{{.EventCount}} events{{with .FirstBrokenReason}}; first broken: {{.}}{{end}}{{end}}{{with .Duration}}; took {{.}}{{end}}.</p>
{{else}}<p id="verification" class="muted">No verification asked for yet (POST /api/v1/events/verifications starts one).</p>{{end}}
</section>
<section aria-labelledby="check-h"><h2 id="check-h">Check a receipt</h2>
<p class="muted">Paste a receipt as GET /work/{taskId}/receipt or GET /agent-work-receipts/{receiptId} answers it. It is checked against the log's public key{{with .PublicKey}} (<code>{{.}}</code>){{end}} and this workspace's log.</p>
{{with .Verdict}}<p id="verdict" role="status" class="{{if .Valid}}good{{else}}bad{{end}}">{{.Message}}</p>{{end}}
<form method="post" action="/console/ledger"><input type="hidden" name="csrf" value="{{$.Session.CSRFToken}}">
<p><label for="receipt">Receipt (JSON)</label><br><textarea name="receipt" id="receipt" required>{{with .Verdict}}{{.Receipt}}{{end}}</textarea></p>
<p><button type="submit" id="check-receipt">Check the receipt</button></p></form></section>
<section aria-labelledby="events-h"><h2 id="events-h">Newest events</h2>
<table id="events"><thead><tr><th scope="col">Occurred</th><th scope="col">Event</th><th scope="col">Aggregate</th><th scope="col">Actor</th><th scope="col">Event hash</th></tr></thead><tbody>
{{range .Events}}<tr><td>{{when .OccurredAt}}</td><td>{{.EventType}}<br><code class="muted" title="{{.ID}}">{{short .ID}}</code></td><td>{{.AggregateType}} <code title="{{.AggregateID}}">{{short .AggregateID}}</code></td>
<td>{{.ActorType}}</td><td class="hash">{{.EventHash}}</td></tr>{{else}}<tr><td colspan="5" class="muted">No events yet.</td></tr>{{end}}</tbody></table></section>
{{end}}`)

var launchesTemplate = consoleTemplate("launches", `
<table id="launches"><thead><tr><th scope="col">Launch</th><th scope="col">Initiative</th><th scope="col">State</th><th scope="col" class="n">Jobs</th><th scope="col" class="n">Ceiling</th><th scope="col" class="n">Reserved</th><th scope="col" class="n">Settled</th><th scope="col">Started</th></tr></thead><tbody>
{{range .Data}}<tr><td><a href="/console/launches/{{.ID}}" class="launch-link">{{short .ID}}</a></td><td>{{.InitiativeTitle}}</td><td>{{.State}}</td><td class="n">{{.Jobs}}</td>
<td class="n">{{money .CeilingCents}}</td><td class="n">{{money .ReservedCents}}</td><td class="n">{{money .SettledCents}}</td><td>{{when .CreatedAt}}</td></tr>
{{else}}<tr><td colspan="8" class="muted">No launches yet.</td></tr>{{end}}</tbody></table>`)

var launchTemplate = consoleTemplate("launch", `{{with .Data}}
<p><a href="/console/launches">All launches</a></p>
<table id="launch"><tbody>
<tr><th scope="row">Launch</th><td><code>{{.Launch.LaunchID}}</code></td></tr>
<tr><th scope="row">Initiative</th><td><code>{{.Launch.InitiativeID}}</code></td></tr>
<tr><th scope="row">State</th><td id="launch-state">{{.Launch.State}}</td></tr>
<tr><th scope="row">Model tier, autonomy</th><td>{{.Launch.ModelTier}}, {{.Launch.EffectiveAutonomy}}</td></tr>
<tr><th scope="row">Cost</th><td>estimate {{money .Launch.Cost.ServerEstimateCents}}, ceiling {{money .Launch.Cost.CostCeilingCents}}, reserved {{money .Launch.Cost.ReservedCents}}, settled {{money .Launch.Cost.SettledCents}}</td></tr>
<tr><th scope="row">Blocking decision</th><td>{{with .Launch.BlockingDecision}}<span class="bad">blocked on</span> “{{.Title}}” ({{.Status}}, <code>{{.ID}}</code>){{else}}none{{end}}</td></tr>
</tbody></table>
<h2>Timeline</h2>
<p><img class="picture" src="{{.APILaunch}}" alt="Timeline of launch {{.Launch.LaunchID}}: each job's reservation, dispatch, run and settlement. The table of jobs below holds the same data."></p>
<h2>Jobs</h2>
<table id="jobs"><thead><tr><th scope="col">#</th><th scope="col">Workstream</th><th scope="col">Status</th><th scope="col" class="n">Estimate</th><th scope="col">Reservation</th><th scope="col">Dispatch and run</th><th scope="col">Settlement</th><th scope="col" class="n">Run cost</th><th scope="col">Decision</th></tr></thead><tbody>
{{range $i, $j := .Jobs}}<tr data-job="{{.ID}}"><td>{{inc $i}}</td><td>{{.WorkstreamName}}</td><td>{{.Status}}{{with .BlockCode}} ({{.}}){{end}}</td><td class="n">{{money .EstimateCents}}</td>
<td>{{with .ReservationID}}reserved {{money $j.ReservedCents}}{{else}}not reserved{{end}}</td>
<td>{{with .RunID}}dispatched: run <code title="{{.}}">{{short .}}</code> {{deref $j.RunStatus}}{{else}}not dispatched{{end}}</td>
<td>{{with .SettlementStatus}}{{.}}{{with $j.SettledCents}} {{money .}}{{end}}{{else}}—{{end}}</td><td class="n">{{money .RunCostCents}}</td>
<td>{{with .DecisionID}}{{if eq (deref $j.DecisionStatus) "pending"}}<span class="bad">blocking decision</span>{{else}}decision{{end}} <code title="{{.}}">{{short .}}</code> {{deref $j.DecisionStatus}}{{else}}—{{end}}</td></tr>
{{else}}<tr><td colspan="9" class="muted">No jobs.</td></tr>{{end}}</tbody></table>
{{end}}`)

var mapTemplate = consoleTemplate("map", `{{with .Data}}
<p id="map-counts">{{.Map.Processes}} process{{if ne .Map.Processes 1}}es{{end}} ({{.Map.Unconfirmed}} discovered or proposed, not confirmed), {{.Map.Edges}} handoff edge{{if ne .Map.Edges 1}}s{{end}} ({{.Map.EdgesAtRisk}} with a breached SLA).</p>
<p><img class="picture" src="{{.Picture}}" alt="The operating map: the workspace's processes with their stages, and the handoffs between stages. The tables below list the busiest processes and the edges most at risk."></p>
<h2>Processes</h2>
<p class="muted">{{if gt .Map.Processes (len .Map.TopProcesses)}}The {{len .Map.TopProcesses}} of {{.Map.Processes}} with the most episodes; {{else}}By episodes; {{end}}the whole map is the picture above and <code>GET {{.API}}</code>.</p>
<table id="processes"><thead><tr><th scope="col">Process</th><th scope="col">Discovered or confirmed</th><th scope="col">Stages</th><th scope="col" class="n">Episodes</th></tr></thead><tbody>
{{range .Map.TopProcesses}}<tr><td>{{.Name}}</td><td>{{confirmation .}}</td><td>{{stages .Stages}}</td><td class="n">{{.Episodes}}</td></tr>
{{else}}<tr><td colspan="4" class="muted">No processes yet.</td></tr>{{end}}</tbody></table>
<h2>Handoff edges</h2>
<p class="muted">{{if gt .Map.Edges (len .Map.TopEdges)}}The {{len .Map.TopEdges}} of {{.Map.Edges}} most at risk: {{else}}Most at risk first: {{end}}the most breached, then the most open, then the busiest.</p>
<table id="edges"><thead><tr><th scope="col">From stage</th><th scope="col">To stage</th><th scope="col" class="n">Handoffs</th><th scope="col" class="n">Open</th><th scope="col" class="n">SLA breached</th><th scope="col" class="n">Median time to fulfil</th></tr></thead><tbody>
{{range .Map.TopEdges}}<tr><td>{{.FromStageKey}}</td><td>{{.ToStageKey}}</td><td class="n">{{.Handoffs}}</td><td class="n">{{.Open}}</td><td class="n{{if .Breached}} bad{{end}}">{{.Breached}}{{if .Breached}} breached{{end}}</td><td class="n">{{seconds .MedianFulfilmentSeconds}}</td></tr>
{{else}}<tr><td colspan="6" class="muted">No handoffs yet.</td></tr>{{end}}</tbody></table>
<h2>Limitations</h2><ul><li>{{.Note}}</li></ul>
{{end}}`)

var notFoundTemplate = consoleTemplate("not-found", `<p role="alert">{{.Data}}</p>`)

// consoleLivePath serves the handoffs page's script: progressive enhancement, the page
// works without it (its <noscript> refresh). With it, the page follows the workspace's
// handoff events over Server-Sent Events (GET /events/stream?transport=sse, after the
// stream's end when the page was made; the browser resumes a lease that ends by itself)
// and reloads when one commits.
const consoleLivePath = "/console/live.js"

const consoleLiveScript = `(function () {
  var s = document.currentScript, after = s && s.dataset.after;
  var later = function () { setTimeout(function () { location.reload(); }, 30000); };
  if (!window.EventSource || !after) { later(); return; }
  var es = new EventSource('/api/v1/events/stream?transport=sse&aggregate_type=handoff&after=' + encodeURIComponent(after));
  es.addEventListener('ledger_event', function () { es.close(); location.reload(); });
  es.onerror = function () { if (es.readyState === EventSource.CLOSED) { later(); } };
})();
`
