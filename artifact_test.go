package accountable_test

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

func TestCreateArtifactRules(t *testing.T) {
	id := "0190C0DE-0000-7000-8000-000000000000"
	preview := "# Findings\n\nAll green."
	uri := "https://example.com/reports/1"
	digest, err := canonical.DigestOf(accountable.ArtifactContent{ArtifactType: "report", ArtifactURL: &uri, PreviewMarkdown: &preview})
	if err != nil {
		t.Fatal(err)
	}
	// The body create_artifact of the public Python client sends.
	report := func(mod func(c *accountable.CreateArtifact)) accountable.CreateArtifact {
		c := accountable.CreateArtifact{EntityType: accountable.EntityTask, EntityID: id, Name: "Weekly report", ArtifactType: "report",
			ArtifactURL: &uri, PreviewMarkdown: &preview}
		if mod != nil {
			mod(&c)
		}
		return c
	}
	cases := []struct {
		name string
		cmd  accountable.CreateArtifact
		want []string
	}{
		{"the client's body", report(nil), nil},
		{"an external url only", report(func(c *accountable.CreateArtifact) { c.ArtifactURL, c.ExternalURL = nil, &uri }), nil},
		{"both urls", report(func(c *accountable.CreateArtifact) { c.ExternalURL = &uri }), nil},
		{"no url at all", report(func(c *accountable.CreateArtifact) { c.ArtifactURL = nil }), []string{"/artifact_url", "/external_url"}},
		{"an unknown type is no issue", report(func(c *accountable.CreateArtifact) { c.ArtifactType = "weekly_digest" }), nil},
		{"no type", report(func(c *accountable.CreateArtifact) { c.ArtifactType = "" }), []string{"/artifact_type"}},
		{"type too long", report(func(c *accountable.CreateArtifact) { c.ArtifactType = strings.Repeat("t", 101) }), []string{"/artifact_type"}},
		{"no name", report(func(c *accountable.CreateArtifact) { c.Name = "" }), []string{"/name"}},
		{"name at the bound", report(func(c *accountable.CreateArtifact) { c.Name = strings.Repeat("é", 500) }), nil},
		{"name too long", report(func(c *accountable.CreateArtifact) { c.Name = strings.Repeat("é", 501) }), []string{"/name"}},
		{"NUL in the name", report(func(c *accountable.CreateArtifact) { c.Name = "a\x00b" }), []string{"/name"}},
		{"no entity type", report(func(c *accountable.CreateArtifact) { c.EntityType = "" }), []string{"/entity_type"}},
		{"unknown entity type", report(func(c *accountable.CreateArtifact) { c.EntityType = "workspace" }), []string{"/entity_type"}},
		{"no entity id", report(func(c *accountable.CreateArtifact) { c.EntityID = "" }), []string{"/entity_id"}},
		{"a task's id not a uuid", report(func(c *accountable.CreateArtifact) { c.EntityID = "42" }), []string{"/entity_id"}},
		{"a project's id is any id", report(func(c *accountable.CreateArtifact) { c.EntityType, c.EntityID = accountable.EntityProject, "proj-42" }), nil},
		{"every status", report(func(c *accountable.CreateArtifact) { c.Status = ptr(accountable.ArtifactEvalPassed) }), nil},
		{"bad status", report(func(c *accountable.CreateArtifact) { c.Status = ptr(accountable.ArtifactStatus("published")) }), []string{"/status"}},
		{"bad creator type", report(func(c *accountable.CreateArtifact) { c.CreatedByType = ptr(accountable.ArtifactCreatorType("robot")) }),
			[]string{"/created_by_type"}},
		{"initiative not a uuid", report(func(c *accountable.CreateArtifact) { c.InitiativeID = ptr("init-1") }), []string{"/initiative_id"}},
		{"relative url", report(func(c *accountable.CreateArtifact) { c.ArtifactURL = ptr("/reports/1") }), []string{"/artifact_url"}},
		{"url with a space", report(func(c *accountable.CreateArtifact) { c.ExternalURL = ptr("https://example.com/a b") }), []string{"/external_url"}},
		{"scheme alone", report(func(c *accountable.CreateArtifact) { c.ArtifactURL = ptr("https:") }), []string{"/artifact_url"}},
		{"empty url", report(func(c *accountable.CreateArtifact) { c.ArtifactURL = ptr("") }), []string{"/artifact_url"}},
		{"opaque uri", report(func(c *accountable.CreateArtifact) { c.ArtifactURL = ptr("urn:isbn:0451450523") }), nil},
		{"url too long", report(func(c *accountable.CreateArtifact) { c.ArtifactURL = ptr("https://e.com/" + strings.Repeat("a", 2040)) }),
			[]string{"/artifact_url"}},
		{"preview at the bound", report(func(c *accountable.CreateArtifact) {
			c.PreviewMarkdown = ptr(strings.Repeat("x", accountable.MaxArtifactPreviewChars))
		}), nil},
		{"preview too long", report(func(c *accountable.CreateArtifact) {
			c.PreviewMarkdown = ptr(strings.Repeat("x", accountable.MaxArtifactPreviewChars+1))
		}), []string{"/preview_markdown"}},
		{"media type", report(func(c *accountable.CreateArtifact) { c.MediaType = ptr("text/markdown; charset=utf-8") }), nil},
		{"bad media type", report(func(c *accountable.CreateArtifact) { c.MediaType = ptr("markdown") }), []string{"/media_type"}},
		{"metadata at the bound", report(func(c *accountable.CreateArtifact) {
			c.Metadata = accountable.Object(`{"a":"` + strings.Repeat("x", accountable.MaxArtifactMetadataBytes-8) + `"}`)
		}), nil},
		{"metadata too big", report(func(c *accountable.CreateArtifact) {
			c.Metadata = accountable.Object(`{"a":"` + strings.Repeat("x", accountable.MaxArtifactMetadataBytes-7) + `"}`)
		}), []string{"/metadata"}},
		{"matching digest", report(func(c *accountable.CreateArtifact) { c.ContentDigest = &digest }), nil},
		{"digest of other content", report(func(c *accountable.CreateArtifact) { c.ContentDigest = &digest; c.ExternalURL = &uri }),
			[]string{"/content_digest"}},
		{"the name is not content", report(func(c *accountable.CreateArtifact) { c.ContentDigest = &digest; c.Name = "Another name" }), nil},
		{"malformed digest", report(func(c *accountable.CreateArtifact) { c.ContentDigest = ptr("sha256:XYZ") }), []string{"/content_digest"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := issuePaths(validateArtifact(c.cmd))
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Fatalf("issues at %q, want %q (%v)", got, c.want, validateArtifact(c.cmd))
			}
		})
	}
}

// validateArtifact checks c as the API does: its rules, then, once they hold, a declared
// digest against the digest of its content.
func validateArtifact(c accountable.CreateArtifact) error {
	if err := c.Validate(); err != nil {
		return err
	}
	d, err := canonical.DigestOf(c.Content())
	if err != nil {
		return err
	}
	return c.CheckContentDigest(d)
}

// The catalogue: every type listed once, with every member; the types of earlier
// artifacts and the generic type among them; an unknown type falls back to the generic one.
func TestArtifactTypeCatalogue(t *testing.T) {
	var codes []string
	for _, s := range accountable.ArtifactTypes {
		if s.TypeCode == "" || s.Label == "" || s.Summary == "" || s.Workflow == "" || len(s.Tags) == 0 || slices.Contains(codes, s.TypeCode) ||
			!slices.Contains(s.Domain.Enum(), any(string(s.Domain))) || !slices.Contains(s.Stage.Enum(), any(string(s.Stage))) {
			t.Fatalf("entry %+v", s)
		}
		if s.DefaultPersona != nil && *s.DefaultPersona == "" {
			t.Fatalf("%s: an empty persona", s.TypeCode)
		}
		codes = append(codes, s.TypeCode)
	}
	for _, want := range []string{"document", "code_change", "report", "dataset", "image", "link", "transcript", "other",
		"prd", "pull_request", "test_report", "release_notes", "design"} {
		if !slices.Contains(codes, want) {
			t.Fatalf("no %s in %v", want, codes)
		}
	}
	if g, ok := accountable.ArtifactTypeOf(accountable.ArtifactGenericType); !ok || g.IsDeliverable {
		t.Fatalf("generic type %+v", g)
	}
	for requested, want := range map[string]struct {
		effective string
		fallback  bool
	}{"prd": {"prd", false}, "other": {"other", false}, "weekly_digest": {"other", true}, "PRD": {"other", true}} {
		if e, f := accountable.EffectiveArtifactType(requested); e != want.effective || f != want.fallback {
			t.Fatalf("%s: %s %v, want %+v", requested, e, f, want)
		}
	}
}

// The content digest is sha256 of the canonical JSON of {artifact_type, artifact_url,
// external_url, media_type, preview_markdown}: checked against the JSON written out by hand.
func TestArtifactContentDigest(t *testing.T) {
	preview, uri := "line 1\n\"quoted\" é", "https://example.com/x"
	content := func(typ string, artifactURL, externalURL, preview *string) string {
		d, err := canonical.DigestOf(accountable.ArtifactContent{ArtifactType: typ, ArtifactURL: artifactURL, ExternalURL: externalURL,
			PreviewMarkdown: preview})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	got, err := canonical.DigestOf(accountable.CreateArtifact{ArtifactType: "pull_request", ArtifactURL: &uri, PreviewMarkdown: &preview,
		Name: "not content"}.Content())
	if err != nil {
		t.Fatal(err)
	}
	text := `{"artifact_type":"pull_request","artifact_url":"https://example.com/x","external_url":null,"media_type":null,` +
		`"preview_markdown":"line 1\n\"quoted\" é"}`
	sum := sha256.Sum256([]byte(text))
	if want := "sha256:" + hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
	other := content("report", &uri, nil, &preview)
	external := content("pull_request", nil, &uri, &preview)
	none := content("pull_request", &uri, nil, nil)
	if other == got || external == got || none == got {
		t.Fatal("the type, where the url is and the preview are part of the digest")
	}
}

func TestNewArtifact(t *testing.T) {
	preview := "héllo"
	id := "0190C0DE-0000-7000-8000-00000000ABCD"
	now := time.Date(2026, 11, 24, 10, 0, 0, 123456789, time.UTC)
	by := accountable.Actor{Type: accountable.ActorAgent, ID: "codex"}
	cmd := accountable.CreateArtifact{EntityType: accountable.EntityTask, EntityID: id, Name: "Call", ArtifactType: "call_notes",
		ExternalURL: ptr("https://example.com/call"), PreviewMarkdown: &preview}
	digest, err := canonical.DigestOf(cmd.Content())
	if err != nil {
		t.Fatal(err)
	}
	a := cmd.NewArtifact("a-id", "ws", nil, by, now, digest)
	if *a.PreviewBytes != 6 || *a.EntityID != strings.ToLower(id) || a.Version != 1 || string(a.Metadata) != "{}" || a.Status != accountable.ArtifactDraft ||
		a.ArtifactType != "other" || a.RequestedArtifactType != "call_notes" || !a.CreatedAt.Equal(now.Truncate(time.Microsecond)) ||
		a.UpdatedAt != a.CreatedAt || *a.PreviewMarkdown != preview || *a.CreatedByType != accountable.ArtifactCreatorAgent || *a.CreatedByID != "codex" ||
		a.Verification.RecordedBy != by || a.Verification.DigestScheme != accountable.ArtifactDigestV2 || a.InitiativeID != nil {
		t.Fatalf("artifact %+v", a)
	}
	if d, _ := canonical.DigestOf(accountable.ArtifactContent{ArtifactType: "call_notes", ExternalURL: cmd.ExternalURL,
		PreviewMarkdown: &preview}); a.Verification.ContentDigest != d {
		t.Fatalf("digest %s, want %s (of the type as sent)", a.Verification.ContentDigest, d)
	}
	// The creator as the caller says it, even in part; a project's id as given.
	said := accountable.CreateArtifact{EntityType: accountable.EntityProject, EntityID: "Proj-7", Name: "PR", ArtifactType: "pull_request",
		ArtifactURL: ptr("https://example.com/pr/1"), CreatedByType: ptr(accountable.ArtifactCreatorHuman), Status: ptr(accountable.ArtifactApproved)}
	l := said.NewArtifact("l", "ws", nil, by, now, digest)
	if l.PreviewBytes != nil || l.PreviewMarkdown != nil || *l.EntityID != "Proj-7" || *l.CreatedByType != accountable.ArtifactCreatorHuman ||
		l.CreatedByID != nil || l.Status != accountable.ArtifactApproved || l.Verification.RecordedBy != by {
		t.Fatalf("link %+v", l)
	}
}

// The initiative of an artifact: the one named, the entity's, both when they agree.
func TestArtifactInitiative(t *testing.T) {
	mine, other := "0190c0de-0000-7000-8000-000000000001", "0190c0de-0000-7000-8000-000000000002"
	for _, c := range []struct {
		named, ofEntity *string
		want            *string
		check, fails    bool
	}{
		{nil, nil, nil, false, false},
		{nil, &mine, &mine, false, false},
		{&mine, nil, &mine, true, false},
		{ptr(strings.ToUpper(mine)), &mine, &mine, false, false},
		{&other, &mine, nil, false, true},
	} {
		cmd := accountable.CreateArtifact{EntityType: accountable.EntityTask, InitiativeID: c.named}
		got, check, err := cmd.ArtifactInitiative(c.ofEntity)
		if (err != nil) != c.fails || check != c.check || (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Fatalf("named %v, of the entity %v: %v %v %v", c.named, c.ofEntity, got, check, err)
		}
		if err != nil && !slices.Equal(issuePaths(err), []string{"/initiative_id"}) {
			t.Fatalf("issues %v", err)
		}
	}
}
