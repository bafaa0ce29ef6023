package api_test

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable/api"
)

// Helpers of the tests generated from the served OpenAPI document (the isolation matrix
// and the request fuzz run): the document's operations, example bodies made from their
// schemas, and what the database holds for a workspace.

// docOperation is one operation of the served document.
type docOperation struct {
	ID, Method, Path string
	// Mounts are the roots it is served under: /api/v1 and /api/client, or the root its
	// path item's own server names.
	Mounts      []string
	Public      bool
	Idempotency string // "", "optional" or "required"
	PathParams  []docParam
	QueryParams []docParam
	// Body is the schema of the JSON request body; nil when the operation takes none.
	Body      map[string]any
	Responses map[string]any
	// Failure is the reference of the operation's own failure body (x-failure-body: the
	// workload diagnosis's {error, ok, valid}); empty when it fails with the envelope.
	Failure string
}

type docParam struct {
	Name     string
	Required bool
	Schema   map[string]any
}

func (o docOperation) String() string { return o.ID + " (" + o.Method + " " + o.Path + ")" }

// alternateMedia are the media types the operation's 200 may also be answered in, chosen
// by Accept (a picture: Operation.Alternates), JSON and event streams aside.
func (o docOperation) alternateMedia() []string {
	resp, _ := o.Responses["200"].(map[string]any)
	content, _ := resp["content"].(map[string]any)
	if content["application/json"] == nil { // a Raw operation's own media type is its only one
		return nil
	}
	var out []string
	for media := range content {
		if media != "application/json" && media != "text/event-stream" {
			out = append(out, media)
		}
	}
	slices.Sort(out)
	return out
}

// answersEventStream reports whether the operation's 200 may be a live stream
// (text/event-stream).
func (o docOperation) answersEventStream() bool {
	ok, _ := o.Responses["200"].(map[string]any)
	content, _ := ok["content"].(map[string]any)
	_, has := content["text/event-stream"]
	return has
}

// documents reports whether the operation documents status.
func (o docOperation) documents(status int) bool {
	_, ok := o.Responses[strconv.Itoa(status)]
	return ok
}

// answersWith reports whether the operation documents status as one of its own answers,
// not as an error (the readiness probe's 503).
func (o docOperation) answersWith(status int) bool {
	resp, ok := o.Responses[strconv.Itoa(status)].(map[string]any)
	if !ok {
		return false
	}
	content, _ := resp["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	schema, _ := media["schema"].(map[string]any)
	ref, _ := schema["$ref"].(string)
	return status < 400 || ref != "#/components/schemas/Error" && ref != "#/components/schemas/Unauthorized" &&
		(o.Failure == "" || ref != o.Failure)
}

// answersIn reports whether the operation documents an answer of status in the media
// type of contentType other than JSON (a tile, a signed note: Raw operations).
func (o docOperation) answersIn(status int, contentType string) bool {
	return documentsMedia(o.Responses, status, contentType)
}

// documentsMedia reports whether responses (an operation's, in the document) give status
// an answer in the media type of contentType, JSON aside.
func documentsMedia(responses map[string]any, status int, contentType string) bool {
	media, _, err := mime.ParseMediaType(contentType)
	if err != nil || media == "application/json" {
		return false
	}
	resp, _ := responses[strconv.Itoa(status)].(map[string]any)
	content, _ := resp["content"].(map[string]any)
	for documented := range content {
		if m, _, err := mime.ParseMediaType(documented); err == nil && m == media {
			return true
		}
	}
	return false
}

// document is the served OpenAPI document.
type document struct {
	raw map[string]any
}

// fetchDocument reads the document the server serves at GET /api/v1/openapi.json.
func fetchDocument(t *testing.T, e *env) *document {
	t.Helper()
	r := e.do(request{method: "GET", path: "/openapi.json"})
	expect(t, r, http.StatusOK, "")
	if r.body == nil || r.body["paths"] == nil {
		t.Fatalf("openapi.json: %.200s", r.raw)
	}
	return &document{raw: r.body}
}

// resolve follows $ref (to the document's components) until it reaches a schema.
func (d *document) resolve(v any) map[string]any {
	m, _ := v.(map[string]any)
	for range 20 {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		var cur any = d.raw
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			next, _ := cur.(map[string]any)
			cur = next[part]
		}
		m, _ = cur.(map[string]any)
	}
	return m
}

// serverRoot returns the path of a server URL ("/" for the site root).
func serverRoot(t *testing.T, server any) string {
	t.Helper()
	s, _ := server.(map[string]any)
	u, err := url.Parse(fmt.Sprint(s["url"]))
	if err != nil {
		t.Fatalf("server %v: %v", server, err)
	}
	if u.Path == "" {
		return "/"
	}
	return u.Path
}

// operations lists the document's operations, by path and method.
func (d *document) operations(t *testing.T) []docOperation {
	t.Helper()
	var defaultMounts []string
	for _, s := range d.raw["servers"].([]any) {
		root := serverRoot(t, s)
		defaultMounts = append(defaultMounts, root)
		// The document's description: {site_url}/api/client/* serves the same operations.
		if root == api.V1Root {
			defaultMounts = append(defaultMounts, api.ClientRoot)
		}
	}
	var ops []docOperation
	for path, rawItem := range d.raw["paths"].(map[string]any) {
		item := rawItem.(map[string]any)
		mounts := defaultMounts
		if servers, ok := item["servers"].([]any); ok {
			mounts = nil
			for _, s := range servers {
				mounts = append(mounts, serverRoot(t, s))
			}
		}
		for method, rawOp := range item {
			if method == "servers" || method == "parameters" || method == "summary" || method == "description" {
				continue
			}
			o := rawOp.(map[string]any)
			op := docOperation{ID: fmt.Sprint(o["operationId"]), Method: strings.ToUpper(method), Path: path, Mounts: mounts}
			if sec, ok := o["security"].([]any); ok && len(sec) == 0 {
				op.Public = true
			}
			op.Responses, _ = o["responses"].(map[string]any)
			op.Failure, _ = o["x-failure-body"].(string)
			params, _ := o["parameters"].([]any)
			for _, rawParam := range params {
				p := d.resolve(rawParam)
				name, in := fmt.Sprint(p["name"]), fmt.Sprint(p["in"])
				required, _ := p["required"].(bool)
				schema, _ := p["schema"].(map[string]any)
				switch {
				case in == "header" && strings.EqualFold(name, "Idempotency-Key"):
					op.Idempotency = "optional"
					if required {
						op.Idempotency = "required"
					}
				case in == "path":
					op.PathParams = append(op.PathParams, docParam{Name: name, Required: true, Schema: schema})
				case in == "query":
					op.QueryParams = append(op.QueryParams, docParam{Name: name, Required: required, Schema: schema})
				}
			}
			if rb, ok := o["requestBody"].(map[string]any); ok {
				content, _ := rb["content"].(map[string]any)
				media, _ := content["application/json"].(map[string]any)
				op.Body = d.resolve(media["schema"])
				if op.Body == nil {
					t.Fatalf("%s: a request body that is not JSON", op)
				}
			}
			ops = append(ops, op)
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].Path != ops[j].Path {
			return ops[i].Path < ops[j].Path
		}
		return ops[i].Method < ops[j].Method
	})
	if len(ops) == 0 {
		t.Fatal("the document lists no operations")
	}
	return ops
}

// pathOf fills the operation's path template.
func (o docOperation) pathOf(params map[string]string) string {
	p := o.Path
	for k, v := range params {
		p = strings.ReplaceAll(p, "{"+k+"}", v)
	}
	return p
}

// takesWorkspaceInBody reports whether the body schema has the workspace_id member every
// body may carry (CONTRACT: it selects another of the caller's workspaces).
func (o docOperation) takesWorkspaceInBody() bool {
	if o.Body == nil {
		return false
	}
	props, _ := o.Body["properties"].(map[string]any)
	_, ok := props["workspace_id"]
	return ok
}

// example returns a value valid against schema: objects with their required members
// only, each the least value its rules allow. Patterns are not honoured (an operation
// whose body needs one has a line in the tests' body fixtures).
func (d *document) example(schema any) any {
	s := d.resolve(schema)
	if s == nil {
		return map[string]any{}
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if enum, ok := s["enum"].([]any); ok {
		for _, v := range enum {
			if v != nil {
				return v
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := s[k].([]any); ok {
			for _, alt := range alts {
				if a := d.resolve(alt); fmt.Sprint(a["type"]) != "null" {
					return d.example(a)
				}
			}
		}
	}
	typ := ""
	switch v := s["type"].(type) {
	case string:
		typ = v
	case []any:
		for _, x := range v {
			if x != "null" {
				typ = fmt.Sprint(x)
				break
			}
		}
	}
	num := func(k string) (float64, bool) { f, ok := s[k].(float64); return f, ok }
	switch typ {
	case "object", "":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, name := range req {
			out[fmt.Sprint(name)] = d.example(props[fmt.Sprint(name)])
		}
		return out
	case "array":
		n, _ := num("minItems")
		out := []any{}
		for range int(n) {
			out = append(out, d.example(s["items"]))
		}
		return out
	case "string":
		switch s["format"] {
		case "uuid":
			return uuid.Must(uuid.NewV7()).String()
		case "date-time":
			return time.Now().UTC().Format(time.RFC3339)
		case "date":
			return time.Now().UTC().Format(time.DateOnly)
		case "uri":
			return "https://example.com/resource"
		case "email":
			return "someone@example.com"
		}
		n, _ := num("minLength")
		return strings.Repeat("x", max(int(n), 1))
	case "integer", "number":
		if m, ok := num("minimum"); ok {
			return m
		}
		if m, ok := num("exclusiveMinimum"); ok {
			return m + 1
		}
		return 0
	case "boolean":
		return false
	}
	return nil
}

// workspaceTables lists the tables that lead their key with workspace_id.
func workspaceTables(t testing.TB, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT c.table_name::text FROM information_schema.columns c
		JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
		WHERE c.table_schema = current_schema() AND c.column_name = 'workspace_id' AND t.table_type = 'BASE TABLE'
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ledger_events", "ledger_heads", "idempotency_records", "outbox", "tasks"} {
		if !slices.Contains(tables, want) {
			t.Fatalf("no workspace_id in %s? tables with one: %v", want, tables)
		}
	}
	return tables
}

// workspaceState returns everything the database holds for workspace ws as text: the rows
// of every table with a workspace_id column, the workspace's own row and its members'
// users. api_keys.last_used_at is left out: using a key writes it (in batches); so are
// the tables of the workspace's transparency log, which the ledger sealer of an env
// writes in the background, whatever the test's requests do (the request fuzz run, in a
// quiet env, still counts their rows).
func workspaceState(t testing.TB, conn *pgx.Conn, tables []string, ws string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, table := range append([]string{"workspaces", "users"}, tables...) {
		if sealedInBackground[table] {
			continue
		}
		where := "x.workspace_id = $1"
		switch table {
		case "workspaces":
			where = "x.id = $1"
		case "users":
			where = "x.id IN (SELECT user_id FROM workspace_members WHERE workspace_id = $1)"
		}
		var rows string
		err := conn.QueryRow(ctx, `SELECT coalesce(jsonb_agg(r ORDER BY r::text), '[]')::text FROM
			(SELECT to_jsonb(x) - 'last_used_at' AS r FROM `+pgx.Identifier{table}.Sanitize()+` x WHERE `+where+`) s`,
			ws).Scan(&rows)
		if err != nil {
			t.Fatalf("state of %s: %v", table, err)
		}
		fmt.Fprintf(&b, "%s: %s\n", table, rows)
	}
	return b.String()
}

// sealedInBackground are the tables of the workspaces' transparency logs (store/ledgerlog.go).
var sealedInBackground = map[string]bool{"ledger_logs": true, "ledger_log_leaves": true, "ledger_log_hashes": true, "ledger_checkpoints": true}

// stateDiff names the tables whose rows differ between two workspace states.
func stateDiff(before, after string) string {
	if before == after {
		return ""
	}
	b, a := strings.Split(before, "\n"), strings.Split(after, "\n")
	var out []string
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			out = append(out, fmt.Sprintf("before %.1500s\nafter  %.1500s", b[i], a[i]))
		}
	}
	return strings.Join(out, "\n")
}
