package workload_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/accountablework/accountable/workload"
)

// The scoring table of docs/workload.md is made from WorkloadScoringRules, the rules
// GET /doctor/workload serves and Diagnose scores with, so the documentation cannot drift
// from the code. UPDATE_GOLDEN=1 rewrites it.
func TestScoringTableInDocsIsGenerated(t *testing.T) {
	const (
		path  = "../docs/workload.md"
		begin = "<!-- scoring-table:begin -->\n"
		end   = "<!-- scoring-table:end -->\n"
	)
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q section", path, strings.TrimSpace(begin), strings.TrimSpace(end))
	}
	want := scoringTable(workload.WorkloadScoringRules())
	got := string(doc[i+len(begin) : j])
	if got == want {
		return
	}
	if os.Getenv("UPDATE_GOLDEN") != "" {
		out := append(append(append([]byte{}, doc[:i+len(begin)]...), want...), doc[j:]...)
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for k := range min(len(gl), len(wl)) {
		if gl[k] != wl[k] {
			t.Fatalf("%s's scoring table differs from the code's rules at its line %d:\n doc:  %s\n code: %s\n(UPDATE_GOLDEN=1 rewrites it)", path, k+1, gl[k], wl[k])
		}
	}
	t.Fatalf("%s's scoring table has %d lines, the code's rules make %d (UPDATE_GOLDEN=1 rewrites it)", path, len(gl), len(wl))
}

// scoringTable renders rules as one Markdown table per group, in the rules' order.
func scoringTable(rules []workload.WorkloadRule) string {
	var b strings.Builder
	group := ""
	for _, r := range rules {
		if r.Group != group {
			group = r.Group
			b.WriteString("\n**" + group + "**\n\n| rule | when | effect |\n|---|---|---|\n")
		}
		b.WriteString("| " + r.ID + " | " + cell(r.When) + " | " + cell(r.Effect) + " |\n")
	}
	b.WriteString("\n")
	return b.String()
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
