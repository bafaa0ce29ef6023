package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/ledgerlog"
	"github.com/accountablework/accountable/oauth"
	"github.com/accountablework/accountable/planner"
	"github.com/accountablework/accountable/receipt"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/webhook"
	"github.com/accountablework/accountable/workflows"
)

// Config is the process configuration, read from environment variables (the README has
// the table). Defaults suit `make run` on one machine.
type Config struct {
	HTTPAddr    string
	SiteURL     string
	DatabaseURL string
	// MigrationDatabaseURL connects as the schema's owner (migrations); DatabaseURL as the
	// service's own, less privileged role.
	MigrationDatabaseURL string
	DatabaseMaxConns     int32
	// DatabaseReadURL is a streaming replica of DatabaseURL that serves the ledger's reads
	// (store.Config.ReadURL); DatabaseReadMaxWait bounds how long a read waits for it.
	DatabaseReadURL       string
	DatabaseReadMaxWait   time.Duration
	TemporalAddress       string
	TemporalNamespace     string
	TaskQueue             string
	LogLevel              slog.Level
	LogFlushInterval      time.Duration
	LogOutput             io.Writer // nil: stderr (set by tests, which keep the lines)
	MaxBodyBytes          int
	RateLimitRPS          float64
	RateLimitBurst        int
	WorkspaceRateRPS      float64
	WorkspaceRateBurst    int
	RateLimitHold         time.Duration
	WorkspaceMaxInFlight  int
	WorkspaceInFlightWait time.Duration
	AuthFailureRPS        float64
	AuthFailureBurst      int
	// PublicRateRPS and PublicRateBurst bound the account-free requests of a client address
	// (api.Config.PublicRateLimit).
	PublicRateRPS   float64
	PublicRateBurst int
	// SSELeasesPerKey and SSELeasesPerWorkspace bound the live event streams open at once
	// (api.Config.MaxSSELeasesPerKey).
	SSELeasesPerKey       int
	SSELeasesPerWorkspace int
	// TrustedProxies and ClientIPHeader: whose header names the client (api.ClientAddresses).
	TrustedProxies []netip.Prefix
	ClientIPHeader string
	// PasswordHashSlots is how many password hashes run at once (0: passwords.DefaultGateSlots).
	PasswordHashSlots int
	ShutdownTimeout   time.Duration
	DevKeyFile        string
	TemporalUIURL     string
	PprofAddr         string
	MetricsAddr       string
	KeyCacheTTL       time.Duration
	// RequestTimeout and LongRequestTimeout are the server-side deadlines of ordinary and
	// long operations; the database bounds lock waits and statements.
	RequestTimeout           time.Duration
	LongRequestTimeout       time.Duration
	DatabaseLockTimeout      time.Duration
	DatabaseStatementTimeout time.Duration
	// The planner: a model on an OpenAI-compatible server when OPENAI_API_KEY is set,
	// otherwise the deterministic baseline.
	OpenAIAPIKey         string
	OpenAIBaseURL        string
	OpenAIModel          string
	OpenAIModelBalanced  string
	OpenAIModelPrecision string
	// LaunchRunTimeout is how long a launch waits for its runs to be finalised.
	LaunchRunTimeout time.Duration
	// ProposalsPerMinute bounds proposal generations per workspace and minute (the
	// specification's 6 by default; make bench raises it to time generations back to back).
	ProposalsPerMinute int
	// ReceiptSignerKeys are the Ed25519 keys of the receipt signers the service trusts
	// (RECEIPT_SIGNER_KEYS: comma-separated key_id=<base64url public key>).
	ReceiptSignerKeys receipt.ReceiptSignerKeys
	// Webhooks: the key that keeps endpoints' secrets (WEBHOOK_SECRET_KEY, 32 bytes in
	// base64; `accountable dev --bootstrap` makes one in .data when unset), whether
	// endpoints may have private and loopback addresses, the ports they may use (empty:
	// the policy's default; WebhookAnyPort: every port), each attempt's timeout, and how
	// many active endpoints a workspace may have.
	WebhookSecretKey    webhook.SecretKey
	WebhookAllowPrivate bool
	WebhookPorts        []uint16
	WebhookAnyPort      bool
	WebhookTimeout      time.Duration
	WebhookMaxEndpoints int
	// OAuth for MCP clients: the secret that keys tokens' HMAC (OAUTH_TOKEN_SECRET, at
	// least 32 bytes in base64, the same in every API process; `accountable dev
	// --bootstrap` makes one in .data when unset; without one there is no authorization
	// server, and /mcp takes API keys only) and the tokens' lifetimes.
	OAuthTokenSecret     []byte
	OAuthAccessTokenTTL  time.Duration
	OAuthRefreshTokenTTL time.Duration

	// The ledger's transparency log (package ledgerlog): the checkpoint signing key (the
	// signed-note private key in LEDGER_SIGNING_KEY, or in the file LEDGER_SIGNING_KEY_FILE,
	// made there on the first start when neither exists; never in the database), the log
	// name that begins every workspace's origin, and how often a written workspace's
	// checkpoint is signed at most.
	LedgerSigningKey         string
	LedgerSigningKeyFile     string
	LedgerLogName            string
	LedgerCheckpointInterval time.Duration
	// LedgerWitnesses cosign the checkpoints (LEDGER_WITNESSES: "<url> <verifier key>"
	// entries separated by commas; C2SP tlog-witness).
	LedgerWitnesses []ledgerlog.Witness

	// DatabaseLongReadMaxConns and DatabaseLongReadWait: the long reads' own pool and how
	// long one waits for its turn (store.Config.LongReadMaxConns, LongReadWait).
	DatabaseLongReadMaxConns int32
	DatabaseLongReadWait     time.Duration
}

// DefaultDatabaseURL and DefaultMigrationDatabaseURL are the service role and the owner
// role on the private cluster that `make run` and `make test` start.
const (
	DefaultDatabaseURL          = "postgres://accountable_service@127.0.0.1:54329/accountable?sslmode=disable"
	DefaultMigrationDatabaseURL = "postgres://accountable@127.0.0.1:54329/accountable?sslmode=disable"
)

// DefaultPublicRateRPS is the account-free requests a second allowed per client address
// (a token per started 64 KiB of body; bursts of twice as many): more than a person at
// the diagnosis form or a pipeline validating its receipts one by one sends, and at most
// an eighth of a core for one address sending the largest receipts as fast as it can.
const DefaultPublicRateRPS = 20

// DefaultSSELeasesPerKey and DefaultSSELeasesPerWorkspace bound the live event streams
// open at once: a credential is one client (a person's browser tabs, an agent's
// followers), a workspace all of them. Each stream holds a connection, a goroutine and
// some tens of KB for up to a minute.
const (
	DefaultSSELeasesPerKey       = 100
	DefaultSSELeasesPerWorkspace = 1000
)

// LoadConfig reads the environment.
func LoadConfig() (Config, error) {
	var errs []string
	c := Config{
		HTTPAddr:             env("HTTP_ADDR", "127.0.0.1:8080"),
		DatabaseURL:          env("DATABASE_URL", DefaultDatabaseURL),
		TemporalAddress:      env("TEMPORAL_ADDRESS", "127.0.0.1:7233"),
		TemporalNamespace:    env("TEMPORAL_NAMESPACE", "default"),
		TaskQueue:            env("TEMPORAL_TASK_QUEUE", workflows.DefaultTaskQueue),
		DevKeyFile:           env("DEV_KEY_FILE", ".data/dev-api-key"),
		LedgerSigningKey:     env("LEDGER_SIGNING_KEY", ""),
		LedgerSigningKeyFile: env("LEDGER_SIGNING_KEY_FILE", ".data/ledger-signing-key"),
		LedgerLogName:        env("LEDGER_LOG_NAME", "accountable.localhost"),
		TemporalUIURL:        env("TEMPORAL_UI_URL", "http://127.0.0.1:8233"),
		PprofAddr:            env("PPROF_ADDR", ""),
		MetricsAddr:          env("METRICS_ADDR", ""),
		OpenAIAPIKey:         env("OPENAI_API_KEY", ""),
		OpenAIBaseURL:        env("OPENAI_BASE_URL", ""),
		OpenAIModel:          env("OPENAI_MODEL", planner.DefaultModel),
		OpenAIModelBalanced:  env("OPENAI_MODEL_BALANCED", ""),
		OpenAIModelPrecision: env("OPENAI_MODEL_PRECISION", ""),
	}
	c.SiteURL = strings.TrimRight(env("SITE_URL", "http://"+c.HTTPAddr), "/")
	// Without DATABASE_URL both roles are the private cluster's; with it alone, the
	// migrations run as the service's role too (one role; docs/architecture.md, Database roles, says what that costs).
	migrationDefault := DefaultMigrationDatabaseURL
	if _, ok := os.LookupEnv("DATABASE_URL"); ok && os.Getenv("DATABASE_URL") != "" {
		migrationDefault = c.DatabaseURL
	}
	c.MigrationDatabaseURL = env("MIGRATION_DATABASE_URL", migrationDefault)
	c.DatabaseMaxConns = int32(envInt("DATABASE_MAX_CONNS", 0, &errs))
	c.DatabaseReadURL = env("DATABASE_READ_URL", "")
	c.DatabaseReadMaxWait = envDuration("DATABASE_READ_MAX_WAIT", store.DefaultReadMaxWait, &errs)
	c.DatabaseLongReadMaxConns = int32(envInt("DATABASE_LONG_READ_MAX_CONNS", store.DefaultLongReadMaxConns, &errs))
	c.DatabaseLongReadWait = envDuration("DATABASE_LONG_READ_WAIT", store.DefaultLongReadWait, &errs)
	c.MaxBodyBytes = envInt("MAX_BODY_BYTES", 1<<20, &errs)
	c.RateLimitRPS = envFloat("RATE_LIMIT_RPS", 0, &errs)
	c.RateLimitBurst = envInt("RATE_LIMIT_BURST", 0, &errs)
	c.WorkspaceRateRPS = envFloat("WORKSPACE_RATE_LIMIT_RPS", 0, &errs)
	c.WorkspaceRateBurst = envInt("WORKSPACE_RATE_LIMIT_BURST", 0, &errs)
	c.RateLimitHold = envDuration("RATE_LIMIT_HOLD", time.Second, &errs)
	c.WorkspaceMaxInFlight = envInt("WORKSPACE_MAX_IN_FLIGHT", 0, &errs)
	c.WorkspaceInFlightWait = envDuration("WORKSPACE_IN_FLIGHT_WAIT", 10*time.Second, &errs)
	c.AuthFailureRPS = envFloat("AUTH_FAILURE_RPS", 10, &errs)
	c.AuthFailureBurst = envInt("AUTH_FAILURE_BURST", 100, &errs)
	c.PublicRateRPS = envFloat("PUBLIC_RATE_LIMIT_RPS", DefaultPublicRateRPS, &errs)
	c.PublicRateBurst = envInt("PUBLIC_RATE_LIMIT_BURST", 0, &errs)
	c.SSELeasesPerKey = envInt("SSE_MAX_LEASES_PER_KEY", DefaultSSELeasesPerKey, &errs)
	c.SSELeasesPerWorkspace = envInt("SSE_MAX_LEASES_PER_WORKSPACE", DefaultSSELeasesPerWorkspace, &errs)
	if p, err := api.ParseTrustedProxies(env("TRUSTED_PROXIES", "")); err != nil {
		errs = append(errs, "TRUSTED_PROXIES: "+err.Error())
	} else {
		c.TrustedProxies = p
	}
	c.ClientIPHeader = env("CLIENT_IP_HEADER", "X-Forwarded-For")
	c.PasswordHashSlots = envInt("PASSWORD_HASH_SLOTS", 0, &errs)
	if ws, err := ledgerlog.ParseWitnesses(env("LEDGER_WITNESSES", "")); err != nil {
		errs = append(errs, "LEDGER_WITNESSES: "+err.Error())
	} else {
		c.LedgerWitnesses = ws
	}
	c.LedgerCheckpointInterval = envDuration("LEDGER_CHECKPOINT_INTERVAL", time.Second, &errs)
	c.ShutdownTimeout = envDuration("SHUTDOWN_TIMEOUT", 20*time.Second, &errs)
	c.KeyCacheTTL = envDuration("KEY_CACHE_TTL", time.Minute, &errs)
	c.LogFlushInterval = envDuration("LOG_FLUSH_INTERVAL", 200*time.Millisecond, &errs)
	c.RequestTimeout = envDuration("REQUEST_TIMEOUT", 15*time.Second, &errs)
	c.LongRequestTimeout = envDuration("LONG_REQUEST_TIMEOUT", 120*time.Second, &errs)
	c.ProposalsPerMinute = envInt("PROPOSALS_PER_MINUTE", api.DefaultProposalsPerMinute, &errs)
	c.LaunchRunTimeout = envDuration("LAUNCH_RUN_TIMEOUT", workflows.DefaultRunTimeout, &errs)
	c.DatabaseLockTimeout = envDuration("DATABASE_LOCK_TIMEOUT", 3*time.Second, &errs)
	c.DatabaseStatementTimeout = envDuration("DATABASE_STATEMENT_TIMEOUT", 30*time.Second, &errs)
	if keys, err := receipt.ParseReceiptSignerKeys(env("RECEIPT_SIGNER_KEYS", "")); err != nil {
		errs = append(errs, "RECEIPT_SIGNER_KEYS: "+err.Error())
	} else {
		c.ReceiptSignerKeys = keys
	}
	if v := env("WEBHOOK_SECRET_KEY", ""); v != "" {
		if k, err := webhook.ParseSecretKey(v); err != nil {
			errs = append(errs, "WEBHOOK_SECRET_KEY: "+err.Error())
		} else {
			c.WebhookSecretKey = k
		}
	}
	if v := env("OAUTH_TOKEN_SECRET", ""); v != "" {
		if b, err := parseTokenSecret(v); err != nil {
			errs = append(errs, "OAUTH_TOKEN_SECRET: "+err.Error())
		} else {
			c.OAuthTokenSecret = b
		}
	}
	c.OAuthAccessTokenTTL = envDuration("OAUTH_ACCESS_TOKEN_TTL", 15*time.Minute, &errs)
	c.OAuthRefreshTokenTTL = envDuration("OAUTH_REFRESH_TOKEN_TTL", 30*24*time.Hour, &errs)
	switch v := strings.ToLower(env("WEBHOOK_ALLOW_PRIVATE", "false")); v {
	case "1", "true", "yes":
		c.WebhookAllowPrivate = true
	case "0", "false", "no":
	default:
		errs = append(errs, "WEBHOOK_ALLOW_PRIVATE: true or false, not "+v)
	}
	if ports, anyPort, err := parseWebhookPorts(env("WEBHOOK_PORTS", "")); err != nil {
		errs = append(errs, "WEBHOOK_PORTS: "+err.Error())
	} else {
		c.WebhookPorts, c.WebhookAnyPort = ports, anyPort
	}
	c.WebhookTimeout = envDuration("WEBHOOK_TIMEOUT", 10*time.Second, &errs)
	if c.WebhookMaxEndpoints = envInt("WEBHOOK_MAX_ENDPOINTS", accountable.DefaultWebhookMaxEndpoints, &errs); c.WebhookMaxEndpoints == 0 {
		errs = append(errs, "WEBHOOK_MAX_ENDPOINTS: want at least 1 (a workspace without webhooks simply registers none)")
	}
	if err := c.LogLevel.UnmarshalText([]byte(env("LOG_LEVEL", "info"))); err != nil {
		errs = append(errs, "LOG_LEVEL: "+err.Error())
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("configuration: %s", strings.Join(errs, "; "))
	}
	return c, nil
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// envParse reads a non-negative setting with parse; a bad value is reported in errs
// (described by want) and the default kept.
func envParse[T int | float64 | time.Duration](name string, def T, parse func(string) (T, error), want string, errs *[]string) T {
	v := env(name, "")
	if v == "" {
		return def
	}
	x, err := parse(v)
	if err != nil || x < 0 {
		*errs = append(*errs, name+": want "+want)
		return def
	}
	return x
}

func envInt(name string, def int, errs *[]string) int {
	return envParse(name, def, strconv.Atoi, "a non-negative integer", errs)
}

func envFloat(name string, def float64, errs *[]string) float64 {
	parse := func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }
	return envParse(name, def, parse, "a non-negative number", errs)
}

func envDuration(name string, def time.Duration, errs *[]string) time.Duration {
	return envParse(name, def, time.ParseDuration, "a duration such as 20s", errs)
}

// webhookTargets is the policy of webhook endpoints' addresses and ports.
func (c Config) webhookTargets() webhook.TargetPolicy {
	return webhook.TargetPolicy{AllowPrivate: c.WebhookAllowPrivate, Ports: c.WebhookPorts, AnyPort: c.WebhookAnyPort}
}

// parseWebhookPorts reads WEBHOOK_PORTS: comma-separated ports, or "*" for every port;
// empty is the policy's default.
func parseWebhookPorts(v string) (ports []uint16, anyPort bool, err error) {
	switch v = strings.TrimSpace(v); v {
	case "":
		return nil, false, nil
	case "*":
		return nil, true, nil
	}
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 16)
		if err != nil || n == 0 {
			return nil, false, fmt.Errorf("want comma-separated ports (1-65535) or *, not %q", v)
		}
		ports = append(ports, uint16(n))
	}
	return ports, false, nil
}

// parseTokenSecret reads OAUTH_TOKEN_SECRET: base64 of at least 32 bytes.
func parseTokenSecret(v string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil {
		return nil, errors.New("must be base64 (openssl rand -base64 32)")
	}
	if len(b) < oauth.MinSecretLength {
		return nil, errors.New("must be at least 32 bytes")
	}
	return b, nil
}
