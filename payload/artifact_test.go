package payload_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/payload"
)

// The artifact.created payload of a new artifact: its identity, types and digest, and the
// preview's size but never the preview, the description or the metadata.
func TestArtifactCreatedOf(t *testing.T) {
	preview, description := "héllo", "what it is"
	by := accountable.Actor{Type: accountable.ActorAgent, ID: "codex"}
	external := "https://example.com/call"
	cmd := accountable.CreateArtifact{EntityType: accountable.EntityTask, EntityID: "0190C0DE-0000-7000-8000-00000000ABCD", Name: "Call",
		ArtifactType: "call_notes", ExternalURL: &external, PreviewMarkdown: &preview, Description: &description,
		Metadata: accountable.Object(`{"k":"v"}`)}
	digest, err := canonical.DigestOf(cmd.Content())
	if err != nil {
		t.Fatal(err)
	}
	a := cmd.NewArtifact("a-id", "ws", nil, by, time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC), digest)
	command := "cmd-1"
	p := payload.ArtifactCreatedOf(a, &command)
	if p.ArtifactID != "a-id" || p.ContentDigest != a.Verification.ContentDigest || *p.PreviewBytes != 6 || p.EntityID != a.EntityID ||
		p.ArtifactType != "other" || p.RequestedArtifactType != "call_notes" || p.Name != "Call" || *p.CommandID != command {
		t.Fatalf("payload %+v", p)
	}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	// docs/artifacts.md gives these fields; nothing else.
	want := []string{"artifact_id", "name", "artifact_type", "requested_artifact_type", "artifact_url", "external_url", "media_type",
		"entity_type", "entity_id", "initiative_id", "status", "created_by_type", "created_by_id", "content_digest", "digest_scheme",
		"preview_bytes", "created_at", "command_id"}
	got := slices.Sorted(maps.Keys(fields))
	if slices.Sort(want); !slices.Equal(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}
}
