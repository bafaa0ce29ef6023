package accountable_test

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
)

func TestCreateArtifactRules(t *testing.T) {
	id := "0190C0DE-0000-7000-8000-000000000000"
	text := "# Findings\n\nAll green."
	uri := "https://example.com/reports/1"
	task := accountable.EntityTask
	digest, err := accountable.ArtifactContentDigest(accountable.ArtifactReport, nil, nil, &text)
	if err != nil {
		t.Fatal(err)
	}
	report := func(mod func(c *accountable.CreateArtifact)) accountable.CreateArtifact {
		c := accountable.CreateArtifact{Type: accountable.ArtifactReport, Title: "Weekly report", Content: &text}
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
		{"inline content", report(nil), nil},
		{"uri only", report(func(c *accountable.CreateArtifact) { c.Content, c.URI = nil, &uri }), nil},
		{"uri and content", report(func(c *accountable.CreateArtifact) { c.URI = &uri }), nil},
		{"neither uri nor content", report(func(c *accountable.CreateArtifact) { c.Content = nil }), []string{""}},
		{"a link with its uri", accountable.CreateArtifact{Type: accountable.ArtifactLink, Title: "Ticket", URI: &uri}, nil},
		{"a link without a uri", accountable.CreateArtifact{Type: accountable.ArtifactLink, Title: "Ticket"}, []string{""}},
		{"a link with content", accountable.CreateArtifact{Type: accountable.ArtifactLink, Title: "Ticket", URI: &uri, Content: &text},
			[]string{"/content"}},
		{"an image inline", accountable.CreateArtifact{Type: accountable.ArtifactImage, Title: "Chart", Content: &text}, []string{"/content", ""}},
		{"a dataset by uri", accountable.CreateArtifact{Type: accountable.ArtifactDataset, Title: "Rows", URI: ptr("s3://bucket/rows.parquet")}, nil},
		{"missing type", accountable.CreateArtifact{Title: "x", Content: &text}, []string{"/type"}},
		{"unknown type", report(func(c *accountable.CreateArtifact) { c.Type = "video" }), []string{"/type"}},
		{"missing title", report(func(c *accountable.CreateArtifact) { c.Title = "" }), []string{"/title"}},
		{"title at the bound", report(func(c *accountable.CreateArtifact) { c.Title = strings.Repeat("é", 500) }), nil},
		{"title too long", report(func(c *accountable.CreateArtifact) { c.Title = strings.Repeat("é", 501) }), []string{"/title"}},
		{"content at the bound", report(func(c *accountable.CreateArtifact) {
			c.Content = ptr(strings.Repeat("x", accountable.MaxArtifactContentChars))
		}), nil},
		{"content too long", report(func(c *accountable.CreateArtifact) {
			c.Content = ptr(strings.Repeat("x", accountable.MaxArtifactContentChars+1))
		}), []string{"/content"}},
		{"empty content is content", report(func(c *accountable.CreateArtifact) { c.Content = ptr("") }), nil},
		{"relative uri", report(func(c *accountable.CreateArtifact) { c.URI = ptr("/reports/1") }), []string{"/uri"}},
		{"uri with a space", report(func(c *accountable.CreateArtifact) { c.URI = ptr("https://example.com/a b") }), []string{"/uri"}},
		{"scheme alone", report(func(c *accountable.CreateArtifact) { c.URI = ptr("https:") }), []string{"/uri"}},
		{"opaque uri", report(func(c *accountable.CreateArtifact) { c.URI = ptr("urn:isbn:0451450523") }), nil},
		{"uri too long", report(func(c *accountable.CreateArtifact) { c.URI = ptr("https://e.com/" + strings.Repeat("a", 2040)) }), []string{"/uri"}},
		{"media type", report(func(c *accountable.CreateArtifact) { c.MediaType = ptr("text/markdown; charset=utf-8") }), nil},
		{"bad media type", report(func(c *accountable.CreateArtifact) { c.MediaType = ptr("markdown") }), []string{"/media_type"}},
		{"entity", report(func(c *accountable.CreateArtifact) { c.EntityType, c.EntityID = &task, &id }), nil},
		{"entity type alone", report(func(c *accountable.CreateArtifact) { c.EntityType = &task }), []string{"/entity_id"}},
		{"entity id alone", report(func(c *accountable.CreateArtifact) { c.EntityID = &id }), []string{"/entity_id"}},
		{"unknown entity type", report(func(c *accountable.CreateArtifact) {
			c.EntityType, c.EntityID = ptr(accountable.EntityType("workspace")), &id
		}), []string{"/entity_type"}},
		{"entity id not a uuid", report(func(c *accountable.CreateArtifact) { c.EntityType, c.EntityID = &task, ptr("42") }), []string{"/entity_id"}},
		{"metadata at the bound", report(func(c *accountable.CreateArtifact) {
			c.Metadata = accountable.Object(`{"a":"` + strings.Repeat("x", accountable.MaxArtifactMetadataBytes-8) + `"}`)
		}), nil},
		{"metadata too big", report(func(c *accountable.CreateArtifact) {
			c.Metadata = accountable.Object(`{"a":"` + strings.Repeat("x", accountable.MaxArtifactMetadataBytes-7) + `"}`)
		}), []string{"/metadata"}},
		{"matching digest", report(func(c *accountable.CreateArtifact) { c.ContentDigest = &digest }), nil},
		{"digest of other content", report(func(c *accountable.CreateArtifact) { c.ContentDigest = &digest; c.Title = "same digest"; c.URI = &uri }),
			[]string{"/content_digest"}},
		{"malformed digest", report(func(c *accountable.CreateArtifact) { c.ContentDigest = ptr("sha256:XYZ") }), []string{"/content_digest"}},
		{"NUL in the title", report(func(c *accountable.CreateArtifact) { c.Title = "a\x00b" }), []string{"/title"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := issuePaths(c.cmd.Validate()); !slices.Equal(got, c.want) {
				t.Fatalf("issues at %q, want %q (%v)", got, c.want, c.cmd.Validate())
			}
		})
	}
}

// The catalogue: every type listed once, described, with content fields; its Enum follows it.
func TestArtifactTypeCatalogue(t *testing.T) {
	var names []any
	for _, s := range accountable.ArtifactTypes {
		if s.Description == "" || len(s.Fields) == 0 || slices.Contains(names, any(string(s.Type))) {
			t.Fatalf("entry %+v", s)
		}
		if s.Allows(accountable.ArtifactFieldContent) != (s.MaxContentCharacters > 0) {
			t.Fatalf("%s: content allowed %v but max_content_characters %d", s.Type, s.Allows(accountable.ArtifactFieldContent), s.MaxContentCharacters)
		}
		names = append(names, string(s.Type))
	}
	if !slices.Equal(names, accountable.ArtifactType("").Enum()) {
		t.Fatalf("enum %v, catalogue %v", accountable.ArtifactType("").Enum(), names)
	}
	for _, want := range []string{"document", "code_change", "report", "dataset", "image", "link", "transcript", "other"} {
		if !slices.Contains(names, any(want)) {
			t.Fatalf("no %s in %v", want, names)
		}
	}
	if _, ok := accountable.ArtifactTypeOf("video"); ok {
		t.Fatal("video is not a type")
	}
}

// The content digest is sha256 of the canonical JSON of {content, media_type, type, uri}:
// checked against the JSON written out by hand.
func TestArtifactContentDigest(t *testing.T) {
	content, uri := "line 1\n\"quoted\" é", "https://example.com/x"
	got, err := accountable.ArtifactContentDigest(accountable.ArtifactDocument, &uri, nil, &content)
	if err != nil {
		t.Fatal(err)
	}
	canonical := `{"content":"line 1\n\"quoted\" é","media_type":null,"type":"document","uri":"https://example.com/x"}`
	sum := sha256.Sum256([]byte(canonical))
	if want := "sha256:" + hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
	other, _ := accountable.ArtifactContentDigest(accountable.ArtifactReport, &uri, nil, &content)
	none, _ := accountable.ArtifactContentDigest(accountable.ArtifactDocument, &uri, nil, nil)
	if other == got || none == got {
		t.Fatal("the type and the content are part of the digest")
	}
}

func TestNewArtifact(t *testing.T) {
	content := "héllo"
	id := "0190C0DE-0000-7000-8000-00000000ABCD"
	task := accountable.EntityTask
	now := time.Date(2026, 11, 24, 10, 0, 0, 123456789, time.UTC)
	cmd := accountable.CreateArtifact{Type: accountable.ArtifactTranscript, Title: "Call", Content: &content, EntityType: &task, EntityID: &id}
	a, err := cmd.NewArtifact("a-id", "ws", accountable.Actor{Type: accountable.ActorHuman, ID: "u"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if a.SizeBytes != 6 || !a.HasContent || *a.EntityID != strings.ToLower(id) || a.Version != 1 || string(a.Metadata) != "{}" ||
		!a.CreatedAt.Equal(now.Truncate(time.Microsecond)) || *a.Content != content {
		t.Fatalf("artifact %+v", a)
	}
	p := a.CreatedPayload(nil)
	if p.ArtifactID != "a-id" || p.ContentDigest != a.ContentDigest || p.SizeBytes != 6 || p.EntityID != a.EntityID || p.Type != a.Type {
		t.Fatalf("payload %+v", p)
	}
	link := accountable.CreateArtifact{Type: accountable.ArtifactLink, Title: "PR", URI: ptr("https://example.com/pr/1")}
	l, err := link.NewArtifact("l", "ws", accountable.Actor{}, now)
	if err != nil || l.SizeBytes != 0 || l.HasContent || l.Content != nil || l.EntityType != nil {
		t.Fatalf("link %+v %v", l, err)
	}
}
