package api

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
)

// Account-free operations (Operation.Public) take no credential, so only the client's
// address (clientOf: the connection's, or a trusted proxy's header) tells one caller from
// another. Those that do work per request (a diagnosis, a receipt's schema and signature
// checks, readiness probes of PostgreSQL and Temporal, a metrics scrape) share one token
// bucket per address, of PublicRateLimit tokens a second with bursts of PublicRateBurst:
// one address sending as fast as it can then gets 429 rate_limited (with retryAfter),
// held like the other limits' refusals once it resends without waiting (refuse), instead
// of taking the cores every other client needs. Unmetered operations answer from memory
// and are not charged.
//
// A request costs a token per started publicCostUnit of its body: the work grows with the
// body (validating a receipt of 860 KiB took 84 ms of a core here, one of 5 KiB 0.6 ms), so
// a token a request would let an address that sends the largest bodies spend a hundred
// times what one sending ordinary ones does.

// publicCostUnit is the share of a request body that costs an account-free request
// another token.
const publicCostUnit = 64 << 10

// msgTooManyPublic is the refusal of an address over its budget.
const msgTooManyPublic = "Too many account-free requests from this address; retry after error.retryAfter seconds."

// publicGate is the handler that charges an account-free operation to its client's
// address; none for an operation that is not charged, or when there is no limit.
func (s *Server) publicGate(o *operation) []fiber.Handler {
	if !o.Public || o.Unmetered || s.publicClients == nil {
		return nil
	}
	return []fiber.Handler{func(c *fiber.Ctx) error { return s.limitClient(c, o) }}
}

// limitClient refuses a request of o from an address over its budget, with o's own
// failure body when it has one. A tool call the MCP server dispatched in-process (it
// carries its /mcp request's principal) was charged to that request's credential.
func (s *Server) limitClient(c *fiber.Ctx, o *operation) error {
	if _, inProcess := c.Locals(localPrincipal).(accountable.Principal); inProcess {
		return c.Next()
	}
	name, now := s.clientOf(c), time.Now()
	if ok, wait := s.publicClients.takeN(name, 1+len(c.Request().Body())/publicCostUnit, now); !ok {
		if o.Failure != nil {
			c.Locals(localFailure, o.Failure)
		}
		return s.refuse(s.publicRefusals, name, now, RateLimited(accountable.ECodeRateLimited, msgTooManyPublic, wait))
	}
	return c.Next()
}
