package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/pictures"
)

// EpisodeStore is what the Episodes and Operating map areas need.
type EpisodeStore interface {
	RecordEpisode(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.RecordEpisode) (accountable.Episode, bool, error)
	GetEpisode(ctx context.Context, workspaceID, id string) (accountable.Episode, error)
	ListEpisodes(ctx context.Context, workspaceID string, f accountable.EpisodeFilter) ([]accountable.Episode, *accountable.WorkCursor, error)
	OperatingMap(ctx context.Context, workspaceID string) (accountable.OperatingMap, error)
}

// projectionDerived says a read was derived from the ledger's projections.
const projectionDerived = "derived_from_ledger"

// episodeStore is the store of the Episodes and Operating map areas.
var episodeStore = needsStore[EpisodeStore]()

func init() { servesOperations(90, (*Server).episodeOperations) }

// episodeOperations are the Episodes and Operating map areas.
func (s *Server) episodeOperations() []operation {
	return []operation{
		op(Operation{ID: "recordEpisode", Method: fiber.MethodPost, Path: "/episodes", Area: "Episodes",
			Status: fiber.StatusCreated, Idempotency: OptionalIdempotency,
			Summary: "Record an observed execution of an operating process (process_id, started_at, ended_at, outcome, stages [{key, at}], evidence); discovery mines it."},
			s.recordEpisode),
		op(Operation{ID: "listEpisodes", Method: fiber.MethodGet, Path: "/episodes", Area: "Episodes",
			Summary: "List the workspace's episodes, newest first; data is the array (cursor pagination: meta.nextCursor, meta.hasMore)."},
			s.listEpisodes),
		op(Operation{ID: "getEpisode", Method: fiber.MethodGet, Path: "/episodes/{episodeId}", Area: "Episodes",
			Summary: "Read an episode."}, s.getEpisode),
		op(Operation{ID: "getOperatingMap", Method: fiber.MethodGet, Path: "/operating-map", Area: "Operating map",
			Summary:     "The workspace's processes (with the stages of their current revisions and their episode counts), value recipients, domains and the handoff edges between stages, derived from the ledger (meta.projectionStatus derived_from_ledger).",
			Description: "With Accept: image/svg+xml preferred to application/json (as a browser's <img> sends it), the answer is the map drawn as an SVG graph instead.",
			Alternates: []Alternate{alternate(pictures.MediaType,
				"The map as a graph (Graphviz dot layout): each process a cluster of its stages, solid-bordered when confirmed, dashed while discovered or proposed, "+
					"dotted once deprecated or retired, its state in its label; each handoff edge an arrow labelled with its handoffs, open, breached and median time to fulfil "+
					"(coloured red when some breached, amber when some are open). The same map gives the same bytes.",
				pictures.OperatingMap)}},
			s.getOperatingMap),
	}
}

// recordEpisode: POST /episodes.
func (s *Server) recordEpisode(c *call, in *accountable.RecordEpisode) (accountable.Episode, error) {
	cmd := *in
	cmd.ProcessID = accountable.NormalizeUUID(cmd.ProcessID)
	res, dup, err := episodeStore.of(s).RecordEpisode(c.ctx, c.principal, c.idem, cmd)
	c.replayed(dup)
	return res, err
}

type episodeRef struct {
	EpisodeID string `json:"-" path:"episodeId" format:"uuid" description:"The episode."`
}

// getEpisode: GET /episodes/{episodeId}.
func (s *Server) getEpisode(c *call, in *episodeRef) (accountable.Episode, error) {
	return episodeStore.of(s).GetEpisode(c.ctx, c.principal.WorkspaceID, accountable.NormalizeUUID(in.EpisodeID))
}

type listEpisodesQuery struct {
	Limit     *int    `json:"-" query:"limit" minimum:"1" maximum:"1000" description:"Page size (default 100)."`
	Cursor    *string `json:"-" query:"cursor" description:"meta.nextCursor of the previous page."`
	ProcessID *string `json:"-" query:"process_id" format:"uuid" description:"Only the episodes of this process."`
}

// listEpisodes: GET /episodes. data is the array (the public clients read it so), paging
// in meta.
func (s *Server) listEpisodes(c *call, in *listEpisodesQuery) ([]accountable.Episode, error) {
	return newestFirst(c, in.Limit, in.Cursor, func(limit int, after *accountable.WorkCursor) ([]accountable.Episode, *accountable.WorkCursor, error) {
		f := accountable.EpisodeFilter{Limit: limit, After: after}
		if in.ProcessID != nil {
			id := accountable.NormalizeUUID(*in.ProcessID)
			f.ProcessID = &id
		}
		return episodeStore.of(s).ListEpisodes(c.ctx, c.principal.WorkspaceID, f)
	})
}

// getOperatingMap: GET /operating-map.
func (s *Server) getOperatingMap(c *call, _ *struct{}) (accountable.OperatingMap, error) {
	status := projectionDerived
	c.meta.ProjectionStatus = &status
	return episodeStore.of(s).OperatingMap(c.ctx, c.principal.WorkspaceID)
}
