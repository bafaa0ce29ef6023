package api_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/tokens"
)

// The request fuzz run, generated from the served OpenAPI document: requests made from
// every operation it lists, then mutated (bodies, headers, paths, methods, framing), sent
// over a real connection to the live API backed by PostgreSQL. Whatever comes in:
//
//   - no 5xx (but the 501 not_offered an operation documents), and an answer within
//     fuzzTimeout (no hang);
//   - every answer is JSON: a 401 the simple {error, message} body, any other failure the
//     error envelope with a catalogued code of the answered status whose requestId is the
//     X-Request-Id header; a success on an operation's own path matches the document;
//   - nothing is written unless the request answered 2xx as a first (not replayed)
//     command, and then only in the workspace its meta names, with ledger events: after
//     every request the rows of every workspace-scoped table are counted;
//   - at the end the bystander workspace (another user's, whose ids the requests carry)
//     is exactly as it was, and the fuzzed workspaces verify.
//
// Requests go one at a time, so each write is the doing of the request just answered.
// Deterministic: request i is made from REQUEST_FUZZ_SEED and i alone (ids aside), so a
// failure prints the request and how to run up to it again.
//
//	REQUEST_FUZZ_SEED      the seed (default: random, printed)
//	REQUEST_FUZZ_DURATION  how long to run (default 20s); REQUEST_FUZZ_REQUESTS: how many instead

const (
	fuzzTimeout         = 10 * time.Second
	fuzzDefaultDuration = 20 * time.Second
	fuzzBodyLimit       = 1 << 20 // api.Config's default, which newEnv keeps
)

func TestRequestFuzz(t *testing.T) {
	seed := rand.Uint64()
	if s := os.Getenv("REQUEST_FUZZ_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("REQUEST_FUZZ_SEED: %v", err)
		}
		seed = n
	}
	duration := fuzzDefaultDuration
	if s := os.Getenv("REQUEST_FUZZ_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("REQUEST_FUZZ_DURATION: %v", err)
		}
		duration = d
	}
	limit := 0
	if s := os.Getenv("REQUEST_FUZZ_REQUESTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("REQUEST_FUZZ_REQUESTS: %v", err)
		}
		limit = n
	}
	t.Logf("REQUEST_FUZZ_SEED=%d (duration %s, requests %d; 0: until the duration ends)", seed, duration, limit)

	f := newFuzzer(t, seed)
	yBefore := workspaceState(t, f.conn, f.tables, f.y.Principal.WorkspaceID)
	counts := f.counts()
	deadline := time.Now().Add(duration)
	statuses, byOp := map[int]int{}, map[string]map[int]int{}
	n := 0
	for i := uint64(0); ; i++ {
		if limit > 0 && int(i) >= limit || limit == 0 && time.Now().After(deadline) {
			break
		}
		q := f.generate(i)
		res, err := f.send(q)
		problem := f.judge(q, res, err)
		f.carry(q)
		after := f.counts()
		if problem == "" {
			problem = f.account(q, res, counts, after)
		}
		if problem != "" {
			t.Fatalf("request %d: %s\n%s\nreproduce: REQUEST_FUZZ_SEED=%d REQUEST_FUZZ_REQUESTS=%d go test -race -run TestRequestFuzz ./api",
				i, problem, q.describe(), seed, i+1)
		}
		counts = after
		statuses[res.status]++
		if q.op != nil && q.path != "" {
			if byOp[q.op.ID] == nil {
				byOp[q.op.ID] = map[int]int{}
			}
			byOp[q.op.ID][res.status]++
		}
		n++
	}
	t.Logf("%d requests; answers by status: %v", n, statuses)
	for _, op := range f.ops {
		t.Logf("  %s on its own path: %v", op, byOp[op.ID])
	}
	if n < 50 && limit == 0 {
		t.Fatalf("only %d requests in %s", n, duration)
	}
	if d := stateDiff(yBefore, workspaceState(t, f.conn, f.tables, f.y.Principal.WorkspaceID)); d != "" {
		t.Fatalf("the bystander workspace changed:\n%s", d)
	}
	for _, key := range []string{f.key, f.key2} {
		r := f.e.do(request{method: "GET", path: "/events/verify", key: key})
		expect(t, r, http.StatusOK, "")
		if r.data()["verified"] != true {
			// The broken event says which request wrote it.
			var eventType, payload string
			_ = f.conn.QueryRow(context.Background(), "SELECT event_type, left(payload::text, 2000) FROM ledger_events WHERE id = $1",
				r.data()["firstBrokenEventId"]).Scan(&eventType, &payload)
			t.Fatalf("a fuzzed workspace's ledger does not verify: %s\nthe first broken event: %s %s", r.raw, eventType, payload)
		}
	}
}

// fuzzer holds what requests are made from: the operations, the fuzzed workspaces' key
// and ids (F, and F2: another workspace of the same user), a bystander's ids (Y), keys
// that must be refused.
type fuzzer struct {
	t       *testing.T
	e       *env
	seed    uint64
	addr    string
	doc     *document
	ops     []docOperation
	conn    *pgx.Conn
	tables  []string
	codes   map[string]int // the catalogue: code -> status
	counter string         // counts the rows of every table, by workspace

	f, y           storetest.Tenant
	key, key2      string // F's key; the key of F2 (only to verify it at the end)
	ws2            string // F2
	revoked        string
	unknownKey     string
	ids            map[string][]string    // path parameter -> F's ids
	ids2, foreign  map[string][]string    // F2's and Y's
	valid          map[string][]validBody // by operation: valid bodies for F's ids (isolation's bodies)
	cache          map[string]string      // big values, made once
	reqIDPattern   *regexp.Regexp
	requestTargets []string // paths of the document filled with F's ids, for random requests
	ySecrets       []string // what identifies the bystander's workspace and its contents
	// carried are the bystander's secrets some request carried: F may have stored them
	// (a task's metadata), and then rightly reads them back.
	carried map[string]bool
}

func newFuzzer(t *testing.T, seed uint64) *fuzzer {
	e := newQuietEnv(t)
	f := &fuzzer{t: t, e: e, seed: seed, addr: strings.TrimPrefix(e.base, "http://"), conn: storetest.Conn(t), cache: map[string]string{},
		reqIDPattern: regexp.MustCompile(`^[A-Za-z0-9._:/-]{1,128}$`)}
	f.doc = fetchDocument(t, e)
	f.ops = f.doc.operations(t)
	f.tables = workspaceTables(t, f.conn)

	r := e.do(request{method: "GET", path: "/errors"})
	expect(t, r, http.StatusOK, "")
	f.codes = map[string]int{}
	for _, c := range r.dataList() {
		spec := c.(map[string]any)
		f.codes[spec["code"].(string)] = int(spec["status"].(float64))
	}

	f.f = storetest.NewTenant(t, e.db)
	f.y = storetest.NewTenant(t, e.db)
	f.key = f.f.Key
	second, err := e.db.CreateKey(context.Background(), store.CreateKeyRequest{Name: "second", UserEmail: f.f.Principal.UserEmail, NewWorkspace: "F2"})
	if err != nil {
		t.Fatal(err)
	}
	f.key2, f.ws2 = second.Key, second.WorkspaceID
	revoked := storetest.NewTenant(t, e.db)
	if _, err := e.db.RevokeKey(context.Background(), revoked.Principal.KeyPrefix); err != nil {
		t.Fatal(err)
	}
	f.revoked = revoked.Key
	f.unknownKey, _ = tokens.NewAPIKey()

	bystander := &owner{t: t, e: e, tenant: f.y, conn: f.conn, marker: "bystander-" + uuid.NewString()}
	f.ids = f.resources(&owner{t: t, e: e, tenant: f.f, conn: f.conn, marker: "fuzzed"}, 3)
	f.ids2 = f.resources(&owner{t: t, e: e, tenant: storetest.Tenant{Key: f.key2}, conn: f.conn, marker: "fuzzed"}, 1)
	f.foreign = f.resources(bystander, 2)
	f.ySecrets = bystander.secrets()
	f.carried = map[string]bool{}
	f.valid = map[string][]validBody{}
	o := &owner{t: t, e: e, tenant: f.f, conn: f.conn, marker: "fuzz"}
	for _, op := range f.ops {
		line, ok := bodies[op.ID]
		if !ok || op.Public {
			continue
		}
		for i := range 3 {
			ids := map[string]string{}
			for _, p := range op.PathParams {
				pool := f.ids[resourceKey(op.Path, p.Name)]
				ids[p.Name] = pool[i%len(pool)]
			}
			f.valid[op.ID] = append(f.valid[op.ID], validBody{ids, line(o, ids)})
		}
	}
	for _, op := range f.ops {
		for _, m := range op.Mounts {
			f.requestTargets = append(f.requestTargets, strings.TrimSuffix(m, "/")+op.pathOf(f.pick(rand.New(rand.NewPCG(seed, 0)), op, f.ids)))
		}
	}

	// One query counts the rows of every table, per workspace where the table has one, with
	// the newest transaction that inserted or updated one of them (xmin), so that an update
	// shows too. api_keys' rows are updated by themselves (last_used_at): only counted.
	newest := func(table string) string {
		if table == "api_keys" {
			return "0::bigint"
		}
		return "coalesce(max(xmin::text::bigint), 0)"
	}
	var parts []string
	for _, table := range f.tables {
		parts = append(parts, fmt.Sprintf(`SELECT '%s|' || workspace_id::text, count(*), %s FROM %s GROUP BY workspace_id`,
			table, newest(table), pgx.Identifier{table}.Sanitize()))
	}
	rows, err := f.conn.Query(context.Background(), `SELECT table_name::text FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	all, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range all {
		if !slices.Contains(f.tables, table) {
			parts = append(parts, fmt.Sprintf(`SELECT '%s', count(*), %s FROM %s`, table, newest(table), pgx.Identifier{table}.Sanitize()))
		}
	}
	f.counter = strings.Join(parts, " UNION ALL ")
	return f
}

// resources makes what the path parameters of the document name (the isolation matrix's
// fixtures) in o's workspace, n of each.
func (f *fuzzer) resources(o *owner, n int) map[string][]string {
	out := map[string][]string{}
	for _, op := range f.ops {
		for _, p := range op.PathParams {
			key := resourceKey(op.Path, p.Name)
			if _, done := out[key]; done {
				continue
			}
			if v, ok := pathValues[p.Name]; ok {
				out[key] = []string{v}
				continue
			}
			fx, ok := fixtures[key]
			if !ok {
				f.t.Fatalf("%s: no fixture for the path parameter %q: add one to fixtures in the isolationLines of its area's test file (api/<area>_test.go)", op, p.Name)
			}
			for range n {
				out[key] = append(out[key], fx(o))
			}
		}
	}
	return out
}

func (f *fuzzer) counts() map[string]int64 {
	rows, err := f.conn.Query(context.Background(), f.counter)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]int64{}
	for rows.Next() {
		var k string
		var n, xmin int64
		if err := rows.Scan(&k, &n, &xmin); err != nil {
			f.t.Fatal(err)
		}
		out["rows of "+k], out["last written "+k] = n, xmin
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// header is one header line as sent: a name and a value, either of which may be anything.
type header struct{ name, value string }

// fuzzReq is one request as it goes on the wire.
type fuzzReq struct {
	method  string
	target  string // request-target: path and query
	headers []header
	body    []byte
	// headOnly: send the head only (the body announced is over the limit; the server
	// answers before reading it).
	headOnly bool
	chunked  bool
	op       *docOperation // the operation the request was made from; nil for a random one
	path     string        // the operation's path template while the request still targets it
	// kinds are what the mutations did, as far as the answer depends on it: authBad,
	// foreignIDs, foreignWorkspace, oversize, compressedOversize; other for anything else.
	kinds map[string]bool
	notes []string
	bomb  []byte // the compressed body over the limit, while it is the body
	raw   []byte // the request on the wire, once made
	lower []byte // raw in lower case, once made
}

// Kinds of mutations whose answer is known.
const (
	kindAuthBad            = "authBad"            // only the credential is wrong: a 401
	kindForeignIDs         = "foreignIDs"         // only the ids are the bystander's: a 404
	kindForeignWorkspace   = "foreignWorkspace"   // only the workspace_id is the bystander's: a 404
	kindOversize           = "oversize"           // a body over the limit: a 413 (or a refused head)
	kindCompressedOversize = "compressedOversize" // over the limit once decompressed: never decoded
	kindOther              = "other"
)

func (q *fuzzReq) kind(k string) {
	if q.kinds == nil {
		q.kinds = map[string]bool{}
	}
	q.kinds[k] = true
}

// only reports whether k is the one thing the mutations did.
func (q *fuzzReq) only(k string) bool { return q.kinds[k] && len(q.kinds) == 1 }

// expected returns the error codes the answer may carry (nil: any) and the codes it must
// not (a 401 counts as "unauthorized"; a success as "").
func (q *fuzzReq) expected() (allowed, forbidden []string) {
	transport := []string{accountable.ECodeRequestTimeout, accountable.ECodeHeadersTooLarge, accountable.ECodeBadRequest}
	switch {
	case q.kinds[kindOversize]:
		return append(transport, accountable.ECodePayloadTooLarge), nil
	case q.kinds[kindCompressedOversize]:
		return nil, []string{"", accountable.ECodeInvalidJSON}
	case q.op == nil || q.path == "" || q.op.Public:
		return nil, nil
	case q.only(kindAuthBad):
		return append(transport, accountable.ECodeUnauthorized), nil
	case q.only(kindForeignIDs), q.only(kindForeignWorkspace):
		return []string{accountable.ECodeNotFound}, nil
	}
	return nil, nil
}

func (q *fuzzReq) note(format string, args ...any) {
	q.notes = append(q.notes, fmt.Sprintf(format, args...))
}

func (q *fuzzReq) setHeader(name, value string) {
	q.delHeader(name)
	q.headers = append(q.headers, header{name, value})
}

func (q *fuzzReq) delHeader(name string) {
	q.headers = slices.DeleteFunc(q.headers, func(h header) bool { return strings.EqualFold(h.name, name) })
}

func (q *fuzzReq) getHeader(name string) (string, bool) {
	for _, h := range q.headers {
		if strings.EqualFold(h.name, name) {
			return h.value, true
		}
	}
	return "", false
}

// wire returns the request as it goes on the wire.
func (q *fuzzReq) wire() []byte {
	if q.raw == nil {
		q.raw = q.encode()
	}
	return q.raw
}

// lowered returns the request as it goes on the wire, in lower case.
func (q *fuzzReq) lowered() []byte {
	if q.lower == nil {
		q.lower = bytes.ToLower(q.wire())
	}
	return q.lower
}

func (q *fuzzReq) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", q.method, q.target)
	hasHost := false
	for _, h := range q.headers {
		hasHost = hasHost || strings.EqualFold(h.name, "Host")
	}
	if !hasHost {
		b.WriteString("Host: api.test\r\n")
	}
	for _, h := range q.headers {
		fmt.Fprintf(&b, "%s: %s\r\n", h.name, h.value)
	}
	switch {
	case q.chunked:
		b.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		for rest := q.body; len(rest) > 0; {
			n := min(len(rest), 1+len(rest)/3)
			fmt.Fprintf(&b, "%x\r\n%s\r\n", n, rest[:n])
			rest = rest[n:]
		}
		b.WriteString("0\r\n\r\n")
		return b.Bytes()
	case q.body != nil || q.method == "POST":
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(q.body))
	}
	b.WriteString("\r\n")
	if !q.headOnly {
		b.Write(q.body)
	}
	return b.Bytes()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:n], len(s))
}

// describe prints the request so that it can be sent again.
func (q *fuzzReq) describe() string {
	var b strings.Builder
	op := "none (a random request)"
	if q.op != nil {
		op = q.op.String()
	}
	fmt.Fprintf(&b, "  made from: %s\n  mutations: %s\n  %s %s HTTP/1.1\n", op, strings.Join(q.notes, "; "), clip(q.method, 80), clip(q.target, 300))
	for _, h := range q.headers {
		fmt.Fprintf(&b, "  %s: %s\n", clip(h.name, 80), clip(h.value, 200))
	}
	sum := sha256.Sum256(q.body)
	fmt.Fprintf(&b, "  body (%d bytes, sha256 %x, chunked %v, head only %v): %s", len(q.body), sum[:8], q.chunked, q.headOnly, clip(string(q.body), 400))
	return b.String()
}

type fuzzRes struct {
	status      int
	header      http.Header
	raw         []byte
	elapsed     time.Duration
	eventStream bool // a live stream: raw is its first line
}

// send writes the request on a new connection and reads the answer (after any 1xx).
func (f *fuzzer) send(q *fuzzReq) (fuzzRes, error) {
	start := time.Now()
	conn, err := net.DialTimeout("tcp", f.addr, fuzzTimeout)
	if err != nil {
		return fuzzRes{}, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(start.Add(fuzzTimeout)); err != nil {
		return fuzzRes{}, err
	}
	written := make(chan struct{})
	go func() {
		defer close(written)
		conn.Write(q.wire()) //nolint:errcheck // a server that answers early may close before reading everything
	}()
	defer func() { conn.Close(); <-written }()
	br := bufio.NewReader(conn)
	for {
		res, err := http.ReadResponse(br, &http.Request{Method: q.method})
		if err != nil {
			return fuzzRes{elapsed: time.Since(start)}, err
		}
		if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			// A live stream's lease lasts seconds: its opening comment is its answer. (Its body
			// is not closed: that would read the lease to its end; closing the connection ends it.)
			opening, err := bufio.NewReader(res.Body).ReadString('\n')
			return fuzzRes{status: res.StatusCode, header: res.Header, raw: []byte(opening), elapsed: time.Since(start), eventStream: true}, err
		}
		raw, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return fuzzRes{elapsed: time.Since(start)}, err
		}
		if res.StatusCode >= 100 && res.StatusCode < 200 {
			continue
		}
		return fuzzRes{status: res.StatusCode, header: res.Header, raw: raw, elapsed: time.Since(start)}, nil
	}
}

// transportCodes are refusals raised before a request reaches its operation, which the
// operations' entries do not list.
var transportCodes = []string{accountable.ECodeBadRequest, accountable.ECodeRequestTimeout, accountable.ECodeHeadersTooLarge,
	accountable.ECodePayloadTooLarge, accountable.ECodeMethodNotAllowed, accountable.ECodeRouteNotFound, accountable.ECodeUnsupportedMediaType}

// unattributedCodes are refusals of a request that reached no operation: an HTTP request
// the server cannot read (its head, its framing), or one the router does not send to any
// operation (a mangled Host can do that on an operation's own path). They answer the
// envelope even on the path of an operation with its own failure body.
var unattributedCodes = []string{accountable.ECodeBadRequest, accountable.ECodeRequestTimeout, accountable.ECodeHeadersTooLarge,
	accountable.ECodeRouteNotFound, accountable.ECodeMethodNotAllowed}

// judge says what is wrong with the answer to q ("" when nothing is).
func (f *fuzzer) judge(q *fuzzReq, res fuzzRes, err error) string {
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fmt.Sprintf("no answer within %s (a hang): %v", fuzzTimeout, err)
		}
		return fmt.Sprintf("no answer: %v (after %s)", err, res.elapsed)
	}
	show := fmt.Sprintf("%d %s", res.status, clip(string(res.raw), 600))
	own := q.path != "" && q.op.answersWith(res.status) // a documented answer of the operation
	if res.status >= 500 && !own {
		// 501 not_offered is the refusal of an operation this service declares but does not
		// offer (the studio checkout), where it documents it: not a fault.
		if r := f.reachedOp(q); res.status != http.StatusNotImplemented || r == nil || !r.documents(res.status) {
			return "a server error: " + show
		}
	}
	code := ""
	if res.status == http.StatusUnauthorized {
		code = accountable.ECodeUnauthorized
	} else if e, ok := jsonObject(res.raw)["error"].(map[string]any); ok {
		code = fmt.Sprint(e["code"])
	}
	allowed, forbidden := q.expected()
	if q.method == "HEAD" {
		// No body: the codes can only be told by their statuses.
		for _, c := range slices.Concat(allowed, forbidden) {
			if f.codes[c] == res.status || c == accountable.ECodeUnauthorized && res.status == http.StatusUnauthorized ||
				c == "" && res.status < 300 {
				code = c
			}
		}
	}
	if allowed != nil && !slices.Contains(allowed, code) {
		return fmt.Sprintf("want an answer with one of the codes %q, got %q: %s", allowed, code, show)
	}
	if slices.Contains(forbidden, code) {
		return fmt.Sprintf("want an answer with none of the codes %q (\"\": a success), got %q: %s", forbidden, code, show)
	}
	if s := f.leak(q, res); s != "" {
		return fmt.Sprintf("the answer shows %q of the bystander's workspace, which the request did not carry: %s", s, show)
	}
	id := res.header.Get("X-Request-Id")
	if !f.reqIDPattern.MatchString(id) {
		return fmt.Sprintf("X-Request-Id %q is not a plain request id: %s", id, show)
	}
	if q.method == "HEAD" {
		return ""
	}
	if res.eventStream {
		if res.status != http.StatusOK || q.op == nil || !q.op.answersEventStream() || !strings.Contains(q.target, "transport=sse") ||
			string(res.raw) != ": stream open\n" {
			return "an unexpected event stream: " + show
		}
		return ""
	}
	if ct := res.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		// An answer in another media type (a tile, a signed note) that the operation
		// documents: the one the request reached, or, on a mutated spelling of its own
		// path (a path parameter mutated to itself), the one it was made from.
		answering := f.reachedOp(q)
		if answering == nil {
			answering = q.op
		}
		if answering != nil && res.status < 300 && answering.answersIn(res.status, ct) {
			return ""
		}
		return fmt.Sprintf("Content-Type %q: %s", ct, show)
	}
	var body any
	if err := json.Unmarshal(res.raw, &body); err != nil {
		return fmt.Sprintf("the answer is not JSON (%v): %s", err, show)
	}
	obj, _ := body.(map[string]any)
	// The operation that answered: the one the request reached, or, on a mutated spelling
	// of its own path, the one it was made from.
	reached := f.reachedOp(q)
	answering := reached
	if answering == nil {
		answering = q.op
	}
	switch {
	case own || q.path != "" && res.status < 300:
		if err := f.e.oas.validate(q.method, q.path, res.status, body); err != nil {
			return err.Error()
		}
	case res.status == http.StatusUnauthorized:
		if len(obj) != 2 || obj["error"] != "Unauthorized" || fmt.Sprint(obj["message"]) == "" {
			return "a 401 without the simple body: " + show
		}
		if res.header.Get("WWW-Authenticate") == "" {
			return "a 401 without WWW-Authenticate: " + show
		}
	case res.status >= 400 && answering != nil && (obj["data"] != nil || obj["error"] == nil && answering.answersWith(res.status)):
		// A refusal answered with the success envelope where the document says so (a
		// blocked lifecycle action's 422), or with the operation's own body (an invalid
		// receipt's 422 from the account-free validation, also for a GET of its path sent
		// as POST).
		if err := f.e.oas.validate(answering.Method, answering.Path, res.status, body); err != nil {
			return err.Error()
		}
	case res.status >= 400:
		// The error envelope, or the failure body of the operation the request reached when
		// it has its own (the workload diagnosis); an HTTP request the server could not read
		// belongs to no operation.
		var failure *docOperation
		if reached != nil && reached.Failure != "" && !slices.Contains(unattributedCodes, code) {
			failure = reached
		}
		schema, what := "/components/schemas/Error", "the error envelope"
		if failure != nil {
			schema, what = strings.TrimPrefix(failure.Failure, "#"), "the failure body of "+failure.String()
		}
		if err := f.e.oas.validateAt(schema, body); err != nil {
			return fmt.Sprintf("not %s: %v: %s", what, err, show)
		}
		e := obj["error"].(map[string]any)
		code := e["code"].(string)
		st, ok := f.codes[code]
		if !ok {
			return fmt.Sprintf("code %q is not in the catalogue: %s", code, show)
		}
		if st != res.status {
			return fmt.Sprintf("code %q is catalogued with %d: %s", code, st, show)
		}
		if failure == nil && e["requestId"] != id {
			return fmt.Sprintf("error.requestId %v is not the X-Request-Id %q: %s", e["requestId"], id, show)
		}
		if q.path != "" && !slices.Contains(transportCodes, code) && !q.op.documents(res.status) {
			return fmt.Sprintf("%s does not document %d: %s", q.op, res.status, show)
		}
	case res.status >= 300:
		return "a redirect: " + show
	}
	return ""
}

// reachedOp returns the operation q reached, or nil: the one it was made from while it
// still targets it, or the one whose path q's request line names as the router matches it
// (as sent, without query or fragment, case and trailing slashes ignored) with q's method
// (HEAD as GET).
func (f *fuzzer) reachedOp(q *fuzzReq) *docOperation {
	if q.path != "" && q.op != nil {
		return q.op
	}
	target := q.target
	if scheme, rest, ok := strings.Cut(target, "://"); ok && !strings.Contains(scheme, "/") {
		_, target, _ = strings.Cut(rest, "/")
		target = "/" + target
	}
	if i := strings.IndexAny(target, "?#"); i >= 0 {
		target = target[:i]
	}
	target = strings.TrimRight(target, "/")
	method := q.method
	if method == "HEAD" {
		method = "GET"
	}
	for i := range f.ops {
		op := &f.ops[i]
		if op.Method != method {
			continue
		}
		for _, m := range op.Mounts {
			if strings.EqualFold(strings.TrimSuffix(m, "/")+op.Path, target) {
				return op
			}
		}
	}
	return nil
}

// leak returns a string of the bystander's that the answer shows and the request did not
// carry ("" when there is none).
func (f *fuzzer) leak(q *fuzzReq, res fuzzRes) string {
	var b bytes.Buffer
	b.Write(res.raw)
	for k, vs := range res.header {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(vs, ","))
	}
	answer := bytes.ToLower(b.Bytes())
	for _, s := range f.ySecrets {
		if s != "" && !f.carried[s] && bytes.Contains(answer, []byte(strings.ToLower(s))) &&
			!bytes.Contains(q.lowered(), []byte(strings.ToLower(s))) {
			return s
		}
	}
	return ""
}

// carry notes the bystander's secrets q carried.
func (f *fuzzer) carry(q *fuzzReq) {
	for _, s := range f.ySecrets {
		if s != "" && !f.carried[s] && bytes.Contains(q.lowered(), []byte(strings.ToLower(s))) {
			f.carried[s] = true
		}
	}
}

func jsonObject(raw []byte) map[string]any {
	var m map[string]any
	json.Unmarshal(raw, &m) //nolint:errcheck // nil when it is not an object
	return m
}

// account checks the rows the request wrote (inserted, updated or deleted): none, unless it
// answered 2xx as a first command; then only in the workspace its meta names, ledger events
// among them, and nothing deleted.
// prunedByCommands are the tables whose rows a command of a workspace deletes in its own
// workspace as bookkeeping, not as an effect: a proposal request drops the workspace's
// generation rate slots older than the rate window (admitGeneration), which a run longer
// than a minute reaches.
var prunedByCommands = map[string]bool{"generation_requests": true}

func (f *fuzzer) account(q *fuzzReq, res fuzzRes, before, after map[string]int64) string {
	changed := map[string]int64{}
	for k, n := range after {
		if n != before[k] {
			changed[k] = n - before[k]
		}
	}
	for k, n := range before {
		if _, ok := after[k]; !ok {
			changed[k] = -n
		}
	}
	if len(changed) == 0 {
		return ""
	}
	var m struct {
		Meta struct {
			WorkspaceID string `json:"workspaceId"`
			Duplicate   bool   `json:"duplicate"`
		} `json:"meta"`
	}
	json.Unmarshal(res.raw, &m) //nolint:errcheck // judged already
	accepted := res.status >= 200 && res.status < 300 && q.method != "GET" && q.method != "HEAD" && !m.Meta.Duplicate && m.Meta.WorkspaceID != ""
	if !accepted {
		return fmt.Sprintf("a request answered %d (not a first accepted command) wrote: %v: %s", res.status, changed, clip(string(res.raw), 300))
	}
	for k, n := range changed {
		table, _, _ := strings.Cut(strings.TrimPrefix(k, "rows of "), "|")
		deleted := strings.HasPrefix(k, "rows of ") && n < 0 && !prunedByCommands[table]
		if !strings.HasSuffix(k, "|"+m.Meta.WorkspaceID) || deleted {
			return fmt.Sprintf("an accepted command of workspace %s wrote elsewhere (or deleted): %v", m.Meta.WorkspaceID, changed)
		}
	}
	if changed["rows of ledger_events|"+m.Meta.WorkspaceID] < 1 {
		return fmt.Sprintf("an accepted command wrote without a ledger event: %v", changed)
	}
	return ""
}

// --- generation -------------------------------------------------------------------------

// cached returns make()'s value, made once per run.
func (f *fuzzer) cached(key string, make func() string) string {
	v, ok := f.cache[key]
	if !ok {
		v = make()
		f.cache[key] = v
	}
	return v
}

func pickOf[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// hasResourceParams reports whether a path parameter of op names a workspace's resource.
func hasResourceParams(op docOperation) bool {
	return slices.ContainsFunc(op.PathParams, func(p docParam) bool { _, fixed := pathValues[p.Name]; return !fixed })
}

// pick chooses one id of pool per path parameter of op.
func (f *fuzzer) pick(r *rand.Rand, op docOperation, pool map[string][]string) map[string]string {
	out := map[string]string{}
	for _, p := range op.PathParams {
		ids := pool[resourceKey(op.Path, p.Name)]
		out[p.Name] = ids[r.IntN(len(ids))]
	}
	return out
}

// member is one member of a JSON object body: its name and value as raw text (either may
// be malformed).
type member struct{ name, value string }

func encodeMembers(ms []member) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(m.name)
		b.WriteByte(':')
		b.WriteString(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// generate makes request i: a valid request of a random operation, then up to four
// mutations (sometimes none: valid requests keep the write accounting honest).
func (f *fuzzer) generate(i uint64) *fuzzReq {
	r := rand.New(rand.NewPCG(f.seed, i))
	if r.IntN(100) < 6 {
		return f.randomRequest(r, i)
	}
	// Half the requests are commands: their bodies are where most rules are.
	op := f.ops[r.IntN(len(f.ops))]
	if commands := slices.DeleteFunc(slices.Clone(f.ops), func(o docOperation) bool { return o.Body == nil }); len(commands) > 0 && r.IntN(2) == 0 {
		op = commands[r.IntN(len(commands))]
	}
	q := &fuzzReq{method: op.Method, op: &op, path: op.Path}
	mount := op.Mounts[r.IntN(len(op.Mounts))]

	// Path parameters: mostly F's ids, sometimes F2's, the bystander's or never issued.
	pool := f.ids
	switch n := r.IntN(20); {
	case n < 2 && hasResourceParams(op):
		pool = f.foreign
		q.note("ids of the bystander's workspace")
		if op.Body == nil || len(f.valid[op.ID]) > 0 {
			q.kind(kindForeignIDs) // with a valid body: nothing but the ids can be wrong
		} else {
			q.kind(kindOther)
		}
	case n < 3 && hasResourceParams(op):
		pool = f.ids2
		q.note("ids of F2")
		q.kind(kindOther)
	}
	params := f.pick(r, op, pool)
	if r.IntN(20) == 0 {
		for k := range params {
			params[k] = uuid.Must(uuid.NewV7()).String()
		}
		q.note("never-issued ids")
		q.kind(kindOther)
	}
	path := strings.TrimSuffix(mount, "/") + op.pathOf(params)
	if path == "" {
		path = "/"
	}
	var query []string
	for _, p := range op.QueryParams {
		// A required parameter is always there (the mutations may take it away).
		if (p.Required || r.IntN(4) == 0) && p.Name != "workspace_id" {
			query = append(query, p.Name+"="+queryText(f.doc.example(p.Schema)))
		}
	}

	var members []member
	hasBody := op.Body != nil
	if hasBody {
		members = f.validMembers(r, &op, params, q.kinds[kindForeignIDs])
	}
	if !op.Public || r.IntN(2) == 0 {
		q.headers = append(q.headers, header{"Authorization", "Bearer " + f.key})
	}
	if op.Idempotency == "required" || op.Idempotency != "" && r.IntN(10) < 8 {
		q.headers = append(q.headers, header{"Idempotency-Key", fmt.Sprintf("fz-%d-%d", f.seed, i)})
	}
	if r.IntN(4) == 0 {
		q.headers = append(q.headers, header{"Svc-Version", accountable.ContractDates[0]})
	}
	if r.IntN(3) == 0 {
		q.headers = append(q.headers, header{"Accept", "application/json"})
	}

	var raw []byte // the body when it is no longer a list of members
	for n := pickOf(r, 0, 1, 1, 2, 2, 3, 4); n > 0; n-- {
		switch k := r.IntN(100); {
		case k < 55 && (hasBody || r.IntN(4) == 0):
			if !hasBody {
				hasBody = true
				q.note("a body where the operation takes none")
				q.kind(kindOther)
			}
			if raw == nil && r.IntN(10) < 7 {
				members = f.mutateMembers(r, q, &op, members)
			} else {
				if raw == nil {
					raw = encodeMembers(members)
				}
				raw = f.mutateBody(r, q, raw)
			}
		case k < 80:
			f.mutateHeaders(r, q)
		case k < 90:
			query = f.mutateQuery(r, q, query)
		default:
			path = f.mutatePath(r, q, &op, path, params)
		}
	}
	if hasBody && raw == nil {
		raw = encodeMembers(members)
	}
	if hasBody {
		q.body = raw
		if _, ok := q.getHeader("Content-Type"); !ok && !slices.Contains(q.notes, "no Content-Type") {
			q.headers = append(q.headers, header{"Content-Type", "application/json"})
		}
	}
	q.target = path
	if len(query) > 0 {
		q.target += "?" + strings.Join(query, "&")
	}
	if len(q.body) > fuzzBodyLimit {
		q.headOnly, q.chunked = true, false
		q.kind(kindOversize)
	}
	if q.kinds[kindCompressedOversize] && (!bytes.Equal(q.body, q.bomb) || q.method != op.Method) {
		delete(q.kinds, kindCompressedOversize) // a later mutation replaced it
		q.kind(kindOther)
	}
	if len(q.notes) == 0 {
		q.note("none: a valid request")
	}
	return q
}

type validBody struct {
	ids  map[string]string
	body map[string]any
}

// validMembers is a valid body of op: the isolation matrix's line for it (made for the
// same ids when they are F's), or the example of its schema.
func (f *fuzzer) validMembers(r *rand.Rand, op *docOperation, params map[string]string, mustBeValid bool) []member {
	body := map[string]any{}
	if ex, ok := f.doc.example(op.Body).(map[string]any); ok {
		body = ex
	}
	if vs := f.valid[op.ID]; len(vs) > 0 && (r.IntN(5) > 0 || mustBeValid) {
		body = vs[0].body
		for _, v := range vs {
			if maps.Equal(v.ids, params) {
				body = v.body
			}
		}
	}
	names := make([]string, 0, len(body))
	for k := range body {
		names = append(names, k)
	}
	slices.Sort(names)
	out := make([]member, 0, len(names))
	for _, k := range names {
		out = append(out, member{jsonText(k), jsonText(body[k])})
	}
	return out
}

// nest returns depth levels of arrays or objects around a value.
func nest(r *rand.Rand, depth int) string {
	if r.IntN(2) == 0 {
		return strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth)
	}
	return strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
}

func quoteRaw(s string) string { return `"` + s + `"` }

// hostileValue is a JSON value (or something that is not quite one) a member may be given.
func (f *fuzzer) hostileValue(r *rand.Rand) (string, string) {
	uuids := []string{uuid.NewString(), strings.ToUpper(uuid.NewString()), "00000000-0000-0000-0000-000000000000",
		f.foreign["taskId"][0], f.ids["taskId"][0], f.ws2, f.y.Principal.WorkspaceID}
	switch r.IntN(9) {
	case 0:
		v := pickOf(r, "null", "true", "false", "0", "-1", "-0", "1.5", "1e308", "-1e308", "1e309", "1e-400", "-1e400",
			"9223372036854775807", "9223372036854775808", "-9223372036854775809", "18446744073709551616",
			"100000000000000000000000000000000000000", "100000.0000001", "100000000.5", "0.1e1", "1E2", "2e-1")
		return v, "number " + v
	case 1:
		v := pickOf(r, "01", "+1", ".5", "1.", "NaN", "Infinity", "-", "0x10", "1e", "--1", "1_000", "'x'", "undefined", "nul", "tru")
		return v, "not a JSON value " + v
	case 2:
		n := pickOf(r, 0, 1, 199, 200, 201, 499, 500, 501, 511, 512, 513, 3999, 4000, 4001, 100_000, 900_000)
		c := pickOf(r, "a", "é", "😀", "\u202e", " ")
		v := f.cached(fmt.Sprint("string", n, c), func() string { return quoteRaw(strings.Repeat(c, n)) })
		return v, fmt.Sprintf("a string of %d %q", n, c)
	case 3:
		v := pickOf(r, `"\u0000"`, `"a\u0000b"`, "\"a\x00b\"", `"\ud800"`, `"\udc00"`, `"\ud800\ud800"`, `"\udbff\udfff"`,
			`"\uffff"`, `"\ufeff"`, "\"\xff\xfe\"", "\"\xc0\x80\"", "\"\xed\xa0\x80\"", "\"\xe2\x82\"", "\"a\tb\"", "\"a\nb\"",
			`"\x41"`, `"\u12"`, `"\`, `"unterminated`, `"\/\b\f\n\r\t\""`)
		return v, "string " + strconv.Quote(v)
	case 4:
		v := pickOf(r, "2026-02-30", "2026-11-22T06:41:50Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z",
			"2026-11-22T06:41:50+25:00", "2026-11-22t06:41:50z", "-0001-01-01", "2026-11-22T24:00:00Z", "2026-11-22 06:41:50",
			"1970-01-01T00:00:00Z", "10000-01-01", "2026-11-22T06:41:50.1234567890123Z")
		return jsonText(v), "date " + v
	case 5:
		v := pickOf(r, uuids...)
		return jsonText(v), "id " + v
	case 6:
		v := pickOf(r, "{}", "[]", `{"a":1}`, "[1,2,3]", `{"a":{"b":{"c":[]}}}`, `[{}]`, `{"":0}`, `{"a":1,"a":2}`,
			`{"links":["https://example.com"]}`, `{"n":1e999}`, `{"s":"\ud800"}`)
		return v, "composite " + v
	case 7:
		depth := pickOf(r, 100, 1000, 10_001, 100_000)
		return nest(r, depth), fmt.Sprintf("nested %d deep", depth)
	default:
		n := pickOf(r, 1000, 100_000, 200_000)
		v := f.cached(fmt.Sprint("array", n), func() string { return "[" + strings.Repeat("0,", n-1) + "0]" })
		return v, fmt.Sprintf("an array of %d", n)
	}
}

// mutateMembers changes the members of an object body.
func (f *fuzzer) mutateMembers(r *rand.Rand, q *fuzzReq, op *docOperation, ms []member) []member {
	k := r.IntN(12)
	if k != 5 {
		q.kind(kindOther)
	}
	props := map[string]any{}
	if op.Body != nil {
		props, _ = op.Body["properties"].(map[string]any)
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	switch {
	case k == 0 && len(ms) > 0:
		i := r.IntN(len(ms))
		q.note("without member %s", ms[i].name)
		return slices.Delete(slices.Clone(ms), i, i+1)
	case k == 1 && len(ms) > 0:
		m := ms[r.IntN(len(ms))]
		if r.IntN(2) == 0 {
			v, what := f.hostileValue(r)
			m.value = v
			q.note("member %s twice, the second %s", m.name, what)
		} else {
			q.note("member %s twice", m.name)
		}
		return append(slices.Clone(ms), m)
	case k <= 3 && (len(ms) > 0 || len(names) > 0):
		var name string
		if len(names) > 0 && (len(ms) == 0 || r.IntN(2) == 0) {
			name = jsonText(pickOf(r, names...))
		} else {
			name = ms[r.IntN(len(ms))].name
		}
		v, what := f.hostileValue(r)
		q.note("member %s: %s", name, what)
		return setMember(ms, name, v)
	case k == 4:
		name := pickOf(r, `"Title"`, `"title "`, `"tit\u006ce"`, `"__proto__"`, `"constructor"`, `""`, `"x"`,
			`"version_token\u0000"`, "\"\xff\"", `"\ud800"`, jsonText(strings.Repeat("n", 10_000)), `"WORKSPACE_ID"`)
		v, what := f.hostileValue(r)
		q.note("unknown member %s: %s", clip(name, 40), what)
		return append(slices.Clone(ms), member{name, v})
	case k == 5:
		v := pickOf(r, jsonText(f.y.Principal.WorkspaceID), jsonText(f.ws2), jsonText(strings.ToUpper(f.ws2)),
			jsonText(f.f.Principal.WorkspaceID), jsonText(uuid.NewString()), `"not-a-uuid"`, "123", "null", `""`, `{"id":1}`)
		q.note("workspace_id %s", v)
		if v == jsonText(f.y.Principal.WorkspaceID) && op.Method != "GET" {
			q.kind(kindForeignWorkspace)
		} else {
			q.kind(kindOther)
		}
		return setMember(ms, `"workspace_id"`, v)
	case k == 6:
		n := pickOf(r, 100, 10_000, 50_000)
		// One member whose "name" holds the others: the body reads {…,"m0":0,"m1":0,…,"mN":0}.
		names := f.cached(fmt.Sprint("members", n), func() string {
			var b strings.Builder
			for j := range n - 1 {
				fmt.Fprintf(&b, `"m%d":0,`, j)
			}
			fmt.Fprintf(&b, `"m%d"`, n-1)
			return b.String()
		})
		q.note("%d unknown members", n)
		return append(slices.Clone(ms), member{names, "0"})
	case k == 7:
		for _, name := range names {
			if !slices.ContainsFunc(ms, func(m member) bool { return m.name == jsonText(name) }) && name != "workspace_id" {
				q.note("optional member %s as in the document's example", name)
				return append(slices.Clone(ms), member{jsonText(name), jsonText(f.doc.example(props[name]))})
			}
		}
		return ms
	default:
		if len(names) == 0 {
			return ms
		}
		name := pickOf(r, names...)
		if len(ms) > 0 && r.IntN(3) > 0 { // a member the valid body has
			var present []string
			for _, m := range ms {
				var n string
				if json.Unmarshal([]byte(m.name), &n) == nil && props[n] != nil {
					present = append(present, n)
				}
			}
			if len(present) > 0 {
				name = pickOf(r, present...)
			}
		}
		v, what := f.boundaryValue(r, props[name])
		q.note("member %q: %s", name, what)
		return setMember(ms, jsonText(name), v)
	}
}

// boundaryValue is a value at or just past a rule of schema (lengths, ranges, formats,
// enumerations): most get past the decoder, so they reach validation and the database.
func (f *fuzzer) boundaryValue(r *rand.Rand, schema any) (string, string) {
	s := f.doc.resolve(schema)
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			s = f.doc.resolve(pickOf(r, alts...))
		}
	}
	num := func(k string, def float64) float64 {
		if v, ok := s[k].(float64); ok {
			return v
		}
		return def
	}
	typ := fmt.Sprint(s["type"])
	if types, ok := s["type"].([]any); ok {
		typ = fmt.Sprint(pickOf(r, types...))
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		v := pickOf(r, enum...)
		if r.IntN(3) == 0 {
			v = strings.ToUpper(fmt.Sprint(v)) + pickOf(r, "", "x", " ")
		}
		return jsonText(v), fmt.Sprintf("enumeration %v", v)
	}
	switch typ {
	case "null":
		return "null", "null"
	case "string":
		switch s["format"] {
		case "uuid":
			v := pickOf(r, f.ids["taskId"][0], f.ids2["taskId"][0], f.foreign["taskId"][0], f.ws2, uuid.NewString(),
				"00000000-0000-0000-0000-000000000000", strings.ToUpper(uuid.NewString()), "{"+uuid.NewString()+"}", uuid.NewString()[1:])
			return jsonText(v), "uuid " + v
		case "date-time", "date":
			v := pickOf(r, "2026-11-22T06:41:50.123456Z", "2026-11-22T06:41:50.123456789Z", "2026-11-22T06:41:50+14:00",
				"2026-12-01", "2026-02-29", "2028-02-29", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2026-11-22T06:41:60Z",
				"2026-11-22T06:41:50", "1969-12-31T23:59:59Z")
			return jsonText(v), "date " + v
		}
		lo, hi := int(num("minLength", 0)), int(num("maxLength", 600))
		n := max(0, pickOf(r, lo-1, lo, lo+1, hi-1, hi, hi+1))
		c := pickOf(r, "a", "é", "😀", `\u0000`, `\n`, `\ud83d\ude00`)
		return quoteRaw(strings.Repeat(c, n)), fmt.Sprintf("%d × %q (length %d to %d)", n, c, lo, hi)
	case "integer", "number":
		lo, hi := num("minimum", -1e6), num("maximum", 1e12)
		v := pickOf(r, lo-1, lo, lo+0.5, hi, hi+1, hi-0.5, 1<<53, 1<<53+1)
		text := strconv.FormatFloat(v, 'f', -1, 64)
		if r.IntN(4) == 0 {
			text = strconv.FormatFloat(v, 'e', -1, 64)
		}
		return text, fmt.Sprintf("%s (range %v to %v)", text, lo, hi)
	case "boolean":
		return pickOf(r, "true", "false"), "a boolean"
	case "array":
		return pickOf(r, "[]", "[null]", `[""]`), "an array"
	}
	v := pickOf(r, "{}", `{"k":"v"}`, `{"k":{"k":{"k":[1,2,{"k":null}]}}}`, `{"n":1.5e300,"s":"\u00e9"}`, `{"":""}`)
	return v, "object " + v
}

func setMember(ms []member, name, value string) []member {
	out := slices.Clone(ms)
	for i := range out {
		if out[i].name == name {
			out[i].value = value
			return out
		}
	}
	return append(out, member{name, value})
}

// mutateBody changes the body as bytes.
func (f *fuzzer) mutateBody(r *rand.Rand, q *fuzzReq, b []byte) []byte {
	q.kind(kindOther)
	switch r.IntN(16) {
	case 0:
		v := pickOf(r, "[]", `"x"`, "1", "null", "true", "["+string(b)+"]", `""`, "{}")
		q.note("the body %s", clip(v, 40))
		return []byte(v)
	case 1:
		if len(b) == 0 {
			return b
		}
		n := r.IntN(len(b))
		q.note("truncated to %d bytes", n)
		return b[:n]
	case 2:
		v := pickOf(r, "}", "{}", " x", "\x00", ",", "]", "\n\n{}", " // comment")
		q.note("trailing %q", v)
		return append(slices.Clone(b), v...)
	case 3:
		v := pickOf(r, "\xef\xbb\xbf", "\x00", "/*c*/", "\xff", strings.Repeat(" ", 500_000), "\t\r\n")
		q.note("leading %s", clip(v, 10))
		return append([]byte(v), b...)
	case 4:
		n := pickOf(r, 1, 16, 4096, 100_000)
		out := make([]byte, n)
		for i := range out {
			out[i] = byte(r.IntN(256))
		}
		q.note("%d random bytes", n)
		return out
	case 5:
		if len(b) == 0 {
			return b
		}
		at := r.IntN(len(b))
		v := pickOf(r, "\xff", "\xc0\x80", "\xed\xa0\x80", "\xe2\x82", "\x00", "\x80")
		q.note("%q inserted at %d", v, at)
		return slices.Concat(b[:at], []byte(v), b[at:])
	case 6:
		depth := pickOf(r, 1000, 10_001, 100_000, 400_000)
		q.note("the body nested %d deep", depth)
		return []byte(nest(r, depth))
	case 7:
		n := pickOf(r, 10_000, 400_000)
		q.note("the body an array of %d", n)
		return []byte("[" + strings.Repeat("{},", n-1) + "{}]")
	case 8:
		n := fuzzBodyLimit + pickOf(r, 1, 1000, 100_000)
		q.note("a body of %d bytes (over the limit)", n)
		return append([]byte(`{"title":"`), bytes.Repeat([]byte("a"), n)...)
	case 9:
		q.note("an empty body")
		return []byte{}
	case 10, 11:
		return f.compress(r, q, b)
	case 12:
		q.chunked = true
		q.note("chunked")
		return b
	case 13:
		v := pickOf(r, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
			"application/json; charset=utf-16", "application/json;", "application/vnd.api+json", "APPLICATION/JSON",
			"application/json, text/plain", "application/jsonx", "json", "", strings.Repeat("a/b;", 1000), "application/json\x01",
			"application/json; charset=\"", "*/*")
		q.setHeader("Content-Type", v)
		q.note("Content-Type %s", clip(v, 40))
		return b
	case 14:
		q.delHeader("Content-Type")
		q.note("no Content-Type")
		return b
	default:
		q.headers = append(q.headers, header{"Content-Type", "application/json"}, header{"Content-Type", "text/plain"})
		q.note("two Content-Types")
		return b
	}
}

// compress sends b (or a body far over the limit once decompressed) with a
// Content-Encoding.
func (f *fuzzer) compress(r *rand.Rand, q *fuzzReq, b []byte) []byte {
	if q.kinds[kindCompressedOversize] { // this Content-Encoding replaces the one of an earlier bomb
		delete(q.kinds, kindCompressedOversize)
		q.bomb = nil
	}
	enc := pickOf(r, "gzip", "deflate", "gzip, gzip", "br", "identity", "compress", "x-junk", "GZIP")
	plain, what := b, "the body"
	oversize := r.IntN(3) == 0
	if oversize {
		// A JSON string: a server that decoded it would call it invalid_json.
		plain = []byte(f.cached("bomb", func() string { return `"` + strings.Repeat("a", 8*fuzzBodyLimit) + `"` }))
		what = fmt.Sprintf("%d bytes once decompressed", len(plain))
	}
	var out []byte
	encode := func(k string, enc func([]byte) []byte) []byte {
		if !oversize {
			return enc(plain)
		}
		return []byte(f.cached(k, func() string { return string(enc(plain)) }))
	}
	switch enc {
	case "gzip", "GZIP":
		out = encode("gzip", gzipped)
	case "gzip, gzip":
		out = encode("gzip2", func(b []byte) []byte { return gzipped(gzipped(b)) })
	case "deflate":
		out = encode("deflate", func(b []byte) []byte {
			var buf bytes.Buffer
			w := zlib.NewWriter(&buf)
			w.Write(b) //nolint:errcheck // a bytes.Buffer
			w.Close()
			return buf.Bytes()
		})
	default:
		out, oversize = b, false
		what = "the body, not encoded"
	}
	q.setHeader("Content-Encoding", enc)
	q.note("Content-Encoding %s: %s (%d bytes sent)", enc, what, len(out))
	if oversize && q.method != "GET" { // (a GET's body is never read)
		q.kind(kindCompressedOversize)
		q.bomb = out
	}
	return out
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b) //nolint:errcheck // a bytes.Buffer
	w.Close()
	return buf.Bytes()
}

// mutateHeaders changes the headers.
func (f *fuzzer) mutateHeaders(r *rand.Rand, q *fuzzReq) {
	k := r.IntN(12)
	if k > 1 {
		q.kind(kindOther)
	}
	switch k {
	case 0, 1:
		type auth struct {
			value string
			valid bool
		}
		key := f.key
		v := pickOf(r, auth{"", false}, auth{"Bearer", false}, auth{"Bearer ", false}, auth{"bearer " + key, true},
			auth{"BEARER " + key, true}, auth{"Bearer  " + key, true}, auth{"Basic " + key, false}, auth{"Bearer " + key + " extra", false},
			auth{"Bearer svk_" + strings.Repeat("g", 48), false}, auth{"Bearer " + key[:len(key)-1], false},
			auth{"Bearer " + key + "0", false}, auth{"Bearer " + f.revoked, false}, auth{"Bearer " + f.unknownKey, false},
			auth{"Bearer " + strings.Repeat("a", 10_000), false}, auth{"Bearer " + strings.ToUpper(key), false},
			auth{"Bearer svk_ä" + strings.Repeat("0", 47), false}, auth{"Token " + key, false}, auth{"Bearer\t" + key, false},
			auth{"Bearer " + key[:12] + strings.Repeat("0", 48-8), false}, auth{"Bearer " + key + "\x01", false},
			auth{"Bearer sk_" + key[4:], false})
		q.delHeader("Authorization")
		switch r.IntN(4) {
		case 0:
			q.note("no Authorization")
			v.valid = false
		case 1:
			q.headers = append(q.headers, header{"Authorization", v.value}, header{"Authorization", "Bearer " + f.key})
			q.note("Authorization %s, then a valid one", clip(v.value, 40))
		default:
			q.headers = append(q.headers, header{"Authorization", v.value})
			q.note("Authorization %s", clip(v.value, 40))
		}
		if v.valid {
			q.kind(kindOther)
		} else {
			q.kind(kindAuthBad)
		}
		return
	case 2, 3:
		v := pickOf(r, "", strings.Repeat("k", 200), strings.Repeat("k", 201), " lead", "-dash", ".dot", "a b", "ключ",
			"a\x01b", "a\x7fb", "a\tb", strings.Repeat("k", 10_000), "fz-reused", fmt.Sprintf("fz-%d-%d", f.seed, r.IntN(50)),
			"a/b:c.d_e-f", "%00", "a;b", "*")
		q.setHeader("Idempotency-Key", v)
		if r.IntN(4) == 0 {
			q.headers = append(q.headers, header{"Idempotency-Key", "second-" + v})
			q.note("two Idempotency-Keys, the first %s", clip(v, 40))
		} else {
			q.note("Idempotency-Key %s", clip(v, 40))
		}
	case 4:
		v := pickOf(r, "", "2026-11-22 ", "2026-13-01", "9999-99-99", "latest", "1", strings.Repeat("2", 4000), "ä", "2026-11-22\x01",
			"2026-11-22, 2026-11-22", "v1")
		q.setHeader("Svc-Version", v)
		q.note("Svc-Version %s", clip(v, 40))
	case 5:
		v := pickOf(r, "", strings.Repeat("r", 128), strings.Repeat("r", 129), strings.Repeat("r", 10_000), "a b", "<script>",
			"é", "\x01", "../../etc/passwd", `"q"`, "id\r\nX-Injected: 1")
		q.setHeader("X-Request-Id", v)
		q.note("X-Request-Id %s", clip(v, 40))
	case 6:
		n := pickOf(r, 1000, 3000, 9000, 70_000)
		q.headers = append(q.headers, header{"X-Padding", strings.Repeat("p", n)})
		q.note("a header of %d bytes", n)
	case 7:
		n := pickOf(r, 20, 100, 1000)
		for j := range n {
			q.headers = append(q.headers, header{fmt.Sprintf("X-H%d", j), "v"})
		}
		q.note("%d more headers", n)
	case 8, 9, 10:
		h := pickOf(r, header{"X Bad", "1"}, header{"X-Ä", "1"}, header{"", "empty name"}, header{"X-Fold", "a\r\n continued"},
			header{"Expect", "100-continue"}, header{"Connection", "upgrade, junk"}, header{"Host", ""}, header{"Host", "a b"},
			header{"Content-Length", "abc"}, header{"Content-Length", "-1"}, header{"Accept", "text/html"},
			header{"Accept-Encoding", "gzip, br"}, header{"Cookie", "__session=junk"}, header{"Range", "bytes=0-1"},
			header{"X-Forwarded-For", "::1, junk"}, header{"Upgrade", "h2c"}, header{"Transfer-Encoding", "identity"})
		q.headers = append(q.headers, h)
		q.note("header %s: %s", clip(h.name, 20), clip(h.value, 40))
	default:
		v := pickOf(r, "", "*/*", "application/xml", "application/json;q=0", strings.Repeat("x/y,", 2000))
		q.setHeader("Accept", v)
		q.note("Accept %s", clip(v, 40))
	}
}

// mutateQuery changes the query string.
func (f *fuzzer) mutateQuery(r *rand.Rand, q *fuzzReq, query []string) []string {
	v := pickOf(r, "limit=-1", "limit=0", "limit=1001", "limit=1e3", "limit=99999999999999999999", "limit=1&limit=2",
		"cursor="+strings.Repeat("c", 10_000), "cursor=%00", "cursor=bogus", "cursor=", "event_type="+strings.Repeat("e,", 1000),
		"status=bogus", "status=completed", "updated_since=garbage", "updated_since=2026-11-22T06:41:50Z",
		"workspace_id="+f.ws2, "workspace_id=not-a-uuid", "workspace_id=", "workspace_id="+f.ws2+"&workspace_id="+f.f.Principal.WorkspaceID,
		"aggregate_type=task&aggregate_id="+f.ids["taskId"][0], "aggregate_type=task", "a=%zz", "a=%ff%fe", "&&&", "=", "%",
		"initiative_id=not-a-uuid", strings.Repeat("q=1&", 20_000), "workspace_id="+f.y.Principal.WorkspaceID)
	q.note("query %s", clip(v, 60))
	if v == "workspace_id="+f.y.Principal.WorkspaceID {
		q.kind(kindForeignWorkspace)
	} else {
		q.kind(kindOther)
	}
	return append(query, v)
}

// mutatePath changes the method, the path or its parameters: the request no longer
// targets its operation for certain.
func (f *fuzzer) mutatePath(r *rand.Rand, q *fuzzReq, op *docOperation, path string, params map[string]string) string {
	q.path = ""
	q.kind(kindOther)
	switch r.IntN(4) {
	case 0:
		m := pickOf(r, "FOO", "get", "PATCH", "PUT", "DELETE", "OPTIONS", "TRACE", "HEAD", "POST", "GET", "PROPFIND",
			strings.Repeat("M", 1000), "G\x00T", "CONNECT")
		q.method = m
		q.note("method %s", clip(m, 20))
		return path
	case 1:
		if len(op.PathParams) > 0 {
			p := op.PathParams[r.IntN(len(op.PathParams))].Name
			id := params[p]
			v := pickOf(r, "x", "1", "null", "..", ".", "%2e%2e", "%2F", "%00", id+"x", strings.ReplaceAll(id, "-", ""),
				"{"+id+"}", id+"%20", "%ff%fe", "%", "%zz", "*", id+";x", strings.Repeat("a", 10_000), "ü", id+"/", " "+id)
			filled := map[string]string{}
			for k, val := range params {
				filled[k] = val
			}
			filled[p] = v
			q.note("path parameter %s = %s", p, clip(v, 40))
			for _, mount := range op.Mounts {
				if strings.HasPrefix(path, strings.TrimSuffix(mount, "/")) {
					return strings.TrimSuffix(mount, "/") + op.pathOf(filled)
				}
			}
			return op.pathOf(filled)
		}
		fallthrough
	default:
		v := pickOf(r, path+"/", strings.Replace(path, "/", "//", 1), strings.ReplaceAll(path, "/", "//"), "/./"+strings.TrimPrefix(path, "/"),
			"/x/.."+path, path+"/..", path+"/%2e%2e/", strings.ToUpper(path), path+"/"+strings.Repeat("s", 9000),
			path+"/extra", "http://api.test"+path, "*", path+"#frag", path+"?", path+";p", path+"%20", strings.TrimSuffix(path, "/")+"/.",
			strings.Replace(path, "/", "/%2F", 1), "", "/"+strings.Repeat("a/", 2000), path+"\x00", path+" x")
		q.note("path %s", clip(v, 60))
		return v
	}
}

// randomRequest is a request to a path made of the document's words and junk.
func (f *fuzzer) randomRequest(r *rand.Rand, i uint64) *fuzzReq {
	words := []string{"api", "v1", "client", "work", "events", "stream", "verify", "verifications", "complete", "..", ".", "",
		"%2e", "openapi.json", "errors", "healthz", "readyz", "metrics", "bootstrap", "credential", "x", uuid.NewString(),
		f.ids["taskId"][0], f.foreign["taskId"][0], "%00", "ä"}
	var path string
	if r.IntN(2) == 0 {
		path = pickOf(r, f.requestTargets...)
	}
	for n := 1 + r.IntN(6); n > 0; n-- {
		path += "/" + pickOf(r, words...)
	}
	q := &fuzzReq{method: pickOf(r, "GET", "POST", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS"), target: path}
	q.note("a random path")
	if r.IntN(2) == 0 {
		q.headers = append(q.headers, header{"Authorization", "Bearer " + f.key})
	}
	if r.IntN(2) == 0 {
		q.body = []byte(`{"title":"random"}`)
		q.headers = append(q.headers, header{"Content-Type", "application/json"}, header{"Idempotency-Key", fmt.Sprintf("fz-%d-%d", f.seed, i)})
	}
	return q
}

// queryText writes an example value as a query parameter: an array as its elements (a
// repeatable parameter also takes them comma-separated), anything else as it prints.
func queryText(v any) string {
	if list, ok := v.([]any); ok {
		parts := make([]string, len(list))
		for i, x := range list {
			parts[i] = fmt.Sprint(x)
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}
