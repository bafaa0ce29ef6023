package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/webhook"
)

// WebhookStore is what the Webhooks area needs.
type WebhookStore interface {
	RegisterWebhook(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.RegisterWebhook, limit int,
		seal func(webhookID string) []byte) (accountable.WebhookRegistration, bool, error)
	ListWebhooks(ctx context.Context, workspaceID string) ([]accountable.Webhook, error)
	DeleteWebhook(ctx context.Context, p accountable.Principal, id string) (accountable.Webhook, error)
	ListWebhookAttempts(ctx context.Context, workspaceID, webhookID string, limit int) ([]accountable.WebhookAttempt, error)
}

const webhooksArea = "Webhooks"

// webhookStore is the store of the Webhooks area.
var webhookStore = needsStore[WebhookStore]()

func init() { servesOperations(180, (*Server).webhookOperations) }

// webhookOperations are the Webhooks area (CONTRACT.md, "Events and webhooks").
func (s *Server) webhookOperations() []operation {
	return []operation{
		op(Operation{ID: "registerWebhook", Method: fiber.MethodPost, Path: "/webhooks", Area: webhooksArea,
			Status: fiber.StatusCreated, Idempotency: OptionalIdempotency, Errors: []string{accountable.ECodeWebhookLimitReached},
			Summary: "Register an endpoint that receives the workspace's ledger events of event_types (\"*\": all), from now on, in " +
				"stream order, each POST signed: X-Svc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, \"<t>.<raw body>\")>. " +
				"The secret (given, or generated) is answered this once. Private, loopback, link-local and special-purpose " +
				"addresses (NAT64 and other translation ranges among them) are refused unless the server allows them " +
				"(WEBHOOK_ALLOW_PRIVATE), as are ports other than 80 and 443 unless it names others (WEBHOOK_PORTS) or allows " +
				"private addresses; 403 forbidden when the server has no WEBHOOK_SECRET_KEY. A workspace has at most WEBHOOK_MAX_ENDPOINTS active endpoints " +
				"(20 by default; deleted ones do not count): one more is 409 webhook_limit_reached, with details.limit."},
			s.registerWebhook),
		op(Operation{ID: "listWebhooks", Method: fiber.MethodGet, Path: "/webhooks", Area: webhooksArea,
			Summary: "List the workspace's endpoints (never their secrets), newest first."}, s.listWebhooks),
		op(Operation{ID: "deleteWebhook", Method: fiber.MethodDelete, Path: "/webhooks/{webhookId}", Area: webhooksArea,
			Summary: "Delete an endpoint: its deliveries stop (an attempt in flight may still arrive). Deleting it again answers it as it is."},
			s.deleteWebhook),
		op(Operation{ID: "listWebhookDeliveries", Method: fiber.MethodGet, Path: "/webhooks/{webhookId}/deliveries", Area: webhooksArea,
			Summary: "Every delivery attempt to the endpoint, newest first: the delivery id (the same for every attempt of one event), " +
				"the attempt, the receiver's status or why there was none, and how long it took."},
			s.listWebhookDeliveries),
	}
}

type webhookRef struct {
	WebhookID string `json:"-" path:"webhookId" format:"uuid" description:"The endpoint."`
}

type webhookDeliveriesQuery struct {
	webhookRef
	Limit *int `json:"-" query:"limit" minimum:"1" maximum:"200" description:"At most this many attempts (default 50)."`
}

// registerWebhook: POST /webhooks.
func (s *Server) registerWebhook(c *call, in *accountable.RegisterWebhook) (accountable.WebhookRegistration, error) {
	key := s.cfg.WebhookSecretKey
	if !key.Configured() {
		return accountable.WebhookRegistration{}, accountable.Errorf(accountable.ECodeForbidden,
			"Webhooks are not enabled on this server: it has no WEBHOOK_SECRET_KEY to keep their secrets with.")
	}
	if err := s.cfg.WebhookTargets.CheckURL(in.URL); err != nil {
		return accountable.WebhookRegistration{}, err
	}
	secret := webhook.NewSecret()
	if in.Secret != nil {
		secret = *in.Secret
	}
	limit := s.cfg.WebhookMaxEndpoints
	if limit <= 0 {
		limit = accountable.DefaultWebhookMaxEndpoints
	}
	reg, dup, err := webhookStore.of(s).RegisterWebhook(c.ctx, c.principal, c.idem, *in, limit,
		func(id string) []byte { return key.Seal(id, secret) })
	if err != nil {
		return reg, err
	}
	if !dup {
		reg.Secret = &secret
	}
	c.replayed(dup)
	return reg, nil
}

// listWebhooks: GET /webhooks. data is the array, every endpoint (a workspace has at most
// WEBHOOK_MAX_ENDPOINTS, so there is no next page), meta.count how many.
func (s *Server) listWebhooks(c *call, _ *struct{}) ([]accountable.Webhook, error) {
	list, err := webhookStore.of(s).ListWebhooks(c.ctx, c.principal.WorkspaceID)
	n := len(list)
	c.meta.Count = &n
	return list, err
}

// deleteWebhook: DELETE /webhooks/{webhookId}.
func (s *Server) deleteWebhook(c *call, in *webhookRef) (accountable.Webhook, error) {
	return webhookStore.of(s).DeleteWebhook(c.ctx, c.principal, accountable.NormalizeUUID(in.WebhookID))
}

// listWebhookDeliveries: GET /webhooks/{webhookId}/deliveries.
func (s *Server) listWebhookDeliveries(c *call, in *webhookDeliveriesQuery) ([]accountable.WebhookAttempt, error) {
	limit := 50
	if in.Limit != nil {
		limit = *in.Limit
	}
	list, err := webhookStore.of(s).ListWebhookAttempts(c.ctx, c.principal.WorkspaceID, accountable.NormalizeUUID(in.WebhookID), limit)
	n := len(list)
	c.meta.Count, c.meta.Limit = &n, &limit
	return list, err
}
