// Package api is the HTTP adapter of the service: a Fiber v2 app serving the v1 API at
// /api/v1 and, with the same handlers, at /api/client. Handlers return errors; one error
// handler writes the envelope. The stores and clients it needs are small interfaces
// declared here and bound to their implementations in cmd.
package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/accountablework/accountable"
)

// Config configures the HTTP server.
type Config struct {
	// SiteURL is the public root of the service (docsUrl links, bootstrap); no trailing slash.
	SiteURL string
	// BodyLimit is the largest accepted request body in bytes; larger ones get 413.
	BodyLimit int
	// RateLimit is the sustained requests per second allowed per API key (0: no limit),
	// with bursts of RateBurst.
	RateLimit float64
	RateBurst int
	// KeyTouchInterval is how often last-used times of API keys are written.
	KeyTouchInterval time.Duration
	// TaskQueue is the Temporal task queue workflows are started on.
	TaskQueue string
}

// WorkStore is what the Work area needs.
type WorkStore interface {
	CreateWork(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.CreateWork) (accountable.WorkCreated, bool, error)
	GetWork(ctx context.Context, workspaceID, taskID string) (accountable.Task, error)
	ListWork(ctx context.Context, workspaceID string, f accountable.WorkFilter) ([]accountable.Task, *accountable.WorkCursor, error)
	CompleteWork(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.CompleteWork) (accountable.WorkCompletion, bool, error)
}

// LedgerStore is what the Events area needs.
type LedgerStore interface {
	StreamEvents(ctx context.Context, workspaceID string, f accountable.EventFilter) (accountable.EventPage, error)
	VerifyLedger(ctx context.Context, workspaceID string, scope accountable.LedgerScope) (accountable.LedgerVerification, error)
	GetLedgerVerification(ctx context.Context, workspaceID, id string) (accountable.LedgerVerificationJob, error)
}

// KeyStore is what authentication needs.
type KeyStore interface {
	KeyByPrefix(ctx context.Context, prefix string) (accountable.APIKey, []byte, error)
	IsMember(ctx context.Context, userID, workspaceID string) (bool, error)
	GetWorkspace(ctx context.Context, id string) (accountable.Workspace, error)
	TouchKeys(ctx context.Context, lastUsed map[string]time.Time) error
}

// Pinger reports whether a dependency is reachable.
type Pinger interface {
	Ping(ctx context.Context) error
}

// WorkflowClient is the part of the Temporal client the API uses.
type WorkflowClient interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
	DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error)
	CheckHealth(ctx context.Context, request *client.CheckHealthRequest) (*client.CheckHealthResponse, error)
}

// Deps are the server's collaborators.
type Deps struct {
	Work      WorkStore
	Ledger    LedgerStore
	Keys      KeyStore
	DB        Pinger
	Workflows WorkflowClient
}

// Server is the HTTP API.
type Server struct {
	cfg     Config
	deps    Deps
	log     *slog.Logger
	app     *fiber.App
	schemas *Schemas
	bodies  map[string]*jsonschema.Schema
	usage   *keyUsage
	limiter *rateLimiter
}

// NewServer builds the Fiber app with every route.
func NewServer(cfg Config, deps Deps, log *slog.Logger) (*Server, error) {
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = 1 << 20
	}
	if cfg.KeyTouchInterval <= 0 {
		cfg.KeyTouchInterval = 30 * time.Second
	}
	cfg.SiteURL = strings.TrimRight(cfg.SiteURL, "/")
	schemas, err := NewSchemas()
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, deps: deps, log: log, schemas: schemas,
		bodies:  map[string]*jsonschema.Schema{},
		usage:   newKeyUsage(deps.Keys, cfg.KeyTouchInterval, log),
		limiter: newRateLimiter(cfg.RateLimit, cfg.RateBurst),
	}
	for _, name := range []string{"CreateWorkRequest", "CompleteWorkRequest", "StartLedgerVerificationRequest"} {
		s.bodies[name] = schemas.Component(name)
	}
	s.app = fiber.New(fiber.Config{
		AppName:               "accountable",
		BodyLimit:             cfg.BodyLimit,
		ErrorHandler:          s.handleError,
		DisableStartupMessage: true,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          70 * time.Second,
		IdleTimeout:           120 * time.Second,
		// Strings from the request (headers, params, query) are copies, not views of buffers
		// fasthttp reuses: they may safely outlive the request (caches, goroutines).
		Immutable:   true,
		JSONEncoder: json.Marshal,
		JSONDecoder: json.Unmarshal,
	})
	s.routes()
	return s, nil
}

// App returns the Fiber app (tests serve it on their own listener).
func (s *Server) App() *fiber.App { return s.app }

// Serve serves HTTP on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.usage.start()
	return s.app.Listener(ln)
}

// Shutdown stops accepting requests, waits for those in flight and writes pending
// last-used times of keys.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.app.ShutdownWithContext(ctx)
	s.usage.stop(ctx)
	return err
}

// route is one operation: its method, its path in the OpenAPI document's syntax relative
// to the v1 root, whether it is account-free, and its handler.
type route struct {
	method  string
	path    string
	public  bool
	handler fiber.Handler
}

// v1Routes is the one table of v1 operations; it is mounted at /api/v1 and /api/client,
// and tests check it against the OpenAPI document.
func (s *Server) v1Routes() []route {
	return []route{
		{fiber.MethodGet, "/", true, s.getIndex},
		{fiber.MethodGet, "/openapi.json", true, s.getOpenAPI},
		{fiber.MethodGet, "/errors", true, s.listErrors},
		{fiber.MethodGet, "/credential", false, s.getCredential},
		{fiber.MethodPost, "/work", false, s.createWork},
		{fiber.MethodGet, "/work", false, s.listWork},
		{fiber.MethodGet, "/work/{taskId}", false, s.getWork},
		{fiber.MethodPost, "/work/{taskId}/complete", false, s.completeWork},
		{fiber.MethodGet, "/events/stream", false, s.streamEvents},
		{fiber.MethodGet, "/events/verify", false, s.verifyLedger},
		{fiber.MethodPost, "/events/verifications", false, s.startLedgerVerification},
		{fiber.MethodGet, "/events/verifications/{verificationId}", false, s.getLedgerVerification},
	}
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
	s.app.Get("/healthz", s.getHealth)
	s.app.Get("/readyz", s.getReadiness)
	for _, base := range []string{V1Root, ClientRoot} {
		for _, r := range s.v1Routes() {
			handlers := []fiber.Handler{r.handler}
			if !r.public {
				handlers = []fiber.Handler{s.authenticate, s.rateLimit, r.handler}
			}
			s.app.Add(r.method, base+strings.TrimSuffix(fiberPath(r.path), "/"), handlers...)
		}
	}
	s.app.Get(ClientRoot+"/bootstrap", s.authenticate, s.rateLimit, s.getBootstrap)
}
