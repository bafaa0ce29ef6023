package payload

import "github.com/accountablework/accountable"

// The payload types of these events (Types).
func init() {
	describes[ArtifactCreated](accountable.EventArtifactCreated)
}

// ArtifactCreated is the payload of artifact.created: self-contained, so that projections
// can count and bucket artifacts from the ledger alone. It carries the content digest and
// the preview's size, never the preview, the description or the metadata. Events recorded
// before issue 25 keep their payload ({artifact_id, type, title, uri, media_type,
// entity_type, entity_id, content_digest, size_bytes, has_content, created_at,
// command_id}); consumers count artifact.created by its type, whatever its payload.
type ArtifactCreated struct {
	ArtifactID            string                           `json:"artifact_id"`
	Name                  string                           `json:"name"`
	ArtifactType          string                           `json:"artifact_type"`
	RequestedArtifactType string                           `json:"requested_artifact_type"`
	ArtifactURL           *string                          `json:"artifact_url"`
	ExternalURL           *string                          `json:"external_url"`
	MediaType             *string                          `json:"media_type"`
	EntityType            *accountable.EntityType          `json:"entity_type"`
	EntityID              *string                          `json:"entity_id"`
	InitiativeID          *string                          `json:"initiative_id"`
	Status                accountable.ArtifactStatus       `json:"status"`
	CreatedByType         *accountable.ArtifactCreatorType `json:"created_by_type"`
	CreatedByID           *string                          `json:"created_by_id"`
	ContentDigest         string                           `json:"content_digest"`
	DigestScheme          accountable.ArtifactDigestScheme `json:"digest_scheme"`
	PreviewBytes          *int64                           `json:"preview_bytes"`
	CreatedAt             accountable.Time                 `json:"created_at"`
	CommandID             *string                          `json:"command_id"`
}

// ArtifactCreatedOf is the artifact.created payload of the artifact a command created.
func ArtifactCreatedOf(a accountable.Artifact, commandID *string) ArtifactCreated {
	return ArtifactCreated{ArtifactID: a.ID, Name: a.Name, ArtifactType: a.ArtifactType, RequestedArtifactType: a.RequestedArtifactType,
		ArtifactURL: a.ArtifactURL, ExternalURL: a.ExternalURL, MediaType: a.MediaType, EntityType: a.EntityType, EntityID: a.EntityID,
		InitiativeID: a.InitiativeID, Status: a.Status, CreatedByType: a.CreatedByType, CreatedByID: a.CreatedByID,
		ContentDigest: a.Verification.ContentDigest, DigestScheme: a.Verification.DigestScheme, PreviewBytes: a.PreviewBytes,
		CreatedAt: a.CreatedAt, CommandID: commandID}
}
