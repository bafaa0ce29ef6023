package api_test

import (
	"context"
	"maps"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
)

// The isolation matrix, generated from the served OpenAPI document: for every operation it
// lists, on every mount, a caller of workspace B who uses the ids of workspace A gets
// exactly the answer an id never issued gets (status, headers, body bar requestId and
// timestamp), naming A's workspace is the 404 an unknown workspace is, B's own reads show
// nothing of A, A's Idempotency-Keys mean nothing to B, and none of it changes anything in
// A (or, for the refusals, in B). The owner's own request, body and all, then succeeds: the
// refusals came from scoping, not from validation.
//
// A new operation is covered by itself once the tables below know its path parameters;
// until then this test fails and says which line to add. Each area's test file gives its
// own lines (isolationCovers in an init of api/<area>_test.go, with the owner's fixture
// methods), so that a new area adds none here.

// isolationLines are an area's lines of the tables below, named as they are.
type isolationLines struct {
	fixtures             map[string]func(o *owner) string
	listedBy             map[string]string
	unownedLists         map[string]string
	keyOnlyOperations    map[string]string
	pathValues           map[string]string
	queryProbes          map[string][]string
	bodies               map[string]func(o *owner, ids map[string]string) map[string]any
	ownBodies            map[string]func(e *env, key string) map[string]any
	preparations         map[string]func(o *owner, ids map[string]string)
	publicOperations     map[string]string
	notOfferedOperations map[string]string
}

// isolationCovers adds an area's lines to the tables. A name two areas give a line in one
// table is a mistake (one of them would be lost): it panics when the tests start.
func isolationCovers(l isolationLines) {
	addLines("fixtures", fixtures, l.fixtures)
	addLines("listedBy", listedBy, l.listedBy)
	addLines("unownedLists", unownedLists, l.unownedLists)
	addLines("keyOnlyOperations", keyOnlyOperations, l.keyOnlyOperations)
	addLines("pathValues", pathValues, l.pathValues)
	addLines("queryProbes", queryProbes, l.queryProbes)
	addLines("bodies", bodies, l.bodies)
	addLines("ownBodies", ownBodies, l.ownBodies)
	addLines("preparations", preparations, l.preparations)
	addLines("publicOperations", publicOperations, l.publicOperations)
	addLines("notOfferedOperations", notOfferedOperations, l.notOfferedOperations)
}

func addLines[V any](table string, to, lines map[string]V) {
	for name, line := range lines {
		if _, twice := to[name]; twice {
			panic("isolation matrix: two areas give " + table + " a line for " + name)
		}
		to[name] = line
	}
}

// fixtures make, in the owner's workspace, the resource a path parameter (or a query
// probe's placeholder) of that name refers to, and return its id.
var fixtures = map[string]func(o *owner) string{}

// listedBy name, for each list (a workspace's own read whose data is an array), the
// fixture of a resource it shows: the matrix makes one in the owner's workspace and holds
// the owner's own list to showing it, so that B's lists showing nothing of A is not
// vacuous. A new list fails the matrix until it has a line in listedBy or in unownedLists.
var listedBy = map[string]string{}

// unownedLists are lists with no resource of the owner's to look for, each with why.
var unownedLists = map[string]string{}

// listsData reports whether the operation's 200 answers data as an array.
func (d *document) listsData(op docOperation) bool {
	ok, _ := op.Responses["200"].(map[string]any)
	content, _ := ok["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	props, _ := d.resolve(media["schema"])["properties"].(map[string]any)
	switch typ := d.resolve(props["data"])["type"].(type) {
	case string:
		return typ == "array"
	case []any:
		return slices.Contains(typ, any("array"))
	}
	return false
}

// keyOnlyOperations describe the API key of the request: with another credential (an
// OAuth access token) B's own request is 404.
var keyOnlyOperations = map[string]string{}

// pathValues are path parameters that name no resource of a workspace (every workspace
// has its engineering controller): the matrix sends them as they are, and treats their
// operations as a workspace's own (B's answers must show nothing of A).
var pathValues = map[string]string{}

// resourceKey names the resource a path parameter refers to: its name, but for the
// parameters whose name means another resource under some paths (the specification's
// runId of a discovery run).
func resourceKey(path, name string) string {
	if name == "runId" && strings.HasPrefix(path, "/discovery-runs/") {
		return "discoveryRunId"
	}
	return name
}

// fixtureFor is the fixture of a path parameter of path.
func fixtureFor(path, name string) (func(o *owner) string, bool) {
	fx, ok := fixtures[resourceKey(path, name)]
	return fx, ok
}

// queryProbes are queries naming the owner's resources, per operation: {name} is replaced
// by the owner's id made by fixtures[name], or by a never-issued id of the same shape.
// Every query parameter named *_id (but workspace_id) must appear in a probe.
var queryProbes = map[string][]string{}

// bodies make a valid body where the schema alone cannot (rules across members, values that
// must match the resource) or where a fuller one says more. Other operations get the
// example of their body schema (required members only).
var bodies = map[string]func(o *owner, ids map[string]string) map[string]any{}

// ownBodies make B's own request for an operation whose body names a resource (the
// owner's body names the owner's, which B is refused).
var ownBodies = map[string]func(e *env, key string) map[string]any{}

// preparations put the owner's resources in the state an operation needs (after the
// fixtures made them), so that the owner's own request succeeds.
var preparations = map[string]func(o *owner, ids map[string]string){}

// publicOperations are account-free, so there is no workspace to scope; each is still
// called with and without B's credential, and must show nothing of the owner's workspace.
var publicOperations = map[string]string{}

// notOfferedOperations are declared but not offered (Operation.NotOffered): everyone's
// request is refused alike, so instead of the owner's success the matrix checks that the
// owner's answer is B's own, after B was scoped as with any operation (naming A's
// workspace is the 404 of an unknown one) and shown nothing of A.
var notOfferedOperations = map[string]string{}

// owner is workspace A and the resources the matrix makes in it.
type owner struct {
	t      *testing.T
	e      *env
	tenant storetest.Tenant
	conn   *pgx.Conn
	marker string // in the owner's titles: B must never see it
}

// secrets are strings that identify the owner's workspace and everything in it: B's
// answers must contain none of them.
func (o *owner) secrets() []string {
	o.t.Helper()
	p := o.tenant.Principal
	out := []string{p.WorkspaceID, p.UserID, p.UserEmail, p.KeyPrefix, o.marker}
	// A controller's aggregate id is its domain, the same in every workspace: not a secret.
	rows, err := o.conn.Query(context.Background(), `SELECT id::text, CASE WHEN aggregate_type = 'controller' THEN '' ELSE aggregate_id END, event_hash
		FROM ledger_events WHERE workspace_id = $1
		UNION SELECT id::text, id::text, id::text FROM api_keys WHERE workspace_id = $1`, p.WorkspaceID)
	if err != nil {
		o.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, agg, hash string
		if err := rows.Scan(&id, &agg, &hash); err != nil {
			o.t.Fatal(err)
		}
		out = append(out, id, agg, hash)
	}
	if err := rows.Err(); err != nil {
		o.t.Fatal(err)
	}
	return out
}

// leak returns the first secret that r shows, in its body or its headers.
func leak(r response, secrets []string) string {
	var h strings.Builder
	for k, vs := range r.header {
		h.WriteString(k + ": " + strings.Join(vs, ",") + "\n")
	}
	text := strings.ToLower(string(r.raw) + "\n" + h.String())
	for _, s := range secrets {
		if s != "" && strings.Contains(text, strings.ToLower(s)) {
			return s
		}
	}
	return ""
}

// sameResponse returns "" when two responses are the same: status, body bar
// error.requestId and error.timestamp, and headers bar Date and X-Request-Id.
func sameResponse(a, b response) string {
	if a.status != b.status {
		return "status " + strconv.Itoa(a.status) + " vs " + strconv.Itoa(b.status) + ":\n" + string(a.raw) + "\n" + string(b.raw)
	}
	strip := func(r response) string {
		if r.rawBody == nil { // an answer in another media type (a tile): its bytes
			return string(r.raw)
		}
		v := r.rawBody
		if m, ok := v.(map[string]any); ok {
			m = maps.Clone(m)
			if e, ok := m["error"].(map[string]any); ok {
				e = maps.Clone(e)
				delete(e, "requestId")
				delete(e, "timestamp")
				m["error"] = e
			}
			v = m
		}
		return toJSON(v)
	}
	if sa, sb := strip(a), strip(b); sa != sb {
		return "bodies differ:\n" + sa + "\n" + sb
	}
	headers := func(r response) string {
		h := r.header.Clone()
		h.Del("Date")
		h.Del("X-Request-Id")
		return toJSON(h)
	}
	if ha, hb := headers(a), headers(b); ha != hb {
		return "headers differ:\n" + ha + "\n" + hb
	}
	return ""
}

// sameShape returns an id never issued, of the shape of id.
func sameShape(id string) string {
	if accountable.ValidUUID(id) {
		return uuid.Must(uuid.NewV7()).String()
	}
	out := []byte(id)
	for i, c := range out {
		switch {
		case c >= '0' && c <= '9':
			out[i] = byte('0' + rand.IntN(10))
		case c >= 'a' && c <= 'f':
			out[i] = byte('a' + rand.IntN(6))
		case c >= 'A' && c <= 'F':
			out[i] = byte('A' + rand.IntN(6))
		}
	}
	if string(out) == id {
		return id + "0"
	}
	return string(out)
}

var placeholder = regexp.MustCompile(`\{(\w+)\}`)

// fill replaces the {name} placeholders of s with ids.
func fill(s string, ids map[string]string) string {
	return placeholder.ReplaceAllStringFunc(s, func(m string) string { return ids[m[1:len(m)-1]] })
}

// The intruder calls with an API key, and again with an OAuth access token of every
// scope (the MCP clients' credential): both are scoped alike.
func TestIsolationMatrix(t *testing.T) {
	for _, credential := range []string{"key", "token"} {
		t.Run(credential, func(t *testing.T) {
			// The two runs share nothing (each has its own env, database and tenants), and
			// each mostly waits for round trips: together they take the time of the longer.
			t.Parallel()
			e := newQuietEnv(t)
			doc := fetchDocument(t, e)
			conn := storetest.Conn(t)
			tables := workspaceTables(t, conn)
			a := storetest.NewTenant(t, e.db)
			b := storetest.NewTenant(t, e.db)
			if credential == "token" {
				b = newPerson(t, e)
				b.Key = mintAccessToken(t, e, b, strings.Join(accountable.ResourceScopes, " "))
			}
			m := &matrix{e: e, doc: doc, conn: conn, tables: tables, a: a, b: b}
			for _, op := range doc.operations(t) {
				if credential == "token" && len(op.Mounts) > 1 {
					op.Mounts = op.Mounts[:1] // the mounts are the key run's subject; this run's is the credential
				}
				t.Run(op.ID, func(t *testing.T) { m.check(t, op) })
			}
		})
	}
}

type matrix struct {
	e      *env
	doc    *document
	conn   *pgx.Conn
	tables []string
	a, b   storetest.Tenant
}

// call sends op as key, on mount, with the path filled from ids.
func (m *matrix) call(e *env, op docOperation, mount, key string, ids map[string]string, query string, body map[string]any, idemKey string) response {
	req := request{method: op.Method, path: op.Path, params: ids, query: query, key: key, root: mount, headers: map[string]string{}}
	if body != nil {
		req.body = body
	}
	if op.Idempotency != "" {
		if idemKey == "" {
			idemKey = uniqueKey("iso")
		}
		req.headers["Idempotency-Key"] = idemKey
	}
	return e.do(req)
}

func (m *matrix) state(t *testing.T, e *env, tenant storetest.Tenant) string {
	t.Helper()
	s := workspaceState(t, m.conn, m.tables, tenant.Principal.WorkspaceID)
	r := e.do(request{method: "GET", path: "/events/verify", key: tenant.Key})
	expect(t, r, http.StatusOK, "")
	return s + "verify: " + toJSON(r.data()) + "\n"
}

func (m *matrix) check(t *testing.T, op docOperation) {
	e := m.e.as(t)
	if op.Public {
		reason, ok := publicOperations[op.ID]
		if !ok {
			t.Fatalf("%s is account-free: add a line to publicOperations in the isolationLines of its area's test file (api/<area>_test.go) saying why it needs no workspace scoping", op)
		}
		t.Logf("account-free (%s): checked only that it shows nothing of another workspace", reason)
		o := &owner{t: t, e: e, tenant: m.a, conn: m.conn, marker: "owner-" + uuid.NewString()}
		o.task()
		secrets := o.secrets()
		for _, mount := range op.Mounts {
			for _, key := range []string{"", m.b.Key} {
				r := m.call(e, op, mount, key, nil, "", m.bodyFor(t, op, o, nil), "")
				if !op.answersWith(r.status) {
					t.Fatalf("%s on %s: %d %s", op, mount, r.status, r.raw)
				}
				if s := leak(r, secrets); s != "" {
					t.Fatalf("%s on %s shows %q of another workspace: %.500s", op, mount, s, r.raw)
				}
			}
		}
		return
	}

	o := &owner{t: t, e: e, tenant: m.a, conn: m.conn, marker: "owner-" + uuid.NewString()}
	ids := map[string]string{}
	resourceParams := 0
	for _, p := range op.PathParams {
		if v, ok := pathValues[p.Name]; ok {
			ids[p.Name] = v
			continue
		}
		resourceParams++
		fx, ok := fixtureFor(op.Path, p.Name)
		if !ok {
			t.Fatalf("%s: no fixture for the path parameter %q. Add a line to fixtures in the isolationLines of its area's test file (api/<area>_test.go): "+
				"%q: a func(*owner) string that makes one in the owner's workspace and returns its id.", op, p.Name, p.Name)
		}
		ids[p.Name] = fx(o)
	}
	if prepare, ok := preparations[op.ID]; ok {
		prepare(o, ids)
	}
	probes := queryProbes[op.ID]
	// An operation with a required query parameter is always sent with one: its own
	// requests are its probes, the first of which the owner sends.
	ownQueries := append([]string{""}, probes...)
	if slices.ContainsFunc(op.QueryParams, func(q docParam) bool { return q.Required }) {
		if len(probes) == 0 {
			t.Fatalf("%s has a required query parameter: add a line to queryProbes in the isolationLines of its area's test file (api/<area>_test.go) whose first probe gives it", op)
		}
		ownQueries = probes
	}
	for _, q := range op.QueryParams {
		if !strings.HasSuffix(q.Name, "_id") || q.Name == "workspace_id" {
			continue
		}
		if !slices.ContainsFunc(probes, func(p string) bool { return strings.Contains(p, q.Name+"=") }) {
			t.Fatalf("%s: the query parameter %q names a resource. Add a line to queryProbes in the isolationLines of its area's test file (api/<area>_test.go): "+
				"%q: {\"%s={someId}\"}, with a fixture for someId.", op, q.Name, op.ID, q.Name)
		}
	}
	for _, p := range probes {
		for _, name := range placeholder.FindAllStringSubmatch(p, -1) {
			if _, done := ids[name[1]]; done {
				continue
			}
			fx, ok := fixtures[name[1]]
			if !ok {
				t.Fatalf("%s: query probe %q: no fixture %q in any area's isolationLines (api/<area>_test.go)", op, p, name[1])
			}
			ids[name[1]] = fx(o)
		}
	}
	// A list shows the owner's resource to the owner (checked below), and nothing of it to B.
	listed := ""
	name, named := listedBy[op.ID]
	_, unowned := unownedLists[op.ID]
	switch isList := resourceParams == 0 && op.Method == http.MethodGet && m.doc.listsData(op); {
	case isList && !named && !unowned:
		t.Fatalf("%s answers a list: add a line to listedBy in the isolationLines of its area's test file (api/<area>_test.go) naming the fixture of a resource it lists "+
			"(or to unownedLists saying why there is none)", op)
	case !isList && named:
		t.Fatalf("%s is in listedBy, but its data is not an array (a list's data is the array: docs/api.md, Lists)", op)
	case named && fixtures[name] == nil:
		t.Fatalf("%s: listedBy names the fixture %q, which no area's isolationLines give: add a line to fixtures "+
			"in the isolationLines of its area's test file (api/<area>_test.go)", op, name)
	case named:
		listed = fixtures[name](o)
	}
	unknown := map[string]string{}
	for k, v := range ids {
		unknown[k] = sameShape(v)
		if _, fixed := pathValues[k]; fixed {
			unknown[k] = v
		}
	}
	body := m.bodyFor(t, op, o, ids)
	secrets := append(o.secrets(), listed)
	otherWorkspace := uuid.Must(uuid.NewV7()).String()
	beforeA, beforeB := m.state(t, e, m.a), m.state(t, e, m.b)
	// Every call of B is followed by a look at A's state (and, for a refusal, at B's).
	call := func(what string, refusal bool, mount string, ids map[string]string, query string, body map[string]any, key string) response {
		t.Helper()
		r := m.call(e, op, mount, m.b.Key, ids, query, body, key)
		if d := stateDiff(beforeA, m.state(t, e, m.a)); d != "" {
			t.Fatalf("%s: %s (answered %d) changed the owner's workspace:\n%s", op, what, r.status, d)
		}
		if d := stateDiff(beforeB, m.state(t, e, m.b)); refusal && d != "" {
			t.Fatalf("%s: %s (refused with %d) changed the caller's own workspace:\n%s", op, what, r.status, d)
		}
		return r
	}

	// Refusals: B with A's ids, B naming A's workspace. Each is the very answer of an
	// unknown id or workspace, shows nothing of A, and writes nothing anywhere.
	same := func(what string, status int, code string, mount string, ids, unknownIDs map[string]string, query, unknownQuery string, body, unknownBody map[string]any) {
		t.Helper()
		got := call(what, true, mount, ids, query, body, "")
		want := call(what+" (the unknown one)", true, mount, unknownIDs, unknownQuery, unknownBody, "")
		if status != 0 && (got.status != status || got.errorCode() != code) {
			t.Fatalf("%s: %s on %s: got %d %s, want %d %s: %s", op, what, mount, got.status, got.errorCode(), status, code, got.raw)
		}
		if d := sameResponse(got, want); d != "" {
			t.Fatalf("%s: %s on %s differs from the answer to an unknown one: %s", op, what, mount, d)
		}
		if s := leak(got, secrets); s != "" {
			t.Fatalf("%s: %s on %s shows %q of the owner: %s", op, what, mount, s, got.raw)
		}
	}
	upper := func(ids map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range ids {
			out[k] = strings.ToUpper(v)
		}
		return out
	}
	withWorkspace := func(id string) map[string]any {
		c := maps.Clone(body)
		if c == nil {
			c = map[string]any{}
		}
		c["workspace_id"] = id
		return c
	}
	for _, mount := range op.Mounts {
		if resourceParams > 0 {
			same("B with A's ids", http.StatusNotFound, accountable.ECodeNotFound, mount, ids, unknown, "", "", body, body)
			same("B with A's ids upper-cased", http.StatusNotFound, accountable.ECodeNotFound, mount, upper(ids), upper(unknown), "", "", body, body)
		}
		for _, p := range probes {
			// The answer is B's own (a list, a verification of nothing): the same either way.
			same("B with the query "+p, 0, "", mount, ids, unknown, fill(p, ids), fill(p, unknown), body, body)
		}
		for _, ws := range []func(string) string{func(s string) string { return s }, strings.ToUpper} {
			a, other := ws(m.a.Principal.WorkspaceID), ws(otherWorkspace)
			same("B with ?workspace_id=A", http.StatusNotFound, accountable.ECodeNotFound, mount, ids, ids,
				"workspace_id="+a, "workspace_id="+other, body, body)
			if op.takesWorkspaceInBody() {
				same("B with a body naming workspace A", http.StatusNotFound, accountable.ECodeNotFound, mount, ids, ids,
					"", "", withWorkspace(a), withWorkspace(other))
			}
		}
	}

	// An operation that also answers in another media type (a picture: Operation.
	// Alternates) refuses B's request for it with A's ids as it refuses an unknown id, with
	// the JSON 404 whatever B accepts; B's own answer in it shows nothing of A.
	for _, media := range op.alternateMedia() {
		for _, mount := range op.Mounts {
			accepting := func(ids map[string]string) response {
				t.Helper()
				return e.do(request{method: op.Method, path: op.Path, params: ids, key: m.b.Key, root: mount, headers: map[string]string{"Accept": media}})
			}
			got := accepting(ids)
			if resourceParams > 0 {
				if got.status != http.StatusNotFound || got.errorCode() != accountable.ECodeNotFound {
					t.Fatalf("%s: B with A's ids accepting %s on %s: %d %s", op, media, mount, got.status, got.raw)
				}
				if d := sameResponse(got, accepting(unknown)); d != "" {
					t.Fatalf("%s: B with A's ids accepting %s on %s differs from the answer to an unknown one: %s", op, media, mount, d)
				}
			} else if got.status != http.StatusOK {
				t.Fatalf("%s: B's own request accepting %s on %s: %d %s", op, media, mount, got.status, got.raw)
			}
			if s := leak(got, secrets); s != "" {
				t.Fatalf("%s: B accepting %s on %s is shown %q of the owner: %.500s", op, media, mount, s, got.raw)
			}
		}
		t.Logf("also answers %s: B's requests for it checked", media)
	}

	// B's own calls (lists, streams, reads of everything, creates): nothing of A.
	if resourceParams == 0 {
		for _, mount := range op.Mounts {
			for _, p := range ownQueries {
				own := body
				if f, ok := ownBodies[op.ID]; ok {
					own = f(e, m.b.Key)
				}
				r := call("B's own request "+p, false, mount, ids, fill(p, ids), own, "")
				if reason, ok := keyOnlyOperations[op.ID]; ok && strings.HasPrefix(m.b.Key, accountable.AccessTokenPrefix) {
					expect(t, r, http.StatusNotFound, accountable.ECodeNotFound) // reason
					t.Logf("with an access token: 404 (%s)", reason)
					continue
				}
				if _, ok := notOfferedOperations[op.ID]; ok {
					expect(t, r, http.StatusNotImplemented, accountable.ECodeNotOffered)
				} else if r.status >= 300 {
					t.Fatalf("%s: B's own request %s on %s: %d %s", op, p, mount, r.status, r.raw)
				}
				if _, isArray := r.body["data"].([]any); listed != "" && !isArray {
					t.Fatalf("%s: B's own list %s on %s: data is not an array: %s", op, p, mount, r.raw)
				}
				if s := leak(r, secrets); s != "" {
					t.Fatalf("%s: B's own request %s on %s shows %q of the owner: %s", op, p, mount, s, r.raw)
				}
			}
		}
	}

	// The owner's own request succeeds: the refusals above came from scoping.
	key := uniqueKey("owner-op")
	r := m.call(e, op, op.Mounts[0], m.a.Key, ids, fill(ownQueries[0], ids), body, key)
	if reason, ok := notOfferedOperations[op.ID]; ok {
		expect(t, r, http.StatusNotImplemented, accountable.ECodeNotOffered)
		if d := sameResponse(r, call("B's own request, as the owner's", false, op.Mounts[0], ids, "", body, "")); d != "" {
			t.Fatalf("%s: the owner's refusal differs from B's: %s", op, d)
		}
		t.Logf("not offered (%s): the owner is refused as B is", reason)
		return
	}
	if r.status < 200 || r.status >= 300 {
		t.Fatalf("%s: the owner's own request is refused (%d), so B's refusals prove nothing; "+
			"give it a valid body in bodies in the isolationLines of its area's test file (api/<area>_test.go): %s", op, r.status, r.raw)
	}
	if _, isArray := r.body["data"].([]any); listed != "" && (!isArray || !strings.Contains(string(r.raw), listed)) {
		t.Fatalf("%s: the owner's own list does not show the owner's %s %s, so B's lists showing none prove nothing: %.1000s",
			op, listedBy[op.ID], listed, r.raw)
	}
	for _, p := range probes {
		if r := m.call(e, op, op.Mounts[0], m.a.Key, ids, fill(p, ids), body, ""); r.status >= 300 {
			t.Fatalf("%s: the owner's query %q is refused: %d %s", op, p, r.status, r.raw)
		}
	}

	// The owner's Idempotency-Key is the owner's: B sending it, with the owner's very
	// request, gets what B gets with a key of its own, and the owner's record is untouched.
	if op.Idempotency != "" {
		secrets = o.secrets()
		beforeA, beforeB = m.state(t, e, m.a), m.state(t, e, m.b)
		what := "B with the owner's request and Idempotency-Key"
		got := call(what, resourceParams > 0, op.Mounts[0], ids, "", body, key)
		if resourceParams > 0 {
			if d := sameResponse(got, call(what+" (an unknown id)", true, op.Mounts[0], unknown, "", body, "")); d != "" || got.status != http.StatusNotFound {
				t.Fatalf("%s: %s: %d, or not the answer to an unknown id: %s %s", op, what, got.status, d, got.raw)
			}
		} else if _, namesOwners := ownBodies[op.ID]; namesOwners {
			// The owner's body names the owner's resources: B is refused them, with the
			// owner's key as with a key of its own.
			if d := sameResponse(got, call(what+" (B's own key)", true, op.Mounts[0], ids, "", body, "")); d != "" {
				t.Fatalf("%s: %s differs from B's answer with a key of its own: %s", op, what, d)
			}
		} else if got.status != r.status || got.meta()["duplicate"] == true {
			t.Fatalf("%s: %s: %d (want a first request's %d) %s", op, what, got.status, r.status, got.raw)
		}
		if s := leak(got, secrets); s != "" {
			t.Fatalf("%s: %s sees %q of the owner: %s", op, what, s, got.raw)
		}
	}
}

// bodyFor returns the body op is sent with: its line in bodies, or the example of its
// schema; nil when it takes none.
func (m *matrix) bodyFor(t *testing.T, op docOperation, o *owner, ids map[string]string) map[string]any {
	t.Helper()
	if op.Body == nil {
		return nil
	}
	if f, ok := bodies[op.ID]; ok {
		return f(o, ids)
	}
	ex, ok := m.doc.example(op.Body).(map[string]any)
	if !ok {
		t.Fatalf("%s: the body schema is not an object; add a line to bodies in the isolationLines of its area's test file (api/<area>_test.go)", op)
	}
	return ex
}
