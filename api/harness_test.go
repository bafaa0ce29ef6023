package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/activities"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/oauth"
	baseline "github.com/accountablework/accountable/planner"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/webhook"
	"github.com/accountablework/accountable/worker"
	"github.com/accountablework/accountable/workflows"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// env is one API server on a real listener, backed by this package's PostgreSQL database
// and the Temporal server of `make test`.
type env struct {
	t       *testing.T
	db      *store.DB
	base    string
	client  *http.Client
	server  *api.Server
	oas     *openAPI
	logs    *bytes.Buffer
	logsMu  *sync.Mutex
	cleanup []func()
	planner *countingPlanner
}

// countingPlanner counts the plans asked of its planner (the baseline, or another a test
// sets with use before its first request).
type countingPlanner struct {
	inner atomic.Pointer[activities.Planner]
	calls atomic.Int64
}

func (p *countingPlanner) use(inner activities.Planner) { p.inner.Store(&inner) }

func (p *countingPlanner) Plan(ctx context.Context, in accountable.ProposeInitiative) (accountable.GeneratedPlan, error) {
	p.calls.Add(1)
	return (*p.inner.Load()).Plan(ctx, in)
}

// as returns e reporting to t (for subtests).
func (e *env) as(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

type envOption func(*api.Config, *api.Deps)

// withRunTimeout binds messages on db (the env's) whose launches wait d for their runs
// (LAUNCH_RUN_TIMEOUT in the service).
func withRunTimeout(db *store.DB, d time.Duration) envOption {
	return func(*api.Config, *api.Deps) { db.UseWorkflowMessages(workflows.Messages{RunTimeout: d}) }
}

func temporalClient(t *testing.T) client.Client {
	t.Helper()
	addr := os.Getenv("TEMPORAL_ADDRESS")
	if addr == "" {
		t.Fatal("TEMPORAL_ADDRESS is not set: run the tests with `make test`, which starts Temporal")
	}
	c, err := client.NewLazyClient(client.Options{HostPort: addr, Logger: quietTemporalLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// waitWorkflowCompleted waits until workflow id (its latest run) has completed: everything
// it did (activities, the events they committed, the requests they sent) is done, and it
// does nothing more. A test proves that something did not happen by waiting for this.
func waitWorkflowCompleted(t *testing.T, id string, within time.Duration) {
	t.Helper()
	tc := temporalClient(t)
	storetest.WaitFor(t, within, "workflow "+id+" to complete", func() bool {
		d, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
		return err == nil && d.WorkflowExecutionInfo.Status == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED
	})
}

// newEnv starts a server; db may be nil to use the package database.
func newEnv(t *testing.T, db *store.DB, opts ...envOption) *env {
	t.Helper()
	return newEnvRelaying(t, db, true, opts...)
}

// newQuietEnv is an env whose commands' workflow messages stay in the outbox (no relay):
// nothing moves in the background, so a test can compare a workspace before and after a
// request (the isolation matrix, the request fuzz run). Proposal generation, which the
// request itself waits for, still runs.
func newQuietEnv(t *testing.T) *env {
	t.Helper()
	return newEnvRelaying(t, nil, false, func(c *api.Config, _ *api.Deps) { c.ProposalsPerMinute = 10_000 })
}

func newEnvRelaying(t *testing.T, db *store.DB, relaying bool, opts ...envOption) *env {
	t.Helper()
	if db == nil {
		db = storetest.Open(t)
	}
	// Commands send the workflows' messages, as in the service (cmd binds them); an option
	// may bind others (withRunTimeout).
	db.UseWorkflowMessages(workflows.Messages{})
	// Workflow-backed operations run on a worker of this env's own task queue, planning
	// with the baseline (counted) unless an option says otherwise.
	tc := temporalClient(t)
	queue := "api-test-" + uuid.NewString()
	planner := &countingPlanner{}
	planner.use(baseline.NewBaseline())
	// Webhooks are enabled with a test key, and may reach this machine's test receivers.
	storetest.NoteSecrets(testWebhookKey) // it keeps webhook secrets and keys the OAuth tokens
	webhookKey, err := webhook.ParseSecretKey(testWebhookKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := api.Config{SiteURL: "http://api.test", TaskQueue: queue, WebhookSecretKey: webhookKey, SessionKey: testSessionKey,
		WebhookTargets: webhook.TargetPolicy{AllowPrivate: true},
		LedgerLogName:  testLedgerLogName, LedgerVerifierKey: testLedgerKey().VerifierKey}
	// Live streams are woken by a feed of this env's own, as in a process of the service.
	feed := store.NewLedgerFeed(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	feedCtx, stopFeed := context.WithCancel(context.Background())
	feedDone := make(chan struct{})
	go func() { defer close(feedDone); feed.Run(feedCtx) }()
	t.Cleanup(func() { stopFeed(); <-feedDone })
	deps, err := api.NewDeps(db, tc)
	if err != nil {
		t.Fatal(err)
	}
	deps.Feed = feed
	for _, o := range opts {
		o(&cfg, &deps)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Idle webhook endpoints are woken by this env's feed, as in a worker process (not
	// started: waking every endpoint of the shared database is for a worker that starts
	// after one died).
	waker := worker.NewWebhookWaker(feed, tc, db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(waker.Stop)
	w := worker.New(tc, queue, worker.NewActivities(db, planner, activities.Webhooks{Key: webhookKey, Waker: waker,
		Client: activities.NewWebhookClient(webhook.TargetPolicy{AllowPrivate: true}, 5*time.Second)}))
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	// Commands' workflow messages (launches, their signals, background verifications)
	// reach the workflows through a relay, as in the service; the workspaces' logs are
	// sealed by a ledger sealer woken by the feed, as in a worker process (its ticks are
	// short, so that a test waits for a checkpoint a moment at most). A quiet env has
	// neither: nothing moves in the background.
	if relaying {
		relay := worker.NewRelay(db, tc, queue, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
		db.OnWorkflowMessage(relay.Nudge)
		relay.Start()
		t.Cleanup(relay.Stop)
		sealer := newTestSealer(db, 50*time.Millisecond, feed)
		if err := sealer.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := sealer.Stop(); err != nil {
				t.Error(err)
			}
		})
	}
	logs := &bytes.Buffer{}
	mu := &sync.Mutex{}
	log := slog.New(slog.NewJSONHandler(lockedWriter{mu, logs}, nil))
	if cfg.SiteURL == siteIsListener {
		cfg.SiteURL = "http://" + ln.Addr().String()
	}
	if deps.OAuth == nil { // the authorization server, as `make run` has it
		authz, err := oauth.New(oauth.Config{Issuer: cfg.SiteURL, Resources: []string{cfg.SiteURL, cfg.SiteURL + api.MCPPath},
			Secret: []byte(testWebhookKey)}, db)
		if err != nil {
			t.Fatal(err)
		}
		deps.OAuth = authz
	}
	srv, err := api.NewServer(cfg, deps, log)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln) //nolint:errcheck // ends at Shutdown
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx) //nolint:errcheck // the test is over; a slow stop is not its failure
		mu.Lock()
		defer mu.Unlock()
		storetest.KeepLog(t, "api", logs.Bytes()) // for the secrets check of the suite's logs
	})
	return &env{t: t, db: db, base: "http://" + ln.Addr().String(), client: &http.Client{Timeout: 30 * time.Second},
		server: srv, oas: loadOpenAPI(t, srv.OpenAPIDocument()), logs: logs, logsMu: mu, planner: planner}
}

// siteIsListener as the site URL (withSiteURLOfListener) is replaced by the env's own
// address: an OAuth client checks that the metadata names the URL it connected to.
const siteIsListener = "listener"

// withSiteURLOfListener makes the env's site URL its own address.
func withSiteURLOfListener(cfg *api.Config, _ *api.Deps) { cfg.SiteURL = siteIsListener }

// testSessionKey tags the test envs' session tokens (sessions a test makes in the store
// are tagged with it too).
var testSessionKey = []byte("the test envs' session key, 32 b")

// testWebhookKey keeps the test envs' webhook secrets.
const testWebhookKey = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// request describes one call; path is the OpenAPI path template, filled from params.
type request struct {
	method  string
	path    string
	params  map[string]string
	query   string
	key     string
	body    any // string/[]byte sent raw; anything else JSON-encoded
	headers map[string]string
	root    string // mount point; default /api/v1
	noCheck bool   // skip OpenAPI response validation (only for deliberately undocumented paths)
}

type response struct {
	status  int
	header  http.Header
	raw     []byte
	body    map[string]any
	rawBody any
}

func (r response) data() map[string]any {
	d, _ := r.body["data"].(map[string]any)
	return d
}

func (r response) dataList() []any {
	d, _ := r.body["data"].([]any)
	return d
}

func (r response) meta() map[string]any {
	m, _ := r.body["meta"].(map[string]any)
	return m
}

func (r response) errorCode() string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (r response) errorObj() map[string]any {
	e, _ := r.body["error"].(map[string]any)
	return e
}

// do sends the request and validates the response against the OpenAPI document.
func (e *env) do(req request) response {
	e.t.Helper()
	path := req.path
	for k, v := range req.params {
		path = strings.ReplaceAll(path, "{"+k+"}", v)
	}
	root := req.root
	if root == "" {
		root = api.V1Root
	}
	url := e.base + strings.TrimSuffix(root, "/") + strings.TrimSuffix(path, "/")
	if url == e.base {
		url += "/"
	}
	if req.query != "" {
		url += "?" + req.query
	}
	var body io.Reader
	switch b := req.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		body = bytes.NewReader(raw)
	}
	hr, err := http.NewRequest(req.method, url, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if req.key != "" {
		hr.Header.Set("Authorization", "Bearer "+req.key)
	}
	for k, v := range req.headers {
		if v == "" {
			hr.Header.Del(k)
		} else {
			hr.Header.Set(k, v)
		}
	}
	res, err := e.client.Do(hr)
	if err != nil {
		e.t.Fatalf("%s %s: %v", req.method, url, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	out := response{status: res.StatusCode, header: res.Header, raw: raw}
	if len(raw) > 0 && !req.noCheck && e.oas.answersIn(req.method, req.path, res.StatusCode, res.Header.Get("Content-Type")) {
		return out // an answer the document gives in another media type (a tile, a signed note): raw only
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out.rawBody); err != nil {
			e.t.Fatalf("%s %s: response is not JSON: %v: %s", req.method, url, err, raw)
		}
		out.body, _ = out.rawBody.(map[string]any)
	}
	if !req.noCheck {
		e.oas.check(e.t, req.method, req.path, res.StatusCode, out.rawBody)
	}
	return out
}

// expect fails unless the response has status (and, for errors, code).
func expect(t *testing.T, r response, status int, code string) {
	t.Helper()
	if r.status != status || (code != "" && r.errorCode() != code) {
		t.Fatalf("got %d %s, want %d %s: %s", r.status, r.errorCode(), status, code, r.raw)
	}
}

// rawRequest sends only the head of a request that announces a body of bodyLen bytes and
// reads the answer, as a server that refuses oversize bodies early sends it.
func (e *env) rawRequest(method, path, key string, bodyLen int) response {
	e.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nIdempotency-Key: raw\r\nContent-Length: %d\r\n\r\n",
		method, path, key, bodyLen)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := response{status: res.StatusCode, header: res.Header, raw: raw}
	if err := json.Unmarshal(raw, &out.rawBody); err != nil {
		e.t.Fatalf("not JSON: %s", raw)
	}
	out.body, _ = out.rawBody.(map[string]any)
	return out
}

// streamEvents pages the caller's whole event stream (with the extra query) and waits
// until it serves at least want events: the stream serves an event only once every
// transaction older than it has ended anywhere on the server (another test package's,
// too), so committed events may be held back for a moment. It fails the test if fewer
// than want are served within 20 s.
func (e *env) streamEvents(key, query string, want int) []map[string]any {
	e.t.Helper()
	var out []map[string]any
	storetest.WaitFor(e.t, 20*time.Second, fmt.Sprintf("the stream (%s) to serve %d events", query, want), func() bool {
		out = nil
		cursor := ""
		for {
			q := "limit=1000"
			if query != "" {
				q += "&" + query
			}
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			r := e.do(request{method: "GET", path: "/events/stream", key: key, query: q})
			expect(e.t, r, http.StatusOK, "")
			for _, ev := range r.dataList() {
				out = append(out, ev.(map[string]any))
			}
			if r.meta()["hasMore"] != true {
				break
			}
			cursor = r.meta()["nextCursor"].(string)
		}
		return len(out) >= want
	})
	return out
}
