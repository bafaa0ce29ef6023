package api_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/receipt"
	"github.com/accountablework/accountable/store/storetest"
)

// The isolation matrix's lines of the area (isolation_test.go).
func init() {
	isolationCovers(isolationLines{
		fixtures: map[string]func(o *owner) string{
			"receiptId": (*owner).importedReceipt,
		},
		bodies: map[string]func(o *owner, ids map[string]string) map[string]any{
			"importReceipt":   func(*owner, map[string]string) map[string]any { return receiptImportBody() },
			"validateReceipt": func(*owner, map[string]string) map[string]any { return receiptValidateBody() },
		},
		publicOperations: map[string]string{
			// Receipt validation: a pure function of the body (and the server's signer keys).
			"describeReceiptValidation": "receipt validation: the same rules for everyone",
			"validateReceipt":           "receipt validation: a pure function of the body, nothing read or stored",
		},
	})
}

// importedReceipt imports a receipt into the owner's workspace and returns its id.
func (o *owner) importedReceipt() string {
	o.t.Helper()
	r := o.e.do(request{method: "POST", path: "/agent-work-receipts", key: o.tenant.Key, body: receiptImportBody()})
	expect(o.t, r, http.StatusCreated, "")
	return r.data()["receipt_id"].(string)
}

// The Agent Work Receipt fixtures (testdata/agent-work-receipt at the module root).
func receiptFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "agent-work-receipt", "fixtures", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// receiptVariant is a fixture with changes: each a JSON Pointer (of objects only) and its
// new value.
func receiptVariant(t testing.TB, name string, changes map[string]any) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(receiptFixture(t, name), &doc); err != nil {
		t.Fatal(err)
	}
	for ptr, v := range changes {
		parts := strings.Split(ptr, "/")[1:]
		m := doc
		for _, p := range parts[:len(parts)-1] {
			m = m[p].(map[string]any)
		}
		if v == nil {
			delete(m, parts[len(parts)-1])
		} else {
			m[parts[len(parts)-1]] = v
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// freshReceipt is a valid receipt no workspace has imported: the codex fixture under a new
// receipt_id, without its (now stale) integrity block.
func freshReceipt(t testing.TB) []byte {
	return receiptVariant(t, "codex.json", map[string]any{"/receipt_id": uniqueKey("awr"), "/integrity": nil})
}

func issueList(t *testing.T, r response) []string {
	t.Helper()
	var out []string
	for _, is := range r.body["issues"].([]any) {
		m := is.(map[string]any)
		out = append(out, fmt.Sprint(m["path"], " ", m["code"]))
	}
	return out
}

func TestReceiptValidationDescribesItself(t *testing.T) {
	e := newEnv(t, nil)
	r := e.do(request{method: "GET", path: "/agent-work-receipts/validate"})
	expect(t, r, http.StatusOK, "")
	limits := r.body["limits"].(map[string]any)
	if r.body["schema_version"] != receipt.ReceiptSchemaVersion || r.body["schema_url"] != receipt.ReceiptSchemaURL ||
		limits["max_bytes"] != float64(1<<20) || limits["max_depth"] != 64.0 || limits["max_nodes"] != 50000.0 || limits["max_issues"] != 100.0 {
		t.Fatalf("info %s", r.raw)
	}
	stages := r.body["stages"].([]any)
	var names []string
	for _, s := range stages {
		names = append(names, s.(map[string]any)["stage"].(string))
	}
	semantic := stages[2].(map[string]any)["codes"].([]any)
	integrity := r.body["integrity"].(map[string]any)
	if !slices.Equal(names, []string{"input", "schema", "semantic", "integrity"}) || len(semantic) != len(receipt.ReceiptSemanticRules) ||
		integrity["affects_validity"] != false || len(integrity["trusted_key_ids"].([]any)) != 0 ||
		r.body["validate"].(map[string]any)["path"] != "http://api.test/api/v1/agent-work-receipts/validate" ||
		r.body["import"].(map[string]any)["authentication"] != "bearer" || r.body["persistence"].(map[string]any)["stored"] != false {
		t.Fatalf("info %s", r.raw)
	}
}

// The shared fixtures through the API, on both mounts, with and without a credential:
// the valid ones answer 200 with their summary, the invalid ones 422 with their issues,
// and nothing is stored.
func TestReceiptValidationFixtures(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	conn := storetest.Conn(t)
	count := func() (n int) {
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM agent_work_receipts`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	for _, root := range []string{api.V1Root, api.ClientRoot} {
		for _, key := range []string{"", tenant.Key} {
			for _, c := range []struct {
				fixture, receiptID, actor, runtime string
				evidence, interventions            float64
				contentHash                        string
			}{
				{"claude-code.json", "claude-code/session/example-17", "claude-code-agent", "claude-code", 2, 1, "verified"},
				{"codex.json", "awr:codex:run-2026-07-19-001", "codex-agent-local", "codex-desktop", 1, 0, "verified"},
				{"openclaw.json", "openclaw:event:evt-704", "openclaw-worker-3", "openclaw", 2, 0, "not_present"},
			} {
				r := e.do(request{method: "POST", path: "/agent-work-receipts/validate", root: root, key: key, body: receiptFixture(t, c.fixture)})
				expect(t, r, http.StatusOK, "")
				s := r.body["receipt"].(map[string]any)
				p := r.body["persistence"].(map[string]any)
				if r.body["ok"] != true || r.body["valid"] != true || r.body["schema_version"] != receipt.ReceiptSchemaVersion ||
					s["receipt_id"] != c.receiptID || s["actor_id"] != c.actor || s["runtime"] != c.runtime ||
					s["producer_reported_outcome_status"] != "succeeded" || s["producer_reported_verification_status"] != "passed" ||
					s["evidence_count"] != c.evidence || s["human_intervention_count"] != c.interventions ||
					r.body["integrity"].(map[string]any)["content_hash"].(map[string]any)["state"] != c.contentHash ||
					p["stored"] != false || p["import_requires_authentication"] != true || r.body["issues"] != nil {
					t.Fatalf("%s: %s", c.fixture, r.raw)
				}
			}
			r := e.do(request{method: "POST", path: "/agent-work-receipts/validate", root: root, key: key,
				body: receiptFixture(t, "invalid-missing-authority.json")})
			expect(t, r, http.StatusUnprocessableEntity, "")
			if got := issueList(t, r); r.body["ok"] != false || r.body["valid"] != false || !slices.Equal(got, []string{"/authority schema.required"}) ||
				r.body["issue_count"] != 1.0 || r.body["issues_truncated"] != false || r.body["receipt"] != nil {
				t.Fatalf("missing authority: %s", r.raw)
			}
			r = e.do(request{method: "POST", path: "/agent-work-receipts/validate", root: root, key: key,
				body: receiptFixture(t, "invalid-unresolved-evidence.json")})
			expect(t, r, http.StatusUnprocessableEntity, "")
			if got := issueList(t, r); !slices.Equal(got, []string{"/verification/checks/0/evidence_ids/0 semantic.unknown_evidence_id",
				"/verification/evidence_ids/0 semantic.unknown_evidence_id"}) || r.body["issue_count"] != 2.0 {
				t.Fatalf("unresolved evidence: %s", r.raw)
			}
		}
	}
	if count() != before {
		t.Fatal("validation stored a receipt")
	}
}

// Whatever the body, validation answers 200, 422 with issues, or a refusal of the request
// itself (413, 415): never a 5xx.
func TestReceiptValidationOfHostileBodies(t *testing.T) {
	e := newEnv(t, nil)
	manyIssues := func() []byte {
		var doc map[string]any
		json.Unmarshal(receiptFixture(t, "codex.json"), &doc) //nolint:errcheck // a fixture
		actions := make([]any, 500)
		for i := range actions {
			actions[i] = map[string]any{}
		}
		doc["actions"] = actions
		b, _ := json.Marshal(doc)
		return b
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(receiptFixture(t, "codex.json")) //nolint:errcheck // in memory
	w.Close()
	for _, c := range []struct {
		name    string
		body    []byte
		headers map[string]string
		status  int
		issue   string // the first issue's "path code"
	}{
		{"empty", nil, nil, 422, " input.json"},
		{"malformed", []byte(`{"receipt_id": }`), nil, 422, "/receipt_id input.json"},
		{"truncated", receiptFixture(t, "codex.json")[:500], nil, 422, "* input.json"},
		{"a duplicate member", []byte(`{"receipt_id":"a","receipt_\u0069d":"b"}`), nil, 422, "/receipt_id input.duplicate_member"},
		{"deep", []byte(strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70)), nil, 422, "/" + strings.Repeat("a/", 63) + "a input.depth"},
		{"many values", []byte("[" + strings.Repeat("0,", 60000) + "0]"), nil, 422, "/49999 input.nodes"},
		{"invalid UTF-8", []byte("{\"receipt_id\":\"\xc3\x28\"}"), nil, 422, " input.unicode"},
		{"a lone surrogate", []byte(`{"receipt_id":"\udfff"}`), nil, 422, "/receipt_id input.unicode"},
		{"NUL", []byte(`{"receipt_id":"a\u0000"}`), nil, 422, "/receipt_id input.unicode"},
		{"a number beyond a double", []byte(`{"cost":{"total":1e999}}`), nil, 422, "/cost/total input.number"},
		{"not an object", []byte(`[1,2,3]`), nil, 422, " schema.type"},
		{"a string", []byte(`"receipt"`), nil, 422, " schema.type"},
		{"many issues", manyIssues(), nil, 422, "/actions/0/id schema.required"},
		{"oversized", bytes.Repeat([]byte(" "), 1<<20+1), nil, 413, ""},
		{"not JSON", receiptFixture(t, "codex.json"), map[string]string{"Content-Type": "text/plain"}, 415, ""},
		{"compressed", gz.Bytes(), map[string]string{"Content-Encoding": "gzip"}, 415, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var body any = c.body
			if c.body == nil {
				body = nil
			}
			r := e.do(request{method: "POST", path: "/agent-work-receipts/validate", body: body, headers: c.headers})
			if r.status >= 500 || r.status != c.status {
				t.Fatalf("%d: %.300s", r.status, r.raw)
			}
			if c.status != 422 {
				return
			}
			issues := issueList(t, r)
			if want, anywhere := strings.CutPrefix(c.issue, "*"); len(issues) == 0 || r.body["valid"] != false ||
				(anywhere && !strings.HasSuffix(issues[0], want)) || (!anywhere && issues[0] != c.issue) {
				t.Fatalf("issues %q, want first %q", issues, c.issue)
			}
			if c.name == "many issues" && (len(issues) != 100 || r.body["issue_count"] != 2000.0 || r.body["issues_truncated"] != true) {
				t.Fatalf("%d issues of %v, truncated %v", len(issues), r.body["issue_count"], r.body["issues_truncated"])
			}
		})
	}
}

// With the signer's key configured, the claude-code fixture's signature verifies.
func TestReceiptSignaturesWithConfiguredKeys(t *testing.T) {
	pub, _ := base64.RawURLEncoding.DecodeString("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo") // the conformance vectors' key
	e := newEnv(t, nil, func(c *api.Config, _ *api.Deps) {
		c.ReceiptSignerKeys = receipt.ReceiptSignerKeys{"rfc8032-test-key-1": ed25519.PublicKey(pub)}
	})
	r := e.do(request{method: "GET", path: "/agent-work-receipts/validate"})
	if ids := r.body["integrity"].(map[string]any)["trusted_key_ids"].([]any); len(ids) != 1 || ids[0] != "rfc8032-test-key-1" {
		t.Fatalf("trusted keys %v", ids)
	}
	signature := func(body []byte) map[string]any {
		r := e.do(request{method: "POST", path: "/agent-work-receipts/validate", body: body})
		expect(t, r, http.StatusOK, "")
		return r.body["integrity"].(map[string]any)["signatures"].([]any)[0].(map[string]any)
	}
	if s := signature(receiptFixture(t, "claude-code.json")); s["cryptographic_state"] != "verified" || s["trust_state"] != "trusted" ||
		s["key_id"] != "rfc8032-test-key-1" || s["profile"] != receipt.ReceiptSignatureProfile {
		t.Fatalf("signature %v", s)
	}
	// A tampered document still validates, and says what its integrity no longer proves.
	tampered := receiptVariant(t, "claude-code.json", map[string]any{"/outcome/summary": "Something else happened."})
	r = e.do(request{method: "POST", path: "/agent-work-receipts/validate", body: tampered})
	expect(t, r, http.StatusOK, "")
	if ih := r.body["integrity"].(map[string]any); ih["content_hash"].(map[string]any)["state"] != "mismatch" ||
		ih["signatures"].([]any)[0].(map[string]any)["cryptographic_state"] != "verified" {
		// The signature covers the declared hash, which still verifies; the content does not.
		t.Fatalf("tampered %s", r.raw)
	}
}

// importReceipt imports the receipt document doc as the public clients send it:
// {"receipt": doc}.
func importReceipt(e *env, key, idem string, doc []byte) response {
	return importReceiptBody(e, key, idem, wrapReceipt(doc))
}

// wrapReceipt is the body of an import of the document doc, with the other members:
// doc is copied as its text (its duplicate members, if any, stay).
func wrapReceipt(doc []byte, members ...string) []byte {
	body := append([]byte(`{"receipt":`), doc...)
	for i := 0; i+1 < len(members); i += 2 {
		body = fmt.Appendf(body, ",%q:%s", members[i], members[i+1])
	}
	return append(body, '}')
}

// importReceiptBody posts body to the import as it is.
func importReceiptBody(e *env, key, idem string, body []byte) response {
	req := request{method: "POST", path: "/agent-work-receipts", key: key, body: body, headers: map[string]string{}}
	if idem != "" {
		req.headers["Idempotency-Key"] = idem
	}
	return e.do(req)
}

// issuePaths lists the paths of the issues in an error's details.
func issuePaths(r response) []string {
	var out []string
	details, _ := r.errorObj()["details"].(map[string]any)
	issues, _ := details["issues"].([]any)
	for _, is := range issues {
		out = append(out, fmt.Sprint(is.(map[string]any)["path"]))
	}
	return out
}

func TestReceiptImport(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key, ws := tenant.Key, tenant.Principal.WorkspaceID
	codex := receiptFixture(t, "codex.json")

	before := time.Now()
	first := importReceipt(e, key, "", codex)
	expect(t, first, http.StatusCreated, "")
	d := first.data()
	id, _ := d["receipt_id"].(string)
	importedAt, err := time.Parse(time.RFC3339Nano, fmt.Sprint(d["imported_at"]))
	if d["ok"] != true || !accountable.ValidUUID(id) || d["external_receipt_id"] != "awr:codex:run-2026-07-19-001" ||
		d["schema_version"] != receipt.ReceiptSchemaVersion || d["idempotent"] != false || first.meta()["workspaceId"] != ws ||
		!slices.Equal(keysOf(d), []string{"external_receipt_id", "idempotent", "imported_at", "ok", "receipt_id", "schema_version"}) ||
		err != nil || importedAt.Before(before.Add(-time.Second)) || importedAt.After(time.Now().Add(time.Second)) {
		t.Fatalf("import %s", first.raw)
	}
	// The same document again, without a key (its digest is the key), with whitespace and
	// members reordered (the same canonical document), or under a new key: that import,
	// imported when it was. Members of the body other than receipt and workspace_id are
	// ignored (a client that also sends its key as idempotency_key).
	var reordered bytes.Buffer
	json.Indent(&reordered, receiptVariant(t, "codex.json", nil), "", "    ") //nolint:errcheck // valid JSON
	for _, again := range []response{importReceipt(e, key, "", codex), importReceipt(e, key, "", reordered.Bytes()),
		importReceipt(e, key, uniqueKey("other"), codex), importReceiptBody(e, key, "", wrapReceipt(codex, "idempotency_key", `"k-1"`))} {
		expect(t, again, http.StatusOK, "")
		if again.data()["receipt_id"] != id || again.data()["idempotent"] != true || again.meta()["duplicate"] != true ||
			again.data()["imported_at"] != d["imported_at"] {
			t.Fatalf("again %s", again.raw)
		}
	}
	// Another document under the same receipt_id: refused, with or without a key.
	changed := receiptVariant(t, "codex.json", map[string]any{"/outcome/summary": "Amended."})
	for _, idem := range []string{"", uniqueKey("amended")} {
		r := importReceipt(e, key, idem, changed)
		expect(t, r, http.StatusConflict, accountable.ECodeIdempotencyKeyReused)
		if details := r.errorObj()["details"].(map[string]any); details["receipt_id"] != id || details["external_receipt_id"] != "awr:codex:run-2026-07-19-001" {
			t.Fatalf("conflict %s", r.raw)
		}
	}
	// The document describes that body: {receipt (the document), workspace_id}.
	body := fetchDocument(t, e).raw["paths"].(map[string]any)["/agent-work-receipts"].(map[string]any)["post"].(map[string]any)["requestBody"]
	schema := body.(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	if toJSON(schema["required"]) != `["receipt"]` || props["receipt"] == nil || props["workspace_id"] == nil || len(props) != 2 ||
		props["receipt"].(map[string]any)["type"] != "object" {
		t.Fatalf("the import's body in the document: %s", toJSON(body))
	}

	// The Idempotency-Key rail: a replay, and the key with another document.
	idem := uniqueKey("import")
	claude := importReceipt(e, key, idem, receiptFixture(t, "claude-code.json"))
	expect(t, claude, http.StatusCreated, "")
	replay := importReceipt(e, key, idem, receiptFixture(t, "claude-code.json"))
	expect(t, replay, http.StatusOK, "")
	if replay.data()["receipt_id"] != claude.data()["receipt_id"] || replay.data()["idempotent"] != true || replay.meta()["duplicate"] != true ||
		replay.data()["imported_at"] != claude.data()["imported_at"] {
		t.Fatalf("replay %s", replay.raw)
	}
	expect(t, importReceipt(e, key, idem, receiptFixture(t, "openclaw.json")), http.StatusConflict, accountable.ECodeIdempotencyKeyReused)
	expect(t, importReceipt(e, key, "not a key!", codex), http.StatusBadRequest, accountable.ECodeIdempotencyKeyInvalid)

	// An invalid receipt: 422 receipt_invalid with the validator's issues (those the
	// validation of the bare document finds), at their paths in the body, nothing written.
	invalid := receiptFixture(t, "invalid-unresolved-evidence.json")
	r := importReceipt(e, key, "", invalid)
	expect(t, r, http.StatusUnprocessableEntity, accountable.ECodeReceiptInvalid)
	details := r.errorObj()["details"].(map[string]any)
	if details["issue_count"] != 2.0 || details["issues_truncated"] != false || details["schema_version"] != receipt.ReceiptSchemaVersion ||
		details["issues"].([]any)[0].(map[string]any)["code"] != receipt.ReceiptUnknownEvidenceID ||
		!slices.Equal(issuePaths(r), []string{"/receipt/verification/checks/0/evidence_ids/0", "/receipt/verification/evidence_ids/0"}) ||
		!strings.Contains(r.errorObj()["message"].(string), ": /receipt/verification/checks/0/evidence_ids/0: ") {
		t.Fatalf("invalid %s", r.raw)
	}
	bare := e.do(request{method: "POST", path: "/agent-work-receipts/validate", body: invalid})
	if toJSON(bare.body["issues"]) != strings.ReplaceAll(toJSON(details["issues"]), `"/receipt/`, `"/`) {
		t.Fatalf("the import's issues %v are not the validation's %v", details["issues"], bare.body["issues"])
	}
	// The document's own text problems are its issues too, inside the body.
	r = importReceipt(e, key, "", []byte(`{"a":1,"\u0061":2}`))
	expect(t, r, http.StatusUnprocessableEntity, accountable.ECodeReceiptInvalid)
	if paths := issuePaths(r); !slices.Equal(paths, []string{"/receipt/a"}) ||
		r.errorObj()["details"].(map[string]any)["issues"].([]any)[0].(map[string]any)["code"] != receipt.ReceiptInputDuplicateMember {
		t.Fatalf("a duplicate member in the document: %s", r.raw)
	}
	expect(t, importReceipt(e, "", "", codex), http.StatusUnauthorized, "")
	expect(t, e.do(request{method: "POST", path: "/agent-work-receipts", key: key, body: wrapReceipt(codex), headers: map[string]string{"Content-Type": "text/plain"}}),
		http.StatusUnsupportedMediaType, accountable.ECodeUnsupportedMediaType)
	// The body is the clients' {receipt, workspace_id}: without a receipt object (the bare
	// document among such bodies: it has no member receipt), 400 validation_failed at
	// /receipt; a body that is not one JSON object, or names a member twice, invalid_json.
	for name, body := range map[string]string{
		"the bare document": string(codex), "an empty body": "", "an empty object": "{}", "a null receipt": `{"receipt":null}`,
		"a string receipt": `{"receipt":"awr:codex:run-2026-07-19-001"}`, "an array receipt": `{"receipt":[` + string(codex) + `]}`,
	} {
		r := importReceiptBody(e, key, "", []byte(body))
		expect(t, r, http.StatusBadRequest, accountable.ECodeValidationFailed)
		if !slices.Equal(issuePaths(r), []string{"/receipt"}) {
			t.Fatalf("%s: %s", name, r.raw)
		}
	}
	for name, body := range map[string][]byte{
		"an array":            []byte(`[` + string(codex) + `]`),
		"not JSON":            []byte(`{"receipt":`),
		"receipt twice":       []byte(`{"receipt":` + string(codex) + `,"receipt":` + string(codex) + `}`),
		"a value after it":    append(wrapReceipt(codex), []byte(` {}`)...),
		"a malformed receipt": []byte(`{"receipt":{"a":}}`),
	} {
		if r := importReceiptBody(e, key, "", body); r.status != http.StatusBadRequest || r.errorCode() != accountable.ECodeInvalidJSON {
			t.Fatalf("%s: %d %s", name, r.status, r.raw)
		}
	}

	// The stored row: the canonical document beside its columns.
	conn := storetest.Conn(t)
	var external, digest, runtime, contentState string
	var total float64
	var doc map[string]any
	if err := conn.QueryRow(context.Background(), `SELECT external_receipt_id, document_digest, runtime, content_hash_state, cost_total, document
		FROM agent_work_receipts WHERE workspace_id = $1 AND id = $2`, ws, id).Scan(&external, &digest, &runtime, &contentState, &total, &doc); err != nil {
		t.Fatal(err)
	}
	canon, _ := canonical.Transform(codex)
	if external != "awr:codex:run-2026-07-19-001" || digest != canonical.Digest(canon) || runtime != "codex-desktop" ||
		contentState != "verified" || total != 0.08 || doc["receipt_id"] != external || doc["integrity"] == nil {
		t.Fatalf("row %s %s %s %s %v", external, digest, runtime, contentState, total)
	}

	// The ledger: one receipt.imported per import, self-contained, and the chain verifies
	// (the receipts table is among the aggregates it is checked against).
	events := e.streamEvents(key, "event_type=receipt.imported", 2)
	if len(events) != 2 {
		t.Fatalf("%d receipt.imported events", len(events))
	}
	ev := events[0]
	p := ev["payload"].(map[string]any)
	if ev["aggregateType"] != accountable.AggregateReceipt || ev["aggregateId"] != id || ev["aggregateVersion"] != 1.0 ||
		p["receipt_id"] != id || p["external_receipt_id"] != external || p["document_digest"] != digest ||
		p["case_id"] != "receipt:codex/task/task-local-41" || p["producer_reported_outcome_status"] != "succeeded" ||
		p["integrity"].(map[string]any)["content_hash"] != "verified" || p["cost"].(map[string]any)["total"] != 0.08 ||
		len(p["steps"].([]any)) != 3 || p["timestamps"].(map[string]any)["elapsed_ms"] != 485000.0 || ev["idempotencyKey"] == nil {
		t.Fatalf("event %s", toJSON(ev))
	}
	verify := e.do(request{method: "GET", path: "/events/verify", key: key})
	expect(t, verify, http.StatusOK, "")
	if verify.data()["verified"] != true {
		t.Fatalf("verify %s", verify.raw)
	}

	// Another workspace imports the same document as its own.
	other := storetest.NewTenant(t, e.db)
	r = importReceipt(e, other.Key, "", codex)
	expect(t, r, http.StatusCreated, "")
	if r.data()["receipt_id"] == id || r.data()["idempotent"] != false {
		t.Fatalf("other workspace %s", r.raw)
	}

	// A workspace_id beside the receipt (the TypeScript client sends one) selects the
	// workspace, as in any request body (CONTRACT): the caller's own answers its import,
	// another's is a 404, and one that is not a string is 400. Inside the document it is a
	// member the format does not have, for the import as for the validation.
	own := importReceiptBody(e, key, "", wrapReceipt(codex, "workspace_id", `"`+ws+`"`))
	expect(t, own, http.StatusOK, "")
	if own.data()["receipt_id"] != id || own.data()["idempotent"] != true {
		t.Fatalf("own workspace_id %s", own.raw)
	}
	expect(t, importReceiptBody(e, key, "", wrapReceipt(codex, "workspace_id", `"`+other.Principal.WorkspaceID+`"`)),
		http.StatusNotFound, accountable.ECodeNotFound)
	r = importReceiptBody(e, key, "", wrapReceipt(codex, "workspace_id", "7"))
	expect(t, r, http.StatusBadRequest, accountable.ECodeValidationFailed)
	if !slices.Equal(issuePaths(r), []string{"/workspace_id"}) {
		t.Fatalf("workspace_id 7: %s", r.raw)
	}
	r = importReceipt(e, key, "", receiptVariant(t, "codex.json", map[string]any{"/workspace_id": ws}))
	expect(t, r, http.StatusUnprocessableEntity, accountable.ECodeReceiptInvalid)
	if !slices.Equal(issuePaths(r), []string{"/receipt/workspace_id"}) {
		t.Fatalf("a workspace_id inside the document: %s", r.raw)
	}
	expect(t, e.do(request{method: "POST", path: "/agent-work-receipts/validate", body: receiptVariant(t, "codex.json", map[string]any{"/workspace_id": ws})}),
		http.StatusUnprocessableEntity, "")
}

// Imports racing: the same document under different keys gives one import (the others
// answer it); different documents under one receipt_id give one import and 409s.
func TestReceiptImportRaces(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	race := func(bodies func(i int) []byte) []response {
		out := make([]response, 6)
		var wg sync.WaitGroup
		for i := range out {
			wg.Go(func() { out[i] = importReceipt(e.as(t), tenant.Key, uniqueKey("race"), bodies(i)) })
		}
		wg.Wait()
		return out
	}
	same := freshReceipt(t)
	created, ids := 0, map[any]bool{}
	for _, r := range race(func(int) []byte { return same }) {
		switch r.status {
		case http.StatusCreated:
			created++
		case http.StatusOK:
		default:
			t.Fatalf("same document: %d %s", r.status, r.raw)
		}
		ids[r.data()["receipt_id"]] = true
	}
	if created != 1 || len(ids) != 1 {
		t.Fatalf("%d created, ids %v", created, ids)
	}
	externalID := uniqueKey("awr")
	created = 0
	for _, r := range race(func(i int) []byte {
		return receiptVariant(t, "codex.json", map[string]any{"/receipt_id": externalID, "/integrity": nil, "/outcome/summary": fmt.Sprint("Version ", i)})
	}) {
		switch {
		case r.status == http.StatusCreated:
			created++
		case r.status == http.StatusConflict && (r.errorCode() == accountable.ECodeIdempotencyKeyReused || r.errorCode() == accountable.ECodeWriteConflict):
		default:
			t.Fatalf("documents under one receipt_id: %d %s", r.status, r.raw)
		}
	}
	if created != 1 {
		t.Fatalf("%d created", created)
	}
}

// Imported receipts are mined by discovery runs that include the receipts source: their
// steps (actions by type, human interventions, the verification verdict) in the case of
// the request they served.
func TestReceiptImportsAreMinedByDiscovery(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	for i := range 3 { // approval → edit → verification, in three sessions
		body := receiptVariant(t, "claude-code.json", map[string]any{"/receipt_id": fmt.Sprintf("session-%d/receipt", i),
			"/intent/request_ref": map[string]any{"system": "claude-code", "type": "session", "id": fmt.Sprintf("session-%d", i)},
			"/integrity":          nil})
		expect(t, importReceipt(e, key, "", body), http.StatusCreated, "")
	}
	for i := range 2 { // inspect → test → verification, in two tasks
		body := receiptVariant(t, "codex.json", map[string]any{"/receipt_id": fmt.Sprintf("task-%d/receipt", i),
			"/intent/request_ref": map[string]any{"system": "codex", "type": "task", "id": fmt.Sprintf("task-%d", i)}, "/integrity": nil})
		expect(t, importReceipt(e, key, "", body), http.StatusCreated, "")
	}
	e.streamEvents(key, "event_type=receipt.imported", 5)

	run := func(sources ...string) response {
		r := e.do(request{method: "POST", path: "/discovery-runs", key: key, body: map[string]any{"mode": "bounded_sync", "source_kinds": sources}})
		expect(t, r, http.StatusCreated, "")
		return r
	}
	r := run("receipts")
	cards := r.data()["processCards"].([]any)
	if r.data()["run"].(map[string]any)["status"] != "succeeded" || len(cards) != 2 {
		t.Fatalf("run %s", r.raw)
	}
	approval, tests := cards[0].(map[string]any), cards[1].(map[string]any)
	if got := stageKeys(approval); !slices.Equal(got, []string{"human.approval", "file.edit", "verification"}) || approval["support"] != 3.0 {
		t.Fatalf("first candidate %v: %s", got, toJSON(approval))
	}
	if got := stageKeys(tests); !slices.Equal(got, []string{"source.inspect", "test.run", "verification"}) || tests["support"] != 2.0 {
		t.Fatalf("second candidate %v: %s", got, toJSON(tests))
	}
	citation := approval["citations"].([]any)[0].(map[string]any)
	if citation["kind"] != "ledger_event" || !strings.HasPrefix(citation["caseId"].(string), "receipt:claude-code/session/session-") {
		t.Fatalf("citation %v", citation)
	}
	// A run that does not mine receipts finds nothing in them.
	if r := run("handoffs", "work"); len(r.data()["processCards"].([]any)) != 0 {
		t.Fatalf("without receipts %s", r.raw)
	}
}

// freshReceiptID encodes as a receipt_id never sent before: each request of the isolation
// matrix and of the request fuzz run that carries receiptImportBody imports a receipt of
// its own, as each request of another create makes a new resource (the same document again
// is a replay, which those tests do not compare with a create).
type freshReceiptID struct{}

func (freshReceiptID) MarshalJSON() ([]byte, error) { return json.Marshal(uniqueKey("awr")) }

// receiptImportBody is the body of a valid import, {receipt}: the codex fixture, a new
// receipt_id at every encoding, without the integrity block that receipt_id would break.
func receiptImportBody() map[string]any {
	var doc map[string]any
	if err := json.Unmarshal(receiptFixtureFile("codex.json"), &doc); err != nil {
		panic(err)
	}
	doc["receipt_id"] = freshReceiptID{}
	delete(doc, "integrity")
	return map[string]any{"receipt": doc}
}

// receiptValidateBody is a valid receipt to validate (the claude-code fixture, signed).
func receiptValidateBody() map[string]any {
	var doc map[string]any
	if err := json.Unmarshal(receiptFixtureFile("claude-code.json"), &doc); err != nil {
		panic(err)
	}
	return doc
}

func receiptFixtureFile(name string) []byte {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "agent-work-receipt", "fixtures", name))
	if err != nil {
		panic(err)
	}
	return b
}
