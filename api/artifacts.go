package api

import (
	"context"
	"net/url"
	"strings"

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

// artifactStore is the store of the Artifacts, Deduplication and Content Studio areas.
var artifactStore = needsStore[ArtifactStore]()

func init() { servesOperations(140, (*Server).artifactOperations) }

// artifactOperations are the Artifacts, Deduplication and Content Studio areas.
func (s *Server) artifactOperations() []operation {
	return []operation{
		op(Operation{ID: "createArtifact", Method: fiber.MethodPost, Path: "/artifacts", Area: "Artifacts",
			Status: fiber.StatusCreated, Idempotency: RequiredIdempotency,
			Summary: "Record an artifact work produced, attached to an entity (entity_type + entity_id: an initiative, workstream, milestone, " +
				"task, decision, run, launch or handoff of this workspace, else 404; or a project, an external reference recorded as given), " +
				"located by artifact_url and/or external_url (at least one). data is {ok, artifact, artifact_type_fallback, " +
				"effective_artifact_type}: an artifact_type GET /artifact-types does not list is stored as the generic type other " +
				"(artifact_type_fallback true; the type sent stays in requested_artifact_type). status defaults to draft; initiative_id " +
				"to the entity's initiative. Idempotency-Key required.",
			Description: "verification.content_digest is sha256 of the RFC 8785 canonical JSON of {artifact_type (as sent), artifact_url, " +
				"external_url, media_type, preview_markdown} (digest_scheme artifact-content/v2); a content_digest sent with the request " +
				"must match. verification names the artifact.created ledger event and the authenticated caller that recorded the " +
				"artifact; created_by_type/created_by_id are who made it, as the caller says (default: that caller)."},
			s.createArtifact),
		op(Operation{ID: "listArtifacts", Method: fiber.MethodGet, Path: "/artifacts", Area: "Artifacts",
			Summary: "List the workspace's artifacts, newest first, without their previews (preview_bytes says whether there is one); " +
				"data is {artifacts} (cursor pagination: meta.nextCursor, meta.hasMore). Filters: initiative_id, task_id, status, since, " +
				"type (the catalogue type or the type sent), entity_type with entity_id."},
			s.listArtifacts),
		// Before getArtifact: the router takes the first route that matches, and
		// /artifacts/{artifactId} would take by-entity as an id.
		op(Operation{ID: "listArtifactsByEntity", Method: fiber.MethodGet, Path: "/artifacts/by-entity", Area: "Artifacts",
			Summary: "List the artifacts attached to one entity (entity_type and entity_id, both required), newest first, without " +
				"their previews; data is {artifacts} (cursor pagination as GET /artifacts). kind keeps those of one artifact_type (the " +
				"catalogue type or the type sent). An entity of another workspace, or none, has no artifacts here."},
			s.listArtifactsByEntity),
		op(Operation{ID: "getArtifact", Method: fiber.MethodGet, Path: "/artifacts/{artifactId}", Area: "Artifacts",
			Errors: []string{accountable.ECodeVersionConflict},
			Summary: "Read an artifact with its preview; data is {ok, artifact, relationships}: the entity it is attached to, its " +
				"initiative and its artifact.created ledger event, each with the path that reads it. With expected_version, an " +
				"artifact at another version is 409 version_conflict (details.current_version)."},
			s.getArtifact),
		op(Operation{ID: "listArtifactTypes", Method: fiber.MethodGet, Path: "/artifact-types", Area: "Artifacts",
			Summary: "The artifact type catalogue: data is the list of types, each {type_code, label, summary, domain, stage, " +
				"workflow, default_persona, tags, is_deliverable} (meta.count). Any artifact_type is accepted; one not listed is " +
				"stored as the generic type other."},
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
	res, dup, err := artifactStore.of(s).CreateArtifact(c.ctx, c.principal, c.idem, *in)
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
func (s *Server) getArtifact(c *call, in *getArtifactRequest) (accountable.ArtifactDetail, error) {
	a, err := artifactStore.of(s).GetArtifact(c.ctx, c.principal.WorkspaceID, accountable.NormalizeUUID(in.ArtifactID))
	if err != nil {
		return accountable.ArtifactDetail{}, err
	}
	if in.ExpectedVersion != nil && *in.ExpectedVersion != a.Version {
		return accountable.ArtifactDetail{}, accountable.ArtifactVersionConflict(a.ID, a.Version, *in.ExpectedVersion)
	}
	return accountable.ArtifactDetail{OK: true, Artifact: a, Relationships: artifactRelationships(a)}, nil
}

// entityReads are the v1 paths that read an entity of a type, with {id} for its id.
// Workstreams and milestones are read as part of their initiative's tree. A test holds
// them to the operations.
var entityReads = map[accountable.EntityType]string{
	accountable.EntityTask: "/work/{id}", accountable.EntityInitiative: "/initiatives/{id}", accountable.EntityDecision: "/decisions/{id}",
	accountable.EntityRun: "/runs/{id}", accountable.EntityLaunch: "/launches/{id}", accountable.EntityHandoff: "/handoffs/{id}",
}

// artifactRelationships are a's relationships (GET /artifacts/{artifactId}), from what the
// artifact records, each with the path that reads it.
func artifactRelationships(a accountable.Artifact) accountable.ArtifactRelationships {
	r := accountable.ArtifactRelationships{LedgerEvent: accountable.ArtifactLedgerLink{EventID: a.Verification.EventID,
		EventHash: a.Verification.EventHash, EventType: accountable.EventArtifactCreated,
		AggregateType: accountable.AggregateArtifact, AggregateID: a.ID,
		Href: "/events/verify?aggregate_type=" + accountable.AggregateArtifact + "&aggregate_id=" + a.ID}}
	if a.EntityType != nil && a.EntityID != nil {
		e := &accountable.ArtifactEntityLink{EntityType: *a.EntityType, EntityID: *a.EntityID, Checked: a.EntityType.Checked()}
		if p, ok := entityReads[*a.EntityType]; ok {
			href := strings.ReplaceAll(p, "{id}", url.PathEscape(*a.EntityID))
			e.Href = &href
		}
		r.Entity = e
	}
	if a.InitiativeID != nil {
		r.Initiative = &accountable.ArtifactInitiativeRef{InitiativeID: *a.InitiativeID, Href: "/initiatives/" + *a.InitiativeID}
	}
	return r
}

// artifactPage is the paging of the artifact lists.
type artifactPage struct {
	Limit  *int    `json:"-" query:"limit" minimum:"1" maximum:"1000" description:"Page size (default 100)."`
	Cursor *string `json:"-" query:"cursor" description:"meta.nextCursor of the previous page."`
}

type listArtifactsQuery struct {
	artifactPage
	InitiativeID *string                     `json:"-" query:"initiative_id" format:"uuid" description:"Only the artifacts of this initiative."`
	TaskID       *string                     `json:"-" query:"task_id" format:"uuid" description:"Only the artifacts attached to this task (entity_type task)."`
	Status       *accountable.ArtifactStatus `json:"-" query:"status" description:"Only artifacts of this status."`
	Since        *accountable.Time           `json:"-" query:"since" description:"Only artifacts recorded at or after this instant."`
	Type         *string                     `json:"-" query:"type" minLength:"1" maxLength:"100" description:"Only artifacts of this type: the catalogue type or the type sent."`
	EntityType   *accountable.EntityType     `json:"-" query:"entity_type" description:"With entity_id: only the artifacts attached to this entity."`
	EntityID     *string                     `json:"-" query:"entity_id" minLength:"1" maxLength:"200" description:"With entity_type: only the artifacts attached to this entity."`
}

// Validate checks that the entity filter names both its type and its id (a UUID for an
// entity the service holds), and that it is not given besides task_id.
func (q listArtifactsQuery) Validate() error {
	var is accountable.Issues
	switch {
	case (q.EntityType == nil) != (q.EntityID == nil):
		is.Add("entity_id", "entity_type and entity_id are given together")
	case q.EntityType != nil && q.TaskID != nil:
		is.Add("task_id", "task_id is entity_type=task with entity_id: give one or the other")
	case q.EntityType != nil:
		checkEntityID(&is, *q.EntityType, *q.EntityID)
	}
	return is.Err()
}

// checkEntityID adds the issue of an entity id that is not a UUID where the entity is one
// the service holds.
func checkEntityID(is *accountable.Issues, t accountable.EntityType, id string) {
	if t.Checked() && !accountable.ValidUUID(id) {
		is.Add("entity_id", "must be a UUID: the id of a %s of this workspace", t)
	}
}

// ArtifactList is the list of the Artifacts area: {artifacts}.
type ArtifactList struct {
	Artifacts []accountable.ArtifactSummary `json:"artifacts"`
}

// listArtifacts: GET /artifacts.
func (s *Server) listArtifacts(c *call, in *listArtifactsQuery) (ArtifactList, error) {
	f := accountable.ArtifactFilter{Type: in.Type, Status: in.Status, EntityType: in.EntityType}
	if in.EntityID != nil {
		id := in.EntityType.NormalizeEntityID(*in.EntityID)
		f.EntityID = &id
	}
	if in.TaskID != nil {
		task, id := accountable.EntityTask, accountable.NormalizeUUID(*in.TaskID)
		f.EntityType, f.EntityID = &task, &id
	}
	if in.InitiativeID != nil {
		id := accountable.NormalizeUUID(*in.InitiativeID)
		f.InitiativeID = &id
	}
	if in.Since != nil {
		f.Since = &in.Since.Time
	}
	return s.artifactList(c, in.artifactPage, f)
}

// artifactList answers a page of the artifacts f selects.
func (s *Server) artifactList(c *call, page artifactPage, f accountable.ArtifactFilter) (ArtifactList, error) {
	list, err := newestFirst(c, page.Limit, page.Cursor, func(limit int, after *accountable.WorkCursor) ([]accountable.ArtifactSummary, *accountable.WorkCursor, error) {
		f.Limit, f.After = limit, after
		return artifactStore.of(s).ListArtifacts(c.ctx, c.principal.WorkspaceID, f)
	})
	return ArtifactList{Artifacts: list}, err
}

type listArtifactsByEntityQuery struct {
	artifactPage
	EntityType *accountable.EntityType `json:"-" query:"entity_type" required:"true" description:"The kind of the entity."`
	EntityID   *string                 `json:"-" query:"entity_id" required:"true" minLength:"1" maxLength:"200" description:"The entity's id (a UUID, but for a project)."`
	Kind       *string                 `json:"-" query:"kind" minLength:"1" maxLength:"100" description:"Only artifacts of this artifact_type: the catalogue type or the type sent."`
}

// Validate checks that the entity's id is a UUID where the entity is one the service holds.
// Both are required parameters, refused when absent before Validate runs; a query without
// them has nothing of this rule to break.
func (q listArtifactsByEntityQuery) Validate() error {
	if q.EntityType == nil || q.EntityID == nil {
		return nil
	}
	var is accountable.Issues
	checkEntityID(&is, *q.EntityType, *q.EntityID)
	return is.Err()
}

// listArtifactsByEntity: GET /artifacts/by-entity.
func (s *Server) listArtifactsByEntity(c *call, in *listArtifactsByEntityQuery) (ArtifactList, error) {
	id := in.EntityType.NormalizeEntityID(*in.EntityID)
	return s.artifactList(c, in.artifactPage, accountable.ArtifactFilter{EntityType: in.EntityType, EntityID: &id, Type: in.Kind})
}

// listArtifactTypes: GET /artifact-types.
func (s *Server) listArtifactTypes(c *call, _ *struct{}) ([]accountable.ArtifactTypeSpec, error) {
	n := len(accountable.ArtifactTypes)
	c.meta.Count = &n
	return accountable.ArtifactTypes, nil
}

// claimDedup: POST /live/dedup/claim.
func (s *Server) claimDedup(c *call, in *accountable.ClaimDedup) (accountable.DedupClaimResult, error) {
	return artifactStore.of(s).ClaimDedup(c.ctx, c.principal, *in)
}
