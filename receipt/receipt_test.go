package receipt_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/receipt"
)

// The format's own test data (testdata/agent-work-receipt/SOURCE.md at the module root,
// which the API's tests and the bench read too).
var receiptTestdata = filepath.Join("..", "testdata", "agent-work-receipt")

func readReceiptFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(receiptTestdata, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeJSON decodes JSON text as the validator does (numbers kept as text).
func decodeJSON(t testing.TB, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// fixtureDoc returns a fixture decoded, to change.
func fixtureDoc(t testing.TB, name string) map[string]any {
	t.Helper()
	return decodeJSON(t, readReceiptFile(t, "fixtures/"+name)).(map[string]any)
}

// setPointer sets (or, with del, removes) the value at the JSON Pointer ptr of doc; "-"
// appends to an array.
func setPointer(t testing.TB, doc any, ptr string, v any, del bool) {
	t.Helper()
	tokens := strings.Split(ptr, "/")[1:]
	for i := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(tokens[i], "~1", "/"), "~0", "~")
	}
	parent := doc
	for _, tok := range tokens[:len(tokens)-1] {
		switch p := parent.(type) {
		case map[string]any:
			parent = p[tok]
		case []any:
			n, _ := strconv.Atoi(tok)
			parent = p[n]
		default:
			t.Fatalf("%s: no container at %q", ptr, tok)
		}
	}
	last := tokens[len(tokens)-1]
	switch p := parent.(type) {
	case map[string]any:
		if del {
			delete(p, last)
		} else {
			p[last] = v
		}
	case []any:
		// Arrays are changed in place only; appends go through their parent.
		n, _ := strconv.Atoi(last)
		p[n] = v
	default:
		t.Fatalf("%s: no container", ptr)
	}
}

func encode(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The validator without its schema stage (the schema is receipt/schema's): the input,
// semantic and integrity stages.
var stagesWithoutSchema = receipt.ReceiptValidator{MaxBytes: 1 << 20}

func codesOf(issues []receipt.ReceiptIssue) []string {
	out := make([]string, len(issues))
	for i, is := range issues {
		out[i] = is.Path + " " + is.Code
	}
	return out
}

func TestScanReceiptJSONLimits(t *testing.T) {
	nested := func(depth int) string {
		return strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
	}
	nestedArrays := func(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }
	values := func(n int) string { // an array of n-1 values: n values with the array
		return "[" + strings.TrimSuffix(strings.Repeat("0,", n-1), ",") + "]"
	}
	deepPath := "/" + strings.TrimSuffix(strings.Repeat("a/", receipt.MaxReceiptDepth), "/")
	for _, c := range []struct {
		name, body, path, code string
		max                    int
	}{
		{name: "size at the limit", body: `{"a":"x"}`, max: 9},
		{name: "size over the limit", body: `{"a":"xy"}`, max: 9, path: "", code: receipt.ReceiptInputSize},
		{name: "empty", body: "", code: receipt.ReceiptInputJSON},
		{name: "blank", body: " \n\t", code: receipt.ReceiptInputJSON},
		{name: "not JSON", body: `{"a":}`, path: "/a", code: receipt.ReceiptInputJSON},
		{name: "unterminated", body: `{"a":[1,2`, path: "/a", code: receipt.ReceiptInputJSON},
		{name: "a member without a value", body: `{"a" 1}`, path: "/a", code: receipt.ReceiptInputJSON},
		{name: "trailing data", body: `{} x`, code: receipt.ReceiptInputJSON},
		{name: "two values", body: `{} {}`, code: receipt.ReceiptInputJSON},
		{name: "a scalar document", body: `"x"`},
		{name: "invalid UTF-8", body: "{\"a\":\"\xff\"}", code: receipt.ReceiptInputUnicode},
		{name: "a lone high surrogate", body: `{"a":["ok","x\ud800y"]}`, path: "/a/1", code: receipt.ReceiptInputUnicode},
		{name: "a lone low surrogate", body: `{"a":"\udc00"}`, path: "/a", code: receipt.ReceiptInputUnicode},
		{name: "a high surrogate at the end", body: `{"a":"x\ud83d"}`, path: "/a", code: receipt.ReceiptInputUnicode},
		{name: "two high surrogates", body: `{"a":"\ud83d\ud83d"}`, path: "/a", code: receipt.ReceiptInputUnicode},
		{name: "a surrogate in a member name", body: `{"a":{"\ud800":1}}`, path: "/a", code: receipt.ReceiptInputUnicode},
		{name: "a surrogate pair", body: `{"a":"\ud83d\ude00","b":"\\ud800"}`},
		{name: "U+0000", body: `{"a":{"b":"x\u0000"}}`, path: "/a/b", code: receipt.ReceiptInputUnicode},
		{name: "a number beyond a double", body: `{"a":[1e400]}`, path: "/a/0", code: receipt.ReceiptInputNumber},
		{name: "a negative number beyond a double", body: `{"a":-1e309}`, path: "/a", code: receipt.ReceiptInputNumber},
		{name: "an underflow rounds to zero", body: `{"a":1e-400}`},
		{name: "depth at the limit", body: nested(receipt.MaxReceiptDepth)},
		{name: "depth over the limit", body: nested(receipt.MaxReceiptDepth + 1), path: deepPath, code: receipt.ReceiptInputDepth},
		{name: "arrays over the depth limit", body: nestedArrays(receipt.MaxReceiptDepth + 1),
			path: strings.Repeat("/0", receipt.MaxReceiptDepth), code: receipt.ReceiptInputDepth},
		{name: "nodes at the limit", body: values(receipt.MaxReceiptNodes)},
		{name: "nodes over the limit", body: values(receipt.MaxReceiptNodes + 1), path: "/" + strconv.Itoa(receipt.MaxReceiptNodes-1),
			code: receipt.ReceiptInputNodes},
		{name: "a duplicate member", body: `{"a":1,"b":{"c":1,"c":2}}`, path: "/b/c", code: receipt.ReceiptInputDuplicateMember},
		{name: "a duplicate after escapes", body: `{"m/x":1,"m\u002fx":2}`, path: "/m~1x", code: receipt.ReceiptInputDuplicateMember},
		{name: "the same name in other objects", body: `{"a":{"x":1},"b":{"x":1},"x":[{"x":1},{"x":2}]}`},
		{name: "a control character in a string", body: "{\"a\":\"x\ty\"}", path: "/a", code: receipt.ReceiptInputJSON},
		{name: "an unknown escape", body: `{"a":"\x41"}`, path: "/a", code: receipt.ReceiptInputJSON},
		{name: "a short unicode escape", body: `{"a":"\u12"}`, path: "/a", code: receipt.ReceiptInputJSON},
		{name: "a leading zero", body: `{"a":[01]}`, path: "/a", code: receipt.ReceiptInputJSON},
		{name: "a bare minus", body: `[-]`, path: "/0", code: receipt.ReceiptInputJSON},
		{name: "a fraction without digits", body: `[1.]`, path: "/0", code: receipt.ReceiptInputJSON},
		{name: "an exponent without digits", body: `[1e+]`, path: "/0", code: receipt.ReceiptInputJSON},
		{name: "a plus sign", body: `[+1]`, path: "/0", code: receipt.ReceiptInputJSON},
		{name: "a misspelt literal", body: `{"a":nul}`, path: "/a", code: receipt.ReceiptInputJSON},
		{name: "a byte order mark", body: "\ufeff{}", code: receipt.ReceiptInputJSON},
		{name: "a trailing comma", body: `{"a":1,}`, path: "", code: receipt.ReceiptInputJSON},
		{name: "a single quote", body: `{'a':1}`, path: "", code: receipt.ReceiptInputJSON},
		{name: "numbers and escapes", body: `{"a":[0,-0,1.5e-3,2E+10,-12.25],"b":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			max := c.max
			if max == 0 {
				max = 1 << 20
			}
			issue := receipt.ScanReceiptJSON([]byte(c.body), max)
			switch {
			case c.code == "" && issue != nil:
				t.Fatalf("refused: %+v", *issue)
			case c.code != "" && issue == nil:
				t.Fatalf("accepted, want %s", c.code)
			case c.code != "" && (issue.Code != c.code || issue.Path != c.path || issue.Message == ""):
				t.Fatalf("got %+v, want %q at %q", *issue, c.code, c.path)
			}
		})
	}
}

// mutation changes a copy of a fixture; want lists the issues it must give (path code).
type mutation struct {
	name    string
	fixture string
	change  func(t *testing.T, doc map[string]any)
	want    []string
}

func set(ptr string, v any) func(*testing.T, map[string]any) {
	return func(t *testing.T, doc map[string]any) { setPointer(t, doc, ptr, v, false) }
}

func remove(ptr string) func(*testing.T, map[string]any) {
	return func(t *testing.T, doc map[string]any) { setPointer(t, doc, ptr, nil, true) }
}

func both(fs ...func(*testing.T, map[string]any)) func(*testing.T, map[string]any) {
	return func(t *testing.T, doc map[string]any) {
		for _, f := range fs {
			f(t, doc)
		}
	}
}

func TestReceiptSemanticRules(t *testing.T) {
	check := func(id, status string, evidence ...any) map[string]any {
		return map[string]any{"id": id, "name": id, "status": status, "evidence_ids": evidence}
	}
	for _, c := range []mutation{
		{name: "the valid fixture", fixture: "claude-code.json", change: func(*testing.T, map[string]any) {}},
		{name: "a repeated action id", fixture: "codex.json", change: set("/actions/1/id", "action-inspect"),
			want: []string{"/actions/1/id " + receipt.ReceiptDuplicateID}},
		{name: "a repeated evidence id", fixture: "openclaw.json", change: both(set("/evidence/1/id", "mcp-response"),
			set("/verification/checks/1/evidence_ids", []any{"mcp-response"}), set("/verification/evidence_ids", []any{"mcp-response"})),
			want: []string{"/evidence/1/id " + receipt.ReceiptDuplicateID}},
		{name: "a repeated check id", fixture: "openclaw.json", change: set("/verification/checks/1/id", "check-mcp-status"),
			want: []string{"/verification/checks/1/id " + receipt.ReceiptDuplicateID}},
		{name: "a repeated artifact id", fixture: "codex.json", change: func(t *testing.T, doc map[string]any) {
			doc["artifacts"] = append(doc["artifacts"].([]any), doc["artifacts"].([]any)[0])
		}, want: []string{"/artifacts/1/id " + receipt.ReceiptDuplicateID}},
		{name: "a repeated intervention id", fixture: "claude-code.json", change: func(t *testing.T, doc map[string]any) {
			doc["human_interventions"] = append(doc["human_interventions"].([]any), doc["human_interventions"].([]any)[0])
		}, want: []string{"/human_interventions/1/id " + receipt.ReceiptDuplicateID}},
		{name: "unknown evidence everywhere", fixture: "claude-code.json", change: both(
			set("/verification/evidence_ids", []any{"configuration-test", "nope"}),
			set("/verification/checks/0/evidence_ids", []any{"nope"}),
			set("/outcome/acceptance/evidence_ids", []any{"approval-evidence", "nope"}),
			set("/human_interventions/0/evidence_ids", []any{"nope"})),
			want: []string{
				"/human_interventions/0/evidence_ids/0 " + receipt.ReceiptUnknownEvidenceID,
				"/outcome/acceptance/evidence_ids/1 " + receipt.ReceiptUnknownEvidenceID,
				"/verification/checks/0/evidence_ids/0 " + receipt.ReceiptUnknownEvidenceID,
				"/verification/evidence_ids/1 " + receipt.ReceiptUnknownEvidenceID,
			}},
		{name: "unknown evidence of a metric", fixture: "codex.json", change: set("/outcome/metrics/0/evidence_ids", []any{"x"}),
			want: []string{"/outcome/metrics/0/evidence_ids/0 " + receipt.ReceiptUnknownEvidenceID}},
		{name: "completed before started", fixture: "codex.json", change: both(set("/timestamps/completed_at", "2026-07-19T14:59:59Z"),
			remove("/timestamps/duration_ms")),
			want: []string{"/timestamps/completed_at " + receipt.ReceiptTimeOrder}},
		{name: "issued before completed", fixture: "openclaw.json", change: set("/timestamps/issued_at", "2026-07-19T17:00:00.459Z"),
			want: []string{"/evidence/1/observed_at " + receipt.ReceiptAfterIssue, "/timestamps/issued_at " + receipt.ReceiptTimeOrder,
				"/verification/verified_at " + receipt.ReceiptAfterIssue}},
		{name: "a leap second orders after 59", fixture: "codex.json", change: both(set("/timestamps/started_at", "2016-12-31T23:59:60Z"),
			set("/timestamps/completed_at", "2016-12-31T23:59:59Z"), remove("/timestamps/duration_ms"), remove("/authority/valid_from")),
			want: []string{"/timestamps/completed_at " + receipt.ReceiptTimeOrder}},
		{name: "offsets compare as instants", fixture: "codex.json", change: set("/authority/valid_until", "2026-07-19T16:59:00+02:00"),
			want: []string{"/authority/valid_until " + receipt.ReceiptTimeOrder}},
		{name: "the same instant at another offset", fixture: "codex.json", change: set("/timestamps/issued_at", "2026-07-19T17:08:06+02:00")},
		{name: "lower-case t and z", fixture: "codex.json", change: set("/timestamps/issued_at", "2026-07-19t15:08:06z")},
		{name: "an authority that ends before it begins", fixture: "codex.json", change: set("/authority/valid_until", "2026-07-19T14:00:00Z"),
			want: []string{"/authority/valid_until " + receipt.ReceiptTimeOrder}},
		{name: "an action that ends before it starts", fixture: "claude-code.json", change: set("/actions/0/completed_at", "2026-07-19T16:01:59Z"),
			want: []string{"/actions/0/completed_at " + receipt.ReceiptTimeOrder}},
		{name: "a completed action without completed_at", fixture: "claude-code.json", change: remove("/actions/0/completed_at"),
			want: []string{"/actions/0/completed_at " + receipt.ReceiptTerminalActionTimestamp}},
		{name: "a running action without completed_at", fixture: "claude-code.json", change: both(remove("/actions/0/completed_at"),
			set("/actions/0/status", "running"))},
		{name: "evidence observed after issue", fixture: "claude-code.json", change: set("/evidence/1/observed_at", "2026-07-19T16:06:00Z"),
			want: []string{"/evidence/1/observed_at " + receipt.ReceiptAfterIssue}},
		{name: "an artifact and an acceptance after issue", fixture: "claude-code.json", change: both(
			set("/artifacts/0/created_at", "2026-07-19T16:06:00Z"), set("/outcome/acceptance/occurred_at", "2026-07-19T16:06:00Z"),
			set("/human_interventions/0/occurred_at", "2026-07-19T16:05:02Z")),
			want: []string{"/artifacts/0/created_at " + receipt.ReceiptAfterIssue, "/human_interventions/0/occurred_at " + receipt.ReceiptAfterIssue,
				"/outcome/acceptance/occurred_at " + receipt.ReceiptAfterIssue}},
		{name: "a duration longer than the window", fixture: "codex.json", change: set("/timestamps/duration_ms", 485001),
			want: []string{"/timestamps/duration_ms " + receipt.ReceiptDurationExceedsWindow}},
		{name: "a duration of the sub-millisecond window", fixture: "openclaw.json", change: both(
			set("/timestamps/completed_at", "2026-07-19T17:00:00.4605Z"), set("/timestamps/duration_ms", 361))},
		{name: "a verdict without verifier, time or checks", fixture: "openclaw.json", change: both(remove("/verification/verifier"),
			remove("/verification/verified_at"), set("/verification/checks", []any{})),
			want: []string{"/verification/checks " + receipt.ReceiptVerifiedWithoutChecks,
				"/verification/verified_at " + receipt.ReceiptVerifiedWithoutTimestamp,
				"/verification/verifier " + receipt.ReceiptVerifiedWithoutVerifier}},
		{name: "unverified needs none of them", fixture: "openclaw.json", change: both(set("/verification/status", "unverified"),
			remove("/verification/verifier"), remove("/verification/verified_at"), set("/verification/checks", []any{}))},
		{name: "passed with a failed check", fixture: "openclaw.json", change: set("/verification/checks/0/status", "failed"),
			want: []string{"/verification/status " + receipt.ReceiptInconsistentVerification}},
		{name: "passed with a skipped check", fixture: "openclaw.json", change: set("/verification/checks/1/status", "skipped"),
			want: []string{"/verification/status " + receipt.ReceiptInconsistentVerification}},
		{name: "failed without a failed check", fixture: "openclaw.json", change: set("/verification/status", "failed"),
			want: []string{"/verification/status " + receipt.ReceiptInconsistentVerification}},
		{name: "failed with a failed check", fixture: "openclaw.json", change: both(set("/verification/status", "failed"),
			set("/verification/checks", []any{check("a", "failed", "mcp-response"), check("b", "passed")}))},
		{name: "partial with mixed checks", fixture: "openclaw.json", change: both(set("/verification/status", "partial"),
			set("/verification/checks", []any{check("a", "failed"), check("b", "passed")}))},
		{name: "authority none yet granted", fixture: "codex.json", change: both(set("/authority/mode", "none"), set("/authority/status", "granted")),
			want: []string{"/authority/status " + receipt.ReceiptInconsistentAuthority}},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := fixtureDoc(t, c.fixture)
			c.change(t, doc)
			v := stagesWithoutSchema.Validate(encode(t, doc))
			got := codesOf(v.Issues)
			if !slices.Equal(got, c.want) || v.Valid() != (len(c.want) == 0) || v.IssueCount != len(c.want) {
				t.Fatalf("issues %q (count %d), want %q: %+v", got, v.IssueCount, c.want, v.Issues)
			}
			for _, is := range v.Issues {
				if is.Message == "" || receipt.ReceiptSemanticRules[is.Code] == "" {
					t.Fatalf("issue %+v: no message, or a rule GET /agent-work-receipts/validate does not describe", is)
				}
			}
		})
	}
}

// The shared invalid fixture that is schema-valid fails semantically, at both references.
func TestReceiptUnresolvedEvidenceFixture(t *testing.T) {
	v := stagesWithoutSchema.Validate(readReceiptFile(t, "fixtures/invalid-unresolved-evidence.json"))
	want := []string{"/verification/checks/0/evidence_ids/0 " + receipt.ReceiptUnknownEvidenceID,
		"/verification/evidence_ids/0 " + receipt.ReceiptUnknownEvidenceID}
	if got := codesOf(v.Issues); !slices.Equal(got, want) || v.Valid() {
		t.Fatalf("issues %q, want %q", got, want)
	}
}

// Issues are sorted, deduplicated and listed up to MaxReceiptIssues; issue_count counts all.
func TestReceiptIssuesAreBounded(t *testing.T) {
	doc := fixtureDoc(t, "codex.json")
	action := map[string]any{"id": "same", "type": "test", "summary": "Duplicate", "status": "planned"}
	actions := make([]any, 9000)
	for i := range actions {
		actions[i] = action
	}
	doc["actions"] = actions
	v := stagesWithoutSchema.Validate(encode(t, doc))
	if v.Valid() || len(v.Issues) != receipt.MaxReceiptIssues || v.IssueCount != 8999 || !v.Truncated() {
		t.Fatalf("%d issues listed of %d, truncated %v", len(v.Issues), v.IssueCount, v.Truncated())
	}
	if !slices.IsSortedFunc(v.Issues, func(a, b receipt.ReceiptIssue) int { return strings.Compare(a.Path, b.Path) }) ||
		v.Issues[0].Path != "/actions/1/id" || v.Issues[1].Path != "/actions/10/id" {
		t.Fatalf("not sorted by path: %v", codesOf(v.Issues[:3]))
	}
	sorted := receipt.SortReceiptIssues([]receipt.ReceiptIssue{{Path: "/b", Code: "x", Message: "m"}, {Path: "/a", Code: "y", Message: "m"},
		{Path: "/a", Code: "x", Message: "n"}, {Path: "/a", Code: "x", Message: "m"}, {Path: "/a", Code: "x", Message: "m"}})
	if got := fmt.Sprint(sorted); got != "[{/a x m} {/a x n} {/a y m} {/b x m}]" {
		t.Fatalf("sorted %s", got)
	}
}

func TestReceiptSummaryAndPayload(t *testing.T) {
	v := stagesWithoutSchema.Validate(readReceiptFile(t, "fixtures/claude-code.json"))
	if !v.Valid() {
		t.Fatalf("%+v", v.Issues)
	}
	runtime := "claude-code"
	want := receipt.ReceiptSummary{ReceiptID: "claude-code/session/example-17", ActorID: "claude-code-agent", Runtime: &runtime,
		ProducerReportedOutcomeStatus: "succeeded", ProducerReportedVerificationStatus: "passed", EvidenceCount: 2, HumanInterventionCount: 1}
	got := v.Receipt.Summary()
	if got.Runtime == nil || *got.Runtime != runtime {
		t.Fatalf("runtime %v", got.Runtime)
	}
	if got.Runtime, want.Runtime = nil, nil; got != want {
		t.Fatalf("summary %+v", got)
	}
	if v.Digest != canonical.Digest(v.Canonical) || !bytes.HasPrefix(v.Canonical, []byte(`{"actions":[{"completed_at"`)) {
		t.Fatalf("digest %s of %.40s", v.Digest, v.Canonical)
	}
	cmd := v.ImportCommand()
	if key := cmd.ReceiptImportKey(); key != "receipt:"+strings.TrimPrefix(v.Digest, "sha256:") || !accountable.ValidIdempotencyKey(key) {
		t.Fatalf("key %q", key)
	}
	p := cmd.Imported("0190d9f0-0000-7000-8000-000000000001")
	steps := func(ss []receipt.ReceiptStep) string {
		var b strings.Builder
		for _, s := range ss {
			fmt.Fprintf(&b, "%s@%s ", s.Key, accountable.FormatTime(s.At.Time))
		}
		return b.String()
	}
	if got := steps(p.Steps); got != "human.approval@2026-07-19T16:01:00.000000Z file.edit@2026-07-19T16:02:00.000000Z "+
		"verification@2026-07-19T16:04:00.000000Z " || p.StepsTruncated {
		t.Fatalf("steps %s", got)
	}
	if p.CaseID != "receipt:claude-code/session/example-session-17" || p.ExternalReceiptID != "claude-code/session/example-17" ||
		p.DocumentDigest != v.Digest || p.Integrity.ContentHash != receipt.ContentHashVerified ||
		p.Integrity.ComputedContentHash != "sha256:7f0270883af34ebcb36aa77e684d4771e9308d85b7d01aec2f65ef0ebb41a4c5" ||
		*p.Actor.Runtime != "claude-code" || *p.Actor.Model != "fixture-model" || *p.AcceptanceStatus != "accepted" ||
		p.Counts != (receipt.ReceiptCounts{Actions: 1, Artifacts: 1, Evidence: 2, HumanInterventions: 1, VerificationChecks: 1}) ||
		p.HumanInterventionMinutes != 1 || *p.Cost.HumanMinutes != 1 || p.Timestamps.ElapsedMS != 300000 || p.TokensTotal != nil ||
		len(p.Integrity.Signatures) != 1 || p.Integrity.Signatures[0].CryptographicState != receipt.SignatureNotChecked {
		t.Fatalf("payload %+v", p)
	}
	// The payload is what the ledger keeps: it has a canonical form.
	if _, err := canonical.JSON(p); err != nil {
		t.Fatal(err)
	}

	// Discovery: the steps in the request's case, citing the event.
	trace := p.Trace("event-1", 3)
	if len(trace) != 3 || trace[0].CaseID != p.CaseID || trace[1].Stage != "file.edit" || trace[2].Citation.EventID != "event-1" ||
		!(trace[0].Seq < trace[1].Seq && trace[1].Seq < trace[2].Seq) {
		t.Fatalf("trace %+v", trace)
	}
}

func TestReceiptCaseAndSteps(t *testing.T) {
	receiptOf := func(name string, change func(*testing.T, map[string]any)) *receipt.AgentWorkReceipt {
		doc := fixtureDoc(t, name)
		if change != nil {
			change(t, doc)
		}
		v := stagesWithoutSchema.Validate(encode(t, doc))
		if !v.Valid() {
			t.Fatalf("%+v", v.Issues)
		}
		return v.Receipt
	}
	for _, c := range []struct {
		name, fixture, want string
		change              func(*testing.T, map[string]any)
	}{
		{"the request", "codex.json", "receipt:codex/task/task-local-41", nil},
		{"the run", "openclaw.json", "receipt:openclaw/event/evt-704", nil},
		{"the trace", "openclaw.json", "receipt:trace/0123456789abcdef0123456789abcdef", remove("/lineage/run_ref")},
		{"the receipt alone", "openclaw.json", "receipt:openclaw:event:evt-704", both(remove("/lineage/run_ref"), remove("/lineage/trace_id"))},
	} {
		if got := receiptOf(c.fixture, c.change).CaseID(); got != c.want {
			t.Errorf("%s: case %q, want %q", c.name, got, c.want)
		}
	}
	// Planned and skipped actions are no steps; an action without times is at the start;
	// an unverified receipt has no verification step.
	r := receiptOf("codex.json", both(set("/actions/0/status", "skipped"), remove("/actions/1/started_at"), remove("/actions/1/completed_at"),
		set("/actions/1/status", "running"), set("/verification/status", "unverified")))
	steps, truncated := r.Steps()
	if len(steps) != 1 || steps[0].Key != "test.run" || !steps[0].At.Equal(mustTime(t, "2026-07-19T15:00:00Z")) || truncated {
		t.Fatalf("steps %+v", steps)
	}
	// Steps are bounded.
	r.Actions = slices.Repeat(r.Actions, receipt.MaxReceiptSteps+5)
	if steps, truncated := r.Steps(); len(steps) != receipt.MaxReceiptSteps || !truncated {
		t.Fatalf("%d steps, truncated %v", len(steps), truncated)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, ok := receipt.ParseReceiptTime(s)
	if !ok {
		t.Fatalf("time %q", s)
	}
	return tm
}

// TokensTotal sums the token usage; other usage is not tokens.
func TestReceiptTokens(t *testing.T) {
	doc := fixtureDoc(t, "codex.json")
	setPointer(t, doc, "/cost/usage", []any{
		map[string]any{"name": "input_tokens", "quantity": 1200, "unit": "tokens"},
		map[string]any{"name": "output_tokens", "quantity": 300, "unit": "Tokens"},
		map[string]any{"name": "agent_runtime", "quantity": 8, "unit": "minutes"},
	}, false)
	v := stagesWithoutSchema.Validate(encode(t, doc))
	if !v.Valid() {
		t.Fatal(v.Issues)
	}
	if p := v.ImportCommand().Imported("x"); p.TokensTotal == nil || *p.TokensTotal != 1500 || len(p.Cost.Usage) != 3 {
		t.Fatalf("tokens %v", p.TokensTotal)
	}
}

func TestParseReceiptSignerKeys(t *testing.T) {
	keys, err := receipt.ParseReceiptSignerKeys(" k1=11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo , k2=PUAXw-hDiVqStwqnTRt-vJyYLM8uxJaMwM1V8Sr0Zgw=,")
	if err != nil || !slices.Equal(keys.IDs(), []string{"k1", "k2"}) || len(keys["k1"]) != ed25519.PublicKeySize {
		t.Fatalf("%v %v", keys, err)
	}
	for _, bad := range []string{"k1", "=abc", "k1=abc", "k1=" + strings.Repeat("A", 44)} {
		if _, err := receipt.ParseReceiptSignerKeys(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if keys, err := receipt.ParseReceiptSignerKeys(""); err != nil || len(keys) != 0 {
		t.Fatalf("empty: %v %v", keys, err)
	}
}

// integrityVectors is conformance/agent-work-receipt-integrity-vectors.v0.1.json.
type integrityVectors struct {
	VectorVersion    string `json:"vector_version"`
	Canonicalization string `json:"canonicalization"`
	ContentHash      struct {
		Algorithm, Scope string
	} `json:"content_hash"`
	CanonicalizationVectors []struct {
		Name          string          `json:"name"`
		Input         json.RawMessage `json:"input"`
		CanonicalJSON string          `json:"canonical_json"`
		SHA256Hex     string          `json:"sha256_hex"`
	} `json:"canonicalization_vectors"`
	NumberVectors []struct {
		IEEE754       string          `json:"ieee754"`
		Input         json.RawMessage `json:"input"`
		CanonicalJSON string          `json:"canonical_json"`
	} `json:"number_serialization_vectors"`
	EquivalenceVectors []struct {
		Name          string          `json:"name"`
		Left          json.RawMessage `json:"left"`
		Right         json.RawMessage `json:"right"`
		CanonicalJSON string          `json:"canonical_json"`
	} `json:"canonical_equivalence_vectors"`
	DifferenceVectors []struct {
		Name  string          `json:"name"`
		Left  json.RawMessage `json:"left"`
		Right json.RawMessage `json:"right"`
	} `json:"canonical_difference_vectors"`
	RawNegativeVectors []struct {
		Name    string `json:"name"`
		RawJSON string `json:"raw_json"`
		Member  string `json:"member"`
		Path    string `json:"path"`
	} `json:"raw_json_negative_vectors"`
	ReceiptVector struct {
		Fixture string            `json:"fixture"`
		SHA256  map[string]string `json:"sha256"`
		Tamper  []struct {
			Name                 string          `json:"name"`
			Operation            string          `json:"operation"`
			Pointer              string          `json:"json_pointer"`
			Value                json.RawMessage `json:"value"`
			ExpectedSHA256Hex    string          `json:"expected_sha256_hex"`
			ExpectedContentState string          `json:"expected_content_state"`
		} `json:"tamper_vectors"`
	} `json:"receipt_vector"`
	SignatureVector struct {
		Fixture           string `json:"fixture"`
		Profile           string `json:"profile"`
		Algorithm         string `json:"algorithm"`
		SignatureEncoding string `json:"signature_encoding"`
		PublicKey         struct {
			Encoding, Value string
		} `json:"public_key"`
		WrongPublicKey struct {
			Encoding, Value            string
			ExpectedCryptographicState string `json:"expected_cryptographic_state"`
		} `json:"wrong_public_key"`
		PayloadCanonicalJSON string `json:"payload_canonical_json"`
		SignatureBase64URL   string `json:"signature_base64url"`
		Tamper               []struct {
			Name                       string          `json:"name"`
			Pointer                    string          `json:"json_pointer"`
			Value                      json.RawMessage `json:"value"`
			ExpectedContentState       string          `json:"expected_content_state"`
			ExpectedCryptographicState string          `json:"expected_cryptographic_state"`
		} `json:"tamper_vectors"`
	} `json:"signature_vector"`
}

// Every vector of the format's integrity conformance suite.
func TestReceiptIntegrityConformanceVectors(t *testing.T) {
	var vs integrityVectors
	if err := json.Unmarshal(readReceiptFile(t, "conformance/agent-work-receipt-integrity-vectors.v0.1.json"), &vs); err != nil {
		t.Fatal(err)
	}
	if vs.VectorVersion != "agent-work-receipt-integrity-vectors/v0.1" || vs.Canonicalization != receipt.ReceiptCanonicalization ||
		vs.ContentHash.Algorithm != "sha-256" || vs.ContentHash.Scope != receipt.ReceiptHashScope {
		t.Fatalf("vectors %s", vs.VectorVersion)
	}
	canon := func(raw json.RawMessage) string {
		t.Helper()
		b, err := canonical.JSON(decodeJSON(t, raw))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	n := 0
	t.Run("canonicalization", func(t *testing.T) {
		for _, v := range vs.CanonicalizationVectors {
			got := canon(v.Input)
			sum := sha256.Sum256([]byte(got))
			if got != v.CanonicalJSON || hex.EncodeToString(sum[:]) != v.SHA256Hex {
				t.Errorf("%s: %s, want %s", v.Name, got, v.CanonicalJSON)
			}
			n++
		}
	})
	t.Run("numbers", func(t *testing.T) {
		for _, v := range vs.NumberVectors {
			bits, err := strconv.ParseUint(v.IEEE754, 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			fromBits := string(canonical.AppendNumber(nil, math.Float64frombits(bits)))
			if got := canon(v.Input); got != v.CanonicalJSON || fromBits != v.CanonicalJSON {
				t.Errorf("%s: %s (text) %s (bits), want %s", v.IEEE754, got, fromBits, v.CanonicalJSON)
			}
			n++
		}
	})
	t.Run("equivalence", func(t *testing.T) {
		for _, v := range vs.EquivalenceVectors {
			if l, r := canon(v.Left), canon(v.Right); l != v.CanonicalJSON || r != v.CanonicalJSON {
				t.Errorf("%s: %s and %s, want %s", v.Name, l, r, v.CanonicalJSON)
			}
			n++
		}
	})
	t.Run("difference", func(t *testing.T) {
		for _, v := range vs.DifferenceVectors {
			if l, r := canon(v.Left), canon(v.Right); l == r {
				t.Errorf("%s: both %s", v.Name, l)
			}
			n++
		}
	})
	t.Run("raw JSON negatives", func(t *testing.T) {
		for _, v := range vs.RawNegativeVectors {
			issue := receipt.ScanReceiptJSON([]byte(v.RawJSON), 0)
			if issue == nil || issue.Code != receipt.ReceiptInputDuplicateMember || issue.Path != v.Path ||
				!strings.HasSuffix(issue.Path, "/"+v.Member) {
				t.Errorf("%s: %+v, want a duplicate member at %s", v.Name, issue, v.Path)
			}
			// The validator refuses it at the input stage.
			if got := stagesWithoutSchema.Validate([]byte(v.RawJSON)); got.Valid() || got.Issues[0].Code != receipt.ReceiptInputDuplicateMember {
				t.Errorf("%s: validated %+v", v.Name, got.Issues)
			}
			n++
		}
	})

	integrity := func(t *testing.T, doc map[string]any, keys receipt.ReceiptSignerKeys) receipt.ReceiptIntegrity {
		t.Helper()
		r, err := receipt.VerifyReceiptIntegrity(doc, keys)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	fixture := func(rel string) map[string]any {
		return fixtureDoc(t, strings.TrimPrefix(rel, "../fixtures/"))
	}
	t.Run("receipt content hash", func(t *testing.T) {
		rv := vs.ReceiptVector
		for encoding, want := range rv.SHA256 {
			doc := fixture(rv.Fixture)
			setPointer(t, doc, "/integrity/content_hash", map[string]any{"algorithm": "sha-256", "value": want, "encoding": encoding}, false)
			r := integrity(t, doc, nil)
			if r.ContentHash.State != receipt.ContentHashVerified || r.ContentHash.Computed.Value != want ||
				r.ContentHash.Computed.Encoding != encoding || r.ContentHash.Declared == nil {
				t.Errorf("%s: %+v", encoding, r.ContentHash)
			}
			n++
		}
		r := integrity(t, fixture(rv.Fixture), nil)
		if r.ContentHash.State != receipt.ContentHashVerified || r.ContentHash.Computed.Value != rv.SHA256["hex"] {
			t.Errorf("the fixture as it is: %+v", r.ContentHash)
		}
		for _, v := range rv.Tamper {
			if v.Operation != "replace" {
				t.Fatalf("%s: operation %s", v.Name, v.Operation)
			}
			doc := fixture(rv.Fixture)
			setPointer(t, doc, v.Pointer, decodeJSON(t, v.Value), false)
			r := integrity(t, doc, nil)
			if string(r.ContentHash.State) != v.ExpectedContentState || r.ContentHash.Computed.Value != v.ExpectedSHA256Hex {
				t.Errorf("%s: %s %s, want %s %s", v.Name, r.ContentHash.State, r.ContentHash.Computed.Value, v.ExpectedContentState, v.ExpectedSHA256Hex)
			}
			n++
		}
	})
	t.Run("signatures", func(t *testing.T) {
		sv := vs.SignatureVector
		if sv.Profile != receipt.ReceiptSignatureProfile || sv.Algorithm != "ed25519" || sv.SignatureEncoding != "base64url" {
			t.Fatalf("profile %s %s %s", sv.Profile, sv.Algorithm, sv.SignatureEncoding)
		}
		key := func(value string) ed25519.PublicKey {
			b, err := base64.RawURLEncoding.DecodeString(value)
			if err != nil || len(b) != ed25519.PublicKeySize {
				t.Fatalf("key %s: %v", value, err)
			}
			return b
		}
		doc := fixture(sv.Fixture)
		sig := doc["integrity"].(map[string]any)["signatures"].([]any)[0].(map[string]any)
		declared, _ := hex.DecodeString(doc["integrity"].(map[string]any)["content_hash"].(map[string]any)["value"].(string))
		payload, err := receipt.ReceiptSignaturePayload(sig, declared)
		if err != nil || string(payload) != sv.PayloadCanonicalJSON || sig["value"] != sv.SignatureBase64URL {
			t.Fatalf("payload %s, want %s", payload, sv.PayloadCanonicalJSON)
		}
		keyID := sig["key_id"].(string)
		right := receipt.ReceiptSignerKeys{keyID: key(sv.PublicKey.Value)}
		wrong := receipt.ReceiptSignerKeys{keyID: key(sv.WrongPublicKey.Value)}
		states := func(r receipt.ReceiptIntegrity) string {
			return string(r.ContentHash.State) + " " + string(r.Signatures[0].CryptographicState) + " " + string(r.Signatures[0].TrustState)
		}
		if got := states(integrity(t, doc, right)); got != "verified verified trusted" {
			t.Errorf("the fixture with its key: %s", got)
		}
		if got := states(integrity(t, doc, wrong)); got != "verified "+sv.WrongPublicKey.ExpectedCryptographicState+" trusted" {
			t.Errorf("the fixture with the wrong key: %s", got)
		}
		if got := states(integrity(t, doc, nil)); got != "verified not_checked not_evaluated" {
			t.Errorf("the fixture without keys: %s", got)
		}
		if got := states(integrity(t, doc, receipt.ReceiptSignerKeys{"another": key(sv.PublicKey.Value)})); got != "verified not_checked unknown" {
			t.Errorf("the fixture with another key: %s", got)
		}
		n += 2
		for _, v := range sv.Tamper {
			doc := fixture(sv.Fixture)
			setPointer(t, doc, v.Pointer, decodeJSON(t, v.Value), false)
			// The vectors verify with their public key whatever key_id the signature names
			// (key resolution is the consumer's): so does the map of keys here.
			keys := receipt.ReceiptSignerKeys{keyID: right[keyID]}
			tampered := doc["integrity"].(map[string]any)["signatures"].([]any)[0].(map[string]any)["key_id"].(string)
			keys[tampered] = right[keyID]
			r := integrity(t, doc, keys)
			if string(r.ContentHash.State) != v.ExpectedContentState || string(r.Signatures[0].CryptographicState) != v.ExpectedCryptographicState {
				t.Errorf("%s: %s, want %s %s", v.Name, states(r), v.ExpectedContentState, v.ExpectedCryptographicState)
			}
			n++
		}
	})
	total := len(vs.CanonicalizationVectors) + len(vs.NumberVectors) + len(vs.EquivalenceVectors) + len(vs.DifferenceVectors) +
		len(vs.RawNegativeVectors) + len(vs.ReceiptVector.SHA256) + len(vs.ReceiptVector.Tamper) + 2 + len(vs.SignatureVector.Tamper)
	if n != total || n < 40 {
		t.Fatalf("%d vectors checked of %d", n, total)
	}
}

// Integrity states that a valid receipt's schema cannot rule out: unsupported and
// malformed declarations and signatures (the report never errs).
func TestReceiptIntegrityEdgeStates(t *testing.T) {
	doc := fixtureDoc(t, "claude-code.json")
	ih := doc["integrity"].(map[string]any)
	ch := ih["content_hash"].(map[string]any)
	sig := ih["signatures"].([]any)[0].(map[string]any)
	state := func() string {
		r, err := receipt.VerifyReceiptIntegrity(doc, receipt.ReceiptSignerKeys{"rfc8032-test-key-1": make(ed25519.PublicKey, 32)})
		if err != nil {
			t.Fatal(err)
		}
		return string(r.ContentHash.State) + " " + string(r.Signatures[0].CryptographicState)
	}
	ch["algorithm"] = "blake3"
	if got := state(); got != "unsupported malformed" {
		t.Errorf("blake3: %s", got)
	}
	ch["algorithm"], ch["value"] = "sha256", strings.ToUpper(ch["value"].(string))
	if got := state(); got != "verified invalid" { // upper-case hex is the same digest
		t.Errorf("upper-case hex: %s", got)
	}
	ch["encoding"], ch["value"] = "base64", "GU45yu1TRppfx2VEdj3UrwHaMPW5QgKEG7/ocbYo0ZV="
	if got := state(); got != "malformed malformed" { // stray bits: not the canonical spelling
		t.Errorf("non-canonical base64: %s", got)
	}
	ch["encoding"], ch["value"] = "hex", "7f0270883af34ebcb36aa77e684d4771e9308d85b7d01aec2f65ef0ebb41a4c5"
	sig["algorithm"] = "rsa"
	if got := state(); got != "verified unsupported" {
		t.Errorf("rsa: %s", got)
	}
	sig["algorithm"], sig["value"] = "ed25519", "GfYqB2Ma7m"
	if got := state(); got != "verified malformed" {
		t.Errorf("short signature: %s", got)
	}
	delete(doc, "integrity")
	r, err := receipt.VerifyReceiptIntegrity(doc, nil)
	if err != nil || r.ContentHash.State != receipt.ContentHashNotPresent || r.ContentHash.Declared != nil || len(r.Signatures) != 0 ||
		r.ContentHash.Computed.Value != "7f0270883af34ebcb36aa77e684d4771e9308d85b7d01aec2f65ef0ebb41a4c5" {
		t.Fatalf("without integrity: %+v %v", r, err)
	}
}

// The input stage decodes what encoding/json decodes (with UseNumber), and refuses as
// malformed only what encoding/json refuses; beyond that it refuses what encoding/json lets
// through (duplicate members, invalid or unpaired Unicode, U+0000, numbers beyond a double)
// and what is too big. `go test -fuzz FuzzDecodeReceiptJSON .` explores further.
func FuzzDecodeReceiptJSON(f *testing.F) {
	for _, seed := range []string{`{}`, `[]`, `""`, `0`, `-0.5e+7`, `{"a":[1,{"b":null}],"c":"\u00e9\ud83d\ude00"}`, `{"a":1,"a":2}`,
		`{"a":"\ud800"}`, `{"a":"\u0000"}`, `[1e400]`, `[01]`, "\xff", `{"a" 1}`, ` [ 1 , 2 ] `, `"\/"`, `[true,false,null]`} {
		f.Add([]byte(seed))
	}
	for _, name := range []string{"codex.json", "openclaw.json"} {
		f.Add(readReceiptFile(f, "fixtures/"+name))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, issue := receipt.DecodeReceiptJSON(raw, 0)
		valid := json.Valid(raw)
		if issue != nil {
			switch {
			case issue.Code == receipt.ReceiptInputJSON && valid:
				t.Fatalf("refused %q as malformed (%s), which encoding/json reads", raw, issue.Message)
			case issue.Path != "" && !strings.HasPrefix(issue.Path, "/"), issue.Message == "":
				t.Fatalf("issue %+v", issue)
			}
			return
		}
		if !valid {
			t.Fatalf("accepted %q, which encoding/json refuses", raw)
		}
		want := decodeJSON(t, raw)
		if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
			t.Fatalf("%q decoded as %#v, encoding/json as %#v", raw, got, want)
		}
	})
}

// The fixtures decode as encoding/json decodes them.
func TestDecodeReceiptJSONAgreesWithEncodingJSON(t *testing.T) {
	for _, name := range []string{"claude-code.json", "codex.json", "openclaw.json", "invalid-missing-authority.json"} {
		raw := readReceiptFile(t, "fixtures/"+name)
		got, issue := receipt.DecodeReceiptJSON(raw, 0)
		if issue != nil || fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", decodeJSON(t, raw)) {
			t.Fatalf("%s: %+v", name, issue)
		}
	}
}
