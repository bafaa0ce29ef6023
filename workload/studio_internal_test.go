package workload

import (
	"strings"
	"testing"
)

// A broken showcase file is refused as a whole, saying which example is wrong.
func TestParseShowcaseRefusesBrokenExamples(t *testing.T) {
	const ok = `"title": "t", "contentType": "post", "industry": "i", "style": "s", "featured": false, "thumbnailUrl": null, "previewUrls": [],
		"qaScores": {"overall": 0.9, "brandAlignment": 0.9, "visualQuality": 0.9}`
	for _, c := range []struct{ name, raw, want string }{
		{"not JSON", `[{`, "studio showcase"},
		{"no id", `[{` + ok + `}]`, "missing or repeated id"},
		{"repeated id", `[{"id": "a", ` + ok + `}, {"id": "a", ` + ok + `}]`, "missing or repeated id"},
		{"unknown content type", `[{"id": "a", ` + strings.Replace(ok, `"post"`, `"novel"`, 1) + `}]`, "/contentType"},
		{"no industry", `[{"id": "a", ` + strings.Replace(ok, `"industry": "i"`, `"industry": ""`, 1) + `}]`, "/industry"},
		{"score over 1", `[{"id": "a", ` + strings.Replace(ok, `"overall": 0.9`, `"overall": 1.5`, 1) + `}]`, "/qaScores/overall"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := parseShowcase([]byte(c.raw)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
	if _, err := parseShowcase([]byte(`[{"id": "a", ` + ok + `}]`)); err != nil {
		t.Fatalf("a valid example: %v", err)
	}
	if _, err := parseShowcase(studioShowcaseJSON); err != nil {
		t.Fatalf("the shipped showcase: %v", err)
	}
}
