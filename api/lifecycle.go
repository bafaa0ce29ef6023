package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
)

// LifecycleStore is what the Lifecycle area needs.
type LifecycleStore interface {
	ApplyLifecycle(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.ApplyLifecycle) (accountable.LifecycleResult, bool, error)
}

// lifecycleStore is the store of the Lifecycle area.
var lifecycleStore = needsStore[LifecycleStore]()

func init() { servesOperations(60, (*Server).lifecycleOperations) }

// lifecycleOperations is the Lifecycle area.
func (s *Server) lifecycleOperations() []operation {
	return []operation{
		op(Operation{ID: "applyLifecycle", Method: fiber.MethodPost, Path: "/lifecycle", Area: "Lifecycle",
			Idempotency:      OptionalIdempotency,
			EnvelopeStatuses: map[int]string{fiber.StatusUnprocessableEntity: "lifecycle_blocked: the action changed nothing; data is the result with ok false and blockReasons."},
			Summary:          "Pause, resume, retry or cancel an initiative, workstream or milestone (through their tasks), a task or a run.",
			Description: "Tasks: pause moves todo and in_progress to blocked, resume blocked to todo, cancel anything not completed to cancelled, " +
				"retry cancelled to todo; an initiative itself moves active ↔ paused, to cancelled, and back to active on retry; a run is paused, " +
				"resumed or cancelled as its actions do. data.affected counts what changed; an action that changes nothing answers 422 with ok false."},
			s.applyLifecycle),
	}
}

// applyLifecycle: POST /lifecycle.
func (s *Server) applyLifecycle(c *call, in *accountable.ApplyLifecycle) (accountable.LifecycleResult, error) {
	cmd := *in
	cmd.ID = accountable.NormalizeUUID(cmd.ID)
	res, dup, err := lifecycleStore.of(s).ApplyLifecycle(c.ctx, c.principal, c.idem, cmd)
	c.replayed(dup)
	if err == nil && !res.OK {
		c.status = fiber.StatusUnprocessableEntity
	}
	return res, err
}
