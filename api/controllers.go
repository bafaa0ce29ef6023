package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
)

// ControllerStore is what the Controllers area needs.
type ControllerStore interface {
	ControllerState(ctx context.Context, workspaceID string, d accountable.Domain) (accountable.ControllerState, error)
	Reconcile(ctx context.Context, p accountable.Principal, in accountable.Reconcile) (accountable.ControllerResult, error)
}

// controllerStore is the store of the Controllers area.
var controllerStore = needsStore[ControllerStore]()

func init() { servesOperations(110, (*Server).controllerOperations) }

// controllerOperations is the Controllers area.
func (s *Server) controllerOperations() []operation {
	return []operation{
		op(Operation{ID: "getController", Method: fiber.MethodGet, Path: "/controllers/{domain}", Area: "Controllers",
			Summary: "Read a domain controller of the workspace: its spec (the signal it watches), spec_revision and last run."},
			s.getController),
		op(Operation{ID: "reconcileController", Method: fiber.MethodPost, Path: "/controllers/{domain}/reconcile", Area: "Controllers",
			Errors: []string{accountable.ECodeVersionConflict},
			Summary: "Run a domain controller once in shadow mode: a typed proposal admitted as a pending human decision (decision.proposed) with a neutral receipt, " +
				"or a no-op with its noop_reason (decision and receipt fields null). The body's idempotency_key names the run: the same key answers the same result with duplicate true " +
				"(an Idempotency-Key header is accepted and not needed). A spec_revision other than the controller's is 409 version_conflict."},
			s.reconcileController),
	}
}

type controllerRef struct {
	Domain accountable.Domain `json:"-" path:"domain" description:"The controller's domain."`
}

// getController: GET /controllers/{domain}.
func (s *Server) getController(c *call, in *controllerRef) (accountable.ControllerState, error) {
	return controllerStore.of(s).ControllerState(c.ctx, c.principal.WorkspaceID, in.Domain)
}

type reconcileRequest struct {
	controllerRef
	accountable.Reconcile
}

// reconcileController: POST /controllers/{domain}/reconcile.
func (s *Server) reconcileController(c *call, in *reconcileRequest) (accountable.ControllerResult, error) {
	cmd := in.Reconcile
	cmd.Domain = in.controllerRef.Domain
	res, err := controllerStore.of(s).Reconcile(c.ctx, c.principal, cmd)
	if res.Duplicate {
		res.Forget()
	}
	return res, err
}
