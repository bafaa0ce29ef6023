package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	temporallog "go.temporal.io/sdk/log"

	"github.com/accountablework/accountable/api"
)

func quietTemporalLogger() temporallog.Logger {
	return temporallog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// openAPI validates responses against the document the server generates and serves,
// with an independent JSON Schema 2020-12 implementation (santhosh-tekuri/jsonschema).
type openAPI struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema
}

const openAPIURL = "https://accountable.invalid/api/v1/openapi.json"

var (
	oasOnce sync.Once
	oasDoc  *openAPI
)

// loadOpenAPI compiles the served document once per test binary (it is the same for
// every server: generated from the operation table).
func loadOpenAPI(t *testing.T, raw []byte) *openAPI {
	oasOnce.Do(func() {
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			panic(err)
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			panic(err)
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.AssertFormat()
		if err := c.AddResource(openAPIURL, v); err != nil {
			panic(err)
		}
		oasDoc = &openAPI{doc: doc, compiler: c, compiled: map[string]*jsonschema.Schema{}}
	})
	return oasDoc
}

// compile returns the schema at the JSON Pointer ptr of the document.
func (o *openAPI) compile(ptr string) (*jsonschema.Schema, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s, ok := o.compiled[ptr]; ok {
		return s, nil
	}
	s, err := o.compiler.Compile(openAPIURL + "#" + ptr)
	if err == nil {
		o.compiled[ptr] = s
	}
	return s, err
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// check validates body against the documented response of (method, path, status): the
// status must be documented and the body must satisfy its schema.
func (o *openAPI) check(t *testing.T, method, path string, status int, body any) {
	t.Helper()
	if err := o.validate(method, path, status, body); err != nil {
		t.Fatal(err)
	}
}

// answersIn reports whether the document gives (method, path) an answer of status in
// the media type of contentType other than JSON.
func (o *openAPI) answersIn(method, path string, status int, contentType string) bool {
	item, _ := o.doc["paths"].(map[string]any)[path].(map[string]any)
	op, _ := item[strings.ToLower(method)].(map[string]any)
	responses, _ := op["responses"].(map[string]any)
	return documentsMedia(responses, status, contentType)
}

// validate is check returning what is wrong.
func (o *openAPI) validate(method, path string, status int, body any) error {
	m := strings.ToLower(method)
	paths, _ := o.doc["paths"].(map[string]any)
	item, ok := paths[path].(map[string]any)
	if !ok {
		return fmt.Errorf("openapi: path %s is not documented", path)
	}
	op, ok := item[m].(map[string]any)
	if !ok {
		if status == http.StatusMethodNotAllowed {
			return nil
		}
		return fmt.Errorf("openapi: %s %s is not documented", method, path)
	}
	responses := op["responses"].(map[string]any)
	code := strconv.Itoa(status)
	resp, ok := responses[code].(map[string]any)
	if !ok {
		return fmt.Errorf("openapi: %s %s does not document status %d (body %v)", method, path, status, body)
	}
	ptr := "/paths/" + escapePointer(path) + "/" + m + "/responses/" + code
	if ref, ok := resp["$ref"].(string); ok {
		ptr = strings.TrimPrefix(ref, "#")
	}
	return o.validateAt(ptr+"/content/application~1json/schema", body)
}

// validateAt validates body against the schema at the JSON Pointer ptr of the document.
func (o *openAPI) validateAt(ptr string, body any) error {
	sch, err := o.compile(ptr)
	if err != nil {
		return fmt.Errorf("openapi: compile %s: %v", ptr, err)
	}
	// Validate the value as the JSON decoder of the schema library sees it.
	raw, _ := json.Marshal(body)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("openapi: %s does not match the document: %v\nbody: %s", ptr, err, raw)
	}
	return nil
}

// The route table and the document describe the same operations.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	e := newEnv(t, nil)
	doc := e.oas.doc
	documented := map[string]bool{}
	for path, item := range doc["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			if method == "servers" || method == "parameters" {
				continue
			}
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	served := map[string]bool{}
	for _, r := range e.server.App().GetRoutes(true) {
		if r.Method == http.MethodHead || r.Method == "USE" {
			continue
		}
		path := r.Path
		switch {
		case strings.HasPrefix(path, api.V1Root):
			path = strings.TrimPrefix(path, api.V1Root)
		case strings.HasPrefix(path, api.ClientRoot):
			path = strings.TrimPrefix(path, api.ClientRoot)
		}
		if path == "" {
			path = "/"
		}
		// Fiber ":name" -> OpenAPI "{name}"; a last "+" (a PathTail operation's rest of the
		// path) -> the one parameter a documented path of the method has there.
		parts := strings.Split(path, "/")
		for i, p := range parts {
			if strings.HasPrefix(p, ":") {
				parts[i] = "{" + p[1:] + "}"
			}
			if p == "+" && i == len(parts)-1 {
				prefix := r.Method + " " + strings.Join(parts[:i], "/") + "/{"
				for op := range documented {
					if rest, ok := strings.CutPrefix(op, prefix); ok && strings.HasSuffix(rest, "}") && !strings.Contains(rest, "/") {
						parts[i] = "{" + rest
					}
				}
			}
		}
		served[r.Method+" "+strings.Join(parts, "/")] = true
	}
	var missing, extra []string
	for op := range served {
		if !documented[op] && !slices.Contains(api.WebRoutes, op) && !slices.Contains(api.MCPRoutes, op) && !slices.Contains(api.OAuthRoutes, op) {
			missing = append(missing, op)
		}
	}
	for op := range documented {
		if !served[op] {
			extra = append(extra, op)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("served but not documented: %v\ndocumented but not served: %v", missing, extra)
	}
	// Every documented schema compiles.
	for name := range doc["components"].(map[string]any)["schemas"].(map[string]any) {
		if _, err := e.oas.compile("/components/schemas/" + escapePointer(name)); err != nil {
			t.Errorf("schema %s: %v", name, err)
		}
	}
	if v := doc["openapi"]; v != "3.1.0" {
		t.Fatalf("openapi version %v", v)
	}
}
