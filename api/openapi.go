package api

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/swaggest/jsonschema-go"

	"github.com/accountablework/accountable"
)

// The OpenAPI 3.1 document is generated from the operation table and the Go types of each
// operation's input and output (github.com/swaggest/jsonschema-go reflects the types; the
// rules are the same struct tags CheckFields enforces). Conventions the generator applies
// to every type, so that the document says what the code does:
//   - a member is required unless its json tag says omitzero or omitempty (the request
//     types mark optional members so; responses always carry every member);
//   - a pointer member is nullable, and an optional member may be sent as null (CONTRACT);
//   - objects decoded from Go structs allow no other members (requests refuse them);
//   - accountable.Time is a date-time, CalendarTime a date-time or a date, Object any
//     JSON object.

const (
	schemasPrefix = "#/components/schemas/"
	jsonDialect   = "https://spec.openapis.org/oas/3.1/dialect/base"
)

// documentBuilder collects the schemas of the operations' types.
type documentBuilder struct {
	reflector   jsonschema.Reflector
	definitions map[string]jsonschema.Schema
	names       map[string]reflect.Type
	// scopedBodies are the request body components, which also take workspace_id;
	// closed says which of them refuse unknown members (Operation.ClosedBody).
	scopedBodies []string
	closed       map[string]bool
	// workspaceRequired are the bodies whose workspace_id is required
	// (Operation.BodyWorkspaceRequired).
	workspaceRequired map[string]bool
}

func newDocumentBuilder() *documentBuilder {
	b := &documentBuilder{definitions: map[string]jsonschema.Schema{}, names: map[string]reflect.Type{}}
	b.reflector.AddTypeMapping(accountable.Time{}, time.Time{})
	b.reflector.AddTypeMapping(accountable.Object{}, map[string]any{})
	b.reflector.DefaultOptions = append(b.reflector.DefaultOptions,
		jsonschema.DefinitionsPrefix(schemasPrefix),
		jsonschema.CollectDefinitions(func(name string, s jsonschema.Schema) { b.definitions[name] = s }),
		jsonschema.InterceptDefName(b.defName),
		jsonschema.InterceptSchema(interceptSchema),
		jsonschema.InterceptProp(interceptProp),
	)
	return b
}

// defName names a component after its Go type (without the package), refusing two types
// of one name.
func (b *documentBuilder) defName(t reflect.Type, def string) string {
	name := t.Name()
	if n, ok := componentNames[t]; ok {
		name = n
	}
	if name == "" || strings.ContainsAny(name, "[]") {
		return def
	}
	name = strings.ToUpper(name[:1]) + name[1:]
	if prev, ok := b.names[name]; ok && prev != t {
		panic(fmt.Sprintf("api: two types named %s in the document: %s and %s", name, prev, t))
	}
	b.names[name] = t
	return name
}

// componentNames are the components not named after their Go type.
var componentNames = map[reflect.Type]string{
	reflect.TypeFor[errorEnvelope]():    "Error",
	reflect.TypeFor[unauthorizedBody](): "Unauthorized",
	reflect.TypeFor[meta]():             "Meta",
}

var (
	calendarTimeType = reflect.TypeFor[accountable.CalendarTime]()
	objectType       = reflect.TypeFor[accountable.Object]()
	// openObjectType is implemented by types whose objects may carry members beyond their
	// fields (a process stage): their schema does not close them.
	openObjectType = reflect.TypeFor[interface{ OpenObject() }]()
)

// interceptSchema applies the type-level conventions.
func interceptSchema(p jsonschema.InterceptSchemaParams) (bool, error) {
	t := p.Value.Type()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == calendarTimeType && !p.Processed:
		*p.Schema = jsonschema.Schema{}
		p.Schema.AnyOf = []jsonschema.SchemaOrBool{
			jsonschema.String.ToSchemaOrBool(), jsonschema.String.ToSchemaOrBool(),
		}
		p.Schema.AnyOf[0].TypeObject.WithFormat("date-time")
		p.Schema.AnyOf[1].TypeObject.WithFormat("date")
		p.Schema.WithDescription("An RFC 3339 date-time, or a calendar date (YYYY-MM-DD, taken as 00:00 UTC).")
		return true, nil
	case t == objectType && p.Processed:
		p.Schema.AdditionalProperties = nil
		p.Schema.Type = &jsonschema.Type{SimpleTypes: ptrTo(jsonschema.Object)}
	case t.Kind() == reflect.Struct && p.Processed && p.Schema.Properties != nil && !t.Implements(openObjectType):
		p.Schema.WithAdditionalProperties(jsonschema.SchemaOrBool{TypeBoolean: ptrTo(false)})
	}
	return false, nil
}

func ptrTo[T any](v T) *T { return &v }

// interceptProp makes a member required unless its json tag says it may be left out, and
// a pointer to a component nullable.
func interceptProp(p jsonschema.InterceptPropParams) error {
	if !p.Processed {
		return nil
	}
	if p.Field.Type.Kind() == reflect.Pointer && p.PropertySchema.Ref != nil {
		ref := jsonschema.Schema{Ref: p.PropertySchema.Ref}
		null := jsonschema.Schema{}
		null.WithType(jsonschema.Null.Type())
		*p.PropertySchema = jsonschema.Schema{AnyOf: []jsonschema.SchemaOrBool{ref.ToSchemaOrBool(), null.ToSchemaOrBool()}}
	}
	_, opts, _ := strings.Cut(p.Field.Tag.Get("json"), ",")
	optional := false
	for _, o := range strings.Split(opts, ",") {
		optional = optional || o == "omitzero" || o == "omitempty"
	}
	if !optional && !slices.Contains(p.ParentSchema.Required, p.Name) {
		p.ParentSchema.Required = append(p.ParentSchema.Required, p.Name)
	}
	return nil
}

// schemaOf returns the schema of t, referring to components for named types.
func (b *documentBuilder) schemaOf(t reflect.Type, opts ...func(*jsonschema.ReflectContext)) (map[string]any, error) {
	s, err := b.reflector.Reflect(reflect.New(t).Elem().Interface(), append([]func(*jsonschema.ReflectContext){jsonschema.RootRef}, opts...)...)
	if err != nil {
		return nil, err
	}
	return toMap(s)
}

func toMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(raw, &m)
}

// document is the OpenAPI document of ops, served under siteURL.
func buildDocument(ops []operation, siteURL string) ([]byte, error) {
	b := newDocumentBuilder()
	paths := map[string]any{}
	for i := range ops {
		o := &ops[i]
		entry, err := b.operationEntry(o)
		if err != nil {
			return nil, fmt.Errorf("api: document %s %s: %w", o.Method, o.Path, err)
		}
		item, _ := paths[o.Path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[o.Path] = item
		}
		if o.Root != "" {
			// Served outside the v1 root: the path names its own server.
			item["servers"] = []any{map[string]any{"url": siteURL + strings.TrimSuffix(o.Root, "/")}}
		}
		item[strings.ToLower(o.Method)] = entry
	}
	for name, t := range map[string]reflect.Type{"Meta": reflect.TypeFor[meta](), "Error": reflect.TypeFor[errorEnvelope](),
		"Unauthorized": reflect.TypeFor[unauthorizedBody]()} {
		if _, err := b.schemaOf(t); err != nil {
			return nil, err
		}
		if _, ok := b.definitions[name]; !ok {
			return nil, fmt.Errorf("api: no component %s", name)
		}
	}
	schemas := map[string]any{}
	for name, s := range b.definitions {
		m, err := toMap(s)
		if err != nil {
			return nil, err
		}
		schemas[name] = m
	}
	for _, name := range b.scopedBodies {
		openBody(schemas[name].(map[string]any), b.closed[name])
		addWorkspaceProperty(schemas[name].(map[string]any))
		if b.workspaceRequired[name] {
			requireWorkspace(schemas[name].(map[string]any))
		}
	}
	meta := schemas["Meta"].(map[string]any)
	meta["properties"].(map[string]any)["apiVersion"] = map[string]any{"const": accountable.APIVersion}
	unauthorized := schemas["Unauthorized"].(map[string]any)
	unauthorized["properties"].(map[string]any)["error"] = map[string]any{"const": "Unauthorized"}
	unauthorized["description"] = "The simple body of a 401 (not the error envelope)."
	doc := map[string]any{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": jsonDialect,
		"info": map[string]any{
			"title":   "Accountable Work Service API",
			"version": accountable.APIVersion,
			"description": "Workspace-scoped JSON-over-HTTP API for accountable work. Successful responses use {data, meta}; " +
				"failures use the error envelope (401 uses the simple {error, message} body). {site_url}/api/client/* serves " +
				"the same operations as {site_url}/api/v1/*. Generated from the service's operation table and Go types.",
		},
		"servers":  []any{map[string]any{"url": siteURL + V1Root}},
		"security": []any{map[string]any{"bearerAuth": []any{}}, map[string]any{"sessionCookie": []any{}}, map[string]any{"oauth2": []any{}}},
		"tags":     areaTags(ops),
		"paths":    paths,
		"components": map[string]any{
			"schemas": schemas,
			"securitySchemes": map[string]any{"bearerAuth": map[string]any{"type": "http", "scheme": "bearer",
				"description": "API key: Authorization: Bearer svk_..."},
				"sessionCookie": map[string]any{"type": "apiKey", "in": "cookie", "name": accountable.SessionCookie,
					"description": "The session of the key settings page's sign-in (used when no Authorization header is sent); " +
						"requests other than GET and HEAD also send the session's CSRF token in X-CSRF-Token."},
				"oauth2": oauthScheme(siteURL)},
			"parameters": commonParameters(),
		},
	}
	normalizeSchemas(doc)
	return json.MarshalIndent(doc, "", "  ")
}

// openBody lets a request body schema take members it does not list, unless the
// operation's body is closed (the decoder ignores them; see Operation.ClosedBody).
func openBody(s map[string]any, closed bool) {
	if !closed {
		delete(s, "additionalProperties")
	}
}

// addWorkspaceProperty adds to a request body schema the workspace_id every body may carry.
func addWorkspaceProperty(s map[string]any) {
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		s["properties"] = props
	}
	props["workspace_id"] = map[string]any{"type": []any{"string", "null"}, "format": "uuid",
		"description": "Selects another of the caller's workspaces (as the workspace_id query parameter does)."}
}

// requireWorkspace makes a body's workspace_id required (and not null).
func requireWorkspace(s map[string]any) {
	s["properties"].(map[string]any)["workspace_id"] = map[string]any{"type": "string", "format": "uuid",
		"description": "The workspace the request acts in: one of the caller's."}
	req, _ := s["required"].([]any)
	s["required"] = append(req, "workspace_id")
}

func areaTags(ops []operation) []any {
	var out []any
	for _, a := range append(slices.Clone(areas), serviceArea) {
		for _, o := range ops {
			if o.Area == a {
				out = append(out, map[string]any{"name": a})
				break
			}
		}
	}
	return out
}

func commonParameters() map[string]any {
	keySchema := map[string]any{"type": "string", "minLength": 1, "maxLength": 200, "pattern": `^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$`}
	return map[string]any{
		"SvcVersion": map[string]any{"name": headerSvcVersion, "in": "header", "required": false,
			"description": "Pins a documented contract date; an unknown date is 400 unsupported_api_version.",
			"schema":      map[string]any{"type": "string", "enum": anySlice(accountable.ContractDates)}},
		"WorkspaceId": map[string]any{"name": "workspace_id", "in": "query", "required": false,
			"description": "Selects another of the caller's workspaces (also accepted in a request body); one the caller cannot access is a 404.",
			"schema":      map[string]any{"type": "string", "format": "uuid"}},
		"IdempotencyKey": map[string]any{"name": headerIdempotencyKey, "in": "header", "required": false,
			"description": "Workspace-scoped retry key; replaying it returns the original result.", "schema": keySchema},
		"IdempotencyKeyRequired": map[string]any{"name": headerIdempotencyKey, "in": "header", "required": true,
			"description": "Workspace-scoped retry key (required); replaying it returns the original result.", "schema": keySchema},
	}
}

func anySlice[T any](in []T) []any {
	out := make([]any, len(in))
	for i, v := range in {
		out[i] = v
	}
	return out
}

func (b *documentBuilder) operationEntry(o *operation) (map[string]any, error) {
	entry := map[string]any{"operationId": o.ID, "summary": o.Summary, "tags": []any{o.Area}}
	if o.Description != "" {
		entry["description"] = o.Description
	}
	params := []any{map[string]any{"$ref": "#/components/parameters/SvcVersion"}}
	if o.Public {
		entry["security"] = []any{}
	} else if scope := o.scope(); scope != "" {
		// Keys and sessions may call it; an OAuth access token needs the scope.
		entry["security"] = []any{map[string]any{"bearerAuth": []any{}}, map[string]any{"sessionCookie": []any{}},
			map[string]any{"oauth2": []any{scope}}}
		params = append(params, map[string]any{"$ref": "#/components/parameters/WorkspaceId"})
	} else {
		params = append(params, map[string]any{"$ref": "#/components/parameters/WorkspaceId"})
	}
	switch o.Idempotency {
	case OptionalIdempotency:
		params = append(params, map[string]any{"$ref": "#/components/parameters/IdempotencyKey"})
	case RequiredIdempotency:
		params = append(params, map[string]any{"$ref": "#/components/parameters/IdempotencyKeyRequired"})
	}
	for _, p := range o.params {
		elem := p.field.Type
		if elem.Kind() == reflect.Pointer {
			elem = elem.Elem()
		}
		probe := reflect.StructOf([]reflect.StructField{{Name: "V", Type: elem, Tag: reflect.StructTag(`json:"v" ` + string(p.field.Tag))}})
		s, err := b.schemaOf(probe, jsonschema.InlineRefs)
		if err != nil {
			return nil, err
		}
		ps := s["properties"].(map[string]any)["v"].(map[string]any)
		param := map[string]any{"name": p.name, "in": p.in, "required": p.in == "path" || p.required, "schema": ps}
		if p.description != "" {
			param["description"] = p.description
		}
		if p.field.Type.Kind() == reflect.Slice {
			param["explode"] = true
			param["description"] = strings.TrimSpace(p.description + " Repeatable; values may also be comma-separated.")
		}
		params = append(params, param)
	}
	entry["parameters"] = params
	if o.hasBody {
		s, err := b.schemaOf(o.in)
		if err != nil {
			return nil, err
		}
		entry["requestBody"] = map[string]any{"required": false, "content": map[string]any{
			"application/json": map[string]any{"schema": s}}}
		if name, ok := strings.CutPrefix(fmt.Sprint(s["$ref"]), schemasPrefix); ok {
			b.scopedBodies = append(b.scopedBodies, name)
			if b.closed == nil {
				b.closed = map[string]bool{}
			}
			b.closed[name] = b.closed[name] || o.ClosedBody
			if o.BodyWorkspaceRequired {
				if b.workspaceRequired == nil {
					b.workspaceRequired = map[string]bool{}
				}
				b.workspaceRequired[name] = true
			}
		} else {
			openBody(s, o.ClosedBody)
			addWorkspaceProperty(s)
			if o.BodyWorkspaceRequired {
				requireWorkspace(s)
			}
		}
	}
	if o.Document {
		body := o.DocumentSchema
		if o.DocumentMember != "" { // the document as a member of the body
			body = map[string]any{"type": "object", "required": []any{o.DocumentMember},
				"description": "The document as the member " + o.DocumentMember + " (other members but workspace_id are ignored).",
				"properties":  map[string]any{o.DocumentMember: o.DocumentSchema}}
			addWorkspaceProperty(body)
		}
		entry["requestBody"] = map[string]any{"required": true, "content": map[string]any{
			"application/json": map[string]any{"schema": body}}}
	} else if !o.hasBody && o.Method != "GET" {
		// A command without members of its own still takes {} (or nothing), and workspace_id.
		empty := map[string]any{"type": "object", "additionalProperties": false}
		openBody(empty, o.ClosedBody)
		addWorkspaceProperty(empty)
		entry["requestBody"] = map[string]any{"required": false, "content": map[string]any{
			"application/json": map[string]any{"schema": empty}}}
	}
	responses := map[string]any{}
	if o.Raw {
		content := map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object"}}}
		if o.ContentType != "" {
			content = map[string]any{o.ContentType: map[string]any{"schema": map[string]any{"type": "string"}}}
		}
		responses[strconv.Itoa(o.Status)] = map[string]any{"description": o.Summary, "content": content}
	} else if o.Bare {
		body, err := b.schemaOf(o.out)
		if err != nil {
			return nil, err
		}
		for _, st := range append([]int{o.Status}, o.BareStatuses...) {
			responses[strconv.Itoa(st)] = map[string]any{"description": o.Summary,
				"content": map[string]any{"application/json": map[string]any{"schema": body}}}
		}
	} else if !o.NotOffered { // a NotOffered operation has no success answer to describe
		data, err := b.schemaOf(o.out)
		if err != nil {
			return nil, err
		}
		envelope := map[string]any{"type": "object", "additionalProperties": false, "required": []any{"data", "meta"},
			"properties": map[string]any{"data": data, "meta": map[string]any{"$ref": schemasPrefix + "Meta"}}}
		ok := map[string]any{"description": o.Summary, "content": map[string]any{"application/json": map[string]any{"schema": envelope}}}
		for _, a := range o.Alternates {
			ok["content"].(map[string]any)[a.ContentType] = map[string]any{"schema": map[string]any{"type": "string", "description": a.Description}}
		}
		if o.EventStream {
			ok["content"].(map[string]any)["text/event-stream"] = map[string]any{"schema": map[string]any{"type": "string",
				"description": "Server-Sent Events: `ledger_event` frames (id: the cursor after the event; data: one event as JSON), " +
					"`error` frames (data: {code, message}) and `:` heartbeat comments."}}
		}
		responses[strconv.Itoa(o.Status)] = ok
		if o.Idempotency != NoIdempotency && o.Status != 200 {
			responses["200"] = map[string]any{"description": "A replay of an earlier request with the same Idempotency-Key (meta.duplicate true).",
				"content": ok["content"]}
		}
		for st, desc := range o.EnvelopeStatuses {
			responses[strconv.Itoa(st)] = map[string]any{"description": desc, "content": ok["content"]}
		}
	}
	byStatus := map[int][]string{}
	for _, code := range o.errorCodes() {
		st := accountable.ErrorStatus(code)
		byStatus[st] = append(byStatus[st], code)
	}
	errorSchema := map[string]any{"$ref": schemasPrefix + "Error"}
	if o.Failure != nil {
		// The operation's own failure body; x-failure-body names it, so that a reader (the
		// tests among them) tells its failures from its answers.
		s, err := b.schemaOf(o.Failure.typ)
		if err != nil {
			return nil, err
		}
		errorSchema = s
		entry["x-failure-body"] = s["$ref"]
	}
	for st, codes := range byStatus {
		if _, taken := responses[strconv.Itoa(st)]; taken {
			continue
		}
		sort.Strings(codes)
		schema := errorSchema
		desc := strings.Join(codes, ", ")
		if st == 401 {
			schema, desc = map[string]any{"$ref": schemasPrefix + "Unauthorized"}, "The bearer credential is missing, malformed, unknown or revoked."
		}
		responses[strconv.Itoa(st)] = map[string]any{"description": desc,
			"content": map[string]any{"application/json": map[string]any{"schema": schema}}}
	}
	entry["responses"] = responses
	return entry, nil
}

// errorCodes lists the codes an operation may answer: those of every operation of its
// kind and its own.
func (o *operation) errorCodes() []string {
	codes := []string{accountable.ECodeInternal, accountable.ECodeUnsupportedAPIVersion}
	if !o.Public {
		codes = append(codes, accountable.ECodeUnauthorized, accountable.ECodeNotFound, accountable.ECodeValidationFailed,
			accountable.ECodeRateLimited, accountable.ECodeLedgerUnavailable, accountable.ECodeAuthorizationUnavailable,
			accountable.ECodeDeadlineExceeded)
	}
	if o.Public && !o.Unmetered { // over its address's budget (publiclimit.go)
		codes = append(codes, accountable.ECodeRateLimited)
	}
	if len(o.params) > 0 {
		codes = append(codes, accountable.ECodeValidationFailed)
	}
	if o.hasBody || o.Method != "GET" {
		codes = append(codes, accountable.ECodeInvalidJSON, accountable.ECodeValidationFailed, accountable.ECodePayloadTooLarge,
			accountable.ECodeUnsupportedMediaType)
	}
	if o.Method != "GET" && !o.Public {
		// forbidden: a session-cookie request without its CSRF token (verifySession).
		codes = append(codes, accountable.ECodeWriteConflict, accountable.ECodeResourceBusy, accountable.ECodeForbidden)
	}
	if o.scope() != "" {
		codes = append(codes, accountable.ECodeForbidden) // an access token without the scope (requireScope)
	}
	switch o.Idempotency {
	case RequiredIdempotency:
		codes = append(codes, accountable.ECodeIdempotencyKeyRequired)
		fallthrough
	case OptionalIdempotency:
		codes = append(codes, accountable.ECodeIdempotencyKeyInvalid, accountable.ECodeIdempotencyKeyReused,
			accountable.ECodeIdempotencyInProgress)
	}
	if o.Failure != nil {
		// Its failure body also answers an oversized body on its path, refused before it runs.
		codes = append(codes, accountable.ECodePayloadTooLarge)
	}
	codes = append(codes, o.Errors...)
	slices.Sort(codes)
	return slices.Compact(codes)
}

// normalizeSchemas walks every schema of the document: a nullable enum also admits null,
// and a nullable reference is written anyOf [ref, null].
func normalizeSchemas(v any) {
	switch x := v.(type) {
	case map[string]any:
		if enum, ok := x["enum"].([]any); ok && typeAdmitsNull(x["type"]) && !slices.Contains(enum, nil) {
			x["enum"] = append(enum, nil)
		}
		for _, child := range x {
			normalizeSchemas(child)
		}
	case []any:
		for _, child := range x {
			normalizeSchemas(child)
		}
	}
}

func typeAdmitsNull(t any) bool {
	list, ok := t.([]any)
	return ok && slices.Contains(list, any("null"))
}

// oauthScheme describes the OAuth access tokens of MCP (and other) clients: the
// authorization code flow with PKCE of the service's authorization server, sent as a
// bearer token like a key; each operation names the scope it needs.
func oauthScheme(siteURL string) map[string]any {
	scopes := map[string]any{}
	for _, sc := range accountable.ScopesSupported {
		scopes[sc] = accountable.ScopeDescriptions[sc]
	}
	return map[string]any{"type": "oauth2",
		"description": "OAuth 2.1 access token (authorization code with PKCE S256; dynamic client registration at " + siteURL +
			"/oauth/register; metadata at " + siteURL + "/.well-known/oauth-authorization-server): Authorization: Bearer ory_at_...",
		"flows": map[string]any{"authorizationCode": map[string]any{"authorizationUrl": siteURL + OAuthAuthorizePath,
			"tokenUrl": siteURL + OAuthTokenPath, "refreshUrl": siteURL + OAuthTokenPath, "scopes": scopes}}}
}
