package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// An operation is declared once, in the table of its area (work.go, events.go, ...):
//
//	op(Operation{ID: "completeWork", Method: "POST", Path: "/work/{taskId}/complete", ...}, s.completeWork)
//
// where the handler is func(*call, *In) (Out, error). From that one declaration come the
// route on both mounts, the request handling (path and query parameters bound and
// checked, the body decoded (unknown members ignored, or refused for a ClosedBody), the rules of the In type
// checked by its Validate method, the idempotency key read and fingerprinted, the
// request's deadline) and the operation's entry in the OpenAPI document (parameters,
// request body and responses are generated from In and Out). A handler never sees a
// request that broke the rules of its types.
//
// In is a struct: fields tagged path:"name" or query:"name" are parameters, every field
// with a json name is a member of the body; Out is the data of the success envelope.

// Operation describes one v1 operation.
type Operation struct {
	ID          string // operationId
	Method      string
	Path        string // OpenAPI syntax, relative to the v1 root: /work/{taskId}
	Area        string // the specification's area (the document's tag)
	Summary     string
	Description string
	// Public operations are account-free: no credential, no workspace. Each client address
	// has a budget of them (Config.PublicRateLimit, publiclimit.go), except for Unmetered
	// ones, answered from memory at no cost (the index, this document, the catalogue,
	// liveness).
	Public    bool
	Unmetered bool
	// Pure operations answer from the request alone, in memory (no database, workflow or
	// network): they run without a deadline and without watching their client, which
	// could not interrupt them (a deadline context and a client watch are two timers per
	// request, a tenth of a diagnosis's own work).
	Pure bool
	// ClosedBody refuses body members the operation does not know (400
	// validation_failed at the member), where the specification says "no extra
	// properties". Other bodies ignore members they do not know, as the specification's
	// caller-supplied user_id ("never used; the authenticated identity is used") and the
	// fields of newer clients require.
	ClosedBody bool
	// BodyWorkspaceRequired requires the body's workspace_id (the specification's
	// discovery proposal); elsewhere it is optional.
	BodyWorkspaceRequired bool
	// Status answers a first request (201 created, 202 accepted); 200 when zero. Replays
	// always answer 200.
	Status int
	// Idempotency says whether the operation takes an Idempotency-Key header.
	Idempotency IdempotencyMode
	// Deadline is the class of the server-side deadline the request runs under.
	Deadline DeadlineClass
	// Errors are the error codes the operation itself may answer, beyond the ones every
	// operation of its kind may (validation, authentication, scoping, limits, outages).
	Errors []string
	// Raw operations write their response themselves (the OpenAPI document itself), as
	// ContentType (JSON when empty).
	Raw         bool
	ContentType string
	// PathTail makes the path's last parameter, which ends it, take the rest of the path,
	// slashes and all: a C2SP tile path (0/x001/234.p/7) is one name whose segments a
	// client builds, not a resource per segment. Its route ends in Fiber's greedy "+".
	PathTail bool
	// ReadOnly operations change nothing though they are not GETs (a POST whose body is a
	// query too rich for a URL: POST /context-pack): they need their family's read scope and
	// take no Idempotency-Key.
	ReadOnly bool
	// EventStream operations may also answer with a lease of Server-Sent Events
	// (text/event-stream; the handler starts it with call.streamEvents).
	EventStream bool
	// Bare operations answer Out itself, without the {data, meta} envelope (health), with
	// Status or with one of BareStatuses.
	Bare         bool
	BareStatuses []int
	// EnvelopeStatuses are other statuses answered with the success envelope (a blocked
	// lifecycle action: 422 with its result), each with its description.
	EnvelopeStatuses map[int]string
	// Root mounts the operation outside the v1 roots: at the site root ("/") or only under
	// /api/client (ClientRoot). Empty: at /api/v1 and /api/client.
	Root string
	// Document operations take a document the handler checks itself (an Agent Work
	// Receipt, whose own limits, duplicate members and schema answer with issues, not
	// invalid_json): bind only checks that it is sent as JSON, uncompressed, and the
	// handler reads it (call.document). The body is the document itself, or, with
	// DocumentMember, a JSON object whose member of that name is the document, beside the
	// workspace_id any body may carry (the public clients wrap the receipt they import:
	// {receipt, workspace_id}); that object itself must be well-formed (else invalid_json)
	// and hold the document as an object (else validation_failed at the member), while
	// what is wrong within the document is the document's to say. DocumentSchema
	// describes the document in the OpenAPI document. With an Idempotency-Key, the
	// handler completes call.idem's RequestDigest from the document it accepted.
	Document       bool
	DocumentMember string
	DocumentSchema map[string]any
	// NotOffered operations are declared because the public clients call them, but this
	// service does not offer what they do (a checkout: a self-hosted service sells
	// nothing): the handler refuses every request it gets with an error of Errors, and the
	// document gives the operation no success answer.
	NotOffered bool
	// Alternates are other representations of the success answer (an SVG picture of it),
	// each made from the handler's result; the Accept header chooses (negotiate). Their
	// responses, and the JSON ones, carry Vary: Accept; failures are the JSON envelope.
	// Declare each with alternate.
	Alternates []Alternate
	// Failure, when set, is the operation's own failure body, written instead of the error
	// envelope for every failure of a request to it (with the status of the error's code):
	// a refused body, the rules of In, the handler's errors, and the two refusals met on
	// its path before it runs (an oversized body, an unknown Svc-Version). An HTTP request
	// that cannot be read at all (bad_request, request_timeout,
	// request_header_fields_too_large raised by the server before routing) belongs to no
	// operation and keeps the envelope. The document gives the failure body for the
	// operation's error statuses. Declare it with failureBody.
	Failure *FailureBody
}

// FailureBody is an operation's own body of failures (Operation.Failure): the workload
// diagnosis answers {error, ok, valid} where every other operation answers the envelope.
type FailureBody struct {
	typ   reflect.Type
	write func(e accountable.Error, status int) any
}

// failureBody declares the failure body that write makes of an error and its status.
func failureBody[T any](write func(e accountable.Error, status int) T) *FailureBody {
	return &FailureBody{typ: reflect.TypeFor[T](), write: func(e accountable.Error, status int) any { return write(e, status) }}
}

// failureOf returns the failure body of the operation a request reached: the one whose
// handler ran, or, for an oversized body or an unknown Svc-Version (refused before
// routing), the operation of the request's method whose static path the request line
// names as the router matches it (as sent, without query or fragment, case and trailing
// slashes aside; read from the request line, so that a mangled Host does not hide it).
// nil when the request is answered with the envelope.
func (s *Server) failureOf(c *fiber.Ctx, code string) *FailureBody {
	if f, ok := c.Locals(localFailure).(*FailureBody); ok {
		return f
	}
	if code != accountable.ECodePayloadTooLarge && code != accountable.ECodeUnsupportedAPIVersion {
		return nil
	}
	method := c.Method()
	if method == fiber.MethodHead {
		method = fiber.MethodGet
	}
	path := string(c.Request().Header.RequestURI())
	if scheme, rest, ok := strings.Cut(path, "://"); ok && !strings.Contains(scheme, "/") { // absolute form
		_, path, _ = strings.Cut(rest, "/")
		path = "/" + path
	}
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	path = strings.TrimRight(path, "/")
	for i := range s.ops {
		o := &s.ops[i]
		if o.Failure == nil || o.Method != method || strings.Contains(o.Path, "{") {
			continue
		}
		for _, root := range o.roots() {
			if strings.EqualFold(strings.TrimRight(strings.TrimSuffix(root, "/")+o.Path, "/"), path) {
				return o.Failure
			}
		}
	}
	return nil
}

// IdempotencyMode says whether an operation takes an Idempotency-Key.
type IdempotencyMode int

// Idempotency modes.
const (
	NoIdempotency IdempotencyMode = iota
	OptionalIdempotency
	RequiredIdempotency
)

// DeadlineClass names a class of operations that share a server-side deadline.
type DeadlineClass string

// Deadline classes (configurable in Config.Deadlines).
const (
	DeadlineRead    DeadlineClass = "read"
	DeadlineCommand DeadlineClass = "command"
	DeadlineLong    DeadlineClass = "long" // synchronous generation and other slow operations
)

// operation is a declared Operation with its types and its handler.
type operation struct {
	Operation
	in      reflect.Type
	out     reflect.Type
	hasBody bool
	// scoped is In's body beside the workspace_id every body may carry (see decodeBody).
	scoped reflect.Type
	params []param
	serve  func(s *Server, c *fiber.Ctx) error
}

// call is what a handler gets besides its input: the request's context (with its
// deadline), who calls, the idempotency of the command, and the meta of the response.
type call struct {
	ctx       context.Context
	fiber     *fiber.Ctx
	principal accountable.Principal
	idem      *accountable.Idempotency
	meta      meta
	status    int    // overrides the operation's status (a bare readiness answer)
	streaming bool   // the handler started a body stream (Server-Sent Events): nothing else is written
	doc       []byte // the document of a Document operation with a DocumentMember
}

// replayed marks the response as a replay of an earlier request (or not).
func (c *call) replayed(dup bool) { c.meta.Duplicate = &dup }

// document is the document of a Document operation, as sent: the body, or the text of its
// DocumentMember.
func (c *call) document() []byte {
	if c.doc != nil {
		return c.doc
	}
	return c.fiber.Request().Body()
}

// validator is implemented by commands: the rules of the root package.
type validator interface{ Validate() error }

// digestChecker is implemented by commands that may declare the digest of their content
// (createArtifact's content_digest): the root says what the digest covers and how a
// mismatch is refused; the digest itself is canonical JSON's, which the root leaves to
// the canonical package.
type digestChecker interface {
	Content() accountable.ArtifactContent
	CheckContentDigest(computed string) error
}

// checkContentDigest refuses a command whose declared digest differs from its content's,
// once its other rules hold (validation_failed at /content_digest). Content without a
// canonical form cannot be checked, and is left to the command.
func checkContentDigest(c digestChecker) error {
	if d, err := canonical.DigestOf(c.Content()); err == nil {
		return c.CheckContentDigest(d)
	}
	return nil
}

// op declares an operation served by h.
func op[In, Out any](o Operation, h func(*call, *In) (Out, error)) operation {
	if o.Status == 0 {
		o.Status = fiber.StatusOK
	}
	if o.Deadline == "" {
		o.Deadline = DeadlineRead
		if o.Method != fiber.MethodGet && !o.ReadOnly {
			o.Deadline = DeadlineCommand
		}
	}
	d := operation{Operation: o, in: reflect.TypeFor[In](), out: reflect.TypeFor[Out]()}
	d.params = paramsOf(d.in)
	if o.PathTail {
		d.markTail()
	}
	d.hasBody = hasBodyFields(d.in)
	bodyType := d.in
	if !d.hasBody {
		bodyType = reflect.TypeFor[struct{}]()
	}
	d.scoped = scopedBody(bodyType)
	d.checkAlternates()
	if o.Pure && len(o.Alternates) > 0 {
		panic("api: operation " + o.ID + " draws pictures, which run under its deadline: it cannot be Pure")
	}
	d.checkEncoder()
	d.serve = func(s *Server, fc *fiber.Ctx) error {
		c := &call{fiber: fc, meta: newMeta(fc)}
		if len(o.Alternates) > 0 {
			fc.Vary(fiber.HeaderAccept)
		}
		if o.Failure != nil {
			fc.Locals(localFailure, o.Failure)
		}
		if !o.Public {
			c.principal = principal(fc)
		}
		in := new(In)
		if err := s.bind(c, &d, in); err != nil {
			return err
		}
		if !o.Public {
			c.principal = principal(fc) // a body workspace_id may have re-scoped the request
			c.meta.WorkspaceID = c.principal.WorkspaceID
			// Charged to the workspace it acts in, now final; writes take one of its slots
			// (reads are short and do not commit). Its deadline starts once admitted.
			release, err := s.admitWorkspace(fc, o.Method != fiber.MethodGet && !o.ReadOnly)
			if err != nil {
				return err
			}
			defer release()
		}
		c.ctx = fc.UserContext()
		if !o.Pure {
			ctx, cancel := context.WithTimeout(c.ctx, s.deadline(o.Deadline))
			defer cancel()
			stop := watchClient(fc, cancel)
			defer stop()
			c.ctx = ctx
		}
		out, err := h(c, in)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && c.ctx.Err() != nil {
				return accountable.Errorf(accountable.ECodeDeadlineExceeded, "The request did not finish within the server's deadline; nothing was changed.")
			}
			return err
		}
		if o.Raw || c.streaming {
			return nil
		}
		status := o.Status
		if c.meta.Duplicate != nil && *c.meta.Duplicate {
			status = fiber.StatusOK
			s.metrics.replayed(o.ID)
		}
		if c.status != 0 {
			status = c.status
		}
		if o.Bare {
			if a, ok := any(out).(jsonAppender); ok {
				writePooledBody(fc.Status(status), func(buf []byte) []byte { return a.AppendJSON(buf) })
				return nil
			}
			return fc.Status(status).JSON(out)
		}
		if alt := negotiate(fc.Get(fiber.HeaderAccept), o.Alternates); alt != nil {
			if !o.Public {
				release, ok := s.pictureTurns.acquire(c.principal.WorkspaceID)
				if !ok {
					return RateLimited(accountable.ECodeRateLimited, "This workspace's previous picture is still being drawn; ask again in a moment.", time.Second)
				}
				defer release()
			}
			body, err := alt.render(c.ctx, out)
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) && c.ctx.Err() != nil {
					return accountable.Errorf(accountable.ECodeDeadlineExceeded, "The request did not finish within the server's deadline; nothing was changed.")
				}
				return err
			}
			fc.Status(status).Set(fiber.HeaderContentType, alt.ContentType)
			return fc.Send(body)
		}
		return respond(fc, status, out, c.meta)
	}
	return d
}

// jsonAppender is an answer with a hand-written encoder of exactly json.Marshal's bytes
// (the workload diagnosis: reflection was a sixth of its CPU). Bare operations send it
// as c.JSON would, without the encoder's reflective pass.
type jsonAppender interface {
	AppendJSON(buf []byte) []byte
}

// checkEncoder panics at start-up when Out has a hand-written encoder (jsonAppender,
// jsonAppenderErr) only because it embeds a type that has one: the encoder would write the
// embedded value alone, and the answer would lose Out's other members.
func (d *operation) checkEncoder() {
	encoders := []reflect.Type{reflect.TypeFor[jsonAppender](), reflect.TypeFor[jsonAppenderErr]()}
	for _, enc := range encoders {
		if d.out.Kind() != reflect.Struct || !d.out.Implements(enc) {
			continue
		}
		for i := range d.out.NumField() {
			if f := d.out.Field(i); f.Anonymous && (f.Type.Implements(enc) || reflect.PointerTo(f.Type).Implements(enc)) {
				panic("api: " + d.ID + " answers " + d.out.String() + ", which has " + f.Type.String() +
					"'s AppendJSON by embedding it: write an AppendJSON of its own, or name the field")
			}
		}
	}
}

// markTail marks the parameter that ends the path of a PathTail operation as the tail,
// and panics at start-up when the path does not end in a parameter In has.
func (d *operation) markTail() {
	m := pathParam.FindAllStringSubmatchIndex(d.Path, -1)
	if len(m) == 0 || m[len(m)-1][1] != len(d.Path) {
		panic("api: " + d.ID + " is PathTail, but its path " + d.Path + " does not end in a parameter")
	}
	last := m[len(m)-1]
	name := d.Path[last[2]:last[3]]
	for i := range d.params {
		if d.params[i].in == "path" && d.params[i].name == name {
			d.params[i].tail = true
			return
		}
	}
	panic("api: " + d.ID + " is PathTail, but its input has no path parameter " + name)
}

// route is the operation's Fiber path relative to its root.
func (d *operation) route() string {
	p := d.Path
	if d.PathTail {
		m := pathParam.FindAllStringIndex(p, -1)
		last := m[len(m)-1]
		p = p[:last[0]] + "+"
	}
	return fiberPath(p)
}

// deadline returns the server-side deadline of class.
func (s *Server) deadline(class DeadlineClass) time.Duration {
	if d, ok := s.cfg.Deadlines[class]; ok && d > 0 {
		return d
	}
	return defaultDeadlines[class]
}

var defaultDeadlines = map[DeadlineClass]time.Duration{
	DeadlineRead: 15 * time.Second, DeadlineCommand: 15 * time.Second, DeadlineLong: 120 * time.Second,
}

// bind fills in from the request: parameters, body, the body's workspace_id, then the
// rules of In, then the idempotency key.
func (s *Server) bind(c *call, d *operation, in any) error {
	var issues accountable.Issues
	v := reflect.ValueOf(in).Elem()
	for _, p := range d.params {
		p.bind(c.fiber, v, &issues)
	}
	if err := issues.Err(); err != nil {
		return err
	}
	if d.Document {
		if err := checkDocumentBody(c.fiber); err != nil {
			return err
		}
		if d.DocumentMember != "" {
			doc, ws, err := splitDocumentBody(c.fiber.Request().Body(), d.DocumentMember)
			if err != nil {
				return err
			}
			c.doc = doc
			if ws != nil && c.principal.UserID != "" {
				if err := s.selectBodyWorkspace(c, *ws); err != nil {
					return err
				}
			}
		}
	} else if d.hasBody {
		if err := s.decodeBody(c, d, in); err != nil {
			return err
		}
	} else if d.Method != fiber.MethodGet && len(c.fiber.Request().Body()) > 0 {
		if err := s.decodeBody(c, d, &struct{}{}); err != nil {
			return err
		}
	}
	if val, ok := in.(validator); ok {
		if err := val.Validate(); err != nil {
			return err
		}
	} else if err := accountable.CheckFields(in).Err(); err != nil {
		return err
	}
	if dc, ok := in.(digestChecker); ok {
		if err := checkContentDigest(dc); err != nil {
			return err
		}
	}
	if d.Idempotency == NoIdempotency {
		return nil
	}
	key := c.fiber.Get(headerIdempotencyKey)
	if key == "" {
		if d.Idempotency == RequiredIdempotency {
			return accountable.Errorf(accountable.ECodeIdempotencyKeyRequired, "This operation requires an Idempotency-Key header.")
		}
		return nil
	}
	if !accountable.ValidIdempotencyKey(key) {
		return accountable.Errorf(accountable.ECodeIdempotencyKeyInvalid,
			"The Idempotency-Key must be 1-200 characters matching ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$.")
	}
	if d.Document {
		c.idem = &accountable.Idempotency{Key: key, Operation: d.ID}
		return nil
	}
	// The fingerprint covers the operation, its path parameters and the canonical body as
	// decoded, so whitespace, member order, and null against an absent member do not make
	// another request.
	pathValues := make([]string, 0, len(d.params))
	for _, p := range d.params {
		if p.in == "path" {
			pathValues = append(pathValues, v.FieldByIndex(p.index).String())
		}
	}
	body := in
	if f, ok := in.(fingerprintedAs); ok {
		body = f.fingerprintBody()
	}
	digest, err := canonical.DigestOf(requestFingerprint{Operation: d.ID, Path: pathValues, Body: body})
	if err != nil {
		return fmt.Errorf("api: fingerprint: %w", err)
	}
	c.idem = &accountable.Idempotency{Key: key, Operation: d.ID, RequestDigest: digest}
	return nil
}

// fingerprintedAs is a request type whose canonical JSON is that of the value it returns:
// one that embeds a command beside members the JSON does not carry (a path parameter),
// whose command writes its own canonical form (canonical.Appender) where the request,
// embedding it, could not.
type fingerprintedAs interface{ fingerprintBody() any }

type requestFingerprint struct {
	Operation string   `json:"operation"`
	Path      []string `json:"path"`
	Body      any      `json:"body"`
}

// errFingerprintReflective fails requestFingerprint's own canonical form where its body
// has none of its own: the encoder then encodes the fingerprint reflectively.
var errFingerprintReflective = errors.New("api: the request body has no canonical form of its own")

// AppendCanonicalJSON appends the fingerprint's canonical form (canonical.Appender) when
// its body writes its own (the commands of POST /work and its completion): the encoder's
// reflective pass over the fingerprint was a fifth of its digest.
// TestRequestFingerprintIsTheReflectiveOne holds it to the reflective encoding.
func (f requestFingerprint) AppendCanonicalJSON(buf []byte, depth int, freeForm canonical.FreeForm) ([]byte, error) {
	body, ok := f.Body.(canonical.Appender)
	if !ok {
		return buf, errFingerprintReflective
	}
	if v := reflect.ValueOf(f.Body); v.Kind() == reflect.Pointer && v.IsNil() {
		return buf, errFingerprintReflective // null, which the method of the value cannot write
	}
	buf = append(buf, `{"body":`...)
	buf, err := body.AppendCanonicalJSON(buf, depth+1, freeForm)
	if err != nil {
		return buf, err
	}
	buf = append(buf, `,"operation":`...)
	buf = canonical.AppendString(buf, f.Operation)
	buf = append(buf, `,"path":`...)
	if f.Path == nil {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, '[')
		for i, p := range f.Path {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = canonical.AppendString(buf, p)
		}
		buf = append(buf, ']')
	}
	return append(buf, '}'), nil
}

// scopedBody returns the type that decodes a body of type body together with the
// workspace_id any request body may carry (CONTRACT: it selects one of the caller's
// workspaces): body's members inlined beside it.
func scopedBody(body reflect.Type) reflect.Type {
	return reflect.StructOf([]reflect.StructField{
		{Name: "Body", Type: reflect.PointerTo(body), Tag: `json:",embed"`},
		{Name: "WorkspaceID", Type: reflect.TypeFor[*string](), Tag: `json:"workspace_id,omitzero"`},
	})
}

// decodeBody decodes the JSON object body into dst in one pass: duplicate names, invalid
// UTF-8 and values of the wrong type are refused, and so are unknown members of a
// ClosedBody (others are skipped, after the same checks of their text). An empty body is taken as
// {} (commands whose members are all optional accept it). A body workspace_id re-scopes
// the request. The body is taken as sent: no Content-Encoding is accepted (Fiber's Body()
// would decompress it without bound, past the body limit).
func (s *Server) decodeBody(c *call, d *operation, dst any) error {
	fc := c.fiber
	body := fc.Request().Body()
	if len(body) > 0 && !requestIsJSON(fc) {
		return accountable.Errorf(accountable.ECodeUnsupportedMediaType, "Send the request body as JSON with Content-Type: application/json.")
	}
	if len(body) > 0 && contentEncoded(fc) {
		return accountable.Errorf(accountable.ECodeUnsupportedMediaType, "Send the request body uncompressed, without a Content-Encoding.")
	}
	ws, err := decodeJSONBody(body, d.scoped, dst, d.ClosedBody)
	if err != nil {
		return err
	}
	if ws == nil && d.BodyWorkspaceRequired {
		return accountable.ValidationError(accountable.Issue{Path: "/workspace_id", Message: "is required"})
	}
	if ws == nil || c.principal.UserID == "" {
		return nil
	}
	return s.selectBodyWorkspace(c, *ws)
}

// selectBodyWorkspace re-scopes the request to the workspace its body names, which must be
// the one its query names, if it names one.
func (s *Server) selectBodyWorkspace(c *call, ws string) error {
	if q := c.fiber.Query("workspace_id"); q != "" && !strings.EqualFold(q, ws) {
		return accountable.ValidationError(accountable.Issue{Path: "/workspace_id", Message: "differs from the workspace_id query parameter"})
	}
	return s.selectWorkspace(c.fiber, "/workspace_id", ws)
}

// checkDocumentBody checks what bind checks of a Document operation's body: sent as JSON,
// without a Content-Encoding (see decodeBody).
func checkDocumentBody(fc *fiber.Ctx) error {
	if len(fc.Request().Body()) == 0 {
		return nil
	}
	if !requestIsJSON(fc) {
		return accountable.Errorf(accountable.ECodeUnsupportedMediaType, "Send the request body as JSON with Content-Type: application/json.")
	}
	if contentEncoded(fc) {
		return accountable.Errorf(accountable.ECodeUnsupportedMediaType, "Send the request body uncompressed, without a Content-Encoding.")
	}
	return nil
}

// splitDocumentBody reads the body of a Document operation whose document is its member
// named member: the document's text as sent, and the body's workspace_id (nil when it has
// none, or null). The body must be one JSON object naming each of its members once (else
// invalid_json, as any body), with the document an object (else validation_failed at the
// member) and workspace_id a string; other members are ignored, as in every open body.
// Within the document nothing is judged here: its duplicate members and invalid text are
// issues its own checks report, with their paths. (A document nested past jsontext's
// depth limit, 10000, far past any document's own, is invalid_json.)
func splitDocumentBody(body []byte, member string) (doc []byte, ws *string, err error) {
	missing := accountable.Issue{Path: "/" + member, Message: "is required: the document, as a JSON object"}
	if len(bytes.TrimLeft(body, " \t\r\n")) == 0 {
		return nil, nil, accountable.ValidationError(missing)
	}
	notJSON := accountable.Errorf(accountable.ECodeInvalidJSON,
		"The request body is not well-formed JSON (I-JSON: no duplicate member names, valid UTF-8, numbers within double precision).")
	dec := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if dec.PeekKind() != '{' {
		if _, err := dec.ReadValue(); err != nil {
			return nil, nil, notJSON
		}
		return nil, nil, accountable.Errorf(accountable.ECodeInvalidJSON, "The request body must be a JSON object.")
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, nil, notJSON
	}
	seen := map[string]bool{}
	var wsValue jsontext.Value
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, nil, notJSON
		}
		name := tok.String() // before the next read, which voids tok
		if seen[name] {      // the decoder allows repeats for the document's sake: not here
			return nil, nil, notJSON
		}
		seen[name] = true
		v, err := dec.ReadValue()
		if err != nil {
			return nil, nil, notJSON
		}
		switch name {
		case member:
			doc = bytes.Clone(v)
		case "workspace_id":
			wsValue = bytes.Clone(v)
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, nil, notJSON
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) { // one value, nothing after it
		return nil, nil, notJSON
	}
	var issues accountable.Issues
	switch jsontext.Value(doc).Kind() {
	case '{':
	case 0, 'n':
		issues = append(issues, missing)
	default:
		issues.Add("/"+member, "must be a JSON object: the document itself")
	}
	if wsValue.Kind() != 0 && wsValue.Kind() != 'n' {
		var s string
		if wsValue.Kind() != '"' || jsonv2.Unmarshal(wsValue, &s) != nil {
			issues.Add("/workspace_id", "must be a string")
		} else {
			ws = &s
		}
	}
	if err := issues.Err(); err != nil {
		return nil, nil, err
	}
	return doc, ws, nil
}

// decodeJSONBody decodes body into dst (through its scoped type) and returns the body's
// workspace_id. closed refuses unknown members.
func decodeJSONBody(body []byte, scopedType reflect.Type, dst any, closed bool) (*string, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		body = []byte("{}")
	} else if trimmed[0] != '{' {
		return nil, accountable.Errorf(accountable.ECodeInvalidJSON, "The request body must be a JSON object.")
	}
	if p, ok := dst.(plainBodyDecoder); ok && p.DecodePlainBody(body) {
		return nil, nil // a plain body has no workspace_id
	}
	scoped := reflect.New(scopedType)
	scoped.Elem().Field(0).Set(reflect.ValueOf(dst))
	opts := openBodyOptions
	if closed {
		opts = closedBodyOptions
	}
	if err := jsonv2.Unmarshal(body, scoped.Interface(), opts); err != nil {
		return nil, decodeError(err)
	}
	return scoped.Elem().Field(1).Interface().(*string), nil
}

// plainBodyDecoder is a body that decodes itself in one pass when its text is the plain
// form clients send (workload.WorkloadRequest), to what decodeJSONBody would decode, and
// declines any other text (a workspace_id among it), leaving itself as it was.
type plainBodyDecoder interface {
	DecodePlainBody(body []byte) bool
}

// The decoding options of request bodies: integer members take integral numbers,
// free-form JSON is canonicalised (freeFormUnmarshalers), and a closed body refuses
// unknown members.
var (
	openBodyOptions = jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(jsonv2.UnmarshalFromFunc(unmarshalIntegral),
		freeFormUnmarshalers))
	closedBodyOptions = jsonv2.JoinOptions(openBodyOptions, jsonv2.RejectUnknownMembers(true))
)

// errNotIntegral is the issue of an integer member given a fraction or a number beyond
// the integers a double holds exactly.
var errNotIntegral = errors.New("must be an integer")

// unmarshalIntegral lets an integer member take any JSON number with an integral value
// (1500.0, 1.5e3), as JSON Schema's integer does: clients whose numbers are doubles
// (Python's float, JavaScript) may write them so. Anything but a number is left to the
// default decoding (and its type error).
func unmarshalIntegral(dec *jsontext.Decoder, v *int64) error {
	if dec.PeekKind() != '0' {
		return errors.ErrUnsupported
	}
	val, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if n, err := strconv.ParseInt(string(val), 10, 64); err == nil {
		*v = n
		return nil
	}
	f, err := strconv.ParseFloat(string(val), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return errNotIntegral
	}
	*v = int64(f)
	return nil
}

// msgUnknownMember is the issue of a member a closed body does not know.
const msgUnknownMember = "is not a member of this request"

// decodeError turns a decoding failure into invalid_json (the text is not one well-formed
// I-JSON object) or validation_failed (a member is unknown, of the wrong type or out of
// range), with the JSON Pointer of the member.
func decodeError(err error) error {
	var se *jsonv2.SemanticError
	if !errors.As(err, &se) || errors.Is(err, canonical.ErrNotCanonicalizable) {
		return accountable.Errorf(accountable.ECodeInvalidJSON,
			"The request body is not well-formed JSON (I-JSON: no duplicate member names, valid UTF-8, numbers within double precision).")
	}
	msg := "has the wrong type"
	switch {
	case errors.Is(se.Err, jsonv2.ErrUnknownName):
		msg = msgUnknownMember
	case se.GoType != nil && se.Err == nil:
		msg = "must be " + jsonTypeName(se.GoType)
	case se.GoType != nil && isNumber(se.GoType):
		msg = "must be " + jsonTypeName(se.GoType) + " in range"
	case se.Err != nil:
		msg = se.Err.Error()
	}
	return accountable.ValidationError(accountable.Issue{Path: string(se.JSONPointer), Message: msg})
}

func isNumber(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// jsonTypeName says what JSON a Go type takes.
func jsonTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a JSON object"
		}
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a different type"
}

// param is a path or query parameter of an operation's input.
type param struct {
	name        string
	in          string // path or query
	index       []int
	field       reflect.StructField
	description string
	// required: a query parameter tagged required:"true" must be given (400 at its name).
	required bool
	// tail: the path parameter of a PathTail operation, read from Fiber's "+".
	tail bool
	// rules are the rules of the parameter's tags, checked on its value.
	rules accountable.ValueRules
}

// paramsOf lists the parameters of input type t, including those of embedded structs.
func paramsOf(t reflect.Type) []param {
	var out []param
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			idx := append(slices.Clone(index), i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == "" {
				walk(f.Type, idx)
				continue
			}
			for _, where := range []string{"path", "query"} {
				name, ok := f.Tag.Lookup(where)
				if !ok {
					continue
				}
				out = append(out, param{name: name, in: where, index: idx, field: f, description: f.Tag.Get("description"),
					rules: accountable.RulesOfField(f), required: f.Tag.Get("required") == "true"})
			}
		}
	}
	walk(t, nil)
	return out
}

// hasBodyFields reports whether input type t has any member of a JSON body: a field with
// a json name that is not a parameter, here or in an embedded struct.
func hasBodyFields(t reflect.Type) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		switch {
		case tag == "-":
		case f.Anonymous && f.Type.Kind() == reflect.Struct && tag == "":
			if hasBodyFields(f.Type) {
				return true
			}
		case f.IsExported():
			_, isPath := f.Tag.Lookup("path")
			_, isQuery := f.Tag.Lookup("query")
			if !isPath && !isQuery {
				return true
			}
		}
	}
	return false
}

// bind sets the field of p from the request, checking the rules of its tags.
func (p param) bind(fc *fiber.Ctx, v reflect.Value, issues *accountable.Issues) {
	var raw []string
	switch {
	case p.in == "path" && p.tail:
		raw = []string{fc.Params("+")}
	case p.in == "path":
		raw = []string{fc.Params(p.name)}
	case p.field.Type.Kind() == reflect.Slice:
		raw = queryAll(fc, p.name)
	default:
		for _, v := range fc.Context().QueryArgs().PeekMulti(p.name) {
			raw = append(raw, string(v))
		}
	}
	if len(raw) == 0 || (len(raw) == 1 && raw[0] == "") {
		if p.required {
			issues.Add(p.name, "is required")
		}
		return
	}
	f := v.FieldByIndex(p.index)
	t := f.Type()
	if t.Kind() == reflect.Slice {
		// Each value becomes an element of the slice's type; an enumerated one (with an Enum
		// method, so the document lists its values) must be one of them.
		list := reflect.MakeSlice(t, len(raw), len(raw))
		for i, r := range raw {
			el := reflect.ValueOf(r).Convert(t.Elem())
			if e, ok := el.Interface().(accountable.Enumerated); ok && !slices.Contains(e.Enum(), any(r)) {
				issues.Add(p.name, "must be one of %v", e.Enum())
				return
			}
			list.Index(i).Set(el)
		}
		f.Set(list)
		return
	}
	if len(raw) > 1 {
		issues.Add(p.name, "is given more than once")
		return
	}
	s := raw[0]
	target := f
	if t.Kind() == reflect.Pointer {
		target = reflect.New(t.Elem()).Elem()
	}
	if err := setScalar(target, s); err != nil {
		issues.Add(p.name, "%s", err.Error())
		return
	}
	if msg := p.check(target); msg != "" {
		issues.Add(p.name, "%s", msg)
		return
	}
	if t.Kind() == reflect.Pointer {
		f.Set(target.Addr())
	}
}

func setScalar(target reflect.Value, s string) error {
	if u, ok := target.Addr().Interface().(interface{ UnmarshalText([]byte) error }); ok {
		return u.UnmarshalText([]byte(s))
	}
	switch target.Kind() {
	case reflect.String:
		target.SetString(s)
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return errors.New("must be an integer")
		}
		target.SetInt(n)
	case reflect.Bool:
		// Exactly true or false, as the public clients write a boolean parameter.
		switch s {
		case "true", "false":
			target.SetBool(s == "true")
		default:
			return errors.New("must be true or false")
		}
	default:
		return fmt.Errorf("api: unsupported parameter type %s", target.Type())
	}
	return nil
}

// check applies the tag rules of the parameter to its value.
func (p param) check(v reflect.Value) string { return p.rules.Check(v) }

// areaScopes are the scope families of the areas (accountable.Scopes): an operation needs
// its family's read scope when it is a GET, its write scope otherwise. The Credential area
// needs none (any credential may describe itself); account-free operations need no
// credential at all.
var areaScopes = map[string]accountable.ScopeFamily{
	"Work": accountable.ScopesWork, "Artifacts": accountable.ScopesWork, "Deduplication": accountable.ScopesWork,
	"Receipt import": accountable.ScopesWork, "Content Studio": accountable.ScopesWork, "Projections": accountable.ScopesWork,
	"Initiatives": accountable.ScopesInitiatives, "Launches": accountable.ScopesInitiatives, "Runs": accountable.ScopesInitiatives,
	"Decisions": accountable.ScopesInitiatives, "Lifecycle": accountable.ScopesInitiatives,
	"Operating processes": accountable.ScopesProcesses, "Operating map": accountable.ScopesProcesses,
	"Handoffs": accountable.ScopesProcesses, "Discovery runs": accountable.ScopesProcesses, "Episodes": accountable.ScopesProcesses,
	"Controllers": accountable.ScopesProcesses, contextArea: accountable.ScopesWork,
	"Events": accountable.ScopesEvents, webhooksArea: accountable.ScopesEvents, serviceArea: accountable.ScopesEvents,
}

// scope is the OAuth scope the operation needs ("" for none).
func (o *operation) scope() string {
	if o.Public || o.Area == "Credential" {
		return ""
	}
	f, ok := areaScopes[o.Area]
	if !ok { // a new area must choose its family (TestEveryOperationHasAScope)
		panic("api: no scope family for area " + o.Area)
	}
	return f.Scope(o.Method != fiber.MethodGet && o.Method != fiber.MethodHead && !o.ReadOnly)
}
