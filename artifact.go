package accountable

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Artifacts are what work produced: a document, a PRD, a pull request, a test report, a
// dataset, a design, a link. An artifact is attached to the entity it belongs to (a task,
// an initiative, a workstream, a milestone, a decision, or a project outside this service)
// and locates its content by URL (artifact_url, external_url); it may carry a Markdown
// preview inline. Its shape is the public clients' (snake_case, issue 25). Its content
// digest anchors what it points at in the ledger (artifact.created), which carries the
// digest and never the preview itself.

// Ledger vocabulary of artifacts.
const (
	AggregateArtifact    = "artifact"
	EventArtifactCreated = "artifact.created"
)

// Bounds of an artifact.
const (
	// MaxArtifactPreviewChars bounds the inline Markdown preview (characters; the request
	// body limit, 1 MiB by default, bounds its bytes first). It is the bound of the inline
	// content artifacts carried before issue 25, which their previews now hold.
	MaxArtifactPreviewChars = 262144
	// MaxArtifactMetadataBytes bounds the canonical JSON of an artifact's metadata.
	MaxArtifactMetadataBytes = 16384
	// MaxArtifactURLChars bounds artifact_url and external_url.
	MaxArtifactURLChars = 2048
)

// ArtifactGenericType is the catalogue's generic type: an artifact_type the catalogue does
// not know is stored under it (with artifact_type_fallback), never refused.
const ArtifactGenericType = "other"

// ArtifactDomain is the area of work an artifact type belongs to.
type ArtifactDomain string

// Artifact domains.
const (
	ArtifactDomainProduct     ArtifactDomain = "product"
	ArtifactDomainEngineering ArtifactDomain = "engineering"
	ArtifactDomainDesign      ArtifactDomain = "design"
	ArtifactDomainData        ArtifactDomain = "data"
	ArtifactDomainOperations  ArtifactDomain = "operations"
	ArtifactDomainGeneral     ArtifactDomain = "general"
)

// Enum lists the artifact domains.
func (ArtifactDomain) Enum() []any {
	return EnumStrings(ArtifactDomainProduct, ArtifactDomainEngineering, ArtifactDomainDesign, ArtifactDomainData,
		ArtifactDomainOperations, ArtifactDomainGeneral)
}

// ArtifactStage is the stage of the work in which an artifact type is usually made.
type ArtifactStage string

// Artifact stages, in the order work passes them; any: no stage in particular.
const (
	ArtifactStageDiscover ArtifactStage = "discover"
	ArtifactStagePlan     ArtifactStage = "plan"
	ArtifactStageBuild    ArtifactStage = "build"
	ArtifactStageVerify   ArtifactStage = "verify"
	ArtifactStageRelease  ArtifactStage = "release"
	ArtifactStageOperate  ArtifactStage = "operate"
	ArtifactStageAny      ArtifactStage = "any"
)

// Enum lists the artifact stages.
func (ArtifactStage) Enum() []any {
	return EnumStrings(ArtifactStageDiscover, ArtifactStagePlan, ArtifactStageBuild, ArtifactStageVerify, ArtifactStageRelease,
		ArtifactStageOperate, ArtifactStageAny)
}

// ArtifactTypeSpec is one entry of the artifact type catalogue (GET /artifact-types): what
// the type is, where in the work it belongs, who usually makes it, and whether it is a
// deliverable (something the work is for) rather than evidence or a reference.
type ArtifactTypeSpec struct {
	TypeCode       string         `json:"type_code" description:"The value of artifact_type."`
	Label          string         `json:"label"`
	Summary        string         `json:"summary"`
	Domain         ArtifactDomain `json:"domain"`
	Stage          ArtifactStage  `json:"stage"`
	Workflow       string         `json:"workflow" description:"The kind of workflow the type belongs to (software_delivery, product_discovery, ...)."`
	DefaultPersona *string        `json:"default_persona" description:"Who usually makes it; null when anyone may."`
	Tags           []string       `json:"tags"`
	IsDeliverable  bool           `json:"is_deliverable" description:"A deliverable is what the work is for; the others are evidence, references or by-products."`
}

func persona(p string) *string { return &p }

// ArtifactTypes is the catalogue (GET /artifact-types), in its order. Every type takes the
// same members (a URL, optionally a preview): the catalogue classifies, it does not
// constrain. The types of artifacts recorded before issue 25 (document, code_change,
// report, dataset, image, link, transcript, other) are all in it.
var ArtifactTypes = []ArtifactTypeSpec{
	{"prd", "Product requirements document", "What a product change is for and what it must do: problem, users, requirements, success measures.",
		ArtifactDomainProduct, ArtifactStagePlan, "product_discovery", persona("product_manager"), []string{"product", "requirements", "planning"}, true},
	{"spec", "Technical specification", "How a change will be built: design, interfaces, data, risks, rollout.",
		ArtifactDomainEngineering, ArtifactStagePlan, "software_delivery", persona("engineer"), []string{"engineering", "design_doc", "planning"}, true},
	{"design", "Design", "A mockup, wireframe, prototype or visual design.",
		ArtifactDomainDesign, ArtifactStagePlan, "design", persona("designer"), []string{"design", "ux", "visual"}, true},
	{"research", "Research findings", "Findings of user, market or technical research, with their sources.",
		ArtifactDomainProduct, ArtifactStageDiscover, "product_discovery", persona("researcher"), []string{"research", "discovery", "evidence"}, false},
	{"document", "Document", "A written document: a memo, a guide, a README, documentation.",
		ArtifactDomainGeneral, ArtifactStageBuild, "documentation", nil, []string{"document", "writing"}, true},
	{"pull_request", "Pull request", "A proposed code change under review (a pull or merge request).",
		ArtifactDomainEngineering, ArtifactStageBuild, "software_delivery", persona("engineer"), []string{"code", "review", "git"}, true},
	{"code_change", "Code change", "A change to code: a commit, a diff, a patch.",
		ArtifactDomainEngineering, ArtifactStageBuild, "software_delivery", persona("engineer"), []string{"code", "git"}, true},
	{"dataset", "Dataset", "A data set or data extract, referenced where it is stored.",
		ArtifactDomainData, ArtifactStageBuild, "data_analysis", persona("analyst"), []string{"data"}, true},
	{"image", "Image", "An image, a chart or a screenshot, referenced where it is stored.",
		ArtifactDomainDesign, ArtifactStageBuild, "design", nil, []string{"image", "visual"}, true},
	{"test_report", "Test report", "Results of tests or evaluations: what ran, what passed, what failed.",
		ArtifactDomainEngineering, ArtifactStageVerify, "quality_assurance", persona("qa_engineer"), []string{"testing", "quality", "evidence"}, false},
	{"release_notes", "Release notes", "What changed in a release, for its users.",
		ArtifactDomainProduct, ArtifactStageRelease, "release_management", persona("product_manager"), []string{"release", "changelog", "communication"}, true},
	{"report", "Report", "A report of findings or results: an analysis, a status report, a summary.",
		ArtifactDomainOperations, ArtifactStageOperate, "reporting", persona("analyst"), []string{"report", "analysis"}, true},
	{"transcript", "Transcript", "A transcript of a conversation, a meeting or an agent session.",
		ArtifactDomainGeneral, ArtifactStageAny, "communication", nil, []string{"transcript", "conversation", "evidence"}, false},
	{"link", "Link", "A link to something outside the service: a ticket, a page, a dashboard.",
		ArtifactDomainGeneral, ArtifactStageAny, "reference", nil, []string{"link", "reference"}, false},
	{ArtifactGenericType, "Other", "Anything else work produced. An artifact_type the catalogue does not know is stored as this type " +
		"(artifact_type_fallback true; the type sent stays in requested_artifact_type).",
		ArtifactDomainGeneral, ArtifactStageAny, "general", nil, []string{"generic", "fallback"}, false},
}

// ArtifactTypeOf returns the catalogue entry of code.
func ArtifactTypeOf(code string) (ArtifactTypeSpec, bool) {
	i := slices.IndexFunc(ArtifactTypes, func(s ArtifactTypeSpec) bool { return s.TypeCode == code })
	if i < 0 {
		return ArtifactTypeSpec{}, false
	}
	return ArtifactTypes[i], true
}

// EffectiveArtifactType is the catalogue type an artifact of the requested type is stored
// as: the type itself when the catalogue knows it (matched exactly), else the generic type
// (fallback true).
func EffectiveArtifactType(requested string) (effective string, fallback bool) {
	if _, ok := ArtifactTypeOf(requested); ok {
		return requested, false
	}
	return ArtifactGenericType, true
}

// EntityType is the kind of entity an artifact is attached to: the public clients' kinds
// (project, initiative, workstream, milestone, task, decision) and the service's other
// producers of work (run, launch, handoff).
type EntityType string

// Entity types.
const (
	EntityProject    EntityType = "project"
	EntityInitiative EntityType = "initiative"
	EntityWorkstream EntityType = "workstream"
	EntityMilestone  EntityType = "milestone"
	EntityTask       EntityType = "task"
	EntityDecision   EntityType = "decision"
	EntityRun        EntityType = "run"
	EntityLaunch     EntityType = "launch"
	EntityHandoff    EntityType = "handoff"
)

// Enum lists the entity types.
func (EntityType) Enum() []any {
	return EnumStrings(EntityProject, EntityInitiative, EntityWorkstream, EntityMilestone, EntityTask, EntityDecision,
		EntityRun, EntityLaunch, EntityHandoff)
}

// Checked reports whether the service holds entities of the type: their ids are UUIDs, and
// an artifact may name one only of its own workspace. A project has no resource here: its
// id is any string, recorded as given (an external reference).
func (t EntityType) Checked() bool { return t != EntityProject && t != "" }

// NormalizeEntityID is the id of an entity of type t as stored and compared: a UUID in
// lower case, any other id as given.
func (t EntityType) NormalizeEntityID(id string) string {
	if t.Checked() {
		return NormalizeUUID(id)
	}
	return id
}

// ArtifactStatus is where an artifact stands in its review.
type ArtifactStatus string

// Artifact statuses.
const (
	ArtifactDraft            ArtifactStatus = "draft"
	ArtifactInReview         ArtifactStatus = "in_review"
	ArtifactApproved         ArtifactStatus = "approved"
	ArtifactChangesRequested ArtifactStatus = "changes_requested"
	ArtifactRejected         ArtifactStatus = "rejected"
	ArtifactEvalPassed       ArtifactStatus = "eval_passed"
	ArtifactSuperseded       ArtifactStatus = "superseded"
	ArtifactArchived         ArtifactStatus = "archived"
)

// Enum lists the artifact statuses.
func (ArtifactStatus) Enum() []any {
	return EnumStrings(ArtifactDraft, ArtifactInReview, ArtifactApproved, ArtifactChangesRequested, ArtifactRejected,
		ArtifactEvalPassed, ArtifactSuperseded, ArtifactArchived)
}

// ArtifactCreatorType is the kind of party a client says made an artifact.
type ArtifactCreatorType string

// Artifact creator types.
const (
	ArtifactCreatorHuman ArtifactCreatorType = "human"
	ArtifactCreatorAgent ArtifactCreatorType = "agent"
)

// Enum lists the artifact creator types.
func (ArtifactCreatorType) Enum() []any {
	return EnumStrings(ArtifactCreatorHuman, ArtifactCreatorAgent)
}

// ArtifactDigestScheme names what an artifact's content digest covers.
type ArtifactDigestScheme string

// Digest schemes.
const (
	// ArtifactDigestV1 is the digest of artifacts recorded before issue 25 (kept as their
	// artifact.created events carry it): the canonical JSON of {content, media_type, type,
	// uri}, content being what is now the preview.
	ArtifactDigestV1 ArtifactDigestScheme = "artifact-content/v1"
	// ArtifactDigestV2 is ArtifactContentDigest.
	ArtifactDigestV2 ArtifactDigestScheme = "artifact-content/v2"
)

// Enum lists the digest schemes.
func (ArtifactDigestScheme) Enum() []any { return EnumStrings(ArtifactDigestV1, ArtifactDigestV2) }

// ArtifactVerification is what anchors an artifact: the digest of its content, the
// artifact.created event that recorded it, and the authenticated party that did (whoever
// the artifact says created it).
type ArtifactVerification struct {
	ContentDigest string               `json:"content_digest" pattern:"^sha256:[a-f0-9]{64}$"`
	DigestScheme  ArtifactDigestScheme `json:"digest_scheme"`
	EventID       string               `json:"event_id" format:"uuid" description:"The artifact.created ledger event."`
	EventHash     string               `json:"event_hash" pattern:"^sha256:[a-f0-9]{64}$"`
	RecordedBy    Actor                `json:"recorded_by" description:"The authenticated caller that recorded the artifact."`
}

// ArtifactSummary is an artifact without its preview: what lists show.
type ArtifactSummary struct {
	ID          string `json:"id" format:"uuid"`
	WorkspaceID string `json:"workspace_id" format:"uuid"`
	Name        string `json:"name"`
	// ArtifactType is the catalogue's type; RequestedArtifactType the artifact_type sent,
	// which differs only when it fell back to the generic type.
	ArtifactType          string  `json:"artifact_type"`
	RequestedArtifactType string  `json:"requested_artifact_type"`
	ArtifactURL           *string `json:"artifact_url"`
	ExternalURL           *string `json:"external_url"`
	MediaType             *string `json:"media_type"`
	// EntityType and EntityID are null only on artifacts recorded before issue 25 without
	// an entity.
	EntityType    *EntityType          `json:"entity_type"`
	EntityID      *string              `json:"entity_id"`
	InitiativeID  *string              `json:"initiative_id" format:"uuid"`
	Status        ArtifactStatus       `json:"status"`
	Version       int64                `json:"version" minimum:"1"`
	Description   *string              `json:"description"`
	Metadata      Object               `json:"metadata"`
	CreatedByType *ArtifactCreatorType `json:"created_by_type"`
	CreatedByID   *string              `json:"created_by_id"`
	// PreviewBytes is the size of the preview in UTF-8 bytes, null without one (lists
	// leave the preview out).
	PreviewBytes *int64               `json:"preview_bytes" minimum:"0"`
	Verification ArtifactVerification `json:"verification"`
	CreatedAt    Time                 `json:"created_at"`
	UpdatedAt    Time                 `json:"updated_at"`
}

// Artifact is an artifact with its preview (null when it has none).
type Artifact struct {
	ArtifactSummary
	PreviewMarkdown *string `json:"preview_markdown"`
}

// ArtifactCreated is the result of POST /artifacts.
type ArtifactCreated struct {
	OK       bool     `json:"ok" const:"true"`
	Artifact Artifact `json:"artifact"`
	// ArtifactTypeFallback says the catalogue did not know the artifact_type sent: the
	// artifact is stored as EffectiveArtifactType (the generic type).
	ArtifactTypeFallback  bool   `json:"artifact_type_fallback"`
	EffectiveArtifactType string `json:"effective_artifact_type"`
	Encoded               `json:"-"`
}

// ArtifactDetail is the result of GET /artifacts/{id}.
type ArtifactDetail struct {
	OK            bool                  `json:"ok" const:"true"`
	Artifact      Artifact              `json:"artifact"`
	Relationships ArtifactRelationships `json:"relationships"`
}

// ArtifactRelationships are what an artifact is related to, each with the v1 path that
// reads it (relative to the API root, e.g. /api/v1).
type ArtifactRelationships struct {
	// Entity is null only on artifacts recorded before issue 25 without an entity.
	Entity      *ArtifactEntityLink    `json:"entity"`
	Initiative  *ArtifactInitiativeRef `json:"initiative"`
	LedgerEvent ArtifactLedgerLink     `json:"ledger_event"`
}

// ArtifactEntityLink is the entity an artifact is attached to.
type ArtifactEntityLink struct {
	EntityType EntityType `json:"entity_type"`
	EntityID   string     `json:"entity_id"`
	// Checked says the service holds the entity (it was found in the workspace when the
	// artifact was recorded); false for a project, an external reference.
	Checked bool    `json:"checked"`
	Href    *string `json:"href" description:"The path that reads the entity; null where there is none (a project, a workstream, a milestone)."`
}

// ArtifactInitiativeRef is the initiative an artifact belongs to.
type ArtifactInitiativeRef struct {
	InitiativeID string `json:"initiative_id" format:"uuid"`
	Href         string `json:"href"`
}

// ArtifactLedgerLink is the artifact.created event of an artifact; Href verifies its chain.
type ArtifactLedgerLink struct {
	EventID       string `json:"event_id" format:"uuid"`
	EventHash     string `json:"event_hash" pattern:"^sha256:[a-f0-9]{64}$"`
	EventType     string `json:"event_type" const:"artifact.created"`
	AggregateType string `json:"aggregate_type" const:"artifact"`
	AggregateID   string `json:"aggregate_id" format:"uuid"`
	Href          string `json:"href"`
}

// CreateArtifact is the command that records an artifact (POST /artifacts): the public
// clients' body, plus the service's own optional media_type and content_digest.
type CreateArtifact struct {
	EntityType   EntityType `json:"entity_type"`
	EntityID     string     `json:"entity_id" minLength:"1" maxLength:"200" description:"The entity's id: a UUID of this workspace, or any id of a project."`
	Name         string     `json:"name" minLength:"1" maxLength:"500"`
	ArtifactType string     `json:"artifact_type" minLength:"1" maxLength:"100" description:"A type_code of GET /artifact-types; any other value is stored as the generic type other."`
	ArtifactURL  *string    `json:"artifact_url,omitzero" minLength:"1" maxLength:"2048" description:"Where the artifact itself is. artifact_url or external_url (or both) is required."`
	ExternalURL  *string    `json:"external_url,omitzero" minLength:"1" maxLength:"2048" description:"Where it is shown or discussed elsewhere (a pull request page, a ticket)."`
	Description  *string    `json:"description,omitzero" maxLength:"10000"`
	// PreviewMarkdown is shown in place of the artifact; it is not fetched from the URLs.
	PreviewMarkdown *string              `json:"preview_markdown,omitzero" maxLength:"262144"`
	InitiativeID    *string              `json:"initiative_id,omitzero" format:"uuid" description:"Default: the initiative of the entity, if it has one."`
	Status          *ArtifactStatus      `json:"status,omitzero" description:"Default draft."`
	Metadata        Object               `json:"metadata,omitzero"`
	CreatedByType   *ArtifactCreatorType `json:"created_by_type,omitzero" description:"Who made it, as the caller says. Without created_by_type and created_by_id: the authenticated caller."`
	CreatedByID     *string              `json:"created_by_id,omitzero" minLength:"1" maxLength:"200"`
	MediaType       *string              `json:"media_type,omitzero" maxLength:"255" pattern:"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}(;.*)?$" description:"The media type of what artifact_url holds."`
	// ContentDigest, when given, must equal the digest the service computes (an
	// end-to-end check of what the caller meant to record).
	ContentDigest *string `json:"content_digest,omitzero" pattern:"^sha256:[a-f0-9]{64}$"`
	Causation
}

// Validate checks the command's rules: the bounds, a URL (at least one of the two), each
// an absolute URI, a UUID for an entity the service holds, and bounded metadata. Once
// they hold, a given digest must match the content's (CheckContentDigest, which the API
// calls with the digest it computes).
func (c CreateArtifact) Validate() error {
	is := CheckFields(c)
	if c.ArtifactURL == nil && c.ExternalURL == nil {
		is.Add("/artifact_url", "artifact_url or external_url is required (at least one)")
		is.Add("/external_url", "artifact_url or external_url is required (at least one)")
	}
	for _, u := range []struct {
		path string
		url  *string
	}{{"/artifact_url", c.ArtifactURL}, {"/external_url", c.ExternalURL}} {
		if u.url != nil && *u.url != "" && !validArtifactURI(*u.url) {
			is.Add(u.path, "must be an absolute URI (scheme:...) without spaces")
		}
	}
	if c.EntityType.Checked() && c.EntityID != "" && !ValidUUID(c.EntityID) {
		is.Add("/entity_id", "must be a UUID: the id of a %s of this workspace", c.EntityType)
	}
	if len(c.Metadata) > MaxArtifactMetadataBytes {
		is.Add("/metadata", "must be at most %d bytes of JSON", MaxArtifactMetadataBytes)
	}
	return is.Err()
}

// CheckContentDigest refuses a command whose content_digest differs from computed, the
// digest of its Content.
func (c CreateArtifact) CheckContentDigest(computed string) error {
	if c.ContentDigest == nil || *c.ContentDigest == computed {
		return nil
	}
	return ValidationError(Issue{Path: "/content_digest",
		Message: fmt.Sprintf("does not match the digest of the artifact's content (%s)", computed)})
}

// validArtifactURI reports whether s is an absolute URI: a scheme, something after it,
// and no whitespace or control characters.
func validArtifactURI(s string) bool {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && (u.Opaque != "" || u.Host != "" || u.Path != "")
}

// ArtifactContent is what an artifact's content digest covers (ArtifactDigestV2): the
// digest is "sha256:" + the hex SHA-256 of its RFC 8785 canonical JSON ({artifact_type,
// artifact_url, external_url, media_type, preview_markdown}, absent members as null),
// artifact_type being the type as sent. It covers what the artifact is and where it is,
// not what is said about it (name, description, status, metadata, entity): the same work
// product located, typed and previewed the same way has the same digest.
type ArtifactContent struct {
	ArtifactType    string  `json:"artifact_type"`
	ArtifactURL     *string `json:"artifact_url"`
	ExternalURL     *string `json:"external_url"`
	MediaType       *string `json:"media_type"`
	PreviewMarkdown *string `json:"preview_markdown"`
}

// Content is what the artifact's content digest covers.
func (c CreateArtifact) Content() ArtifactContent {
	return ArtifactContent{ArtifactType: c.ArtifactType, ArtifactURL: c.ArtifactURL, ExternalURL: c.ExternalURL,
		MediaType: c.MediaType, PreviewMarkdown: c.PreviewMarkdown}
}

// ArtifactInitiative decides the initiative of an artifact from the one the command names
// (if any) and the one its entity belongs to (ofEntity, if any; an initiative's own id).
// Named alone, it must then be found in the workspace (needsCheck).
func (c CreateArtifact) ArtifactInitiative(ofEntity *string) (initiative *string, needsCheck bool, err error) {
	switch {
	case c.InitiativeID == nil:
		return ofEntity, false, nil
	case ofEntity == nil:
		id := NormalizeUUID(*c.InitiativeID)
		return &id, true, nil
	case NormalizeUUID(*c.InitiativeID) != NormalizeUUID(*ofEntity):
		return nil, false, ValidationError(Issue{Path: "/initiative_id",
			Message: "differs from the initiative of the " + string(c.EntityType) + " (" + NormalizeUUID(*ofEntity) + ")"})
	}
	id := NormalizeUUID(*ofEntity)
	return &id, false, nil
}

// NewArtifact makes the artifact the command records, with its id, workspace, initiative
// (ArtifactInitiative), creation instant and content digest (of its Content), recorded by
// the actor. Its verification's event is filled in once the event is appended.
func (c CreateArtifact) NewArtifact(id, workspaceID string, initiative *string, by Actor, now time.Time, digest string) Artifact {
	effective, _ := EffectiveArtifactType(c.ArtifactType)
	entityID := c.EntityType.NormalizeEntityID(c.EntityID)
	entityType := c.EntityType
	at := TimeOf(now)
	a := Artifact{ArtifactSummary: ArtifactSummary{ID: id, WorkspaceID: workspaceID, Name: c.Name, ArtifactType: effective,
		RequestedArtifactType: c.ArtifactType, ArtifactURL: c.ArtifactURL, ExternalURL: c.ExternalURL, MediaType: c.MediaType,
		EntityType: &entityType, EntityID: &entityID, InitiativeID: initiative, Status: ArtifactDraft, Version: 1,
		Description: c.Description, Metadata: c.Metadata, CreatedByType: c.CreatedByType, CreatedByID: c.CreatedByID,
		Verification: ArtifactVerification{ContentDigest: digest, DigestScheme: ArtifactDigestV2, RecordedBy: by},
		CreatedAt:    at, UpdatedAt: at}, PreviewMarkdown: c.PreviewMarkdown}
	if c.Status != nil {
		a.Status = *c.Status
	}
	if c.CreatedByType == nil && c.CreatedByID == nil {
		// Nothing said: the authenticated caller made it (a human's key, or an agent's).
		t, id := ArtifactCreatorType(by.Type), by.ID
		a.CreatedByType, a.CreatedByID = &t, &id
	}
	if c.PreviewMarkdown != nil {
		n := int64(len(*c.PreviewMarkdown))
		a.PreviewBytes = &n
	}
	if len(a.Metadata) == 0 {
		a.Metadata = Object("{}")
	}
	return a
}

// ArtifactFilter selects artifacts of a workspace (newest first, keyset pages). Type
// matches the catalogue type or the type as sent.
type ArtifactFilter struct {
	Limit        int
	After        *WorkCursor
	Type         *string
	EntityType   *EntityType
	EntityID     *string
	InitiativeID *string
	Status       *ArtifactStatus
	Since        *time.Time
}

// ArtifactVersionConflict is the 409 of a read at an expected version the artifact is not at.
func ArtifactVersionConflict(id string, current, expected int64) *Error {
	return Errorf(ECodeVersionConflict, "Artifact %s is at version %d, not %d.", id, current, expected).
		WithDetails(map[string]any{"current_version": current})
}
