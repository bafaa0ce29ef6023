package api

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gowebpki/jcs"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/accountablework/accountable"
)

// openAPIDocument is the OpenAPI 3.1 description of every operation served. It is also
// the source of the request schemas: request bodies are validated against the very
// schemas the document publishes, and tests validate real responses against it too.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPIDocument returns a copy of the published OpenAPI document.
func OpenAPIDocument() []byte { return bytes.Clone(openAPIDocument) }

const openAPIURL = "https://accountable.invalid/api/v1/openapi.json"

// Schemas compiles JSON Schemas (2020-12) out of the OpenAPI document.
type Schemas struct {
	compiler *jsonschema.Compiler
}

// NewSchemas loads the embedded OpenAPI document.
func NewSchemas() (*Schemas, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(openAPIDocument))
	if err != nil {
		return nil, fmt.Errorf("api: openapi.json: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(openAPIURL, doc); err != nil {
		return nil, fmt.Errorf("api: openapi.json: %w", err)
	}
	return &Schemas{compiler: c}, nil
}

// Compile returns the schema at the JSON Pointer ptr of the document, such as
// "/components/schemas/Task".
func (s *Schemas) Compile(ptr string) (*jsonschema.Schema, error) {
	return s.compiler.Compile(openAPIURL + "#" + ptr)
}

// Component returns the compiled schema of a named component (panics when the document
// lacks it: a programming error caught by every test).
func (s *Schemas) Component(name string) *jsonschema.Schema {
	sch, err := s.Compile("/components/schemas/" + name)
	if err != nil {
		panic(fmt.Sprintf("api: schema %s: %v", name, err))
	}
	return sch
}

var printer = message.NewPrinter(language.English)

// validationIssues flattens a schema validation error into one issue per failing value,
// each at the JSON Pointer of the value in the request.
func validationIssues(err error) accountable.Issues {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return accountable.Issues{{Path: "", Message: err.Error()}}
	}
	byPath := map[string][]string{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			path := pointer(e.InstanceLocation)
			msg := e.ErrorKind.LocalizedString(printer)
			for _, m := range byPath[path] {
				if m == msg {
					return
				}
			}
			byPath[path] = append(byPath[path], msg)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	issues := make(accountable.Issues, 0, len(byPath))
	for path, msgs := range byPath {
		// A nullable field fails once per alternative ("want string", "want null"): one issue.
		issues = append(issues, accountable.Issue{Path: path, Message: strings.Join(msgs, " or ")})
	}
	sort.Slice(issues, func(i, j int) bool { return issues[i].Path < issues[j].Path })
	return issues
}

// pointer renders a location as a JSON Pointer (RFC 6901).
func pointer(loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// decodeJSON checks body against sch and decodes it into dst. An empty body is taken as
// {} (commands whose fields are all optional accept it). It returns invalid_json for text
// that is not one JSON object, or that has no RFC 8785 canonical form (duplicate keys,
// numbers beyond double range, lone surrogates: what the ledger could not hash), and
// validation_failed, with issues, for schema violations. It also returns the canonical
// form, which the idempotency fingerprint reuses.
func decodeJSON(sch *jsonschema.Schema, body []byte, dst any) (map[string]any, []byte, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return nil, nil, accountable.Errorf(accountable.ECodeInvalidJSON, "The request body is not valid JSON.")
	}
	canonical, err := jcs.Transform(body)
	if err != nil {
		return nil, nil, accountable.Errorf(accountable.ECodeInvalidJSON,
			"The request body must be I-JSON (RFC 7493): no duplicate member names, numbers within double precision, valid Unicode.")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil, accountable.Errorf(accountable.ECodeInvalidJSON, "The request body must be a JSON object.")
	}
	if err := sch.Validate(v); err != nil {
		return nil, nil, accountable.ValidationError(validationIssues(err)...)
	}
	if err := json.Unmarshal(body, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, nil, accountable.ValidationError(accountable.Issue{Path: "/" + strings.ReplaceAll(te.Field, ".", "/"), Message: "value out of range or of the wrong type"})
		}
		return nil, nil, accountable.Errorf(accountable.ECodeInvalidJSON, "The request body could not be decoded.")
	}
	return obj, canonical, nil
}
