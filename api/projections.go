package api

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/projection"
)

// ProjectionStore is what the Projections area needs: figures folded from the ledger.
type ProjectionStore interface {
	WorkLedger(ctx context.Context, workspaceID string, w projection.WorkLedgerWindow) (accountable.WorkLedgerProjection, error)
	Adoption(ctx context.Context, workspaceID string, p accountable.ProjectionPeriod) (accountable.AdoptionProjection, error)
	ValueCase(ctx context.Context, workspaceID string, p accountable.ProjectionPeriod) (accountable.ValueCaseProjection, error)
	MeterUsage(ctx context.Context, workspaceID string, p accountable.ProjectionPeriod) (accountable.MeterUsageProjection, error)
}

const projectionsNote = " Derived from the workspace's ledger events alone, when read (freshness.mode computed_on_read); " +
	"limitations says what the figures cannot know."

// projectionStore is the store of the Projections area.
var projectionStore = needsStore[ProjectionStore]()

func init() { servesOperations(160, (*Server).projectionOperations) }

// projectionOperations are the Projections area.
func (s *Server) projectionOperations() []operation {
	return []operation{
		op(Operation{ID: "getWorkLedgerProjection", Method: fiber.MethodGet, Path: "/projections/work-ledger", Area: "Projections",
			Summary: "Receipts (completed and imported), finalized runs with their cost, decisions proposed and resolved, and artifacts, " +
				"counted in day, week (ISO, from Monday) or month buckets of a named IANA time zone; empty buckets included." + projectionsNote},
			s.workLedger),
		op(Operation{ID: "getAdoptionProjection", Method: fiber.MethodGet, Path: "/projections/adoption", Area: "Projections",
			Summary: "Adoption per operating process, from its recorded episodes: episodes, cases, outcomes, success rate, active days, " +
				"the last 30 days against the 30 before." + projectionsNote},
			s.adoption),
		op(Operation{ID: "getValueCaseProjection", Method: fiber.MethodGet, Path: "/projections/value-case", Area: "Projections",
			Summary: "Agent cost (receipts, runs, generations) against the human-equivalent range of the hours receipts measured, " +
				"and the planned hours of proposals." + projectionsNote},
			s.valueCase),
		op(Operation{ID: "getMeterUsageProjection", Method: fiber.MethodGet, Path: "/projections/meter-usage", Area: "Projections",
			Summary: "Tokens and cost of planning generations (per provider and model) and of runs; billingReady is false." + projectionsNote},
			s.meterUsage),
	}
}

// periodQuery is the optional [from, to) range every projection takes.
type periodQuery struct {
	From *accountable.Time `json:"-" query:"from" description:"Only events that occurred at or after this instant."`
	To   *accountable.Time `json:"-" query:"to" description:"Only events that occurred before this instant."`
}

func (q periodQuery) period() accountable.ProjectionPeriod {
	return accountable.ProjectionPeriod{From: q.From, To: q.To}
}

// Validate refuses a reversed range.
func (q periodQuery) Validate() error { return q.period().Validate() }

type workLedgerQuery struct {
	Bucket   *accountable.BucketSize `json:"-" query:"bucket" description:"day (default), week or month."`
	TimeZone *string                 `json:"-" query:"time_zone" maxLength:"64" description:"IANA time zone of the buckets (default UTC), e.g. Europe/Berlin."`
	From     *accountable.Time       `json:"-" query:"from" description:"The window starts at the bucket holding this instant (default: 30 days, 12 weeks or 12 months before to)."`
	To       *accountable.Time       `json:"-" query:"to" description:"The window ends with the bucket holding the instant before this one (default: now). At most 366 buckets."`
}

// workLedger: GET /projections/work-ledger.
func (s *Server) workLedger(c *call, in *workLedgerQuery) (accountable.WorkLedgerProjection, error) {
	q := projection.WorkLedgerQuery{Now: time.Now()}
	if in.Bucket != nil {
		q.Bucket = *in.Bucket
	}
	if in.TimeZone != nil {
		q.TimeZone = *in.TimeZone
	}
	if in.From != nil {
		q.From = &in.From.Time
	}
	if in.To != nil {
		q.To = &in.To.Time
	}
	w, err := q.Window()
	if err != nil {
		return accountable.WorkLedgerProjection{}, err
	}
	return projectionStore.of(s).WorkLedger(c.ctx, c.principal.WorkspaceID, w)
}

// adoption: GET /projections/adoption.
func (s *Server) adoption(c *call, in *periodQuery) (accountable.AdoptionProjection, error) {
	return projectionStore.of(s).Adoption(c.ctx, c.principal.WorkspaceID, in.period())
}

// valueCase: GET /projections/value-case.
func (s *Server) valueCase(c *call, in *periodQuery) (accountable.ValueCaseProjection, error) {
	return projectionStore.of(s).ValueCase(c.ctx, c.principal.WorkspaceID, in.period())
}

// meterUsage: GET /projections/meter-usage.
func (s *Server) meterUsage(c *call, in *periodQuery) (accountable.MeterUsageProjection, error) {
	return projectionStore.of(s).MeterUsage(c.ctx, c.principal.WorkspaceID, in.period())
}
