package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store/storetest"
)

// bearerTransport sends every request with an API key, as a headless agent configured
// with one does.
type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects an MCP client (the Go SDK's) to e's /mcp with key, speaking
// protocolVersion ("": the SDK's newest).
func mcpSession(t *testing.T, e *env, key, protocolVersion string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1.0.0"}, nil)
	transport := &mcp.StreamableClientTransport{Endpoint: e.base + api.MCPPath,
		HTTPClient: &http.Client{Transport: bearerTransport{key}, Timeout: 30 * time.Second}}
	session, err := client.Connect(t.Context(), transport, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { session.Close() })
	return session
}

// mcpCall calls a tool; a protocol error fails the test, a tool error is the result's.
func mcpCall(t *testing.T, session *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// mcpAnswer is the structured content of a successful call, checked against the tool's
// output schema and its text content.
func mcpAnswer(t *testing.T, res *mcp.CallToolResult, output *jsonschema.Schema) map[string]any {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", mcpText(t, res))
	}
	out, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("structured content %T", res.StructuredContent)
	}
	var text map[string]any
	if err := json.Unmarshal([]byte(mcpText(t, res)), &text); err != nil || toJSON(text) != toJSON(out) {
		t.Fatalf("the text content is not the structured content: %v\n%s", err, mcpText(t, res))
	}
	if output != nil {
		raw, _ := json.Marshal(out)
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if err := output.Validate(v); err != nil {
			t.Fatalf("the answer does not match the output schema: %v\n%s", err, raw)
		}
	}
	return out
}

// mcpText is the one text content of a result.
func mcpText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("%d contents", len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T", res.Content[0])
	}
	return text.Text
}

// mcpRefusal is the error body of a tool error, as a response with status (a tool error
// has none of its own) for comparing it with REST's.
func mcpRefusal(t *testing.T, res *mcp.CallToolResult, status int) response {
	t.Helper()
	if !res.IsError || res.StructuredContent != nil {
		t.Fatalf("not a tool error: %v %v", res.IsError, res.StructuredContent)
	}
	r := response{status: status, raw: []byte(mcpText(t, res))}
	if err := json.Unmarshal(r.raw, &r.body); err != nil {
		t.Fatalf("the error is not JSON: %s", r.raw)
	}
	return r
}

// compileSchema compiles a tool's schema as JSON Schema 2020-12.
func compileSchema(t *testing.T, name string, schema any) *jsonschema.Schema {
	t.Helper()
	raw, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	url := "https://accountable.invalid/mcp/" + name + ".json"
	if err := c.AddResource(url, v); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, raw)
	}
	return s
}

// The tools' hints, as mcp.go declares them: read-only, destructive (writes only),
// idempotent.
var wantMCPTools = map[string]struct{ readOnly, destructive, idempotent bool }{
	"create_work": {false, false, true}, "get_work": {true, false, true}, "list_work": {true, false, true},
	"complete_work": {false, false, true}, "page_events": {true, false, true},
	"propose_initiative": {false, false, false}, "commit_initiative": {false, false, false},
	"launch_initiative": {false, false, false}, "get_launch": {true, false, true}, "finalize_run": {false, true, true},
	"approve_decision": {false, true, true}, "decline_decision": {false, true, true},
	"create_handoff": {false, false, false}, "claim_handoff": {false, false, true}, "fulfill_handoff": {false, true, true},
	"start_discovery_run": {false, false, false}, "propose_discovered_process": {false, false, true},
	"reconcile_controller": {false, false, true}, "diagnose_workload": {true, false, true},
	"validate_receipt": {true, false, true}, "import_receipt": {false, false, true},
	"prepare_context": {true, false, true},
}

// MCP tools are the REST operations: a headless agent with an API key initializes, lists
// the tools (their schemas from the API description, without the workspace), creates and
// completes work; REST shows the result and the ledger the agent acting for the key's
// user; refusals are REST's error bodies as tool errors.
func TestMCPToolsAreTheRESTOperations(t *testing.T) {
	e := newEnv(t, nil, withSiteURLOfListener)
	tenant := storetest.NewTenant(t, e.db)
	other := storetest.NewTenant(t, e.db)
	session := mcpSession(t, e, tenant.Key, "2025-11-25")

	init := session.InitializeResult()
	if init.ProtocolVersion != "2025-11-25" || init.ServerInfo.Name != "accountable" || !strings.Contains(init.Instructions, "ledger") ||
		init.Capabilities.Tools == nil {
		t.Fatalf("initialize: %+v", init)
	}

	list, err := session.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]*jsonschema.Schema{}
	for _, tool := range list.Tools {
		want, ok := wantMCPTools[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %s", tool.Name)
			continue
		}
		a := tool.Annotations
		if a == nil || a.ReadOnlyHint != want.readOnly || a.IdempotentHint != want.idempotent || a.OpenWorldHint == nil || *a.OpenWorldHint ||
			(want.readOnly && a.DestructiveHint != nil) || (!want.readOnly && (a.DestructiveHint == nil || *a.DestructiveHint != want.destructive)) {
			t.Errorf("%s: annotations %+v, want %+v", tool.Name, a, want)
		}
		if tool.Title == "" || !strings.Contains(tool.Description, "REST: ") || !strings.Contains(tool.Description, "scope") {
			t.Errorf("%s: title %q, description %q", tool.Name, tool.Title, tool.Description)
		}
		in, _ := tool.InputSchema.(map[string]any)
		props, _ := in["properties"].(map[string]any)
		if in["type"] != "object" || props == nil {
			t.Errorf("%s: input schema %v", tool.Name, in)
		}
		for _, unscoped := range []string{"workspace_id", "user_id"} {
			if _, ok := props[unscoped]; ok || strings.Contains(toJSON(in["required"]), unscoped) {
				t.Errorf("%s takes %s", tool.Name, unscoped)
			}
		}
		compileSchema(t, tool.Name+"-input", in)
		if tool.OutputSchema != nil {
			outputs[tool.Name] = compileSchema(t, tool.Name+"-output", tool.OutputSchema)
		}
	}
	if len(list.Tools) != len(wantMCPTools) {
		t.Fatalf("%d tools, want %d", len(list.Tools), len(wantMCPTools))
	}
	// Where the operation takes them: path parameters, the required idempotency key, the
	// body's required members, and the whole receipt document.
	inputs := map[string]map[string]any{}
	for _, tool := range list.Tools {
		inputs[tool.Name] = tool.InputSchema.(map[string]any)
	}
	for name, want := range map[string][]string{"create_work": {"idempotency_key", "title"}, "complete_work": {"taskId"},
		"propose_discovered_process": {"idempotency_key", "process_candidate_id", "runId"}, "validate_receipt": {"receipt"},
		"import_receipt": {"receipt"}, "page_events": nil} {
		if got := toJSON(inputs[name]["required"]); got != toJSON(want) {
			t.Errorf("%s requires %s, want %v", name, got, want)
		}
	}
	for _, dropped := range []string{"transport", "stream_ms", "poll_ms", "after"} {
		if _, ok := inputs["page_events"]["properties"].(map[string]any)[dropped]; ok {
			t.Errorf("page_events takes %s", dropped)
		}
	}
	for _, name := range []string{"create_work", "get_work", "complete_work", "page_events", "diagnose_workload"} {
		if outputs[name] == nil {
			t.Errorf("%s has no output schema", name)
		}
	}

	// Create, twice with one key: one task, the second answer a replay.
	create := map[string]any{"title": "Written by a model", "priority": "high", "idempotency_key": "mcp-create-1"}
	created := mcpAnswer(t, mcpCall(t, session, "create_work", create), outputs["create_work"])
	replay := mcpAnswer(t, mcpCall(t, session, "create_work", create), outputs["create_work"])
	taskID, _ := created["data"].(map[string]any)["taskId"].(string)
	if taskID == "" || replay["data"].(map[string]any)["taskId"] != taskID || created["meta"].(map[string]any)["duplicate"] != false ||
		replay["meta"].(map[string]any)["duplicate"] != true || created["meta"].(map[string]any)["workspaceId"] != tenant.Principal.WorkspaceID {
		t.Fatalf("create %v\nreplay %v", created, replay)
	}
	if r := e.do(request{method: "GET", path: "/work", key: tenant.Key}); len(r.dataList()) != 1 {
		t.Fatalf("%d tasks after the replay: %s", len(r.dataList()), r.raw)
	}

	// The workspace is the credential's: a workspace_id argument is not sent.
	listed := mcpAnswer(t, mcpCall(t, session, "list_work", map[string]any{"workspace_id": other.Principal.WorkspaceID, "limit": 10}),
		outputs["list_work"])
	if listed["meta"].(map[string]any)["workspaceId"] != tenant.Principal.WorkspaceID || len(listed["data"].([]any)) != 1 {
		t.Fatalf("list_work with another workspace_id: %v", listed)
	}

	// Complete it with the version get_work reads.
	read := mcpAnswer(t, mcpCall(t, session, "get_work", map[string]any{"taskId": taskID}), outputs["get_work"])
	token := read["data"].(map[string]any)["concurrency"].(map[string]any)["version_token"]
	done := mcpAnswer(t, mcpCall(t, session, "complete_work", map[string]any{"taskId": taskID, "version_token": token,
		"summary": "Shipped over MCP", "measured_duration_hours": 0.5, "idempotency_key": "mcp-complete-1",
		"evidence": map[string]any{"links": []string{"https://example.test/pr/9"}}}), outputs["complete_work"])
	receipt, _ := done["data"].(map[string]any)["receipt"].(map[string]any)
	if receipt["status"] != "completed" || receipt["summary"] != "Shipped over MCP" {
		t.Fatalf("completion: %v", done)
	}
	if task := getWork(t, e, tenant.Key, taskID); task["status"] != "completed" {
		t.Fatalf("REST reads %v", task)
	}
	// The agent's context, through the same route: its task's capsule, with the receipt,
	// whole and digest-checked (the workspace is the credential's).
	ctx := mcpAnswer(t, mcpCall(t, session, "prepare_context", map[string]any{"task_id": taskID, "delivery_mode": "delta"}),
		outputs["prepare_context"])
	capsule, _ := ctx["data"].(map[string]any)["context_capsule"].(map[string]any)
	transfer, _ := ctx["data"].(map[string]any)["context_transfer"].(map[string]any)
	if capsule == nil || transfer == nil || capsule["scope"].(map[string]any)["task"].(map[string]any)["ref"].(map[string]any)["id"] != taskID ||
		len(capsule["recent_receipt_refs"].([]any)) != 1 || transfer["version"] != digestOf(transfer["serialized"].(string)) {
		t.Fatalf("prepare_context: %v", ctx)
	}
	// The log: a tool call is one line, the /mcp request's, saying what the call did; the
	// SDK's info lines (a session made and ended with each stateless request) are not
	// written.
	var callLines []map[string]any
	byRequest := map[any]int{}
	e.logsMu.Lock()
	for _, line := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line that is not JSON: %q", line)
		}
		if msg, _ := rec["msg"].(string); strings.Contains(msg, "session") {
			t.Errorf("the SDK's line reached the log: %s", line)
		}
		byRequest[rec["request_id"]]++
		if rec["tool"] == "complete_work" {
			callLines = append(callLines, rec)
		}
	}
	e.logsMu.Unlock()
	if len(callLines) != 1 {
		t.Fatalf("the complete_work call's log lines: %v", callLines)
	}
	if l := callLines[0]; l["path"] != "/mcp" || l["status"] != 200.0 || l["tool_path"] != "/api/v1/work/"+taskID+"/complete" ||
		l["tool_status"] != 200.0 || l["workspace_id"] != tenant.Principal.WorkspaceID || byRequest[l["request_id"]] != 1 {
		t.Fatalf("the complete_work call's log line: %v (lines with its request id: %d)", l, byRequest[l["request_id"]])
	}
	// The ledger: the key is a person's, so the actor is the MCP client acting for them.
	events := e.streamEvents(tenant.Key, "event_type=work.completed", 1)
	if len(events) != 1 || events[0]["aggregateId"] != taskID || events[0]["actorType"] != "agent" ||
		events[0]["actorId"] != "MCP client for user "+tenant.Principal.UserID || events[0]["idempotencyKey"] != "mcp-complete-1" {
		t.Fatalf("the completion on the ledger: %v", events)
	}
	page := mcpAnswer(t, mcpCall(t, session, "page_events", map[string]any{"event_type": []string{"work.completed"}, "transport": "sse"}),
		outputs["page_events"])
	if evs := page["data"].([]any); len(evs) != 1 || evs[0].(map[string]any)["id"] != events[0]["id"] {
		t.Fatalf("page_events: %v", page)
	}

	// A body whose workspace_id the operation requires gets the credential's.
	run := mcpAnswer(t, mcpCall(t, session, "start_discovery_run", map[string]any{"observations": ownerObservations()}),
		outputs["start_discovery_run"])
	runData := run["data"].(map[string]any)
	proposal := mcpAnswer(t, mcpCall(t, session, "propose_discovered_process", map[string]any{"idempotency_key": "mcp-adopt-1",
		"runId": runData["run"].(map[string]any)["id"], "process_candidate_id": runData["processCards"].([]any)[0].(map[string]any)["id"]}),
		outputs["propose_discovered_process"])
	if proposal["meta"].(map[string]any)["workspaceId"] != tenant.Principal.WorkspaceID {
		t.Fatalf("propose_discovered_process: %v", proposal)
	}

	// The receipt tools take the document as receipt: validation's body is the document
	// itself, the import's is {receipt} (as REST's is).
	valid := mcpAnswer(t, mcpCall(t, session, "validate_receipt", map[string]any{"receipt": receiptValidateBody()}),
		outputs["validate_receipt"])
	var doc map[string]any
	if err := json.Unmarshal([]byte(toJSON(receiptImportBody()["receipt"])), &doc); err != nil {
		t.Fatal(err)
	}
	imported := mcpAnswer(t, mcpCall(t, session, "import_receipt", map[string]any{"receipt": doc}), outputs["import_receipt"])
	if valid["valid"] != true || imported["meta"].(map[string]any)["workspaceId"] != tenant.Principal.WorkspaceID ||
		imported["data"].(map[string]any)["imported_at"] == nil {
		t.Fatalf("validate_receipt %v\nimport_receipt %v", valid, imported)
	}
	// Without the document: REST's refusal of a body without a receipt, 400 at /receipt.
	missing := mcpRefusal(t, mcpCall(t, session, "import_receipt", map[string]any{}), http.StatusBadRequest)
	if missing.errorCode() != accountable.ECodeValidationFailed || !slices.Equal(issuePaths(missing), []string{"/receipt"}) {
		t.Fatalf("import_receipt without a receipt: %s", missing.raw)
	}
	rest := e.do(request{method: "POST", path: "/agent-work-receipts/validate", body: map[string]any{"receipt_id": 7}})
	invalid := mcpRefusal(t, mcpCall(t, session, "validate_receipt", map[string]any{"receipt": map[string]any{"receipt_id": 7}}),
		http.StatusUnprocessableEntity)
	if rest.status != http.StatusUnprocessableEntity || toJSON(rest.body) != toJSON(invalid.body) {
		t.Fatalf("an invalid receipt: REST %s, MCP %s", rest.raw, invalid.raw)
	}

	// An invalid argument: REST's validation_failed body, as a tool error.
	bad := map[string]any{"title": "", "priority": "someday"}
	rest = e.do(request{method: "POST", path: "/work", key: tenant.Key, headers: map[string]string{"Idempotency-Key": "rest-bad"}, body: bad})
	expect(t, rest, http.StatusBadRequest, accountable.ECodeValidationFailed)
	bad["idempotency_key"] = "mcp-bad"
	refused := mcpRefusal(t, mcpCall(t, session, "create_work", bad), http.StatusBadRequest)
	if d := sameErrorBody(rest, refused); d != "" {
		t.Fatal(d)
	}
	// A path parameter left out is refused the same way, not sent to another route.
	if r := mcpRefusal(t, mcpCall(t, session, "get_work", map[string]any{}), http.StatusBadRequest); r.errorCode() != accountable.ECodeValidationFailed {
		t.Fatalf("get_work without taskId: %s", r.raw)
	}
	// Another workspace's task is not found, exactly as over REST.
	otherSession := mcpSession(t, e, other.Key, "")
	rest = e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": taskID}, key: other.Key})
	expect(t, rest, http.StatusNotFound, accountable.ECodeNotFound)
	if d := sameErrorBody(rest, mcpRefusal(t, mcpCall(t, otherSession, "get_work", map[string]any{"taskId": taskID}), http.StatusNotFound)); d != "" {
		t.Fatal(d)
	}
	// The account-free check answers its bare body.
	diagnosis := mcpCall(t, otherSession, "diagnose_workload", map[string]any{"schema_version": "workload-diagnosis/0.1"})
	if r := mcpRefusal(t, diagnosis, http.StatusBadRequest); r.body["ok"] != false || r.body["valid"] != false {
		t.Fatalf("diagnose_workload without a workload: %s", r.raw)
	}

	// Without a credential: 401, pointing the client to the MCP endpoint's resource metadata.
	res, err := http.Post(e.base+api.MCPPath, "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	challenge := res.Header.Get("WWW-Authenticate")
	if res.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(challenge, `resource_metadata="`+e.base+`/.well-known/oauth-protected-resource/mcp"`) {
		t.Fatalf("without a credential: %d %q", res.StatusCode, challenge)
	}
	// GET (a stream) and DELETE (a session) are not offered by a stateless server.
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequestWithContext(context.Background(), method, e.base+api.MCPPath, nil)
		req.Header.Set("Authorization", "Bearer "+tenant.Key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("%s /mcp: %d", method, res.StatusCode)
		}
	}
	if !slices.Contains(api.MCPRoutes, "POST "+api.MCPPath) {
		t.Fatalf("MCPRoutes %v", api.MCPRoutes)
	}
}
