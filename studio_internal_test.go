package accountable

import (
	"strings"
	"testing"
)

// A broken showcase file is refused as a whole, saying which example is wrong.
func TestParseShowcaseRefusesBrokenExamples(t *testing.T) {
	for _, c := range []struct{ name, raw, want string }{
		{"not JSON", `[{`, "studio showcase"},
		{"no id", `[{"format": "blog_post", "request": {"format": "blog_post"}}]`, "missing or repeated id"},
		{"repeated id", `[{"id": "a", "format": "blog_post", "request": {"format": "blog_post"}},
			{"id": "a", "format": "blog_post", "request": {"format": "blog_post"}}]`, "missing or repeated id"},
		{"request of another format", `[{"id": "a", "format": "newsletter", "request": {"format": "blog_post"}}]`, "its request is for blog_post"},
		{"invalid request", `[{"id": "a", "format": "blog_post", "request": {"format": "blog_post", "units": 7}}]`, "/units"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := parseShowcase([]byte(c.raw)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
	if _, err := parseShowcase(studioShowcaseJSON); err != nil {
		t.Fatalf("the shipped showcase: %v", err)
	}
}
