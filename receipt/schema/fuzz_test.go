package schema_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/receipt"
)

// FuzzValidateReceipt runs the whole validator (input walk, schema, semantic rules,
// integrity) over arbitrary bytes: it never panics, it always answers either a valid
// receipt or issues (sorted, bounded, each with a known code and a JSON Pointer), and it
// answers in bounded time. `make test` runs the seed corpus (testdata/fuzz, the fixtures
// and hand-picked hostile inputs); `go test -fuzz FuzzValidateReceipt ./receipt/schema`
// explores further.
func FuzzValidateReceipt(f *testing.F) {
	for _, name := range []string{"claude-code.json", "codex.json", "openclaw.json", "invalid-missing-authority.json", "invalid-unresolved-evidence.json"} {
		f.Add(read(f, "fixtures/"+name))
	}
	v := validator(f)
	v.MaxBytes = 64 << 10 // the fuzzer's inputs are small; the size refusal is part of what it explores
	f.Fuzz(func(t *testing.T, raw []byte) {
		start := time.Now()
		res := v.Validate(raw)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("validation took %s", d)
		}
		if res.Valid() {
			switch {
			case len(res.Issues) != 0 || res.IssueCount != 0:
				t.Fatalf("valid with issues %+v", res.Issues)
			case res.Receipt == nil || res.Document == nil || res.Digest != canonical.Digest(res.Canonical):
				t.Fatal("valid without its document, canonical form or digest")
			case res.Receipt.SchemaVersion != receipt.ReceiptSchemaVersion || res.Receipt.ReceiptID == "":
				t.Fatalf("valid receipt %+v", res.Receipt)
			}
			if !slices.Contains(res.Integrity.ContentHash.State.Enum(), any(string(res.Integrity.ContentHash.State))) {
				t.Fatalf("content hash state %q", res.Integrity.ContentHash.State)
			}
			// What an import stores has a canonical form, and is stable under canonicalisation.
			if again, err := canonical.Transform(res.Canonical); err != nil || !bytes.Equal(again, res.Canonical) {
				t.Fatalf("canonical form not stable: %v", err)
			}
			if _, err := canonical.JSON(res.ImportCommand().Imported("id")); err != nil {
				t.Fatalf("the ledger payload: %v", err)
			}
			return
		}
		if res.IssueCount == 0 || len(res.Issues) == 0 || len(res.Issues) > receipt.MaxReceiptIssues || res.IssueCount < len(res.Issues) {
			t.Fatalf("invalid with %d issues listed of %d", len(res.Issues), res.IssueCount)
		}
		if !slices.IsSortedFunc(res.Issues, func(a, b receipt.ReceiptIssue) int {
			return strings.Compare(a.Path+"\x00"+a.Code+"\x00"+a.Message, b.Path+"\x00"+b.Code+"\x00"+b.Message)
		}) {
			t.Fatalf("issues not sorted: %+v", res.Issues)
		}
		for _, is := range res.Issues {
			known := strings.HasPrefix(is.Code, "input.") || strings.HasPrefix(is.Code, "schema.") || strings.HasPrefix(is.Code, "semantic.")
			if !known || is.Message == "" || (is.Path != "" && !strings.HasPrefix(is.Path, "/")) {
				t.Fatalf("issue %+v", is)
			}
		}
	})
}
