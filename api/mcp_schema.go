package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/accountablework/accountable/receipt"
)

// A tool's schemas are read from the operation's entry in the API description, the
// document the service serves: its input is the operation's path and query parameters,
// its Idempotency-Key and the members of its JSON body, flattened into one object; its
// output is the operation's 2xx answer. The components they refer to are copied into the
// schema's $defs. The same reading gives the dispatcher its table of where each argument
// goes (mcpArgs).

// argPlace is where an argument of a tool goes in the REST request.
type argPlace int

const (
	argBody           argPlace = iota // a member of the JSON body
	argPath                           // a path parameter
	argQuery                          // a query parameter
	argIdempotencyKey                 // the Idempotency-Key header
	argDocument                       // the whole body (a Document operation's)
	argDropped                        // not sent
)

// Arguments of the tools that are not the operation's own names.
const (
	mcpIdempotencyKey = "idempotency_key"
	mcpDocument       = "receipt"
)

// mcpUnscoped are the members and parameters a tool never takes: the workspace and the
// user are the credential's.
var mcpUnscoped = []string{"workspace_id", "user_id"}

// mcpArgs says where each argument of a tool goes; an argument it does not name goes
// into the body of an operation that has a JSON body (where the operation ignores it or,
// for a closed body, refuses it, as over REST) and is dropped otherwise.
type mcpArgs map[string]argPlace

// apiDescription is the API description as the tools read it.
type apiDescription struct {
	paths      map[string]any
	schemas    map[string]any // components.schemas
	parameters map[string]any // components.parameters
}

func parseAPIDescription(doc []byte) (apiDescription, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber() // limits are copied as written
	var d struct {
		Paths      map[string]any `json:"paths"`
		Components struct {
			Schemas    map[string]any `json:"schemas"`
			Parameters map[string]any `json:"parameters"`
		} `json:"components"`
	}
	if err := dec.Decode(&d); err != nil {
		return apiDescription{}, err
	}
	return apiDescription{paths: d.Paths, schemas: d.Components.Schemas, parameters: d.Components.Parameters}, nil
}

// entry is the operation's entry in the description.
func (d apiDescription) entry(o *operation) map[string]any {
	item, _ := d.paths[o.Path].(map[string]any)
	e, _ := item[strings.ToLower(o.Method)].(map[string]any)
	if e == nil || e["operationId"] != o.ID {
		panic(fmt.Sprintf("api: MCP: the API description has no %s %s (%s)", o.Method, o.Path, o.ID))
	}
	return e
}

// toolInput returns the input schema of tool t of operation o and where its arguments go.
func (d apiDescription) toolInput(t mcpTool, o *operation) (map[string]any, mcpArgs) {
	defs := d.newDefs()
	props := map[string]any{}
	var required []string
	args := mcpArgs{}
	for _, name := range slices.Concat(mcpUnscoped, t.drop) {
		args[name] = argDropped
	}
	add := func(name string, place argPlace, schema any, req bool) {
		if _, taken := args[name]; taken {
			panic(fmt.Sprintf("api: MCP tool %s: two arguments named %s", t.name, name))
		}
		args[name] = place
		props[name] = defs.copy(schema)
		if req {
			required = append(required, name)
		}
	}
	entry := d.entry(o)
	params, _ := entry["parameters"].([]any)
	for _, raw := range params {
		p := d.parameter(raw)
		name, _ := p["name"].(string)
		in, _ := p["in"].(string)
		req, _ := p["required"].(bool)
		schema := withDescription(p["schema"], p["description"], false)
		switch {
		case in == "header" && name == headerIdempotencyKey:
			add(mcpIdempotencyKey, argIdempotencyKey, withDescription(schema,
				"The retry key of this call (the Idempotency-Key): the same call again with the same key answers the first result "+
					"(meta.duplicate true) instead of acting twice; the key with other arguments is refused.", true), req)
		case in == "header": // Svc-Version: the contract date of the /mcp request applies
		case args[name] == argDropped:
		case in == "path":
			add(name, argPath, schema, true)
		case in == "query":
			add(name, argQuery, schema, req)
		default:
			panic(fmt.Sprintf("api: MCP tool %s: parameter %s in %s", t.name, name, in))
		}
	}
	closed := false
	if body := jsonBodySchema(entry); body != nil {
		if o.Document {
			if o.DocumentMember != "" { // the body wraps the document: the argument is the document
				props, _ := d.resolve(body)["properties"].(map[string]any)
				body = props[o.DocumentMember]
			}
			add(mcpDocument, argDocument, withDescription(body, "The "+receipt.ReceiptSchemaVersion+" document itself, as a JSON object "+
				"(its JSON Schema, draft 2020-12, is "+receipt.ReceiptSchemaURL+").", true), true)
		} else {
			s := d.resolve(body)
			members, _ := s["properties"].(map[string]any)
			need, _ := s["required"].([]any)
			for name, schema := range members {
				if args[name] != argDropped {
					add(name, argBody, schema, slices.Contains(need, any(name)))
				}
			}
			closed = s["additionalProperties"] == false
		}
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		slices.Sort(required)
		schema["required"] = required
	}
	if closed { // the operation refuses members it does not know
		schema["additionalProperties"] = false
	}
	defs.addTo(schema)
	return schema, args
}

// toolOutput returns the output schema of operation o's tool: the schema of its 2xx
// answers (the {data, meta} envelope, or the bare body), or nil when an answer may be
// something else than an object.
func (d apiDescription) toolOutput(o *operation) map[string]any {
	var answers []any
	seen := map[string]bool{}
	responses, _ := d.entry(o)["responses"].(map[string]any)
	for _, status := range slices.Sorted(maps.Keys(responses)) {
		if !strings.HasPrefix(status, "2") {
			continue
		}
		s := jsonContentSchema(responses[status])
		if s == nil || !d.isObject(s) {
			return nil
		}
		text, _ := json.Marshal(s)
		if !seen[string(text)] {
			seen[string(text)] = true
			answers = append(answers, s)
		}
	}
	if len(answers) == 0 {
		return nil
	}
	defs := d.newDefs()
	var schema map[string]any
	if len(answers) == 1 {
		schema = defs.copy(answers[0]).(map[string]any)
	} else {
		schema = map[string]any{"anyOf": defs.copy(answers)}
	}
	// A client may require the type at the root (the MCP schema of outputSchema does),
	// where the answer's schema is a reference.
	schema["type"] = "object"
	defs.addTo(schema)
	return schema
}

// parameter resolves a parameter of an entry (a reference to components.parameters).
func (d apiDescription) parameter(raw any) map[string]any {
	p, _ := raw.(map[string]any)
	if ref, ok := p["$ref"].(string); ok {
		name, _ := strings.CutPrefix(ref, "#/components/parameters/")
		p, _ = d.parameters[name].(map[string]any)
		if p == nil {
			panic("api: MCP: no parameter " + ref)
		}
	}
	return p
}

// resolve follows a reference to a component schema.
func (d apiDescription) resolve(s any) map[string]any {
	m, _ := s.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		name, _ := strings.CutPrefix(ref, schemasPrefix)
		c, ok := d.schemas[name].(map[string]any)
		if !ok {
			panic("api: MCP: no schema " + ref)
		}
		return c
	}
	return m
}

// isObject reports whether schema s describes objects only.
func (d apiDescription) isObject(s any) bool {
	return d.resolve(s)["type"] == "object"
}

// jsonBodySchema is the schema of an entry's JSON request body, or nil.
func jsonBodySchema(entry map[string]any) any {
	return jsonContentSchema(entry["requestBody"])
}

// jsonContentSchema is the application/json schema of a request body or response.
func jsonContentSchema(r any) any {
	m, _ := r.(map[string]any)
	content, _ := m["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	return media["schema"]
}

// withDescription returns a copy of schema s with description desc: in place of its
// own when replace is set, else only when it has none.
func withDescription(s, desc any, replace bool) any {
	m, ok := s.(map[string]any)
	if !ok || desc == nil || desc == "" || (m["description"] != nil && !replace) {
		return s
	}
	c := maps.Clone(m)
	c["description"] = desc
	return c
}

// schemaDefs copies schemas of the description into a tool's schema, collecting the
// components they refer to as its $defs.
type schemaDefs struct {
	components map[string]any
	defs       map[string]any
}

func (d apiDescription) newDefs() *schemaDefs {
	return &schemaDefs{components: d.schemas, defs: map[string]any{}}
}

// copy returns a deep copy of schema s whose references to components refer to $defs,
// and adds the components it refers to (and theirs) to the $defs.
func (sd *schemaDefs) copy(s any) any {
	switch x := s.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			if ref, ok := v.(string); ok && k == "$ref" {
				if name, ok := strings.CutPrefix(ref, schemasPrefix); ok {
					sd.define(name)
					out[k] = "#/$defs/" + name
					continue
				}
			}
			out[k] = sd.copy(v)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = sd.copy(v)
		}
		return out
	}
	return s
}

func (sd *schemaDefs) define(name string) {
	if _, done := sd.defs[name]; done {
		return
	}
	c, ok := sd.components[name]
	if !ok {
		panic("api: MCP: no schema " + schemasPrefix + name)
	}
	sd.defs[name] = nil // taken, for a component that refers to itself
	sd.defs[name] = sd.copy(c)
}

// addTo puts the $defs into schema, when there are any.
func (sd *schemaDefs) addTo(schema map[string]any) {
	if len(sd.defs) > 0 {
		schema["$defs"] = sd.defs
	}
}
