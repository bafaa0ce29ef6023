package api

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/workload"
)

func init() { servesOperations(150, (*Server).studioOperations) }

// studioOperations are the Content Studio area: the estimate, the showcase and the
// checkout, in the public clients' shapes. Their answers are in the {data, meta} envelope,
// although both clients read {estimateId, ...} and {examples, total, hasMore} from the body
// itself: the specification's envelope rule (every success but the workload diagnosis) wins
// over a client's read, as it does for decisions and artifacts (issue 25).
func (s *Server) studioOperations() []operation {
	return []operation{
		op(Operation{ID: "estimateStudio", Method: fiber.MethodPost, Path: "/studio/estimate", Area: "Content Studio",
			Summary: "Price content in credits, as the public clients ask ({prompt, contentTypes, variantCount?, brandUrl?, brandId?, " +
				"platform?}) and read ({estimateId, breakdown{brandIngestion, calibration, exploration, composition, outputs}, " +
				"totalCredits, estimatedPrice, expiresAt, showcase, requiresAuth, authRedirectUrl} in data, camelCase): a deterministic " +
				"breakdown from the studio's credit table (creditTableVersion). The same request always gets the same body and " +
				"estimateId; expiresAt is null (no clock in the answer); nothing is stored or charged."},
			s.estimateStudio),
		op(Operation{ID: "getStudioShowcase", Method: fiber.MethodGet, Path: "/studio/showcase", Area: "Content Studio",
			Summary: "Examples of what the studio makes, in a fixed order; data is {examples, total, hasMore}. Filters " +
				"(query: part of the title, industry or style; contentType; industry; style; featured) apply before paging; total " +
				"counts the matching examples. Offset pagination: limit default " + strconv.Itoa(workload.DefaultShowcaseLimit) +
				", max " + strconv.Itoa(workload.MaxShowcaseLimit) + "; offset default 0; the next page is at offset + limit while hasMore."},
			s.getStudioShowcase),
		op(Operation{ID: "checkoutStudio", Method: fiber.MethodPost, Path: "/studio/checkout", Area: "Content Studio",
			NotOffered: true, Errors: []string{accountable.ECodeNotOffered},
			Summary: "Buy an estimate (the public clients' checkout, {estimateId}): not offered here. A self-hosted service sells " +
				"nothing, so every request this operation accepts (authenticated, in one of the caller's workspaces, a JSON object " +
				"body) is 501 not_offered, and nothing is charged, stored or changed. Estimates (POST /studio/estimate) are for " +
				"planning."},
			s.checkoutStudio),
	}
}

// estimateStudio: POST /studio/estimate.
func (s *Server) estimateStudio(_ *call, in *workload.StudioEstimateRequest) (workload.StudioEstimate, error) {
	return in.Estimate()
}

type showcaseQuery struct {
	Query       *string                     `json:"-" query:"query" maxLength:"200" description:"Only examples whose title, industry or style contains this (case-insensitive)."`
	ContentType *workload.StudioContentType `json:"-" query:"contentType" description:"Only examples of this content type."`
	Industry    *string                     `json:"-" query:"industry" maxLength:"100" description:"Only examples of this industry (case-insensitive)."`
	Style       *string                     `json:"-" query:"style" maxLength:"100" description:"Only examples of this style (case-insensitive)."`
	Featured    *bool                       `json:"-" query:"featured" description:"true: only featured examples; false: only the others."`
	Limit       *int                        `json:"-" query:"limit" minimum:"1" maximum:"50" description:"Page size (default 6, max 50)."`
	Offset      *int                        `json:"-" query:"offset" minimum:"0" maximum:"1000000" description:"Matching examples to skip (default 0)."`
}

// getStudioShowcase: GET /studio/showcase.
func (s *Server) getStudioShowcase(c *call, in *showcaseQuery) (workload.StudioShowcase, error) {
	limit, offset := workload.DefaultShowcaseLimit, 0
	if in.Limit != nil {
		limit = *in.Limit
	}
	if in.Offset != nil {
		offset = *in.Offset
	}
	text := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	f := workload.StudioShowcaseFilter{Query: text(in.Query), Industry: text(in.Industry), Style: text(in.Style),
		ContentType: in.ContentType, Featured: in.Featured}
	page, err := workload.ShowcasePage(f, limit, offset)
	if err != nil {
		return page, err
	}
	n := len(page.Examples)
	c.meta.Count, c.meta.Limit = &n, &limit
	return page, nil
}

// checkoutStudio: POST /studio/checkout. It answers what the request is not: a sale.
func (s *Server) checkoutStudio(*call, *workload.StudioCheckoutRequest) (struct{}, error) {
	return struct{}{}, workload.ErrCheckoutNotOffered
}
