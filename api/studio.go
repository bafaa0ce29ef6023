package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
)

// studioOperations are the Content Studio operations beyond the estimate and the showcase
// (which are in artifacts.go): the checkout the public clients call to buy an estimate.
func (s *Server) studioOperations() []operation {
	return []operation{
		op(Operation{ID: "checkoutStudio", Method: fiber.MethodPost, Path: "/studio/checkout", Area: "Content Studio",
			NotOffered: true, Errors: []string{accountable.ECodeNotOffered},
			Summary: "Buy an estimate (the public clients' checkout, {estimateId}): not offered here. A self-hosted service sells " +
				"nothing, so every request this operation accepts (authenticated, in one of the caller's workspaces, a JSON object " +
				"body) is 501 not_offered, and nothing is charged, stored or changed. Estimates (POST /studio/estimate) are for " +
				"planning."},
			s.checkoutStudio),
	}
}

// checkoutStudio: POST /studio/checkout. It answers what the request is not: a sale.
func (s *Server) checkoutStudio(*call, *accountable.StudioCheckoutRequest) (struct{}, error) {
	return struct{}{}, accountable.ErrCheckoutNotOffered
}
