package schema_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/accountablework/accountable/receipt"
	"github.com/accountablework/accountable/receipt/receipttest"
	"github.com/accountablework/accountable/receipt/schema"
)

// The quick pass (quick.go) never disagrees with the library: valid only where the
// library accepts, invalid only where it refuses. Checked on every fixture, every fuzz
// seed, and every single change of the valid fixtures: each value dropped and replaced by
// values of each type and by values near the schema's limits (about 30,000 documents with
// QUICK_PASS_ALL=1, a quarter of the replacements without).
// TestReceiptVerdictsGolden (package api) holds the verdicts' bytes.
func TestQuickPassAgreesWithTheLibrary(t *testing.T) {
	s, err := schema.Load()
	if err != nil {
		t.Fatal(err)
	}
	// make test replaces each value by a rotating quarter of the values (every value still
	// meets every kind of member, a quarter of the time under -race); make soak by all of
	// them (QUICK_PASS_ALL=1, about 30,000 documents).
	allValues := os.Getenv("QUICK_PASS_ALL") != ""
	counts := map[string]int{}
	agree := func(name string, doc any) {
		t.Helper()
		quick, lib := s.QuickVerdict(doc), s.LibraryAccepts(doc)
		counts[quick]++
		if quick == "valid" && !lib || quick == "invalid" && lib || quick == "" {
			raw, _ := json.Marshal(doc)
			t.Fatalf("%s: quick %q, library accepts %v: %.300s", name, quick, lib, raw)
		}
	}
	values := []any{nil, true, false, json.Number("0"), json.Number("-1"), json.Number("1.5"), json.Number("1.0"), json.Number("1e2"),
		json.Number("-0"), json.Number("100000000000000000000000"), json.Number("1e-400"), json.Number("9007199254740993"),
		json.Number("999999999999999999"), json.Number("0.000001"), json.Number("-0.5"), json.Number("0.5"), json.Number("-0.0"),
		json.Number("2.5"), json.Number("-1.25"), json.Number("86400000.5"), json.Number("1000000000000000.5"), json.Number("1.5e3"), json.Number("9007199254740991"), json.Number("9007199254740991.5"), json.Number("-9007199254740991.5"),
		json.Number("-9007199254740992"), json.Number("9007199254740990.99"), json.Number("123456789012345.5"), json.Number("1000000000"), "", "x", "2026-11-24T10:00:00Z",
		"2026-11-24T10:00:00.5+01:00", "1990-12-31T23:59:60Z", "2026-02-30T10:00:00Z", "2026-11-24t10:00:00z", "not-a-date",
		"http://[::1", "../ref", "sha256", "sha-256", "hex", "base64url", "ed25519", "unverified", "passed", "completed",
		"agent-work-receipt/v0.1", "é", strings.Repeat("x", 300), strings.Repeat("y", 5000),
		[]any{}, []any{"a"}, []any{json.Number("1")}, map[string]any{}, map[string]any{"extra": "x"}}
	for _, name := range []string{"claude-code.json", "codex.json", "openclaw.json", "invalid-missing-authority.json", "invalid-unresolved-evidence.json"} {
		raw := read(t, "fixtures/"+name)
		doc, issue := receipt.DecodeReceiptJSON(raw, 0)
		if issue != nil {
			t.Fatal(issue)
		}
		agree(name, doc)
		if strings.HasPrefix(name, "invalid") {
			continue
		}
		if s.QuickVerdict(doc) != "valid" {
			t.Fatalf("%s: the quick pass does not prove a valid fixture valid", name)
		}
		paths := receipttest.Paths(doc)
		for pi, path := range paths[1:] {
			at := name + " /" + strings.Join(path, "/")
			fresh := func() any { d, _ := receipt.DecodeReceiptJSON(raw, 0); return d }
			agree(at+" dropped", receipttest.Put(fresh(), path, nil, true))
			for i, v := range values {
				if !allValues && (pi+i)%4 != 0 {
					continue
				}
				agree(at+" = value "+strconv.Itoa(i), receipttest.Put(fresh(), path, v, false))
			}
			// an extra member in an object, a repeated item in an array
			switch v := receipttest.Get(fresh(), path).(type) {
			case map[string]any:
				d := fresh()
				receipttest.Get(d, path).(map[string]any)["zz_extra"] = "x"
				agree(at+" extra", d)
			case []any:
				if len(v) > 0 {
					d := fresh()
					agree(at+" repeated", receipttest.Put(d, path, append(slices.Clone(receipttest.Get(d, path).([]any)), v[0]), false))
				}
			}
		}
	}
	entries, _ := os.ReadDir(filepath.Join("testdata", "fuzz", "FuzzValidateReceipt"))
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join("testdata", "fuzz", "FuzzValidateReceipt", e.Name()))
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		text, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[len(lines)-1], "[]byte("), ")"))
		if err != nil {
			t.Fatal(err)
		}
		if doc, issue := receipt.DecodeReceiptJSON([]byte(text), 0); issue == nil {
			agree("fuzz "+e.Name(), doc)
		}
	}
	t.Logf("quick verdicts: %v", counts)
	if counts["valid"] < 100 || counts["invalid"] < 1000 {
		t.Fatalf("the quick pass decided too little to be tested: %v", counts)
	}
}
