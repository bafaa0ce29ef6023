package api

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
)

// The workspace a request acts in is known only once its body is decoded: a body
// workspace_id (CONTRACT: any request body may carry one) re-scopes it after the
// credential and the query have. So the per-workspace budgets (the rate of
// WorkspaceRateLimit and the writes in flight of WorkspaceMaxInFlight) are charged here,
// once, after that: an operation charges them between binding its input and running its
// handler (operation.go), /mcp before its tool call (whose workspace is always the
// credential's). The per-key rate (rateLimit) is charged before the body is decoded: the
// key does not change, and it bounds what decoding and the membership lookup of a body
// workspace_id cost.

// admitWorkspace charges the workspace the request acts in: a token of its rate, and, for
// a write, one of its slots in flight (waiting its turn). It returns the release of the
// slot (call it when the request is done), or the 429 over either bound. A request the
// MCP server dispatched in-process was charged by its /mcp request.
func (s *Server) admitWorkspace(c *fiber.Ctx, write bool) (release func(), err error) {
	release = func() {}
	if c.Locals(localInProcess) != nil {
		return release, nil
	}
	ws, now := principal(c).WorkspaceID, time.Now()
	if ok, wait := s.workspaces.take(ws, now); !ok {
		return release, s.refuse(s.workspaceRefusals, ws, now,
			RateLimited(accountable.ECodeRateLimited, "Too many requests for this workspace.", wait))
	}
	if !write || s.inFlight == nil {
		return release, nil
	}
	release, ok := s.inFlight.acquire(ws)
	if !ok {
		return func() {}, RateLimited(accountable.ECodeRateLimited, "Too many writes in flight for this workspace.", time.Second)
	}
	return release, nil
}

// workspaceGate is the handler of a route whose workspace is final once it is
// authenticated (/mcp: tool calls act in the credential's workspace), every request
// counted a write; none when neither workspace bound is set, so that the default adds
// nothing to the chain.
func (s *Server) workspaceGate() []fiber.Handler {
	if s.workspaces == nil && s.inFlight == nil {
		return nil
	}
	return []fiber.Handler{func(c *fiber.Ctx) error {
		release, err := s.admitWorkspace(c, true)
		if err != nil {
			return err
		}
		defer release()
		return c.Next()
	}}
}
