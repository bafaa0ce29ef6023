package accountable

import (
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Artifacts are what work produced: a document, a code change, a report, a dataset, an
// image, a link, a transcript. An artifact is recorded once (POST /artifacts) with its
// content inline, a URI where it lives, or both, as its type allows; its content digest
// anchors that content in the ledger (artifact.created), which carries the digest and the
// size but never the content itself. An artifact may name the entity that produced it (a
// task, an initiative, a run, a launch, a handoff or a decision of the same workspace).

// Ledger vocabulary of artifacts.
const (
	AggregateArtifact    = "artifact"
	EventArtifactCreated = "artifact.created"
)

// Bounds of an artifact.
const (
	// MaxArtifactContentChars bounds inline content (characters; the request body limit,
	// 1 MiB by default, bounds its bytes first).
	MaxArtifactContentChars = 262144
	// MaxArtifactMetadataBytes bounds the canonical JSON of an artifact's metadata.
	MaxArtifactMetadataBytes = 16384
	// MaxArtifactURIChars bounds an artifact's URI.
	MaxArtifactURIChars = 2048
)

// ArtifactType is the kind of an artifact: one of the catalogue served at GET /artifact-types.
type ArtifactType string

// Artifact types.
const (
	ArtifactDocument   ArtifactType = "document"
	ArtifactCodeChange ArtifactType = "code_change"
	ArtifactReport     ArtifactType = "report"
	ArtifactDataset    ArtifactType = "dataset"
	ArtifactImage      ArtifactType = "image"
	ArtifactLink       ArtifactType = "link"
	ArtifactTranscript ArtifactType = "transcript"
	ArtifactOther      ArtifactType = "other"
)

// Enum lists the artifact types.
func (ArtifactType) Enum() []any {
	out := make([]any, len(ArtifactTypes))
	for i, t := range ArtifactTypes {
		out[i] = string(t.Type)
	}
	return out
}

// ArtifactField is a member of an artifact that holds (or locates) its content.
type ArtifactField string

// Content fields.
const (
	ArtifactFieldURI     ArtifactField = "uri"
	ArtifactFieldContent ArtifactField = "content"
)

// Enum lists the content fields.
func (ArtifactField) Enum() []any { return EnumStrings(ArtifactFieldURI, ArtifactFieldContent) }

// ArtifactTypeSpec is one entry of the artifact type catalogue: what the type is for and
// which content fields an artifact of it may carry. An artifact carries at least one of
// its type's fields and none other.
type ArtifactTypeSpec struct {
	Type                 ArtifactType    `json:"type"`
	Description          string          `json:"description"`
	Fields               []ArtifactField `json:"fields" minItems:"1"`
	MaxContentCharacters int             `json:"max_content_characters" minimum:"0"`
}

// Allows reports whether an artifact of the type may carry field f.
func (s ArtifactTypeSpec) Allows(f ArtifactField) bool { return slices.Contains(s.Fields, f) }

// ArtifactTypes is the catalogue (GET /artifact-types), in its order.
var ArtifactTypes = []ArtifactTypeSpec{
	{ArtifactDocument, "A written document (a specification, a memo, a README): inline text, or a URI where it lives.",
		[]ArtifactField{ArtifactFieldURI, ArtifactFieldContent}, MaxArtifactContentChars},
	{ArtifactCodeChange, "A change to code: a pull request or commit URI, and/or the diff inline.",
		[]ArtifactField{ArtifactFieldURI, ArtifactFieldContent}, MaxArtifactContentChars},
	{ArtifactReport, "A report of findings or results (an analysis, a test report, a summary): inline text and/or a URI.",
		[]ArtifactField{ArtifactFieldURI, ArtifactFieldContent}, MaxArtifactContentChars},
	{ArtifactDataset, "A data set, referenced by the URI where it is stored (it is not kept inline).",
		[]ArtifactField{ArtifactFieldURI}, 0},
	{ArtifactImage, "An image, referenced by the URI where it is stored (binary content is not kept inline).",
		[]ArtifactField{ArtifactFieldURI}, 0},
	{ArtifactLink, "A link to something outside the service (a ticket, a page, a dashboard): its URI.",
		[]ArtifactField{ArtifactFieldURI}, 0},
	{ArtifactTranscript, "A transcript of a conversation, meeting or agent session: inline text and/or a URI.",
		[]ArtifactField{ArtifactFieldURI, ArtifactFieldContent}, MaxArtifactContentChars},
	{ArtifactOther, "Anything else work produced: inline text and/or a URI.",
		[]ArtifactField{ArtifactFieldURI, ArtifactFieldContent}, MaxArtifactContentChars},
}

// ArtifactTypeOf returns the catalogue entry of t.
func ArtifactTypeOf(t ArtifactType) (ArtifactTypeSpec, bool) {
	i := slices.IndexFunc(ArtifactTypes, func(s ArtifactTypeSpec) bool { return s.Type == t })
	if i < 0 {
		return ArtifactTypeSpec{}, false
	}
	return ArtifactTypes[i], true
}

// EntityType is the kind of entity an artifact may name as its producer.
type EntityType string

// Entity types.
const (
	EntityTask       EntityType = "task"
	EntityInitiative EntityType = "initiative"
	EntityRun        EntityType = "run"
	EntityLaunch     EntityType = "launch"
	EntityHandoff    EntityType = "handoff"
	EntityDecision   EntityType = "decision"
)

// Enum lists the entity types.
func (EntityType) Enum() []any {
	return EnumStrings(EntityTask, EntityInitiative, EntityRun, EntityLaunch, EntityHandoff, EntityDecision)
}

// ArtifactSummary is an artifact without its inline content: what lists show.
type ArtifactSummary struct {
	ID          string       `json:"id" format:"uuid"`
	WorkspaceID string       `json:"workspace_id" format:"uuid"`
	Type        ArtifactType `json:"type"`
	Title       string       `json:"title"`
	URI         *string      `json:"uri"`
	MediaType   *string      `json:"media_type"`
	// ContentDigest is "sha256:" + the hex SHA-256 of the RFC 8785 canonical JSON of
	// {type, uri, media_type, content} (ArtifactContentDigest).
	ContentDigest string `json:"content_digest" pattern:"^sha256:[a-f0-9]{64}$"`
	// SizeBytes is the size of the inline content in UTF-8 bytes (0 without any).
	SizeBytes  int64       `json:"size_bytes" minimum:"0"`
	HasContent bool        `json:"has_content"`
	EntityType *EntityType `json:"entity_type"`
	EntityID   *string     `json:"entity_id" format:"uuid"`
	Metadata   Object      `json:"metadata"`
	CreatedBy  Actor       `json:"created_by"`
	CreatedAt  Time        `json:"created_at"`
	Version    int64       `json:"version" minimum:"1"`
}

// Artifact is an artifact with its inline content (null when it has none).
type Artifact struct {
	ArtifactSummary
	Content *string `json:"content"`
}

// ArtifactCreated is the result of POST /artifacts: the artifact and its ledger event.
type ArtifactCreated struct {
	Artifact Artifact `json:"artifact"`
	Event    EventRef `json:"event"`
	Encoded  `json:"-"`
}

// ArtifactEnvelope is the result of GET /artifacts/{id}: {artifact}.
type ArtifactEnvelope struct {
	Artifact Artifact `json:"artifact"`
}

// CreateArtifact is the command that records an artifact (POST /artifacts).
type CreateArtifact struct {
	Type      ArtifactType `json:"type"`
	Title     string       `json:"title" minLength:"1" maxLength:"500"`
	URI       *string      `json:"uri,omitzero" minLength:"1" maxLength:"2048"`
	MediaType *string      `json:"media_type,omitzero" maxLength:"255" pattern:"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}(;.*)?$"`
	Content   *string      `json:"content,omitzero" maxLength:"262144"`
	// ContentDigest, when given, must equal the digest the service computes (an
	// end-to-end check of what the caller meant to record).
	ContentDigest *string     `json:"content_digest,omitzero" pattern:"^sha256:[a-f0-9]{64}$"`
	EntityType    *EntityType `json:"entity_type,omitzero"`
	EntityID      *string     `json:"entity_id,omitzero" format:"uuid"`
	Metadata      Object      `json:"metadata,omitzero"`
	Causation
}

// Validate checks the command's rules: the bounds, the content fields its type allows (at
// least one of them), an absolute URI, the entity given with its type, bounded metadata,
// and a given digest that matches.
func (c CreateArtifact) Validate() error {
	is := CheckFields(c)
	spec, ok := ArtifactTypeOf(c.Type)
	if ok {
		given := 0
		for _, f := range []struct {
			field ArtifactField
			set   bool
		}{{ArtifactFieldURI, c.URI != nil}, {ArtifactFieldContent, c.Content != nil}} {
			switch {
			case f.set && !spec.Allows(f.field):
				is.Add("/"+string(f.field), "is not a field of a %s artifact (its fields: %s)", c.Type, fieldList(spec.Fields))
			case f.set:
				given++
			}
		}
		if given == 0 {
			is.Add("", "a %s artifact needs %s", c.Type, oneOf(spec.Fields))
		}
	}
	if c.URI != nil && !validArtifactURI(*c.URI) {
		is.Add("/uri", "must be an absolute URI (scheme:...) without spaces")
	}
	if (c.EntityType == nil) != (c.EntityID == nil) {
		is.Add("/entity_id", "entity_type and entity_id are given together")
	}
	if len(c.Metadata) > MaxArtifactMetadataBytes {
		is.Add("/metadata", "must be at most %d bytes of JSON", MaxArtifactMetadataBytes)
	}
	if c.ContentDigest != nil && len(is) == 0 {
		if d, err := ArtifactContentDigest(c.Type, c.URI, c.MediaType, c.Content); err == nil && d != *c.ContentDigest {
			is.Add("/content_digest", "does not match the digest of the artifact's content (%s)", d)
		}
	}
	return is.Err()
}

func fieldList(fs []ArtifactField) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = string(f)
	}
	return strings.Join(parts, ", ")
}

func oneOf(fs []ArtifactField) string {
	if len(fs) == 1 {
		return string(fs[0])
	}
	return "at least one of " + fieldList(fs)
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

// artifactContent is what an artifact's content digest covers.
type artifactContent struct {
	Type      ArtifactType `json:"type"`
	URI       *string      `json:"uri"`
	MediaType *string      `json:"media_type"`
	Content   *string      `json:"content"`
}

// ArtifactContentDigest is the content digest of an artifact: "sha256:" + the hex SHA-256
// of the RFC 8785 canonical JSON of {content, media_type, type, uri} (absent members as
// null). The same content located and typed the same way has the same digest.
func ArtifactContentDigest(t ArtifactType, uri, mediaType, content *string) (string, error) {
	return CanonicalDigest(artifactContent{Type: t, URI: uri, MediaType: mediaType, Content: content})
}

// ArtifactCreatedPayload is the payload of artifact.created: self-contained, so that
// projections can count and bucket artifacts from the ledger alone. It carries the digest
// and size of the content, never the content itself.
type ArtifactCreatedPayload struct {
	ArtifactID    string       `json:"artifact_id"`
	Type          ArtifactType `json:"type"`
	Title         string       `json:"title"`
	URI           *string      `json:"uri"`
	MediaType     *string      `json:"media_type"`
	EntityType    *EntityType  `json:"entity_type"`
	EntityID      *string      `json:"entity_id"`
	ContentDigest string       `json:"content_digest"`
	SizeBytes     int64        `json:"size_bytes"`
	HasContent    bool         `json:"has_content"`
	CreatedAt     Time         `json:"created_at"`
	CommandID     *string      `json:"command_id"`
}

// NewArtifact makes the artifact the command records, with id and creation instant, by
// the actor.
func (c CreateArtifact) NewArtifact(id, workspaceID string, by Actor, now time.Time) (Artifact, error) {
	digest, err := ArtifactContentDigest(c.Type, c.URI, c.MediaType, c.Content)
	if err != nil {
		return Artifact{}, err
	}
	a := Artifact{ArtifactSummary: ArtifactSummary{ID: id, WorkspaceID: workspaceID, Type: c.Type, Title: c.Title, URI: c.URI,
		MediaType: c.MediaType, ContentDigest: digest, HasContent: c.Content != nil, EntityType: c.EntityType, Metadata: c.Metadata,
		CreatedBy: by, CreatedAt: TimeOf(now), Version: 1}, Content: c.Content}
	if c.EntityID != nil {
		e := NormalizeUUID(*c.EntityID)
		a.EntityID = &e
	}
	if c.Content != nil {
		a.SizeBytes = int64(len(*c.Content))
	}
	if len(a.Metadata) == 0 {
		a.Metadata = Object("{}")
	}
	return a, nil
}

// CreatedPayload is the artifact.created payload of a.
func (a Artifact) CreatedPayload(commandID *string) ArtifactCreatedPayload {
	return ArtifactCreatedPayload{ArtifactID: a.ID, Type: a.Type, Title: a.Title, URI: a.URI, MediaType: a.MediaType,
		EntityType: a.EntityType, EntityID: a.EntityID, ContentDigest: a.ContentDigest, SizeBytes: a.SizeBytes,
		HasContent: a.HasContent, CreatedAt: a.CreatedAt, CommandID: commandID}
}

// ArtifactFilter selects artifacts of a workspace (newest first, keyset pages).
type ArtifactFilter struct {
	Limit      int
	After      *WorkCursor
	Type       *ArtifactType
	EntityType *EntityType
	EntityID   *string
}

// ArtifactVersionConflict is the 409 of a read at an expected version the artifact is not at.
func ArtifactVersionConflict(id string, current, expected int64) *Error {
	return Errorf(ECodeVersionConflict, "Artifact %s is at version %d, not %d.", id, current, expected).
		WithDetails(map[string]any{"current_version": current})
}
