package schema_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/accountablework/accountable/receipt"
	"github.com/accountablework/accountable/receipt/schema"
)

// The format's test data (testdata/agent-work-receipt/SOURCE.md at the module root).
var testdata = filepath.Join("..", "..", "testdata", "agent-work-receipt")

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdata, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func validator(t testing.TB) receipt.ReceiptValidator {
	t.Helper()
	s, err := schema.Load()
	if err != nil {
		t.Fatal(err)
	}
	return receipt.ReceiptValidator{Schema: s, MaxBytes: 1 << 20}
}

func decode(t testing.TB, raw []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func issues(v receipt.ReceiptValidation) []string {
	out := make([]string, len(v.Issues))
	for i, is := range v.Issues {
		out[i] = is.Path + " " + is.Code
	}
	return out
}

// The embedded schema is the format's: its id and version are the service's, and it is
// byte for byte the shared copy when that is beside this clone.
func TestEmbeddedSchemaIsTheFormats(t *testing.T) {
	var s struct {
		ID         string `json:"$id"`
		Properties struct {
			SchemaVersion struct {
				Const string `json:"const"`
			} `json:"schema_version"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schema.SchemaJSON(), &s); err != nil || s.ID != receipt.ReceiptSchemaURL ||
		s.Properties.SchemaVersion.Const != receipt.ReceiptSchemaVersion {
		t.Fatalf("schema %s %s: %v", s.ID, s.Properties.SchemaVersion.Const, err)
	}
	shared, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "testdata", "agent-work-receipt", "schema", "agent-work-receipt.v0.1.schema.json"))
	if err != nil {
		t.Logf("no shared copy to compare with: %v", err)
		return
	}
	if !bytes.Equal(shared, schema.SchemaJSON()) {
		t.Fatal("the embedded schema differs from the format's")
	}
}

// The three valid fixtures pass every stage; the two invalid ones fail where the format says.
func TestFixtures(t *testing.T) {
	v := validator(t)
	for _, c := range []struct {
		fixture, receiptID, actor, runtime, outcome, verification string
		evidence, interventions                                   int
		contentHash                                               receipt.ContentHashState
		signatures                                                int
	}{
		{"claude-code.json", "claude-code/session/example-17", "claude-code-agent", "claude-code", "succeeded", "passed", 2, 1, "verified", 1},
		{"codex.json", "awr:codex:run-2026-07-19-001", "codex-agent-local", "codex-desktop", "succeeded", "passed", 1, 0, "verified", 0},
		{"openclaw.json", "openclaw:event:evt-704", "openclaw-worker-3", "openclaw", "succeeded", "passed", 2, 0, "not_present", 0},
	} {
		res := v.Validate(read(t, "fixtures/"+c.fixture))
		if !res.Valid() {
			t.Fatalf("%s: %v", c.fixture, issues(res))
		}
		s := res.Receipt.Summary()
		if s.ReceiptID != c.receiptID || s.ActorID != c.actor || s.Runtime == nil || *s.Runtime != c.runtime ||
			s.ProducerReportedOutcomeStatus != c.outcome || s.ProducerReportedVerificationStatus != c.verification ||
			s.EvidenceCount != c.evidence || s.HumanInterventionCount != c.interventions ||
			res.Integrity.ContentHash.State != c.contentHash || len(res.Integrity.Signatures) != c.signatures {
			t.Fatalf("%s: %+v %+v", c.fixture, s, res.Integrity)
		}
	}
	res := v.Validate(read(t, "fixtures/invalid-missing-authority.json"))
	if got := issues(res); !slices.Equal(got, []string{"/authority schema.required"}) || res.IssueCount != 1 {
		t.Fatalf("missing authority: %v", got)
	}
	res = v.Validate(read(t, "fixtures/invalid-unresolved-evidence.json"))
	if got := issues(res); !slices.Equal(got, []string{"/verification/checks/0/evidence_ids/0 semantic.unknown_evidence_id",
		"/verification/evidence_ids/0 semantic.unknown_evidence_id"}) {
		t.Fatalf("unresolved evidence: %v", got)
	}
}

// Schema issues: one per leaf cause, code schema.<keyword>, at the value (or the member).
func TestSchemaIssues(t *testing.T) {
	v := validator(t)
	for _, c := range []struct {
		name    string
		fixture string
		change  func(doc map[string]any)
		want    []string
	}{
		{"a missing member", "codex.json", func(d map[string]any) { delete(d, "receipt_id") }, []string{"/receipt_id schema.required"}},
		{"members missing inside", "codex.json", func(d map[string]any) { d["actions"] = []any{map[string]any{"id": "x", "type": "t"}} },
			[]string{"/actions/0/status schema.required", "/actions/0/summary schema.required"}},
		{"an unknown member", "codex.json", func(d map[string]any) { d["workspace_id"] = "x"; d["x/y"] = 1 },
			[]string{"/workspace_id schema.additionalProperties", "/x~1y schema.additionalProperties"}},
		{"another version", "codex.json", func(d map[string]any) { d["schema_version"] = "agent-work-receipt/v9" },
			[]string{"/schema_version schema.const"}},
		{"a status out of the enum", "codex.json", func(d map[string]any) { d["outcome"].(map[string]any)["status"] = "done" },
			[]string{"/outcome/status schema.enum"}},
		{"a negative cost", "codex.json", func(d map[string]any) { d["cost"].(map[string]any)["total"] = -1 }, []string{"/cost/total schema.minimum"}},
		{"a number beyond the safe integers", "codex.json", func(d map[string]any) { d["cost"].(map[string]any)["total"] = 9007199254740992 },
			[]string{"/cost/total schema.maximum"}},
		{"an impossible date", "codex.json", func(d map[string]any) { d["timestamps"].(map[string]any)["started_at"] = "2026-02-30T15:00:00Z" },
			[]string{"/timestamps/started_at schema.format"}},
		{"a date without its zone", "codex.json", func(d map[string]any) { d["timestamps"].(map[string]any)["issued_at"] = "2026-07-19T15:08:06" },
			[]string{"/timestamps/issued_at schema.format"}},
		{"a blank id", "codex.json", func(d map[string]any) { d["receipt_id"] = "   " }, []string{"/receipt_id schema.pattern"}},
		{"an empty id", "codex.json", func(d map[string]any) { d["receipt_id"] = "" },
			[]string{"/receipt_id schema.minLength", "/receipt_id schema.pattern"}},
		{"a wrong type", "codex.json", func(d map[string]any) { d["evidence"] = map[string]any{} }, []string{"/evidence schema.type"}},
		{"no evidence", "codex.json", func(d map[string]any) { d["evidence"] = []any{} }, []string{"/evidence schema.minItems"}},
		{"not an object", "codex.json", nil, []string{" schema.type"}},
		{"a bad URI reference", "codex.json", func(d map[string]any) {
			d["lineage"].(map[string]any)["references"].([]any)[0].(map[string]any)["ref"].(map[string]any)["uri"] = "../evidence/%ZZ"
		}, []string{"/lineage/references/0/ref/uri schema.format"}},
		// anyOf: the value's type rules out all but the number form, which says what is wrong.
		{"an extension number out of range", "openclaw.json", func(d map[string]any) {
			d["extensions"] = map[string]any{"io.x": []any{true, 1e300}}
		}, []string{"/extensions/io.x/1 schema.maximum"}},
		// oneOf: of the content hash's four forms, the hex one is closest.
		{"a content hash of another spelling", "codex.json", func(d map[string]any) {
			d["integrity"].(map[string]any)["content_hash"].(map[string]any)["value"] = "zz"
		}, []string{"/integrity/content_hash/value schema.pattern"}},
		{"a signature of another algorithm", "claude-code.json", func(d map[string]any) {
			d["integrity"].(map[string]any)["signatures"].([]any)[0].(map[string]any)["algorithm"] = "rsa"
		}, []string{"/integrity/signatures/0/algorithm schema.const"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var raw []byte
			if c.change == nil {
				raw = []byte(`["not", "a", "receipt"]`)
			} else {
				doc := decode(t, read(t, "fixtures/"+c.fixture))
				c.change(doc)
				var err error
				if raw, err = json.Marshal(doc); err != nil {
					t.Fatal(err)
				}
			}
			res := v.Validate(raw)
			if got := issues(res); !slices.Equal(got, c.want) || res.Valid() {
				t.Fatalf("issues %q, want %q: %+v", got, c.want, res.Issues)
			}
			for _, is := range res.Issues {
				if is.Message == "" || !strings.HasSuffix(is.Message, ".") {
					t.Fatalf("message %q", is.Message)
				}
			}
		})
	}
}

// A document that breaks the schema thousands of times lists MaxReceiptIssues of them,
// sorted, and counts them all.
func TestSchemaIssuesAreBounded(t *testing.T) {
	doc := decode(t, read(t, "fixtures/codex.json"))
	actions := make([]any, 3000)
	for i := range actions {
		actions[i] = map[string]any{}
	}
	doc["actions"] = actions
	raw, _ := json.Marshal(doc)
	res := validator(t).Validate(raw)
	if len(res.Issues) != receipt.MaxReceiptIssues || res.IssueCount != 4*3000 || !res.Truncated() ||
		res.Issues[0].Path != "/actions/0/id" || res.Issues[0].Code != "schema.required" {
		t.Fatalf("%d listed of %d: %v", len(res.Issues), res.IssueCount, issues(res)[:3])
	}
}

// The integrity report is the format's integrity report (its schema).
func TestIntegrityReportMatchesItsSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(read(t, "conformance/agent-work-receipt-integrity-report.v0.1.schema.json")))
	if err != nil {
		t.Fatal(err)
	}
	const url = "https://useorgx.com/schemas/agent-work-receipt/integrity-report/v0.1/schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	report, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	v := validator(t)
	for _, f := range []string{"claude-code.json", "codex.json", "openclaw.json"} {
		for _, keys := range []receipt.ReceiptSignerKeys{nil, {"rfc8032-test-key-1": make([]byte, 32)}} {
			v.Keys = keys
			res := v.Validate(read(t, "fixtures/"+f))
			raw, err := json.Marshal(res.Integrity)
			if err != nil {
				t.Fatal(err)
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if err := report.Validate(inst); err != nil {
				t.Fatalf("%s: %v\n%s", f, err, raw)
			}
		}
	}
}
