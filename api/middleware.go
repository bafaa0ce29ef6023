package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/accountablework/accountable"
)

const (
	headerRequestID      = "X-Request-Id"
	headerSvcVersion     = "Svc-Version"
	headerIdempotencyKey = "Idempotency-Key"
	localRequestID       = "requestId"
	localPrincipal       = "principal"
	localAPIKey          = "apiKey"
	localContractDate    = "contractDate"
	localCanonicalBody   = "canonicalBody"
)

// A client-supplied request id is echoed when it is short and plain; otherwise the server
// makes one.
var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:/-]{1,128}$`)

// requestID returns the request id of c, assigning one when the request has none yet
// (requests rejected before any middleware ran, such as an oversized body).
func requestID(c *fiber.Ctx) string {
	if id, ok := c.Locals(localRequestID).(string); ok {
		return id
	}
	id := c.Get(headerRequestID)
	if !requestIDPattern.MatchString(id) {
		id = uuid.NewString()
	}
	c.Locals(localRequestID, id)
	c.Set(headerRequestID, id)
	return id
}

// requestContext gives every request its id and contract date, writes errors through the
// one error handler and logs the outcome (never the Authorization header).
func (s *Server) requestContext(c *fiber.Ctx) error {
	start := time.Now()
	id := requestID(c)
	date := accountable.ContractDates[0]
	var err error
	if v := c.Get(headerSvcVersion); v != "" {
		if accountable.SupportedContractDate(v) {
			date = v
		} else {
			err = accountable.Errorf(accountable.ECodeUnsupportedAPIVersion,
				"Svc-Version %q is not a contract date this service serves (serves: %s).", v, strings.Join(accountable.ContractDates, ", "))
		}
	}
	c.Locals(localContractDate, date)
	c.Set(headerSvcVersion, date)
	if err == nil {
		err = s.safeNext(c)
	}
	if err != nil {
		if herr := s.handleError(c, err); herr != nil {
			s.log.Error("writing error response", "request_id", id, "err", herr)
		}
	}
	status := c.Response().StatusCode()
	s.metrics.request(c.Route().Path, c.Method(), status, time.Since(start))
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	attrs := []any{"request_id", id, "method", c.Method(), "path", c.Path(), "status", status,
		"duration_ms", float64(time.Since(start).Microseconds()) / 1000}
	if p, ok := c.Locals(localPrincipal).(accountable.Principal); ok {
		attrs = append(attrs, "workspace_id", p.WorkspaceID, "key_prefix", p.KeyPrefix)
	}
	s.log.Log(c.UserContext(), level, "request", attrs...)
	return nil
}

// safeNext runs the rest of the chain, turning a panic into an internal error.
func (s *Server) safeNext(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("panic", "request_id", requestID(c), "panic", r)
			err = errors.New("panic in handler")
		}
	}()
	return c.Next()
}

// errUnauthorized answers 401 with the specification's simple body.
type errUnauthorized struct{ message string }

func (e errUnauthorized) Error() string { return "unauthorized: " + e.message }

// authenticate resolves the bearer API key to a principal and the workspace the request
// is scoped to: the key's own, or another of its user's workspaces named by workspace_id.
func (s *Server) authenticate(c *fiber.Ctx) error {
	auth := c.Get(fiber.HeaderAuthorization)
	scheme, key, found := strings.Cut(auth, " ")
	if auth == "" {
		return errUnauthorized{"Missing API key. Send Authorization: Bearer <API_KEY> with a valid svk_ key."}
	}
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return errUnauthorized{"Malformed Authorization header. Send Authorization: Bearer <API_KEY> with a valid svk_ key."}
	}
	prefix, ok := accountable.ParseAPIKey(strings.TrimSpace(key))
	if !ok {
		return errUnauthorized{"Malformed API key. Obtain a valid svk_ key and send it as a bearer token."}
	}
	k, hash, err := s.deps.Keys.KeyByPrefix(c.UserContext(), prefix)
	if accountable.ErrorCode(err) == accountable.ECodeNotFound {
		return errUnauthorized{"Invalid API key. Obtain a valid key and send it as a bearer token."}
	}
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare(hash, accountable.HashAPIKey(strings.TrimSpace(key))) != 1 {
		return errUnauthorized{"Invalid API key. Obtain a valid key and send it as a bearer token."}
	}
	if k.RevokedAt != nil {
		return errUnauthorized{"This API key was revoked. Obtain a valid key and send it as a bearer token."}
	}
	s.usage.touch(k.ID)
	p := accountable.Principal{UserID: k.UserID, UserEmail: k.UserEmail, WorkspaceID: k.WorkspaceID, KeyID: k.ID, KeyPrefix: k.Prefix}
	c.Locals(localPrincipal, p)
	c.Locals(localAPIKey, k)
	if ws := c.Query("workspace_id"); ws != "" {
		if err := s.selectWorkspace(c, "workspace_id", ws); err != nil {
			return err
		}
	}
	return c.Next()
}

// selectWorkspace scopes the request to workspace id, which the caller's user must be a
// member of; otherwise it is a not_found like any unknown resource.
func (s *Server) selectWorkspace(c *fiber.Ctx, field, id string) error {
	p := principal(c)
	if !accountable.ValidUUID(id) {
		return accountable.ValidationError(accountable.Issue{Path: field, Message: "must be a UUID"})
	}
	id = accountable.NormalizeUUID(id)
	if id == p.WorkspaceID {
		return nil
	}
	ok, err := s.deps.Keys.IsMember(c.UserContext(), p.UserID, id)
	if err != nil {
		if accountable.ErrorCode(err) == accountable.ECodeLedgerUnavailable {
			return accountable.Errorf(accountable.ECodeAuthorizationUnavailable, "The workspace authorization could not be resolved; retry later.")
		}
		return err
	}
	if !ok {
		return accountable.NotFound("workspace")
	}
	p.WorkspaceID = id
	c.Locals(localPrincipal, p)
	return nil
}

// principal returns the principal authenticate stored (routes without it never call this).
func principal(c *fiber.Ctx) accountable.Principal {
	p, _ := c.Locals(localPrincipal).(accountable.Principal)
	return p
}

// apiKey returns the key authenticate resolved.
func apiKey(c *fiber.Ctx) accountable.APIKey {
	k, _ := c.Locals(localAPIKey).(accountable.APIKey)
	return k
}

// keyUsage batches last-used times of API keys in memory and writes them periodically, so
// authentication costs no write per request.
type keyUsage struct {
	store    KeyStore
	interval time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	pending map[string]time.Time
	done    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

func newKeyUsage(store KeyStore, interval time.Duration, log *slog.Logger) *keyUsage {
	return &keyUsage{store: store, interval: interval, log: log, pending: map[string]time.Time{},
		done: make(chan struct{}), stopped: make(chan struct{})}
}

func (u *keyUsage) touch(keyID string) {
	now := accountable.Now()
	u.mu.Lock()
	u.pending[keyID] = now
	u.mu.Unlock()
}

// pendingUse returns the last use of keyID not yet written.
func (u *keyUsage) pendingUse(keyID string) (time.Time, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	t, ok := u.pending[keyID]
	return t, ok
}

func (u *keyUsage) start() {
	go func() {
		defer close(u.stopped)
		t := time.NewTicker(u.interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				u.flush(context.Background())
			case <-u.done:
				return
			}
		}
	}()
}

func (u *keyUsage) stop(ctx context.Context) {
	u.once.Do(func() {
		close(u.done)
		select {
		case <-u.stopped:
		case <-ctx.Done():
		}
		u.flush(ctx)
	})
}

// flush writes the pending times; on failure they are kept for the next attempt.
func (u *keyUsage) flush(ctx context.Context) {
	u.mu.Lock()
	batch := u.pending
	u.pending = map[string]time.Time{}
	u.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	if err := u.store.TouchKeys(ctx, batch); err != nil {
		u.log.Warn("recording API key use", "err", err)
		u.mu.Lock()
		for id, t := range batch {
			if cur, ok := u.pending[id]; !ok || cur.Before(t) {
				u.pending[id] = t
			}
		}
		u.mu.Unlock()
	}
}

// rateLimit refuses requests over the per-key rate with 429 rate_limited.
func (s *Server) rateLimit(c *fiber.Ctx) error {
	ok, wait := s.limiter.take(principal(c).KeyID, time.Now())
	if !ok {
		return RateLimited(accountable.ECodeRateLimited, "Too many requests for this API key.", wait)
	}
	return c.Next()
}

// RateLimited returns a 429 error that tells the caller when to retry.
func RateLimited(code, message string, wait time.Duration) *accountable.Error {
	return &accountable.Error{Code: code, Message: message, RetryAfter: wait}
}
