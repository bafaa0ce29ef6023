package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // served only when PPROF_ADDR is set
	"os"
	"time"

	"go.temporal.io/sdk/client"
	temporallog "go.temporal.io/sdk/log"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/activities"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/ledgerlog"
	"github.com/accountablework/accountable/oauth"
	"github.com/accountablework/accountable/passwords"
	"github.com/accountablework/accountable/planner"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/worker"
	"github.com/accountablework/accountable/workflows"
)

// This file is the one place interfaces are bound to implementations.

// newLogger writes JSON lines (slog) to stderr, gathered in memory for LOG_FLUSH_INTERVAL
// (see logging.go) and written out when the app stops.
func newLogger(lc fx.Lifecycle, cfg Config) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	var out io.Writer = os.Stderr
	if cfg.LogOutput != nil {
		out = cfg.LogOutput
	}
	if cfg.LogFlushInterval <= 0 {
		return slog.New(api.NewJSONLineHandler(out, opts))
	}
	buf := newLogBuffer(out, cfg.LogFlushInterval)
	lc.Append(fx.StopHook(buf.Close))
	return slog.New(flushingLineHandler{flushingHandler{api.NewJSONLineHandler(buf, opts), buf}})
}

// base provides configuration, logging and the database to every subcommand.
func base(cfg Config) fx.Option {
	return fx.Options(
		fx.Supply(cfg),
		fx.Provide(newLogger),
		fx.WithLogger(func(log *slog.Logger) fxevent.Logger {
			l := &fxevent.SlogLogger{Logger: log}
			l.UseLogLevel(slog.LevelDebug)
			return l
		}),
		fx.Provide(newDB, newMetrics),
		fx.Invoke(func(m *Metrics, db *store.DB) { m.observeDB(db) }, serveMetrics),
	)
}

// serveMetrics serves GET /metrics on METRICS_ADDR when it is set (the worker has no
// other listener; the API then serves them there only, not on its own port).
func serveMetrics(lc fx.Lifecycle, cfg Config, m *Metrics, log *slog.Logger) {
	if cfg.MetricsAddr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.handler())
	srv := &http.Server{Addr: cfg.MetricsAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			ln, err := net.Listen("tcp", cfg.MetricsAddr)
			if err != nil {
				return err
			}
			log.Info("serving metrics", "addr", ln.Addr().String())
			go srv.Serve(ln) //nolint:errcheck // ends at Shutdown
			return nil
		},
		OnStop: srv.Shutdown,
	})
}

// newDB opens the store, whose commands send the workflow messages of workflows.Messages.
func newDB(lc fx.Lifecycle, cfg Config) (*store.DB, error) {
	db, err := store.Open(context.Background(), store.Config{URL: cfg.DatabaseURL, MaxConns: cfg.DatabaseMaxConns,
		LockTimeout: cfg.DatabaseLockTimeout, StatementTimeout: cfg.DatabaseStatementTimeout,
		ReadURL: cfg.DatabaseReadURL, ReadMaxWait: cfg.DatabaseReadMaxWait,
		LongReadMaxConns: cfg.DatabaseLongReadMaxConns, LongReadWait: cfg.DatabaseLongReadWait})
	if err != nil {
		return nil, err
	}
	db.UseWorkflowMessages(workflows.Messages{RunTimeout: cfg.LaunchRunTimeout})
	lc.Append(fx.StopHook(db.Close))
	return db, nil
}

// newTemporalClient connects lazily, so the API starts (and /readyz reports) while the
// Temporal server is still down.
func newTemporalClient(lc fx.Lifecycle, cfg Config, log *slog.Logger) (client.Client, error) {
	c, err := client.NewLazyClient(client.Options{
		HostPort:  cfg.TemporalAddress,
		Namespace: cfg.TemporalNamespace,
		Logger:    temporallog.NewStructuredLogger(log.With("component", "temporal")),
		ConnectionOptions: client.ConnectionOptions{DialOptions: []grpc.DialOption{
			// Reconnect within seconds after an outage (gRPC's default backoff grows to 2 min).
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{
				BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 3 * time.Second,
			}, MinConnectTimeout: 3 * time.Second}),
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("temporal client: %w", err)
	}
	lc.Append(fx.StopHook(c.Close))
	return c, nil
}

// newLedgerFeed wakes this process's live event streams when their workspace has new
// events, and announces this process's commits to the others (store.LedgerFeed).
func newLedgerFeed(lc fx.Lifecycle, db *store.DB, log *slog.Logger) *store.LedgerFeed {
	f := store.NewLedgerFeed(db, log.With("component", "ledger_feed"))
	inBackground(lc, f.Run)
	return f
}

// The key cache tells authentication which keys it has found (their secrets skip the
// failure budget); without this assertion a renamed method would silently turn that off.
var _ api.KeyMemory = (*store.KeyCache)(nil)

func newKeyCache(lc fx.Lifecycle, cfg Config, db *store.DB, log *slog.Logger) *store.KeyCache {
	kc := store.NewKeyCache(db, cfg.KeyCacheTTL, log)
	lc.Append(fx.StartStopHook(kc.Start, kc.Stop))
	return kc
}

// newOAuth is the authorization server of MCP clients, when a token secret is configured.
func newOAuth(cfg Config, db *store.DB, log *slog.Logger) (api.OAuthServer, error) {
	if cfg.OAuthTokenSecret == nil {
		log.Info("no OAuth authorization server (OAUTH_TOKEN_SECRET is not set): /mcp accepts API keys only")
		return nil, nil
	}
	return oauth.New(oauth.Config{Issuer: cfg.SiteURL, Resources: []string{cfg.SiteURL, cfg.SiteURL + api.MCPPath},
		Secret: cfg.OAuthTokenSecret, AccessTokenLifespan: cfg.OAuthAccessTokenTTL, RefreshTokenLifespan: cfg.OAuthRefreshTokenTTL}, db)
}

func newAPIServer(lc fx.Lifecycle, cfg Config, db *store.DB, keys *store.KeyCache, feed *store.LedgerFeed, tc client.Client, ledgerKey *ledgerlog.Key, m *Metrics, log *slog.Logger) (*api.Server, error) {
	authz, err := newOAuth(cfg, db, log)
	if err != nil {
		return nil, err
	}
	keyCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sessionKey, err := db.ServiceSecret(keyCtx, "session_mac")
	if err != nil {
		return nil, fmt.Errorf("reading the session key (made by the migrations: run accountable migrate): %w", err)
	}
	deps, err := api.NewDeps(db, tc)
	if err != nil {
		return nil, err
	}
	deps.Keys = keys // API keys are read through the cache
	deps.OAuth, deps.Metrics, deps.Feed, deps.MetricsHandler = authz, m, feed, m.apiHandler(cfg)
	srv, err := api.NewServer(api.Config{
		SiteURL: cfg.SiteURL, BodyLimit: cfg.MaxBodyBytes, RateLimit: cfg.RateLimitRPS, RateBurst: cfg.RateLimitBurst,
		WorkspaceRateLimit: cfg.WorkspaceRateRPS, WorkspaceRateBurst: cfg.WorkspaceRateBurst, RateLimitHold: cfg.RateLimitHold,
		WorkspaceMaxInFlight: cfg.WorkspaceMaxInFlight, WorkspaceInFlightWait: cfg.WorkspaceInFlightWait,
		AuthFailureRate: cfg.AuthFailureRPS, AuthFailureBurst: cfg.AuthFailureBurst,
		PublicRateLimit: cfg.PublicRateRPS, PublicRateBurst: cfg.PublicRateBurst,
		MaxSSELeasesPerKey: cfg.SSELeasesPerKey, MaxSSELeasesPerWorkspace: cfg.SSELeasesPerWorkspace,
		ClientAddresses: api.ClientAddresses{TrustedProxies: cfg.TrustedProxies, Header: cfg.ClientIPHeader},
		SessionKey:      sessionKey, PasswordGate: passwords.NewGate(cfg.PasswordHashSlots, 0, 0),
		Deadlines: map[api.DeadlineClass]time.Duration{
			api.DeadlineRead: cfg.RequestTimeout, api.DeadlineCommand: cfg.RequestTimeout, api.DeadlineLong: cfg.LongRequestTimeout,
		},
		TaskQueue: cfg.TaskQueue, ProposalsPerMinute: cfg.ProposalsPerMinute,
		ReceiptSignerKeys: cfg.ReceiptSignerKeys,
		WebhookSecretKey:  cfg.WebhookSecretKey, WebhookTargets: cfg.webhookTargets(),
		WebhookMaxEndpoints: cfg.WebhookMaxEndpoints,
		// Only the public half: the API hands clients the key that checks the checkpoints
		// the worker's sealer signs.
		LedgerLogName: cfg.LedgerLogName, LedgerVerifierKey: ledgerKey.VerifierKey,
	}, deps, log)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			ln, err := net.Listen("tcp", cfg.HTTPAddr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", cfg.HTTPAddr, err)
			}
			log.Info("serving the API", "addr", ln.Addr().String(), "site_url", cfg.SiteURL)
			go func() {
				if err := srv.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) {
					log.Error("HTTP server stopped", "err", err)
				}
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, cfg.ShutdownTimeout)
			defer cancel()
			return srv.Shutdown(ctx)
		},
	})
	return srv, nil
}

// newPlanner is the model planner when OPENAI_API_KEY is set (any OpenAI-compatible server
// with OPENAI_BASE_URL), otherwise the deterministic baseline.
func newPlanner(cfg Config, log *slog.Logger) activities.Planner {
	if cfg.OpenAIAPIKey == "" {
		log.Info("planning proposals with the deterministic baseline (OPENAI_API_KEY is not set)")
		return planner.NewBaseline()
	}
	log.Info("planning proposals with a model", "model", cfg.OpenAIModel, "base_url", cfg.OpenAIBaseURL)
	return planner.NewModel(planner.ModelConfig{APIKey: cfg.OpenAIAPIKey, BaseURL: cfg.OpenAIBaseURL, Model: cfg.OpenAIModel,
		TierModels: map[accountable.ModelTier]string{
			accountable.ModelTierBalanced: cfg.OpenAIModelBalanced, accountable.ModelTierPrecision: cfg.OpenAIModelPrecision,
		}})
}

// newWebhookWaker wakes idle webhook endpoints' deliveries when their workspace commits
// events (the process's ledger feed). Its stop runs after the worker's (the worker
// depends on it): the endpoints parked here are woken once this process takes no more
// tasks, so they read again on another worker.
func newWebhookWaker(lc fx.Lifecycle, db *store.DB, feed *store.LedgerFeed, tc client.Client, log *slog.Logger) *worker.WebhookWaker {
	w := worker.NewWebhookWaker(feed, tc, db, log.With("component", "webhook_waker"))
	lc.Append(fx.StartStopHook(w.Start, w.Stop))
	return w
}

func newWorker(lc fx.Lifecycle, cfg Config, db *store.DB, tc client.Client, waker *worker.WebhookWaker, m *Metrics, log *slog.Logger) *worker.Worker {
	w := worker.New(tc, cfg.TaskQueue, worker.NewActivities(db, newPlanner(cfg, log), activities.Webhooks{
		Key: cfg.WebhookSecretKey, Waker: waker,
		Client: activities.NewWebhookClient(cfg.webhookTargets(), cfg.WebhookTimeout), Log: log.With("component", "webhooks"),
	}), &workflowFailureCounter{m: m})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			log.Info("starting the Temporal worker", "temporal", cfg.TemporalAddress, "task_queue", cfg.TaskQueue)
			return w.Start()
		},
		OnStop: func(context.Context) error { w.Stop(); return nil },
	})
	return w
}

// newRelay delivers the workflow messages of committed commands (the transactional
// outbox); every process that talks to Temporal runs one, and the store nudges it when a
// command wrote messages.
func newRelay(lc fx.Lifecycle, cfg Config, db *store.DB, tc client.Client, m *Metrics, log *slog.Logger) *worker.Relay {
	r := worker.NewRelay(db, tc, cfg.TaskQueue, log.With("component", "relay"), m)
	db.OnWorkflowMessage(r.Nudge)
	lc.Append(fx.StartStopHook(r.Start, r.Stop))
	return r
}

// newLedgerKey loads the ledger's checkpoint signing key, making one in
// LEDGER_SIGNING_KEY_FILE on the first start.
func newLedgerKey(cfg Config, log *slog.Logger) (*ledgerlog.Key, error) {
	if cfg.LedgerSigningKey != "" {
		return ledgerlog.ParseKey(cfg.LedgerSigningKey)
	}
	k, made, err := ledgerlog.LoadOrCreateKey(cfg.LedgerSigningKeyFile, cfg.LedgerLogName)
	if err != nil {
		return nil, err
	}
	if made {
		log.Warn("made a new ledger signing key: keep it (and back it up) outside the database; "+
			"every process of a deployment needs the same one (LEDGER_SIGNING_KEY)",
			"file", cfg.LedgerSigningKeyFile, "public_key", k.VerifierKey)
	}
	return k, nil
}

// newLedgerSealer keeps the workspaces' transparency logs signed (worker.LedgerSealer).
func newLedgerSealer(lc fx.Lifecycle, cfg Config, db *store.DB, key *ledgerlog.Key, feed *store.LedgerFeed, m *Metrics, log *slog.Logger) *worker.LedgerSealer {
	s := worker.NewLedgerSealer(db, key, cfg.LedgerLogName, cfg.LedgerCheckpointInterval, feed, m, log.With("component", "ledger_sealer"))
	if len(cfg.LedgerWitnesses) > 0 {
		s.UseWitnesses(cfg.LedgerWitnesses, db, &http.Client{Timeout: 10 * time.Second}, m)
	}
	lc.Append(fx.StartStopHook(s.Start, s.Stop))
	return s
}

// warnPrivilegedRole logs a warning when the service connects as a role that could rewrite
// the ledger (a superuser, or the schema's owner): the append-only rule then rests on a
// trigger such a role may bypass. It does not hold up the start (PostgreSQL may be down).
func warnPrivilegedRole(lc fx.Lifecycle, db *store.DB, log *slog.Logger) {
	lc.Append(fx.StartHook(func() {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := db.CheckRole(ctx)
			if err == nil && c.Privileged {
				log.Warn("the service connects to PostgreSQL as a privileged role that may rewrite the ledger; "+
					"give it its own role (MIGRATION_DATABASE_URL for the owner, DATABASE_URL for the service)", "role", c.Role)
			}
		}()
	}))
}

// registerSearchAttributes makes sure the Temporal namespace knows the search attributes
// the service's workflows carry, in the background (Temporal may be down at start).
func registerSearchAttributes(lc fx.Lifecycle, cfg Config, tc client.Client, log *slog.Logger) {
	inBackground(lc, func(ctx context.Context) {
		worker.KeepSearchAttributesRegistered(ctx, tc, cfg.TemporalNamespace, log.With("component", "temporal"))
	})
}

// inBackground runs fn in a goroutine from the app's start; at its stop, fn's context is
// cancelled and the stop waits for fn to return.
func inBackground(lc fx.Lifecycle, fn func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			go func() {
				defer close(done)
				fn(ctx)
			}()
			return nil
		},
		OnStop: func(context.Context) error { cancel(); <-done; return nil },
	})
}

// startProfiler serves net/http/pprof on PPROF_ADDR (off by default; bind it to loopback).
func startProfiler(lc fx.Lifecycle, cfg Config, log *slog.Logger) {
	if cfg.PprofAddr == "" {
		return
	}
	srv := &http.Server{Addr: cfg.PprofAddr, Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second}
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			ln, err := net.Listen("tcp", cfg.PprofAddr)
			if err != nil {
				return err
			}
			log.Info("serving pprof", "addr", ln.Addr().String())
			go srv.Serve(ln) //nolint:errcheck // ends at Shutdown
			return nil
		},
		OnStop: srv.Shutdown,
	})
}

// startIdempotencyJanitor deletes idempotency records past their retention every hour
// (replays of expired keys are already ignored; this keeps the table small), and ended
// settings-page sessions, in small
// batches, by one replica at a time (the others find the janitor's lock taken).
func startIdempotencyJanitor(lc fx.Lifecycle, db *store.DB, log *slog.Logger) {
	inBackground(lc, func(ctx context.Context) {
		t := time.NewTicker(time.Hour)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if n, err := db.PurgeExpiredIdempotency(ctx, 500); err != nil {
					log.Warn("purging expired idempotency records", "err", err)
				} else if n > 0 {
					log.Info("purged expired idempotency records", "count", n)
				}
				// Settings-page sessions that ended a day ago are no use to anyone.
				if n, err := db.PurgeSessions(ctx, time.Now().Add(-24*time.Hour)); err != nil {
					log.Warn("purging ended sessions", "err", err)
				} else if n > 0 {
					log.Info("purged ended sessions", "count", n)
				}
				if n, err := db.PurgeOAuthGrants(ctx, time.Now().Add(-24*time.Hour)); err != nil {
					log.Warn("purging expired OAuth grants", "err", err)
				} else if n > 0 {
					log.Info("purged expired OAuth grants", "count", n)
				}
			}
		}
	})
}

// serveOptions runs the HTTP API.
func serveOptions(cfg Config) fx.Option {
	return fx.Options(base(cfg), fx.Provide(newTemporalClient, newKeyCache, newLedgerFeed, newLedgerKey, newAPIServer, newRelay),
		fx.Invoke(func(*api.Server, *worker.Relay) {}, startProfiler, startIdempotencyJanitor, warnPrivilegedRole, registerSearchAttributes))
}

// workerOptions runs the Temporal worker.
func workerOptions(cfg Config) fx.Option {
	return fx.Options(base(cfg), fx.Provide(newTemporalClient, newLedgerFeed, newLedgerKey, newLedgerSealer, newWebhookWaker, newWorker, newRelay),
		fx.Invoke(func(*worker.Worker, *worker.Relay, *store.LedgerFeed, *worker.LedgerSealer) {}, warnPrivilegedRole, registerSearchAttributes))
}

// devOptions runs both in one process (make run).
func devOptions(cfg Config) fx.Option {
	return fx.Options(base(cfg), fx.Provide(newTemporalClient, newKeyCache, newLedgerFeed, newLedgerKey, newLedgerSealer, newAPIServer, newWebhookWaker, newWorker, newRelay),
		fx.Invoke(func(*api.Server, *worker.Worker, *worker.Relay, *worker.LedgerSealer) {}, startProfiler, startIdempotencyJanitor, warnPrivilegedRole, registerSearchAttributes))
}
