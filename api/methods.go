package api

import (
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// refuseUnknownMethods answers a request whose method Fiber does not know (not one of its
// RequestMethods: "FOO", "get", "PROPFIND") through the one error handler, 405
// method_not_allowed in the envelope with a request id. Fiber would answer it itself,
// before any middleware, with a plain-text 400.
func (s *Server) refuseUnknownMethods() {
	known := s.app.Config().RequestMethods
	srv := s.app.Server()
	next := srv.Handler
	srv.Handler = func(fctx *fasthttp.RequestCtx) {
		method := fctx.Method()
		for _, m := range known {
			if string(method) == m {
				next(fctx)
				return
			}
		}
		c := s.app.AcquireCtx(fctx)
		defer s.app.ReleaseCtx(c)
		if err := s.handleError(c, fiber.ErrMethodNotAllowed); err != nil {
			s.log.Error("writing error response", "request_id", requestID(c), "err", err)
		}
	}
}
