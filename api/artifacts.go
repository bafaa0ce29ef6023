package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
)

// ArtifactStore is what the Artifacts, Deduplication and Content Studio areas need.
type ArtifactStore interface {
	CreateArtifact(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.CreateArtifact) (accountable.ArtifactCreated, bool, error)
	GetArtifact(ctx context.Context, workspaceID, id string) (accountable.Artifact, error)
	ListArtifacts(ctx context.Context, workspaceID string, f accountable.ArtifactFilter) ([]accountable.ArtifactSummary, *accountable.WorkCursor, error)
	ClaimDedup(ctx context.Context, p accountable.Principal, in accountable.ClaimDedup) (accountable.DedupClaimResult, error)
}

// artifactOperations are the Artifacts, Deduplication and Content Studio areas.
func (s *Server) artifactOperations() []operation {
	return []operation{
		op(Operation{ID: "createArtifact", Method: fiber.MethodPost, Path: "/artifacts", Area: "Artifacts",
			Status: fiber.StatusCreated, Idempotency: RequiredIdempotency,
			Summary: "Record an artifact work produced (its type from GET /artifact-types; its content inline, a uri, or both, as the type allows), " +
				"optionally naming the entity that produced it (entity_type + entity_id of this workspace, else 404). data is {artifact, event}: " +
				"the artifact with its content_digest (sha256 of the RFC 8785 canonical JSON of {content, media_type, type, uri}) and its " +
				"artifact.created ledger event. A content_digest sent with the request must match. Idempotency-Key required."},
			s.createArtifact),
		op(Operation{ID: "listArtifacts", Method: fiber.MethodGet, Path: "/artifacts", Area: "Artifacts",
			Summary: "List the workspace's artifacts, newest first, without their inline content (has_content and size_bytes say whether " +
				"there is any); data is {artifacts} (cursor pagination: meta.nextCursor, meta.hasMore). Filters: type; entity_type with entity_id."},
			s.listArtifacts),
		op(Operation{ID: "getArtifact", Method: fiber.MethodGet, Path: "/artifacts/{artifactId}", Area: "Artifacts",
			Errors: []string{accountable.ECodeVersionConflict},
			Summary: "Read an artifact with its inline content; data is {artifact}. With expected_version, an artifact at another version is " +
				"409 version_conflict (details.current_version)."},
			s.getArtifact),
		op(Operation{ID: "listArtifactTypes", Method: fiber.MethodGet, Path: "/artifact-types", Area: "Artifacts",
			Summary: "The artifact type catalogue: each type with its description and the content fields (uri, content) an artifact of it " +
				"may carry (at least one of them, and no other); data is {artifact_types}."},
			s.listArtifactTypes),
		op(Operation{ID: "claimDedup", Method: fiber.MethodPost, Path: "/live/dedup/claim", Area: "Deduplication",
			Summary: "Claim an event before acting on it: the first claimant of (source, event_key) in the workspace wins " +
				"(claimed true, deduped false) and appends dedup.claimed; until its claim expires (ttl_seconds, 1-604800, default 3600) every " +
				"other claimant gets deduped true, claimed false and the standing claim's expires_at. fingerprint_hash is sha256 of the " +
				"RFC 8785 canonical JSON of {event_key, source, workspace_id}. Once a claim has expired the next claimant takes it over."},
			s.claimDedup),
	}
}

// createArtifact: POST /artifacts.
func (s *Server) createArtifact(c *call, in *accountable.CreateArtifact) (accountable.ArtifactCreated, error) {
	res, dup, err := s.deps.Artifacts.CreateArtifact(c.ctx, c.principal, c.idem, *in)
	c.replayed(dup)
	return res, err
}

type artifactRef struct {
	ArtifactID string `json:"-" path:"artifactId" format:"uuid" description:"The artifact."`
}

type getArtifactRequest struct {
	artifactRef
	ExpectedVersion *int64 `json:"-" query:"expected_version" minimum:"1" description:"The version the caller expects; another is 409 version_conflict."`
}

// getArtifact: GET /artifacts/{artifactId}.
func (s *Server) getArtifact(c *call, in *getArtifactRequest) (accountable.ArtifactEnvelope, error) {
	a, err := s.deps.Artifacts.GetArtifact(c.ctx, c.principal.WorkspaceID, accountable.NormalizeUUID(in.ArtifactID))
	if err != nil {
		return accountable.ArtifactEnvelope{}, err
	}
	if in.ExpectedVersion != nil && *in.ExpectedVersion != a.Version {
		return accountable.ArtifactEnvelope{}, accountable.ArtifactVersionConflict(a.ID, a.Version, *in.ExpectedVersion)
	}
	return accountable.ArtifactEnvelope{Artifact: a}, nil
}

type listArtifactsQuery struct {
	Limit      *int                      `json:"-" query:"limit" minimum:"1" maximum:"1000" description:"Page size (default 100)."`
	Cursor     *string                   `json:"-" query:"cursor" description:"meta.nextCursor of the previous page."`
	Type       *accountable.ArtifactType `json:"-" query:"type" description:"Only artifacts of this type."`
	EntityType *accountable.EntityType   `json:"-" query:"entity_type" description:"With entity_id: only the artifacts of this entity."`
	EntityID   *string                   `json:"-" query:"entity_id" format:"uuid" description:"With entity_type: only the artifacts of this entity."`
}

// Validate checks that the entity filter names both its type and its id.
func (q listArtifactsQuery) Validate() error {
	if (q.EntityType == nil) != (q.EntityID == nil) {
		return accountable.ValidationError(accountable.Issue{Path: "entity_id", Message: "entity_type and entity_id are given together"})
	}
	return nil
}

// ArtifactList is the list of the Artifacts area: {artifacts}.
type ArtifactList struct {
	Artifacts []accountable.ArtifactSummary `json:"artifacts"`
}

// listArtifacts: GET /artifacts.
func (s *Server) listArtifacts(c *call, in *listArtifactsQuery) (ArtifactList, error) {
	list, err := newestFirst(c, in.Limit, in.Cursor, func(limit int, after *accountable.WorkCursor) ([]accountable.ArtifactSummary, *accountable.WorkCursor, error) {
		f := accountable.ArtifactFilter{Limit: limit, After: after, Type: in.Type, EntityType: in.EntityType}
		if in.EntityID != nil {
			id := accountable.NormalizeUUID(*in.EntityID)
			f.EntityID = &id
		}
		return s.deps.Artifacts.ListArtifacts(c.ctx, c.principal.WorkspaceID, f)
	})
	return ArtifactList{Artifacts: list}, err
}

// ArtifactTypeList is the artifact type catalogue: {artifact_types}.
type ArtifactTypeList struct {
	ArtifactTypes []accountable.ArtifactTypeSpec `json:"artifact_types"`
}

// listArtifactTypes: GET /artifact-types.
func (s *Server) listArtifactTypes(c *call, _ *struct{}) (ArtifactTypeList, error) {
	n := len(accountable.ArtifactTypes)
	c.meta.Count = &n
	return ArtifactTypeList{ArtifactTypes: accountable.ArtifactTypes}, nil
}

// claimDedup: POST /live/dedup/claim.
func (s *Server) claimDedup(c *call, in *accountable.ClaimDedup) (accountable.DedupClaimResult, error) {
	return s.deps.Artifacts.ClaimDedup(c.ctx, c.principal, *in)
}
