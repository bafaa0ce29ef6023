package api

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/accountablework/accountable"
)

// The MCP server is a second door to the same operations, not a second implementation:
// each tool names a v1 operation, its input and output schemas are that operation's
// parameters, body and answer in the API description (s.document), and a call is sent
// through the app's own handler chain as a REST request of the caller (mcp_dispatch.go),
// so validation, workspace scoping, idempotency, scopes and ledger events are the REST
// API's. The answer is the REST body: a tool result for a 2xx, a tool error (isError)
// with the error body otherwise, which the model can read and correct.

// MCPRoutes are the MCP endpoint's routes: the Model Context Protocol, not operations of
// the API description.
var MCPRoutes = []string{fiber.MethodPost + " " + MCPPath}

// localMCPRequest keeps a /mcp request's mcpRequest for the tool call it carries.
const localMCPRequest = "mcpRequest"

// mcpRequest is what a /mcp request and the REST request of its tool call share: the
// client's address, for the request the dispatcher makes, and what the call did, for the
// /mcp request's access line (the one line a tool call writes: the dispatched request
// writes none of its own).
type mcpRequest struct {
	client net.Addr
	// tool, path and status are the call's tool, its REST request's path and answer.
	tool, path string
	status     int
}

// logAttrs are the attributes the /mcp access line adds for a tool call, and whether the
// call failed on the server's side (which makes the line an error).
func (m *mcpRequest) logAttrs() (attrs []slog.Attr, failed bool) {
	if m.tool == "" { // initialize, tools/list, a notification, or a call refused before dispatch
		return nil, false
	}
	return []slog.Attr{slog.String("tool", m.tool), slog.String("tool_path", m.path), slog.Int("tool_status", m.status)}, serverFault(m.status)
}

// mcpAgent names the agent a person's API key acts as over MCP (OAuth tokens name their
// client): the ledger records "MCP client for user <id>", not the person.
const mcpAgent = "MCP client"

const mcpInstructions = `Accountable is a work service for a team and its AI agents: work items completed with evidence and a receipt, initiatives planned, committed and launched, decisions, handoffs between stages, discovered processes, and the workspace's hash-chained event ledger.
You act in the workspace of your credential, as an agent acting for its user; every change you make is recorded on that workspace's ledger as an event with you as its actor (read it with page_events).
Give writes an idempotency_key and retry with the same one: a retry answers the first result (meta.duplicate true) instead of acting twice.
A refused call answers the service's error body (error.code, error.message, error.details with the offending members): correct the arguments, or tell your user.`

// mcpRoutes mounts the MCP server at MCPPath: Streamable HTTP, stateless (any API
// process serves any request; nothing is kept between requests) and answering JSON, not
// an event stream (Fiber's net/http adaptor buffers the body until the handler returns).
// Only POST is mounted: a stateless server offers no stream to GET and no session to
// DELETE, and the router answers both 405, as the transport specifies.
func (s *Server) mcpRoutes() {
	sdkLog := slog.New(warnAndAbove{s.log.Handler()})
	srv := s.newMCPServer(sdkLog)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, Logger: sdkLog,
		// The SDK refuses a request that reached a loopback address with a Host that is not
		// one (DNS rebinding of a local server without credentials). /mcp takes a bearer
		// credential only (not the session cookie), which a page a browser was made to load
		// cannot send, so rebinding gains nothing; and the check would refuse every request
		// a reverse proxy on the same machine forwards with the public Host. (Behind Fiber's
		// adaptor the SDK does not see the local address anyway.)
		DisableLocalhostProtection: true,
	})
	serve := s.netHTTP(h, localPrincipal, localRequestID, localContractDate, localMCPRequest)
	handle := func(c *fiber.Ctx) error {
		// One message per request: a JSON-RPC batch (which the SDK still takes from clients
		// of protocol versions before 2025-06-18) would run many tool calls on one charge
		// of the rate limit.
		if b := bytes.TrimLeft(c.Body(), " \t\r\n"); len(b) > 0 && b[0] == '[' {
			return c.Status(fiber.StatusBadRequest).JSON(fiber.Map{"jsonrpc": "2.0", "id": nil,
				"error": fiber.Map{"code": -32600, "message": "JSON-RPC batches are not accepted: send one message per request."}})
		}
		c.Locals(localMCPRequest, &mcpRequest{client: c.Context().RemoteAddr()})
		return serve(c)
	}
	handlers := append([]fiber.Handler{s.authenticateMCP, s.rateLimit}, s.workspaceGate()...)
	s.app.Post(MCPPath, append(handlers, handle)...)
}

// warnAndAbove passes on the records of its handler's levels from warn up. The MCP SDK
// logs at info what every stateless request does (a session made and ended with each
// one), which the /mcp access line already says: at info that would be two more lines a
// call, about 5% of a call's CPU in the bench's profile (docs/profiling.md).
type warnAndAbove struct{ slog.Handler }

func (h warnAndAbove) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h warnAndAbove) WithAttrs(attrs []slog.Attr) slog.Handler {
	return warnAndAbove{h.Handler.WithAttrs(attrs)}
}

func (h warnAndAbove) WithGroup(name string) slog.Handler {
	return warnAndAbove{h.Handler.WithGroup(name)}
}

// newMCPServer makes the MCP server with a tool for each entry of mcpTools.
func (s *Server) newMCPServer(log *slog.Logger) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "accountable", Title: "Accountable Work Service", Version: accountable.APIVersion},
		&mcp.ServerOptions{Instructions: mcpInstructions, Logger: log})
	desc, err := parseAPIDescription(s.document)
	if err != nil {
		panic(fmt.Sprintf("api: MCP tools: %v", err))
	}
	d := newMCPDispatcher(s)
	for _, t := range mcpTools {
		o := s.operationByID(t.op)
		if o == nil {
			panic(fmt.Sprintf("api: MCP tool %s: no operation %q in the operation table", t.name, t.op))
		}
		in, args := desc.toolInput(t, o)
		srv.AddTool(&mcp.Tool{Name: t.name, Title: t.title, Description: t.description(o), Annotations: t.annotations(o),
			InputSchema: in, OutputSchema: desc.toolOutput(o)}, d.handler(o, args))
	}
	return srv
}

// operationByID returns the operation of the table with operationId id, or nil.
func (s *Server) operationByID(id string) *operation {
	for i := range s.ops {
		if s.ops[i].ID == id {
			return &s.ops[i]
		}
	}
	return nil
}

// mcpTool is a tool: the operation it calls, and what the model is told of it.
type mcpTool struct {
	name, op, title string
	// about replaces the operation's summary and description (which speak of what the
	// tool leaves out); note is added to them.
	about, note string
	// drop are parameters of the operation the tool does not take.
	drop []string
	// storesNothing marks a POST that changes nothing (a check): read-only like a GET.
	storesNothing bool
	// destructive: the call ends something for good that others wait on, or decides in
	// a person's place: a decision approved or declined (it reserves or cancels spend
	// and work), a run finalized (its reservation is settled), a handoff fulfilled (the
	// sender's request is closed and its SLA timer stops). The other writes only add: a
	// task, a proposal, an initiative with its tasks, a launch, a handoff or its claim
	// (which can be returned), a discovery run, a proposal for review, an imported
	// receipt, and a work item's completion, whose receipt is appended to the caller's
	// own task. The ledger itself is append-only either way.
	destructive bool
	// idempotent: the same call again has no further effect. Reads and checks; calls
	// whose retry key is required (create_work, propose_discovered_process,
	// reconcile_controller's body idempotency_key) or implied (import_receipt: the
	// document's digest); and transitions guarded by the state they leave, which a
	// repeat finds left and is refused (409 task_version_stale or
	// invalid_state_transition). Creations whose key is optional are not: without one,
	// each call creates another.
	idempotent bool
}

// mcpTools are the tools, each a v1 operation.
var mcpTools = []mcpTool{
	{name: "create_work", op: "createWork", title: "Create a work item", idempotent: true,
		note: "Use a new idempotency_key for each new item, and the same one to retry."},
	{name: "get_work", op: "getWork", title: "Read a work item", idempotent: true,
		note: "data.concurrency.version_token is the version_token complete_work needs."},
	{name: "list_work", op: "listWork", title: "List work items", idempotent: true,
		note: "For the next page pass meta.nextCursor as cursor."},
	{name: "complete_work", op: "completeWork", title: "Complete a work item", idempotent: true,
		note: "Send the version_token of get_work; evidence (links, files, notes) backs the receipt."},
	{name: "page_events", op: "streamEvents", title: "Page the ledger's events", idempotent: true,
		drop: []string{"transport", "stream_ms", "poll_ms", "after"},
		about: "Read one page of the workspace's ledger events in order: who did what, when, each event hash-chained to the one before. " +
			"meta.nextCursor is the position after the page (save it once the page is processed and pass it as cursor to read on); " +
			"meta.hasMore says whether more events were already available. event_type and aggregate_type filter."},
	{name: "propose_initiative", op: "proposeInitiative", title: "Plan an initiative",
		note: "The answer is a proposal to show your user; commit_initiative makes it real."},
	{name: "commit_initiative", op: "commitInitiative", title: "Create an initiative",
		note: "To commit a proposal send its proposal_id and proposal_digest from propose_initiative."},
	{name: "launch_initiative", op: "launchInitiative", title: "Launch an initiative"},
	{name: "get_launch", op: "getLaunch", title: "Read a launch", idempotent: true},
	{name: "finalize_run", op: "finalizeRun", title: "Finalize a run", destructive: true, idempotent: true},
	{name: "approve_decision", op: "approveDecision", title: "Approve a decision", destructive: true, idempotent: true,
		note: "A decision is a person's: approve one only when your user told you to."},
	{name: "decline_decision", op: "declineDecision", title: "Decline a decision", destructive: true, idempotent: true,
		note: "A decision is a person's: decline one only when your user told you to."},
	{name: "create_handoff", op: "createHandoff", title: "Propose a handoff"},
	{name: "claim_handoff", op: "claimHandoff", title: "Claim a handoff", idempotent: true},
	{name: "fulfill_handoff", op: "fulfillHandoff", title: "Fulfill a handoff", destructive: true, idempotent: true},
	{name: "start_discovery_run", op: "startDiscoveryRun", title: "Discover processes"},
	{name: "propose_discovered_process", op: "proposeDiscoveredProcess", title: "Propose a discovered process", idempotent: true},
	{name: "reconcile_controller", op: "reconcileController", title: "Run a domain controller", idempotent: true},
	{name: "diagnose_workload", op: "diagnoseWorkload", title: "Diagnose a workload", storesNothing: true, idempotent: true},
	{name: "validate_receipt", op: "validateReceipt", title: "Validate a work receipt", storesNothing: true, idempotent: true,
		note: "Pass the receipt document as receipt. An invalid receipt is a tool error whose body lists the issues."},
	{name: "import_receipt", op: "importReceipt", title: "Import a work receipt", idempotent: true,
		note: "Pass the receipt document as receipt."},
	{name: "prepare_context", op: "prepareContext", title: "Prepare your context", idempotent: true,
		note: "Call it at the start of a turn with your task_id; cite events by event_hash and artifacts by id and version."},
}

// description tells the model what the tool does (the operation's own words), what
// scope it needs, and the REST operation it is.
func (t mcpTool) description(o *operation) string {
	parts := []string{t.about}
	if t.about == "" {
		parts = []string{o.Summary, o.Description}
	}
	parts = append(parts, t.note)
	switch scope := o.scope(); {
	case o.Public:
		parts = append(parts, "Account-free: needs no scope.")
	case scope == "":
		parts = append(parts, "Needs no scope.")
	default:
		parts = append(parts, "Needs the scope "+scope+".")
	}
	parts = append(parts, "(REST: "+o.Method+" "+V1Root+o.Path+".)")
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

// annotations are the tool's hints (see mcpTool). Nothing reaches beyond the workspace:
// the world of every tool is closed.
func (t mcpTool) annotations(o *operation) *mcp.ToolAnnotations {
	a := &mcp.ToolAnnotations{Title: t.title, ReadOnlyHint: o.Method == fiber.MethodGet || o.ReadOnly || t.storesNothing,
		IdempotentHint: t.idempotent, OpenWorldHint: ptrTo(false)}
	if !a.ReadOnlyHint {
		a.DestructiveHint = ptrTo(t.destructive)
	}
	return a
}
