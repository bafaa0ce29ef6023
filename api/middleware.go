package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/tokens"
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
	localFailure         = "failureBody"
	// localInProcess marks a request the MCP server dispatched in-process (mcp.go).
	localInProcess = "inProcess"
)

// A client-supplied request id is echoed when it is short and plain
// (accountable.ValidRequestID); otherwise the server makes one.

// requestID returns the request id of c, assigning one when the request has none yet
// (requests rejected before any middleware ran, such as an oversized body).
func requestID(c *fiber.Ctx) string {
	if id, ok := c.Locals(localRequestID).(string); ok {
		return id
	}
	id := c.Get(headerRequestID)
	if !accountable.ValidRequestID(id) {
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
		if slices.Contains(accountable.ContractDates, v) {
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
	s.metrics.request(c, status, time.Since(start))
	if c.Locals(localInProcess) != nil { // a tool call's request: its /mcp request's line says what it did
		return nil
	}
	s.logRequest(c, id, status, start)
	return nil
}

// logRequest writes the request's line: who asked what, the answer's status and how long
// it took (never the Authorization header).
func (s *Server) logRequest(c *fiber.Ctx, id string, status int, start time.Time) {
	level := slog.LevelInfo
	if serverFault(status) {
		level = slog.LevelError
	}
	if s.lines != nil {
		if _, mcp := c.Locals(localMCPRequest).(*mcpRequest); !mcp { // a /mcp line says more: slog's
			now := time.Now()
			l := requestLine{id: id, method: c.Method(), path: c.Path(), status: status,
				durationMS: float64(now.Sub(start).Microseconds()) / 1000}
			if p, ok := c.Locals(localPrincipal).(accountable.Principal); ok {
				l.principal, l.workspaceID, l.keyPrefix = true, p.WorkspaceID, p.KeyPrefix
			}
			if writeRequestLine(s.lines, c.UserContext(), level, now, &l) {
				return
			}
		}
	}
	// Typed attributes, in an array of the line's size: the line costs no boxing of its
	// values and no growing slice (written for every request; the bytes are Log's).
	var buf [10]slog.Attr
	attrs := append(buf[:0], slog.String("request_id", id), slog.String("method", c.Method()), slog.String("path", c.Path()),
		slog.Int("status", status), slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000))
	if p, ok := c.Locals(localPrincipal).(accountable.Principal); ok {
		attrs = append(attrs, slog.String("workspace_id", p.WorkspaceID), slog.String("key_prefix", p.KeyPrefix))
	}
	if m, ok := c.Locals(localMCPRequest).(*mcpRequest); ok {
		more, failed := m.logAttrs()
		attrs = append(attrs, more...)
		if failed {
			level = slog.LevelError
		}
	}
	s.log.LogAttrs(c.UserContext(), level, "request", attrs...)
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

// authenticate resolves the request's credential to a principal and the workspace the
// request is scoped to: the credential's own, or another of its user's workspaces named by
// workspace_id (not for an OAuth token, which is bound to its workspace). The credential
// is a bearer API key or OAuth access token, or the `__session` cookie when no
// Authorization header is sent. A request the MCP server dispatches in-process (mcp.go)
// arrives with the principal /mcp authenticated already.
func (s *Server) authenticate(c *fiber.Ctx) error {
	if _, ok := c.Locals(localPrincipal).(accountable.Principal); ok {
		c.Locals(localInProcess, true)
	} else {
		var p accountable.Principal
		var err error
		if len(c.Request().Header.Peek(fiber.HeaderAuthorization)) == 0 && s.deps.Settings != nil && s.sessionToken(fiberCookie(c)) != "" { // read without Get's copy
			p, err = s.verifySession(c)
		} else {
			p, err = s.verifyBearer(c)
		}
		if err != nil {
			return err
		}
		c.Locals(localPrincipal, p)
	}
	if ws := c.Query("workspace_id"); ws != "" {
		if err := s.selectWorkspace(c, "workspace_id", ws); err != nil {
			return err
		}
	}
	return c.Next()
}

// verifyBearer returns the principal of the request's bearer credential: an OAuth access
// token (accountable.AccessTokenPrefix) or an API key.
func (s *Server) verifyBearer(c *fiber.Ctx) (accountable.Principal, error) {
	auth := c.Get(fiber.HeaderAuthorization) // a copy (Immutable): read once
	if token, ok := bearerAccessToken(auth); ok && s.deps.OAuth != nil {
		return s.verifyAccessToken(c, token)
	}
	k, err := s.verifyKey(c, auth)
	if err != nil {
		return accountable.Principal{}, err
	}
	s.usage.touch(k.ID)
	c.Locals(localAPIKey, k)
	return k.Principal(), nil
}

// requireScope refuses a credential without the operation's scope: 403 forbidden, with
// the RFC 6750 insufficient_scope challenge naming it (an MCP client asks its user for
// more on that).
func requireScope(scope string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if scope == "" || principal(c).Scopes.Allows(scope) {
			return c.Next()
		}
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer error="insufficient_scope", scope="`+scope+`"`)
		return accountable.Errorf(accountable.ECodeForbidden, "The access token was not granted the scope %s this operation needs; authorize again with it.", scope)
	}
}

// CSRFHeader carries a session's CSRF token on cookie-authenticated requests that change
// state (the settings page shows it in its csrf-token meta element).
const CSRFHeader = "X-CSRF-Token"

// verifySession returns the principal of the request's session cookie (the
// specification's second security scheme): the signed-in user in the session's
// workspace. A request other than GET and HEAD must carry the session's CSRF token in
// X-CSRF-Token (403 otherwise): a cookie goes with every request a browser sends, even
// one another site makes it send. A cookie this deployment did not issue is refused
// without a query (lookupSession), so forged cookies spend no failure budget, and a
// valid session is never refused for its address's failures.
func (s *Server) verifySession(c *fiber.Ctx) (accountable.Principal, error) {
	ctx, cancel := s.lookupContext(c)
	defer cancel()
	sess, err := s.lookupSession(ctx, s.sessionToken(fiberCookie(c)))
	if accountable.ErrorCode(err) == accountable.ECodeNotFound {
		return accountable.Principal{}, errUnauthorized{msgSessionEnded}
	}
	if err != nil {
		return accountable.Principal{}, err
	}
	if m := c.Method(); m != fiber.MethodGet && m != fiber.MethodHead &&
		subtle.ConstantTimeCompare([]byte(c.Get(CSRFHeader)), []byte(sess.CSRFToken)) != 1 {
		return accountable.Principal{}, accountable.Errorf(accountable.ECodeForbidden,
			"A request authenticated by the session cookie that changes state needs the session's CSRF token in the X-CSRF-Token header.")
	}
	return accountable.Principal{UserID: sess.UserID, UserEmail: sess.UserEmail, WorkspaceID: sess.WorkspaceID, KeyID: "session:" + sess.UserID}, nil
}

// Messages of the 401s.
const (
	msgMissingKey      = "Missing API key. Send Authorization: Bearer <API_KEY> with a valid svk_ key."
	msgMalformedHeader = "Malformed Authorization header. Send Authorization: Bearer <API_KEY> with a valid svk_ key."
	msgMalformedKey    = "Malformed API key. Obtain a valid svk_ key and send it as a bearer token."
	msgInvalidKey      = "Invalid API key. Obtain a valid key and send it as a bearer token."
	msgRevokedKey      = "This API key was revoked. Obtain a valid key and send it as a bearer token."
	msgSessionEnded    = "The session expired or was signed out. Sign in again, or send an API key as a bearer token."
	msgTooManyFailures = "Too many failed authentications from this address; retry after error.retryAfter seconds with a valid key."
)

// bearerCredential returns the credential of a "Bearer <credential>" header.
func bearerCredential(auth string) (string, bool) {
	scheme, credential, found := strings.Cut(auth, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(credential), true
}

// bearerKey returns the API key of an Authorization header and its prefix, or why the
// header is refused.
func bearerKey(auth string) (key, prefix, refused string) {
	if auth == "" {
		return "", "", msgMissingKey
	}
	key, ok := bearerCredential(auth)
	if !ok {
		return "", "", msgMalformedHeader
	}
	prefix, ok = tokens.ParseAPIKey(key)
	if !ok {
		return "", "", msgMalformedKey
	}
	return key, prefix, ""
}

// verifyKey returns the stored key that the request's bearer credential is.
//
// A valid key is never refused for its address's failures, and forged keys cost a
// bounded number of queries. In order:
//   - failures that cost no query are the specification's 401 and spend nothing: a
//     missing or malformed credential, a prefix the key memory found no key for a moment
//     ago, and a wrong secret for a key it holds (compared in constant time);
//   - a key the memory holds, whose secret matches, and a prefix the memory knows is a
//     key's (KnownPrefix: the prefix of every key, read when the process starts listening
//     for key changes and kept by their announcements) are looked up whatever the
//     address's failures: only a key's own prefix gets there, and a wrong secret under it
//     is refused from memory after its first lookup;
//   - any other prefix (forged, or a key made a moment ago whose announcement has not
//     arrived) is looked up only while the address's failure budget (authFailures) holds
//     a token, and spends one when no key has it: past the budget the address gets 429
//     rate_limited and nothing is looked up.
//
// Successes spend nothing. A key the memory holds fresh (KeyHolder) is answered without a
// lookup, so without the lookup's deadline either: most requests' keys are.
func (s *Server) verifyKey(c *fiber.Ctx, auth string) (accountable.APIKey, error) {
	key, prefix, refused := bearerKey(auth)
	if refused != "" {
		return accountable.APIKey{}, errUnauthorized{refused}
	}
	var sum []byte // the secret's hash, computed once (hashed), compared with the stored one
	hashed := func() []byte {
		if sum == nil {
			sum = tokens.HashAPIKey(key)
		}
		return sum
	}
	if h, ok := s.deps.Keys.(KeyHolder); ok {
		if k, hash, ok := h.HeldKey(prefix); ok { // a known key: its failures spend nothing
			return k, checkKey(k, hash, hashed())
		}
	}
	known := false // a key the store has found whose secret this is, or a known key's prefix
	if m, ok := s.deps.Keys.(KeyMemory); ok {
		if hash, ok := m.KnownKeyHash(prefix); ok {
			if subtle.ConstantTimeCompare(hash, hashed()) != 1 {
				return accountable.APIKey{}, errUnauthorized{msgInvalidKey}
			}
			known = true
		} else if m.KnownPrefix(prefix) {
			known = true
		} else if m.UnknownPrefix(prefix) {
			return accountable.APIKey{}, errUnauthorized{msgInvalidKey}
		}
	}
	var budget string
	if !known {
		budget = s.clientOf(c)
		if ok, wait := s.authFailures.available(budget, time.Now()); !ok {
			return accountable.APIKey{}, RateLimited(accountable.ECodeRateLimited, msgTooManyFailures, wait)
		}
	}
	ctx, cancel := s.lookupContext(c)
	defer cancel()
	k, hash, err := s.deps.Keys.KeyByPrefix(ctx, prefix)
	if err == nil {
		err = checkKey(k, hash, hashed())
	}
	var refusal errUnauthorized
	switch {
	case accountable.ErrorCode(err) == accountable.ECodeNotFound:
		refusal.message = msgInvalidKey
	case !errors.As(err, &refusal):
		return k, err // nil, or the store failed, not the client
	}
	// A failure under a known prefix spends nothing: the memory holds the key from now on,
	// and refuses a wrong secret without a query. Any other spends a token of the budget
	// it was admitted by.
	if known {
		return k, refusal
	}
	return k, s.authFailed(budget, refusal.message)
}

// checkKey refuses the stored key k, whose secret's hash is hash, when sum (the hash of the
// secret sent) is not it, or when k is revoked.
func checkKey(k accountable.APIKey, hash, sum []byte) error {
	if subtle.ConstantTimeCompare(hash, sum) != 1 {
		return errUnauthorized{msgInvalidKey}
	}
	if k.RevokedAt != nil {
		return errUnauthorized{msgRevokedKey}
	}
	return nil
}

// authFailed spends a token of budget on a failed lookup it admitted and returns the 401.
func (s *Server) authFailed(budget, message string) error {
	s.authFailures.charge(budget, time.Now())
	return errUnauthorized{message}
}

// lookupContext bounds the lookups of authentication and workspace selection, which run
// before the operation's own deadline does: the read deadline, also while they wait for a
// pooled connection (statement_timeout does not cover that wait).
func (s *Server) lookupContext(c *fiber.Ctx) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.UserContext(), s.deadline(DeadlineRead))
}

// selectWorkspace scopes the request to workspace id, which the caller's user must be a
// member of now; otherwise it is a not_found like any unknown resource. A key's principal
// carries its user's workspaces (MemberOf, which the key store keeps current: a membership
// change drops the key in every process at once), so selecting one costs no query; a
// session's membership is looked up.
func (s *Server) selectWorkspace(c *fiber.Ctx, field, id string) error {
	p := principal(c)
	if !accountable.ValidUUID(id) {
		return accountable.ValidationError(accountable.Issue{Path: field, Message: "must be a UUID"})
	}
	id = accountable.NormalizeUUID(id)
	if id == p.WorkspaceID {
		return nil
	}
	if p.TokenBound { // an access token acts in the workspace its user consented to, only
		return accountable.NotFound("workspace")
	}
	ok := slices.Contains(p.MemberOf, id)
	if p.MemberOf == nil {
		ctx, cancel := s.lookupContext(c)
		defer cancel()
		var err error
		ok, err = s.deps.Keys.IsMember(ctx, p.UserID, id)
		if err != nil {
			if accountable.ErrorCode(err) == accountable.ECodeLedgerUnavailable {
				return accountable.Errorf(accountable.ECodeAuthorizationUnavailable, "The workspace authorization could not be resolved; retry later.")
			}
			return err
		}
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
// authentication costs no write per request. Each key used has its own atomic last use
// (in µs, 0 once written), so that a request's touch takes no lock and makes no garbage:
// a key's entry stays for the life of the process (one per key used, as the key cache
// holds them).
type keyUsage struct {
	store    KeyStore
	interval time.Duration
	log      *slog.Logger

	last    sync.Map // key id -> *atomic.Int64: the last use not yet written, Unix µs; 0 when none
	done    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

func newKeyUsage(store KeyStore, interval time.Duration, log *slog.Logger) *keyUsage {
	return &keyUsage{store: store, interval: interval, log: log, done: make(chan struct{}), stopped: make(chan struct{})}
}

// touch records a use of keyID now (accountable.Now's instant).
func (u *keyUsage) touch(keyID string) {
	u.use(keyID, time.Now().UnixMicro())
}

// use records at (Unix µs) as the last use of keyID not yet written, unless a later one
// is recorded already.
func (u *keyUsage) use(keyID string, at int64) {
	v, ok := u.last.Load(keyID)
	if !ok {
		v, _ = u.last.LoadOrStore(keyID, new(atomic.Int64))
	}
	last := v.(*atomic.Int64)
	for {
		cur := last.Load()
		if cur >= at || last.CompareAndSwap(cur, at) {
			return
		}
	}
}

// usedAt is the instant of a last use in Unix µs, as accountable.Now gives it.
func usedAt(micros int64) time.Time { return time.UnixMicro(micros).UTC() }

// pendingUse returns the last use of keyID not yet written.
func (u *keyUsage) pendingUse(keyID string) (time.Time, bool) {
	v, ok := u.last.Load(keyID)
	if !ok {
		return time.Time{}, false
	}
	at := v.(*atomic.Int64).Load()
	return usedAt(at), at != 0
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

// flush writes the pending times; on failure they are kept for the next attempt (unless a
// later use came meanwhile).
func (u *keyUsage) flush(ctx context.Context) {
	batch := map[string]time.Time{}
	u.last.Range(func(id, v any) bool {
		if at := v.(*atomic.Int64).Swap(0); at != 0 {
			batch[id.(string)] = usedAt(at)
		}
		return true
	})
	if len(batch) == 0 {
		return
	}
	if err := u.store.TouchKeys(ctx, batch); err != nil {
		u.log.Warn("recording API key use", "err", err)
		for id, t := range batch {
			u.use(id, t.UnixMicro())
		}
	}
}

// rateLimit refuses requests over the per-key rate with 429 rate_limited. The workspace
// is charged once the request's workspace is final (admitWorkspace).
func (s *Server) rateLimit(c *fiber.Ctx) error {
	if c.Locals(localInProcess) != nil { // an MCP tool call's request: its /mcp request was charged
		return c.Next()
	}
	p, now := principal(c), time.Now()
	if ok, wait := s.limiter.take(p.KeyID, now); !ok {
		return s.refuse(s.keyRefusals, p.KeyID, now,
			RateLimited(accountable.ECodeRateLimited, "Too many requests for this API key.", wait))
	}
	return c.Next()
}

// maxHeldRefusals bounds the refusals held at once (each holds its connection's
// goroutine and buffers, some tens of KB); past it refusals are written at once.
const maxHeldRefusals = 1024

// refuse returns the refusal err of a request over name's rate limit. A name has as many
// prompt refusals a second as requests it is allowed (refusals, a bucket of the limit's
// size): clients that wait their Retry-After stay well within them. A client that has
// spent them is resending without waiting, and its refusals are held for RateLimitHold
// before they are written. Its resending then costs a sleeping goroutine per connection
// instead of the CPU of answering as fast as it can ask, CPU the other workspaces'
// requests need (make bench's fairness line, phase 3). Past maxHeldRefusals held at once,
// and once the server stops, refusals are written at once.
func (s *Server) refuse(refusals *buckets, name string, now time.Time, err *accountable.Error) error {
	if ok, _ := refusals.take(name, now); ok { // nil refusals (no hold): always
		return err
	}
	if s.held.Add(1) > maxHeldRefusals {
		s.held.Add(-1)
		return err
	}
	defer s.held.Add(-1)
	hold := time.NewTimer(s.cfg.RateLimitHold)
	defer hold.Stop()
	select {
	case <-hold.C:
	case <-s.streams.Done():
	}
	return err
}

// holdRefusal holds a refusal of name that refuse would hold (past name's prompt
// refusals), for answers that are not an error (a page).
func (s *Server) holdRefusal(refusals *buckets, name string) {
	s.refuse(refusals, name, time.Now(), nil) //nolint:errcheck // only the hold
}

// RateLimited returns a 429 error that tells the caller when to retry.
func RateLimited(code, message string, wait time.Duration) *accountable.Error {
	return &accountable.Error{Code: code, Message: message, RetryAfter: wait}
}

// serverFault reports whether a status says the server failed: a 5xx, but for 501
// not_offered, the deliberate answer of an operation this service does not offer (no
// operator needs to hear of it).
func serverFault(status int) bool {
	return status >= 500 && status != fiber.StatusNotImplemented
}
