// Package api is the HTTP adapter of the service: a Fiber v2 app serving the v1 API at
// /api/v1 and, with the same handlers, at /api/client. Handlers return errors; one error
// handler writes the envelope. The stores and clients it needs are small interfaces
// declared here and bound to their implementations in cmd.
package api

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.temporal.io/sdk/client"
	"golang.org/x/sync/singleflight"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/passwords"
	"github.com/accountablework/accountable/receipt"
	"github.com/accountablework/accountable/tokens"
	"github.com/accountablework/accountable/webhook"
)

// Config configures the HTTP server.
type Config struct {
	// SiteURL is the public root of the service (docsUrl links, bootstrap); no trailing slash.
	SiteURL string
	// BodyLimit is the largest accepted request body in bytes; larger ones get 413.
	BodyLimit int
	// OversizeDrainBytes and OversizeDrainTime bound how much of a refused oversized body
	// the server reads and discards before it closes the connection, so that a client
	// still writing it reads the 413 (drain.go). Defaults: BodyLimit + 4 MiB, 2s.
	OversizeDrainBytes int64
	OversizeDrainTime  time.Duration
	// RateLimit is the sustained requests per second allowed per API key (0: no limit),
	// with bursts of RateBurst.
	RateLimit float64
	RateBurst int
	// WorkspaceRateLimit is the sustained requests per second allowed per workspace, over
	// all its credentials (0: no limit), with bursts of WorkspaceRateBurst: one workspace
	// writing as fast as it can then cannot take the database from the others.
	WorkspaceRateLimit float64
	WorkspaceRateBurst int
	// RateLimitHold is how long a refusal by RateLimit or WorkspaceRateLimit is held
	// before it is written once its key or workspace has spent its prompt refusals (as
	// many a second as requests it is allowed; see refuse). 0: every refusal at once.
	RateLimitHold time.Duration
	// WorkspaceMaxInFlight is how many writes of one workspace run at once (0: no bound);
	// the others wait their turn, at most WorkspaceInFlightWait (default 10 s), then 429.
	WorkspaceMaxInFlight  int
	WorkspaceInFlightWait time.Duration
	// AuthFailureRate is the sustained failed authentications per second allowed per
	// client address (0: no limit), with bursts of AuthFailureBurst; past it the address
	// gets 429 and its keys are not looked up (see verifyKey).
	AuthFailureRate  float64
	AuthFailureBurst int
	// PublicRateLimit is the sustained account-free requests per second allowed per client
	// address (0: no limit), with bursts of PublicRateBurst (publiclimit.go).
	PublicRateLimit float64
	PublicRateBurst int
	// MaxSSELeasesPerKey and MaxSSELeasesPerWorkspace bound the live event streams (SSE
	// leases) open at once per credential and per workspace (0: no bound; sseleases.go).
	MaxSSELeasesPerKey       int
	MaxSSELeasesPerWorkspace int
	// ClientAddresses says how clients are told apart for the per-client budgets (the
	// remote address, or a trusted proxy's header).
	ClientAddresses ClientAddresses
	// SessionKey tags the session tokens this deployment issues (tokens.NewSessionToken;
	// every process needs the same one: cmd reads it from the database). Nil: a random key
	// of this process's own.
	SessionKey []byte
	// PasswordGate bounds the password hashes computed at once (sign-in's Argon2id; the
	// authorization server's bcrypt shares it in cmd). Nil: a gate of its own with the
	// defaults of passwords.NewGate.
	PasswordGate *passwords.Gate
	// MaxLimiterBuckets bounds the token buckets each limiter keeps in memory (default
	// 50000; see buckets).
	MaxLimiterBuckets int
	// KeyTouchInterval is how often last-used times of API keys are written.
	KeyTouchInterval time.Duration
	// TaskQueue is the Temporal task queue of the workflows the API starts itself.
	TaskQueue string
	// ProposalsPerMinute bounds proposal generations per workspace and minute (default 6,
	// the specification's).
	ProposalsPerMinute int
	// Deadlines are the server-side deadlines of the operation classes (defaults: read and
	// command 15s, long 120s).
	Deadlines map[DeadlineClass]time.Duration
	// ReceiptSignerKeys are the Ed25519 public keys of the receipt signers the service
	// trusts, by key_id: receipt signatures are verified with them (the others are
	// reported not_checked).
	ReceiptSignerKeys receipt.ReceiptSignerKeys
	// WebhookSecretKey keeps webhook endpoints' secrets (without one, registering an
	// endpoint is 403); WebhookTargets says which addresses endpoints may have;
	// WebhookMaxEndpoints how many active ones a workspace may have (0: the default).
	WebhookSecretKey    webhook.SecretKey
	WebhookTargets      webhook.TargetPolicy
	WebhookMaxEndpoints int
	// LedgerLogName names the workspaces' transparency logs (LEDGER_LOG_NAME: a log's
	// origin is it, /workspaces/ and the workspace id), and LedgerVerifierKey is the
	// public key that signs their checkpoints, in signed-note form: both handed to
	// clients, who check the logs with them (api/ledgerlog.go). The signing key itself
	// never reaches the API.
	LedgerLogName     string
	LedgerVerifierKey string
}

// KeyStore is what authentication needs.
type KeyStore interface {
	KeyByPrefix(ctx context.Context, prefix string) (accountable.APIKey, []byte, error)
	IsMember(ctx context.Context, userID, workspaceID string) (bool, error)
	GetWorkspace(ctx context.Context, id string) (accountable.Workspace, error)
	TouchKeys(ctx context.Context, lastUsed map[string]time.Time) error
}

// KeyMemory is implemented by a KeyStore that holds keys in memory (store.KeyCache).
// KnownKeyHash returns the stored hash of a key it has found under prefix, however long
// ago: a request whose secret matches it is looked up without spending the failure
// budget (its lookup costs at most one query per cache period, and only the key's holder
// can cause it), so a valid key keeps working from an address that has spent its budget.
// UnknownPrefix reports that no key had prefix a moment ago: the request is refused
// without a lookup, so it spends no budget either. KnownPrefix reports that prefix is a
// key's (revoked or not): it is looked up without the budget (see verifyKey).
type KeyMemory interface {
	KnownKeyHash(prefix string) ([]byte, bool)
	KnownPrefix(prefix string) bool
	UnknownPrefix(prefix string) bool
}

// KeyHolder is implemented by a KeyMemory that can hand over a key it holds fresh
// (store.KeyCache): HeldKey returns it and its stored hash, as KeyByPrefix would return
// them, without a query. Authentication then needs no lookup, and no deadline for one.
type KeyHolder interface {
	HeldKey(prefix string) (accountable.APIKey, []byte, bool)
}

// Pinger reports whether a dependency is reachable.
type Pinger interface {
	Ping(ctx context.Context) error
}

// WorkflowEngine is the part of the Temporal client the API uses: readiness.
type WorkflowEngine interface {
	CheckHealth(ctx context.Context, request *client.CheckHealthRequest) (*client.CheckHealthResponse, error)
}

// Metrics receives the API's measurements (bound to Prometheus in cmd). RequestSeries
// returns the series of the requests of a route (the path template) and method: the API
// asks once per route, and observes every request of it there, so a request costs no
// lookup of its labels.
type Metrics interface {
	RequestSeries(route, method string) RequestSeries
	IdempotentReplay(operation string)
}

// RequestSeries counts and times the requests of one route and method, by status.
type RequestSeries interface {
	Observe(status int, duration time.Duration)
}

type metrics struct {
	m      Metrics
	series sync.Map // *fiber.Route: the RequestSeries of its path and method
}

func (m *metrics) replayed(op string) {
	if m.m != nil {
		m.m.IdempotentReplay(op)
	}
}

// request observes the request c answered with status after d, in the series of its
// route, resolved on the route's first request. Fiber's routes are made once, each with
// its method (a middleware's once per method); a route Fiber makes up for a request that
// reached none (it has no handlers) is observed without being kept.
func (m *metrics) request(c *fiber.Ctx, status int, d time.Duration) {
	if m.m == nil {
		return
	}
	r, method := c.Route(), c.Method()
	if r.Method != method || len(r.Handlers) == 0 {
		m.m.RequestSeries(r.Path, method).Observe(status, d)
		return
	}
	series, ok := m.series.Load(r)
	if !ok {
		series, _ = m.series.LoadOrStore(r, m.m.RequestSeries(r.Path, method))
	}
	series.(RequestSeries).Observe(status, d)
}

// Deps are the server's collaborators.
type Deps struct {
	// stores are the areas' stores, by slot (needsStore): bound by NewDeps.
	stores    []any
	Keys      KeyStore
	DB        Pinger
	Workflows WorkflowEngine
	// Runner starts workflow-backed operations and waits for them (the Temporal client).
	Runner WorkflowRunner
	// Settings serves the key settings page and its sign-in (none: no page).
	Settings SettingsStore
	// OAuth is the authorization server of MCP clients (none: no OAuth, no token).
	OAuth   OAuthServer
	Metrics Metrics
	// Feed wakes live event streams when their workspace has new events (nil: they poll).
	Feed EventFeed
	// MetricsHandler serves GET /metrics when set.
	MetricsHandler fiber.Handler
}

// Stores is what NewDeps binds: one *store.DB in the service and in the API tests (api
// does not import store). The stores of authentication, readiness and the settings page
// are checked when its calls compile; the areas' own (needsStore, declared in each area's
// file) when it runs.
type Stores interface {
	KeyStore
	Pinger
	SettingsStore
}

// WorkflowClient is the part of the Temporal client the API uses.
type WorkflowClient interface {
	WorkflowEngine
	WorkflowRunner
}

// NewDeps binds every store and workflow interface of Deps: the service (cmd) and the API
// tests both build their Deps here, so that an area's store cannot be wired in one and
// forgotten in the other (TestNewDepsBindsEveryStore). It fails, naming the interface and
// the method, when stores lacks a store interface an area registered. What differs per
// process (the key cache, the feed, OAuth, metrics) is set on the result.
func NewDeps(stores Stores, temporal WorkflowClient) (Deps, error) {
	areas, err := bindStores(stores)
	if err != nil {
		return Deps{}, err
	}
	return Deps{stores: areas, Keys: stores, DB: stores, Workflows: temporal, Runner: temporal, Settings: stores}, nil
}

// Server is the HTTP API.
type Server struct {
	cfg        Config
	deps       Deps
	log        *slog.Logger
	lines      jsonLineWriter // log's handler when it takes the request line as bytes (requestlog.go)
	app        *fiber.App
	ops        []operation
	document   []byte
	usage      *keyUsage
	listener   atomic.Pointer[drainListener] // set by Serve, for Shutdown
	limiter    *buckets                      // requests per API key
	workspaces *buckets                      // requests per workspace
	// keyRefusals and workspaceRefusals are the prompt refusals of limiter and
	// workspaces (refuse; nil without RateLimitHold); held counts the refusals being held.
	keyRefusals       *buckets
	workspaceRefusals *buckets
	held              atomic.Int64
	inFlight          *inFlight // writes at once per workspace (nil: no bound)
	// pictureTurns lets a workspace have one picture drawn at a time (pictureWait): the
	// operating map's layout runs one at a time for the whole process (1.5 to 5 s for the
	// largest), so a workspace asking for many waits behind its own, while the others'
	// take their turns between them.
	pictureTurns   *inFlight
	authFailures   *buckets // failed authentications per client address
	sessionKey     []byte
	hashes         *passwords.Gate // password hashes at once (sign-in; bcrypt of client secrets)
	signInPairs    *buckets        // failed sign-ins per client address and account
	signInAccounts *buckets        // failed sign-ins per account
	// addressRefusals are the prompt refusals of a client address at the sign-in and
	// OAuth endpoints (refuse): a client resending refused attempts at once has the rest
	// held, as over the rate limits.
	addressRefusals *buckets
	// clientSecretFailures are failed OAuth client authentications per client address and
	// client (clientSecretBudget).
	clientSecretFailures *buckets
	registrations        *buckets      // OAuth client registrations per client address
	tiles                tileCache     // full tiles of the workspaces' logs, immutable
	contextBases         *contextBases // the capsule texts served, bases of the next deltas
	metrics              *metrics
	publicClients        *buckets // account-free requests per client address (nil: no limit)
	publicRefusals       *buckets // their prompt refusals (refuse; nil without RateLimitHold)
	// streams is the context of live event streams and held refusals: Shutdown cancels
	// it, so that they end instead of holding their connections until their lease (or
	// hold) runs out.
	streams     context.Context
	stopStreams context.CancelFunc
	streamReads singleflight.Group // concurrent identical reads of live streams (readForStreams)
	leases      *streamLeases      // live streams open per key and workspace (nil: no bound)
}

// NewServer builds the Fiber app with every route and the OpenAPI document.
func NewServer(cfg Config, deps Deps, log *slog.Logger) (*Server, error) {
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = 1 << 20
	}
	if cfg.OversizeDrainBytes <= 0 {
		cfg.OversizeDrainBytes = int64(cfg.BodyLimit) + defaultDrainExtra
	}
	if cfg.OversizeDrainTime <= 0 {
		cfg.OversizeDrainTime = defaultDrainTime
	}
	if cfg.WorkspaceInFlightWait <= 0 {
		cfg.WorkspaceInFlightWait = 10 * time.Second
	}
	if len(cfg.SessionKey) == 0 {
		cfg.SessionKey = make([]byte, tokens.SessionKeyLength)
		rand.Read(cfg.SessionKey) // never fails (crypto/rand)
	}
	if cfg.PasswordGate == nil {
		cfg.PasswordGate = passwords.NewGate(0, 0, 0)
	}
	if cfg.KeyTouchInterval <= 0 {
		cfg.KeyTouchInterval = 30 * time.Second
	}
	cfg.SiteURL = strings.TrimRight(cfg.SiteURL, "/")
	if err := checkLedgerSettings(cfg); err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, deps: deps, log: log,
		lines:        jsonLinesOf(log),
		usage:        newKeyUsage(deps.Keys, cfg.KeyTouchInterval, log),
		limiter:      newBuckets(cfg.RateLimit, cfg.RateBurst, cfg.MaxLimiterBuckets),
		workspaces:   newBuckets(cfg.WorkspaceRateLimit, cfg.WorkspaceRateBurst, cfg.MaxLimiterBuckets),
		inFlight:     newInFlight(cfg.WorkspaceMaxInFlight, cfg.WorkspaceInFlightWait),
		pictureTurns: newInFlight(1, pictureWait),
		authFailures: newBuckets(cfg.AuthFailureRate, cfg.AuthFailureBurst, cfg.MaxLimiterBuckets),
		hashes:       cfg.PasswordGate,
		sessionKey:   cfg.SessionKey,
		// Five failed sign-ins a minute per address and account, after a first ten; six a
		// minute per account, after a first twenty (signIn).
		signInPairs:    newBuckets(5.0/60, 10, cfg.MaxLimiterBuckets),
		signInAccounts: newBuckets(6.0/60, 20, cfg.MaxLimiterBuckets),
		// Five failed client authentications a minute per address and client, after ten.
		clientSecretFailures: newBuckets(5.0/60, 10, cfg.MaxLimiterBuckets),
		// Ten client registrations a minute per address, after a first twenty.
		registrations: newBuckets(10.0/60, 20, cfg.MaxLimiterBuckets),
		tiles:         newTileCache(),
		contextBases:  newContextBases(),
		metrics:       &metrics{m: deps.Metrics},
		publicClients: newBuckets(cfg.PublicRateLimit, cfg.PublicRateBurst, cfg.MaxLimiterBuckets),
		leases:        newStreamLeases(cfg.MaxSSELeasesPerKey, cfg.MaxSSELeasesPerWorkspace),
	}
	if cfg.RateLimitHold > 0 {
		s.addressRefusals = newBuckets(5, 10, cfg.MaxLimiterBuckets)
		s.keyRefusals = newBuckets(cfg.RateLimit, cfg.RateBurst, cfg.MaxLimiterBuckets)
		s.workspaceRefusals = newBuckets(cfg.WorkspaceRateLimit, cfg.WorkspaceRateBurst, cfg.MaxLimiterBuckets)
		s.publicRefusals = newBuckets(cfg.PublicRateLimit, cfg.PublicRateBurst, cfg.MaxLimiterBuckets)
	}
	s.streams, s.stopStreams = context.WithCancel(context.Background())
	s.ops = s.operations()
	doc, err := buildDocument(s.ops, cfg.SiteURL)
	if err != nil {
		return nil, err
	}
	s.document = doc
	s.app = fiber.New(fiber.Config{
		AppName:               "accountable",
		BodyLimit:             cfg.BodyLimit,
		ErrorHandler:          s.handleError,
		DisableStartupMessage: true,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          70 * time.Second,
		IdleTimeout:           120 * time.Second,
		WriteBufferSize:       answerBufferSize,
		// Strings from the request (headers, params, query) are copies, not views of buffers
		// fasthttp reuses: they may safely outlive the request (caches, goroutines).
		Immutable:   true,
		JSONEncoder: json.Marshal,
		JSONDecoder: json.Unmarshal,
	})
	s.refuseUnknownMethods()
	s.routes()
	return s, nil
}

// answerBufferSize is the size of a connection's write buffer: an answer that fits in it
// with its headers goes out in one write to the socket. fasthttp's default of 4 KiB sent a
// diagnosis (7.1 KiB) in two writes, and the writes on the client's socket were a third
// of the doctor line's CPU in make bench (BenchmarkDoctorOverTCP: 13% less CPU a request
// at 8 KiB, 17% at 16 KiB). An idle keep-alive connection holds it: 8 KiB is the answers
// of the common operations for 4 KiB more per connection.
const answerBufferSize = 8 << 10

// App returns the Fiber app (tests serve it on their own listener).
func (s *Server) App() *fiber.App { return s.app }

// Serve serves HTTP on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.usage.start()
	dl := newDrainListener(ln, s.cfg.OversizeDrainBytes, s.cfg.OversizeDrainTime)
	s.listener.Store(dl)
	return s.app.Listener(dl)
}

// Shutdown stops accepting requests, waits for those in flight and writes pending
// last-used times of keys.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopStreams()
	if dl := s.listener.Load(); dl != nil {
		// Connections that never sent a request would hold the shutdown until their read timeout.
		closing, stop := context.WithCancel(ctx)
		defer stop()
		go dl.closeUnused(closing)
	}
	err := s.app.ShutdownWithContext(ctx)
	s.usage.stop(ctx)
	return err
}

// Mount points of the v1 operations.
const (
	V1Root     = "/api/v1"
	ClientRoot = "/api/client"
)

var pathParam = regexp.MustCompile(`\{(\w+)\}`)

// fiberPath turns "/work/{taskId}" into Fiber's "/work/:taskId".
func fiberPath(p string) string { return pathParam.ReplaceAllString(p, ":$1") }

func (s *Server) routes() {
	s.app.Use(s.requestContext)
	s.settingsRoutes()
	s.oauthRoutes()
	s.mcpRoutes()
	for i := range s.ops {
		o := &s.ops[i]
		serve := func(c *fiber.Ctx) error { return o.serve(s, c) }
		handlers := append(s.publicGate(o), serve)
		if !o.Public {
			// The workspace is charged in serve, once a body workspace_id has re-scoped the request.
			handlers = []fiber.Handler{s.authenticate, s.rateLimit, requireScope(o.scope()), serve}
		}
		for _, root := range o.roots() {
			path := strings.TrimSuffix(root, "/") + o.route()
			if path != "/" {
				path = strings.TrimSuffix(path, "/")
			}
			s.app.Add(o.Method, path, handlers...)
		}
	}
}

// roots are the mount points of o.
func (o *operation) roots() []string {
	if o.Root != "" {
		return []string{o.Root}
	}
	return []string{V1Root, ClientRoot}
}
