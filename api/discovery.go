package api

import (
	"context"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.temporal.io/sdk/client"

	"github.com/accountablework/accountable"
)

// areas are the specification's areas in its order; an area is available once it has
// operations in the table.
var areas = []string{
	"Work", "Initiatives", "Operating processes", "Operating map", "Discovery runs", "Handoffs", "Events",
	"Projections", "Episodes", "Receipt validation", "Receipt import", "Workload diagnosis", "Content Studio",
	"Decisions", "Artifacts", "Launches", "Runs", "Lifecycle", "Deduplication", "Credential", "API discovery",
	"Controllers",
}

// serviceArea tags the probes, which are not an area of the specification.
const serviceArea = "Service"

func init() {
	servesOperations(10, (*Server).discoveryOperations)
	servesOperations(190, (*Server).serviceOperations)
}

// discoveryOperations is the API discovery and Credential areas.
func (s *Server) discoveryOperations() []operation {
	return []operation{
		op(Operation{ID: "getApiIndex", Method: fiber.MethodGet, Path: "/", Area: "API discovery", Public: true, Unmetered: true,
			Summary: "The v1 index: areas, their operations and links."}, s.getIndex),
		op(Operation{ID: "getOpenAPI", Method: fiber.MethodGet, Path: "/openapi.json", Area: "API discovery", Public: true, Unmetered: true, Raw: true,
			Summary: "This OpenAPI 3.1 document."}, s.getOpenAPI),
		op(Operation{ID: "listErrors", Method: fiber.MethodGet, Path: "/errors", Area: "API discovery", Public: true, Unmetered: true,
			Summary: "The error catalogue: every code with its HTTP status."}, s.listErrors),
		op(Operation{ID: "getCredential", Method: fiber.MethodGet, Path: "/credential", Area: "Credential",
			Summary: "The calling key: prefix, name, kind, user, workspace, created and last used."}, s.getCredential),
	}
}

// Area is one area of the index.
type Area struct {
	Name       string   `json:"name"`
	Status     string   `json:"status" enum:"available,planned"`
	Operations []string `json:"operations"`
}

// APIIndex is the v1 index.
type APIIndex struct {
	Name          string     `json:"name"`
	APIVersion    string     `json:"api_version"`
	ContractDates []string   `json:"contract_dates"`
	Links         IndexLinks `json:"links"`
	Areas         []Area     `json:"areas"`
}

// IndexLinks are the index's links.
type IndexLinks struct {
	Self    string `json:"self"`
	OpenAPI string `json:"openapi"`
	Errors  string `json:"errors"`
}

// getIndex: GET / (account-free).
func (s *Server) getIndex(c *call, _ *struct{}) (APIIndex, error) {
	root := s.cfg.SiteURL + V1Root
	out := APIIndex{
		Name: "Accountable Work Service", APIVersion: accountable.APIVersion, ContractDates: accountable.ContractDates,
		Links: IndexLinks{Self: root, OpenAPI: root + "/openapi.json", Errors: root + "/errors"},
	}
	for _, a := range areas {
		area := Area{Name: a, Status: "planned", Operations: []string{}}
		for _, o := range s.ops {
			if o.Area == a {
				area.Operations = append(area.Operations, o.Method+" "+strings.TrimSuffix(o.Root, "/")+o.Path)
			}
		}
		if len(area.Operations) > 0 {
			area.Status = "available"
		}
		out.Areas = append(out.Areas, area)
	}
	return out, nil
}

// getOpenAPI: GET /openapi.json (account-free).
func (s *Server) getOpenAPI(c *call, _ *struct{}) (struct{}, error) {
	c.fiber.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	return struct{}{}, c.fiber.Send(s.document)
}

// OpenAPIDocument returns the OpenAPI document the server serves.
func (s *Server) OpenAPIDocument() []byte { return s.document }

// listErrors: GET /errors (account-free).
func (s *Server) listErrors(c *call, _ *struct{}) ([]accountable.ErrorSpec, error) {
	specs := accountable.ErrorCatalogue()
	n := len(specs)
	c.meta.Count = &n
	return specs, nil
}

// getCredential: GET /credential.
func (s *Server) getCredential(c *call, _ *struct{}) (accountable.Credential, error) {
	k := apiKey(c.fiber)
	if k.ID == "" { // authenticated by a session cookie or an OAuth token: there is no key to describe
		return accountable.Credential{}, accountable.Errorf(accountable.ECodeNotFound,
			"GET /credential describes the API key of the request; this request was authenticated otherwise (a session cookie or an OAuth access token).")
	}
	ws, err := s.deps.Keys.GetWorkspace(c.ctx, c.principal.WorkspaceID)
	if err != nil {
		return accountable.Credential{}, err
	}
	lastUsed := k.LastUsedAt
	if t, ok := s.usage.pendingUse(k.ID); ok && (lastUsed == nil || t.After(*lastUsed)) {
		lastUsed = &t
	}
	return accountable.Credential{
		KeyPrefix: k.Prefix, Name: k.Name, Kind: k.Kind(), AgentName: k.AgentName,
		User:      accountable.UserRef{ID: c.principal.UserID, Email: c.principal.UserEmail},
		Workspace: accountable.WorkspaceRef{ID: ws.ID, Name: ws.Name}, CreatedAt: accountable.TimeOf(k.CreatedAt),
		LastUsedAt: accountable.TimePtr(lastUsed),
	}, nil
}

// Bootstrap is what a client learns from GET {site_url}/api/client/bootstrap.
type Bootstrap struct {
	User       accountable.UserRef      `json:"user"`
	Workspace  accountable.WorkspaceRef `json:"workspace"`
	KeyPrefix  string                   `json:"key_prefix"`
	APIBaseURL string                   `json:"api_base_url"`
	APIVersion string                   `json:"api_version"`
}

// getBootstrap: GET {site_url}/api/client/bootstrap.
func (s *Server) getBootstrap(c *call, _ *struct{}) (Bootstrap, error) {
	ws, err := s.deps.Keys.GetWorkspace(c.ctx, c.principal.WorkspaceID)
	if err != nil {
		return Bootstrap{}, err
	}
	return Bootstrap{
		User:      accountable.UserRef{ID: c.principal.UserID, Email: c.principal.UserEmail},
		Workspace: accountable.WorkspaceRef{ID: ws.ID, Name: ws.Name},
		KeyPrefix: c.principal.KeyPrefix, APIBaseURL: s.cfg.SiteURL + V1Root, APIVersion: accountable.APIVersion,
	}, nil
}

// serviceOperations are served outside the v1 root: the client bootstrap, the probes and
// the metrics.
func (s *Server) serviceOperations() []operation {
	ops := []operation{
		op(Operation{ID: "getBootstrap", Method: fiber.MethodGet, Path: "/bootstrap", Root: ClientRoot, Area: "Credential",
			Summary: "The user, workspace and key prefix of the credential, and the API's base URL."}, s.getBootstrap),
		op(Operation{ID: "getHealth", Method: fiber.MethodGet, Path: "/healthz", Root: "/", Area: serviceArea, Public: true, Unmetered: true, Bare: true,
			Summary: "The process is up."}, s.getHealth),
		op(Operation{ID: "getReadiness", Method: fiber.MethodGet, Path: "/readyz", Root: "/", Area: serviceArea, Public: true, Bare: true,
			Summary: "PostgreSQL and Temporal are reachable (503 otherwise).", BareStatuses: []int{fiber.StatusServiceUnavailable}}, s.getReadiness),
	}
	if s.deps.MetricsHandler != nil {
		ops = append(ops, op(Operation{ID: "getMetrics", Method: fiber.MethodGet, Path: "/metrics", Root: "/", Area: serviceArea,
			Public: true, Raw: true, ContentType: "text/plain; version=0.0.4",
			Summary: "Prometheus metrics: requests by route, status and duration; ledger appends; idempotent replays; " +
				"workflow starts, signals and failures; database pool use."}, s.getMetrics))
	}
	return ops
}

// getMetrics: GET /metrics (Prometheus text format).
func (s *Server) getMetrics(c *call, _ *struct{}) (struct{}, error) {
	return struct{}{}, s.deps.MetricsHandler(c.fiber)
}

// Health is the answer of the probes.
type Health struct {
	Status string            `json:"status" enum:"ok,unavailable"`
	Checks map[string]string `json:"checks,omitempty"`
}

// getHealth: GET /healthz, the process is up.
func (s *Server) getHealth(c *call, _ *struct{}) (Health, error) {
	return Health{Status: "ok"}, nil
}

// getReadiness: GET /readyz, PostgreSQL and Temporal reachable (503 otherwise).
func (s *Server) getReadiness(c *call, _ *struct{}) (Health, error) {
	ctx, cancel := context.WithTimeout(c.ctx, 3*time.Second)
	defer cancel()
	out := Health{Status: "ok", Checks: map[string]string{"postgres": "ok", "temporal": "ok"}}
	if err := s.deps.DB.Ping(ctx); err != nil {
		out.Checks["postgres"], out.Status = "unavailable", "unavailable"
	}
	if _, err := s.deps.Workflows.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		out.Checks["temporal"], out.Status = "unavailable", "unavailable"
	}
	if out.Status != "ok" {
		c.status = fiber.StatusServiceUnavailable
	}
	return out, nil
}
