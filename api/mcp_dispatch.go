package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gofiber/fiber/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fasthttp"

	"github.com/accountablework/accountable"
)

// mcpDispatcher runs tool calls as REST requests of the caller, in process, through the
// app's handler: the operation's route with its whole chain (authenticate, rate limit,
// scope, bind, handler, error handler), as if the request had come over HTTP.
type mcpDispatcher struct {
	s *Server
	// app is the app's request handler, taken at the first call: taking it prepares the
	// router (Fiber's startup), which must come after every route was added.
	app func() fasthttp.RequestHandler
}

func newMCPDispatcher(s *Server) *mcpDispatcher {
	return &mcpDispatcher{s: s, app: sync.OnceValue(s.app.Handler)}
}

// handler is the tool handler of operation o, whose arguments go where args says.
func (d *mcpDispatcher) handler(o *operation, args mcpArgs) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// A stateless request is served on a session made for it, whose handlers' contexts
		// derive from the HTTP request's, which netHTTP gives the Fiber Locals of the /mcp
		// request: the principal authenticateMCP stored, from the credential (never from
		// an argument).
		p, ok := ctx.Value(localPrincipal).(accountable.Principal)
		call, _ := ctx.Value(localMCPRequest).(*mcpRequest)
		if !ok || call == nil {
			return nil, errors.New("api: an MCP tool call without the principal and record of its /mcp request")
		}
		if p.AgentName == "" { // a person's API key: the ledger records the MCP client acting for them
			p.AgentName = accountable.AgentFor(mcpAgent, p.UserID)
		}
		var r fasthttp.Request
		r.Header.SetMethod(o.Method)
		r.Header.Set(fiber.HeaderAccept, fiber.MIMEApplicationJSON)
		// The tool call's request answers and logs under the /mcp request's id, and keeps
		// its contract date.
		if id, ok := ctx.Value(localRequestID).(string); ok {
			r.Header.Set(headerRequestID, id)
		}
		if date, ok := ctx.Value(localContractDate).(string); ok {
			r.Header.Set(headerSvcVersion, date)
		}
		err := args.fill(&r, o, req.Params.Arguments, p)
		var fctx fasthttp.RequestCtx
		fctx.Init(&r, call.client, nil)
		// authenticate takes a principal already present as the request's.
		fctx.SetUserValue(localPrincipal, p)
		if err != nil {
			d.refuse(&fctx, o, err)
		} else {
			d.app()(&fctx)
		}
		// For the /mcp request's access line, written after this returns.
		call.tool, call.path, call.status = req.Params.Name, string(r.URI().Path()), fctx.Response.StatusCode()
		return toolResult(fctx.Response.StatusCode(), fctx.Response.Body()), nil
	}
}

// refuse answers a call whose arguments cannot make a request of o (not an object, a
// path parameter missing) as o answers a request it refuses: through the error handler,
// with o's own failure body when it has one.
func (d *mcpDispatcher) refuse(fctx *fasthttp.RequestCtx, o *operation, err error) {
	c := d.s.app.AcquireCtx(fctx)
	defer d.s.app.ReleaseCtx(c)
	if o.Failure != nil {
		c.Locals(localFailure, o.Failure)
	}
	if herr := d.s.handleError(c, err); herr != nil {
		d.s.log.Error("writing error response", "request_id", requestID(c), "err", herr)
	}
}

// toolResult is the tool result of a REST answer: a 2xx is the result, its JSON object
// also the structured content; any other status is a tool error (not a protocol error),
// whose text is the error body for the model to read.
func toolResult(status int, body []byte) *mcp.CallToolResult {
	text := string(body)
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	if status < 200 || status > 299 {
		res.IsError = true
		return res
	}
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '{' {
		res.StructuredContent = json.RawMessage(text)
	}
	return res
}

// fill makes r the REST request of o for a call with the arguments raw by p: the path
// with its parameters, the query, the Idempotency-Key, and the JSON body.
func (a mcpArgs) fill(r *fasthttp.Request, o *operation, raw json.RawMessage, p accountable.Principal) error {
	args := map[string]jsontext.Value{}
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && string(trimmed) != "null" {
		// A receipt document's duplicate members are issues of its validation, as over
		// REST; every other body refuses them.
		var opts []jsonv2.Options
		if o.Document {
			opts = append(opts, jsontext.AllowDuplicateNames(true))
		}
		if err := jsonv2.Unmarshal(trimmed, &args, opts...); err != nil {
			return decodeError(err)
		}
	}
	var issues accountable.Issues
	path := pathParam.ReplaceAllStringFunc(o.Path, func(m string) string {
		name := m[1 : len(m)-1]
		v, ok := argText(args[name])
		switch {
		case !ok || v == "": // an empty segment would route elsewhere
			issues.Add(name, "is required")
			return m
		case v == "." || v == "..": // so would a dot segment, which the path's normalising removes
			issues.Add(name, "must not be %q", v)
			return m
		}
		return url.PathEscape(v)
	})
	if err := issues.Err(); err != nil {
		return err
	}
	jsonBody := o.Method != fiber.MethodGet && !o.Document
	query := url.Values{}
	body := map[string]jsontext.Value{}
	var document jsontext.Value
	for name, v := range args {
		place, known := a[name]
		if !known && !jsonBody {
			place = argDropped
		}
		switch place {
		case argQuery:
			query[name] = append(query[name], queryValues(v)...)
		case argIdempotencyKey:
			if key, ok := argText(v); ok {
				r.Header.Set(headerIdempotencyKey, key)
			}
		case argDocument:
			document = v
		case argBody:
			body[name] = v
		}
	}
	if o.BodyWorkspaceRequired { // the credential's workspace, where the operation asks for it
		ws, err := jsonv2.Marshal(p.WorkspaceID)
		if err != nil {
			return err
		}
		body["workspace_id"] = jsontext.Value(ws)
	}
	uri := V1Root + path
	if len(query) > 0 {
		uri += "?" + query.Encode()
	}
	r.SetRequestURI(uri)
	switch {
	case o.Document && o.DocumentMember != "":
		// The document as the body's member, as it was sent (its own duplicate members
		// are its validation's issues); without it, {} (the operation says what is missing).
		b := []byte("{")
		if len(document) > 0 {
			name, err := jsonv2.Marshal(o.DocumentMember)
			if err != nil {
				return err
			}
			b = append(append(append(b, name...), ':'), document...)
		}
		r.SetBody(append(b, '}'))
	case o.Document:
		r.SetBody(document)
	case jsonBody:
		b, err := jsonv2.Marshal(body, jsonv2.Deterministic(true))
		if err != nil {
			return err
		}
		r.SetBody(b)
	}
	if len(r.Body()) > 0 {
		r.Header.SetContentType(fiber.MIMEApplicationJSON)
	}
	return nil
}

// argText is an argument as a parameter's text: a string's value, other JSON as written
// (the operation's rules refuse what its parameter does not take); false for null or
// absent.
func argText(v jsontext.Value) (string, bool) {
	switch v.Kind() {
	case 'n', 0:
		return "", false
	case '"':
		var s string
		if err := jsonv2.Unmarshal(v, &s); err != nil {
			return string(v), true
		}
		return s, true
	}
	return string(v), true
}

// queryValues are the values of a query argument: each element of an array (a
// repeatable parameter), or the one value.
func queryValues(v jsontext.Value) []string {
	var list []jsontext.Value
	if v.Kind() != '[' || jsonv2.Unmarshal(v, &list) != nil {
		list = []jsontext.Value{v}
	}
	var out []string
	for _, el := range list {
		if s, ok := argText(el); ok {
			out = append(out, s)
		}
	}
	return out
}
