package api

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.temporal.io/sdk/client"

	"github.com/accountablework/accountable"
)

// areas are the specification's areas in its order; an area is available once it has
// operations here.
var areas = []struct {
	name     string
	prefixes []string
}{
	{"Work", []string{"/work"}}, {"Initiatives", nil}, {"Operating processes", nil}, {"Operating map", nil},
	{"Discovery runs", nil}, {"Handoffs", nil}, {"Events", []string{"/events"}}, {"Projections", nil},
	{"Episodes", nil}, {"Receipt validation", nil}, {"Receipt import", nil}, {"Workload diagnosis", nil},
	{"Content Studio", nil}, {"Decisions", nil}, {"Artifacts", nil}, {"Launches", nil}, {"Runs", nil},
	{"Lifecycle", nil}, {"Deduplication", nil}, {"Credential", []string{"/credential"}},
	{"API discovery", []string{"/", "/openapi.json", "/errors"}}, {"Controllers", nil},
}

type areaJSON struct {
	Name       string   `json:"name"`
	Status     string   `json:"status"`
	Operations []string `json:"operations"`
}

type indexJSON struct {
	Name          string            `json:"name"`
	APIVersion    string            `json:"api_version"`
	ContractDates []string          `json:"contract_dates"`
	Links         map[string]string `json:"links"`
	Areas         []areaJSON        `json:"areas"`
}

// getIndex: GET / (account-free).
func (s *Server) getIndex(c *fiber.Ctx) error {
	routes := s.v1Routes()
	out := indexJSON{
		Name: "Accountable Work Service", APIVersion: accountable.APIVersion, ContractDates: accountable.ContractDates,
		Links: map[string]string{"self": s.cfg.SiteURL + V1Root, "openapi": s.cfg.SiteURL + V1Root + "/openapi.json",
			"errors": s.cfg.SiteURL + V1Root + "/errors"},
	}
	for _, a := range areas {
		area := areaJSON{Name: a.name, Status: "planned", Operations: []string{}}
		for _, r := range routes {
			for _, prefix := range a.prefixes {
				if r.path == prefix || (prefix != "/" && len(r.path) > len(prefix) && r.path[:len(prefix)+1] == prefix+"/") {
					area.Operations = append(area.Operations, r.method+" "+r.path)
				}
			}
		}
		if len(area.Operations) > 0 {
			area.Status = "available"
		}
		out.Areas = append(out.Areas, area)
	}
	return respond(c, fiber.StatusOK, out, newMeta(c))
}

// getOpenAPI: GET /openapi.json (account-free).
func (s *Server) getOpenAPI(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	return c.Send(openAPIDocument)
}

// listErrors: GET /errors (account-free).
func (s *Server) listErrors(c *fiber.Ctx) error {
	specs := accountable.ErrorCatalogue()
	m := newMeta(c)
	n := len(specs)
	m.Count = &n
	return respond(c, fiber.StatusOK, specs, m)
}

type userJSON struct {
	ID    string `json:"id"`
	Email string `json:"email"`
}

type workspaceJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type credentialJSON struct {
	KeyPrefix  string        `json:"key_prefix"`
	Name       string        `json:"name"`
	User       userJSON      `json:"user"`
	Workspace  workspaceJSON `json:"workspace"`
	CreatedAt  string        `json:"created_at"`
	LastUsedAt *string       `json:"last_used_at"`
}

// getCredential: GET /credential.
func (s *Server) getCredential(c *fiber.Ctx) error {
	p := principal(c)
	k := apiKey(c)
	ws, err := s.deps.Keys.GetWorkspace(c.UserContext(), p.WorkspaceID)
	if err != nil {
		return err
	}
	lastUsed := k.LastUsedAt
	if t, ok := s.usage.pendingUse(k.ID); ok && (lastUsed == nil || t.After(*lastUsed)) {
		lastUsed = &t
	}
	return respond(c, fiber.StatusOK, credentialJSON{
		KeyPrefix: k.Prefix, Name: k.Name, User: userJSON{ID: p.UserID, Email: p.UserEmail},
		Workspace: workspaceJSON{ID: ws.ID, Name: ws.Name}, CreatedAt: accountable.FormatTime(k.CreatedAt),
		LastUsedAt: formatTimePtr(lastUsed),
	}, newMeta(c))
}

type bootstrapJSON struct {
	User       userJSON      `json:"user"`
	Workspace  workspaceJSON `json:"workspace"`
	KeyPrefix  string        `json:"key_prefix"`
	APIBaseURL string        `json:"api_base_url"`
	APIVersion string        `json:"api_version"`
}

// getBootstrap: GET {site_url}/api/client/bootstrap.
func (s *Server) getBootstrap(c *fiber.Ctx) error {
	p := principal(c)
	ws, err := s.deps.Keys.GetWorkspace(c.UserContext(), p.WorkspaceID)
	if err != nil {
		return err
	}
	return respond(c, fiber.StatusOK, bootstrapJSON{
		User: userJSON{ID: p.UserID, Email: p.UserEmail}, Workspace: workspaceJSON{ID: ws.ID, Name: ws.Name},
		KeyPrefix: p.KeyPrefix, APIBaseURL: s.cfg.SiteURL + V1Root, APIVersion: accountable.APIVersion,
	}, newMeta(c))
}

type healthJSON struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks,omitempty"`
}

// getHealth: GET /healthz, the process is up.
func (s *Server) getHealth(c *fiber.Ctx) error {
	return c.JSON(healthJSON{Status: "ok"})
}

// getReadiness: GET /readyz, PostgreSQL and Temporal reachable (503 otherwise).
func (s *Server) getReadiness(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), 3*time.Second)
	defer cancel()
	out := healthJSON{Status: "ok", Checks: map[string]string{"postgres": "ok", "temporal": "ok"}}
	if err := s.deps.DB.Ping(ctx); err != nil {
		out.Checks["postgres"], out.Status = "unavailable", "unavailable"
	}
	if _, err := s.deps.Workflows.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		out.Checks["temporal"], out.Status = "unavailable", "unavailable"
	}
	status := fiber.StatusOK
	if out.Status != "ok" {
		status = fiber.StatusServiceUnavailable
	}
	return c.Status(status).JSON(out)
}
