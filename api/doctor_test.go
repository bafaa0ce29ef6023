package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/workload"
)

// The isolation matrix's lines of the area (isolation_test.go).
func init() {
	isolationCovers(isolationLines{
		publicOperations: map[string]string{
			// The workload diagnosis: a pure function of the request body, nothing read or stored.
			"getWorkloadDiagnosisInfo": "workload diagnosis: the same schema and rules for everyone",
			"diagnoseWorkload":         "workload diagnosis: a pure function of the body, nothing read or stored",
		},
	})
}

// workloadBody is a valid request that crosses every boundary: its members in the order
// given, as text.
const workloadBody = `{"schema_version":"workload-diagnosis/0.1","workload":{"name":"Release bot","outcome":"Ship the weekly release",
"time_horizon":"recurring","agent_count":3,"coordination":"handoff",
"systems":[{"category":"code_repository","access":"write","side_effect":"reversible","data_class":"internal"},
{"category":"cloud_runtime","access":"admin","side_effect":"irreversible","data_class":"confidential"}],
"authority":{"actions":["modify_code","merge_or_deploy","research"],"approval_policy":"sensitive_actions","budget_control":"not_applicable"},
"accountability":{"evidence":"activity_log","acceptance":"human","consequence":"high","retention":"short_term"}}}`

// sameWorkloadBody is workloadBody with its members in another order and other whitespace.
const sameWorkloadBody = `{ "workload" : { "accountability":{"retention":"short_term","consequence":"high","acceptance":"human","evidence":"activity_log"},
  "authority": {"budget_control":"not_applicable","approval_policy":"sensitive_actions","actions":["modify_code","merge_or_deploy","research"]},
  "systems": [ {"data_class":"internal","side_effect":"reversible","access":"write","category":"code_repository"},
               {"data_class":"confidential","side_effect":"irreversible","access":"admin","category":"cloud_runtime"} ],
  "coordination":"handoff", "agent_count":3.0, "time_horizon":"recurring", "outcome":"Ship the weekly release", "name":"Release bot" },
  "schema_version" : "workload-diagnosis/0.1" }`

func TestWorkloadDiagnosisAnswersBare(t *testing.T) {
	e := newEnv(t, nil)

	r := e.do(request{method: "GET", path: "/doctor/workload"})
	expect(t, r, http.StatusOK, "")
	if r.body["schema_version"] != workload.WorkloadSchemaVersion || r.body["data"] != nil ||
		r.body["diagnose"] != "POST http://api.test/api/v1/doctor/workload" {
		t.Fatalf("metadata: %.400s", r.raw)
	}
	rules := r.body["scoring"].(map[string]any)["rules"].([]any)
	if len(rules) != len(workload.WorkloadScoringRules()) {
		t.Fatalf("%d rules served", len(rules))
	}

	first := e.do(request{method: "POST", path: "/doctor/workload", body: workloadBody})
	expect(t, first, http.StatusOK, "")
	var req workload.WorkloadRequest
	if err := json.Unmarshal([]byte(workloadBody), &req); err != nil {
		t.Fatal(err)
	}
	want := workload.Diagnose(req)
	if first.body["diagnosis_id"] != want.DiagnosisID || first.body["data"] != nil || first.body["meta"] != nil {
		t.Fatalf("diagnosis: %.400s", first.raw)
	}
	rec := first.body["recommendation"].(map[string]any)
	if rec["verdict"] != "needed" || rec["mode"] != "governed_workspace" {
		t.Fatalf("recommendation: %v", rec)
	}
	handoff := first.body["approval_handoff"].(map[string]any)
	if handoff["kind"] != "browser_review" || handoff["url"] != "http://api.test"+workload.WorkloadReviewPath+"#"+want.DiagnosisID ||
		workload.WorkloadReviewPath != api.V1Root+"/doctor/workload" {
		t.Fatalf("handoff: %v", handoff)
	}
	// The answer is exactly encoding/json's bytes of Diagnose's result, its handoff URL made
	// absolute: a faster encoder must not change a byte.
	abs := want
	abs.ApprovalHandoff.URL = "http://api.test" + want.ApprovalHandoff.URL
	if exact, err := json.Marshal(abs); err != nil || !bytes.Equal(first.raw, exact) {
		t.Fatalf("the answer is not encoding/json's bytes of the diagnosis (%v):\n got %s\nwant %s", err, first.raw, exact)
	}
	if ct := first.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	// The bench's body too (make bench's doctor line posts it).
	benchBody, err := os.ReadFile("../workload/testdata/release-notes-agent.json")
	if err != nil {
		t.Fatal(err)
	}
	var benchReq workload.WorkloadRequest
	if err := json.Unmarshal(benchBody, &benchReq); err != nil {
		t.Fatal(err)
	}
	benchWant := workload.Diagnose(benchReq)
	if benchWant.ApprovalHandoff.URL != "" {
		benchWant.ApprovalHandoff.URL = "http://api.test" + benchWant.ApprovalHandoff.URL
	}
	exact, _ := json.Marshal(benchWant)
	if got := e.do(request{method: "POST", path: "/doctor/workload", body: string(benchBody)}); got.status != http.StatusOK || !bytes.Equal(got.raw, exact) {
		t.Fatalf("the bench's body: %d\n got %s\nwant %s", got.status, got.raw, exact)
	}
	if strings.Contains(string(first.raw), "Release bot") || strings.Contains(string(first.raw), "weekly release") {
		t.Fatalf("the result repeats the request's text: %s", first.raw)
	}

	// The same request, its members reordered, other whitespace, from the other mount, with a
	// credential that is not even valid: the very same bytes.
	for _, again := range []response{
		e.do(request{method: "POST", path: "/doctor/workload", body: workloadBody}),
		e.do(request{method: "POST", path: "/doctor/workload", body: sameWorkloadBody, root: api.ClientRoot}),
		e.do(request{method: "POST", path: "/doctor/workload", body: sameWorkloadBody, key: "svk_not_a_key"}),
	} {
		expect(t, again, http.StatusOK, "")
		if !bytes.Equal(again.raw, first.raw) {
			t.Fatalf("the same request answered differently:\n%s\n%s", first.raw, again.raw)
		}
	}
}

// failure checks a failure answer of the workload diagnosis: the status, the code, ok and
// valid false, and the issues as "path code" (nil: any).
func failure(t *testing.T, r response, status int, code string, issues []string) {
	t.Helper()
	e, _ := r.body["error"].(map[string]any)
	if r.status != status || e["code"] != code || r.body["ok"] != false || r.body["valid"] != false || len(r.body) != 3 {
		t.Fatalf("got %d %s, want %d %s: %s", r.status, e["code"], status, code, r.raw)
	}
	if msg, _ := e["message"].(string); msg == "" || len(e) != 3 {
		t.Fatalf("error: %s", r.raw)
	}
	list, ok := e["issues"].([]any)
	if !ok {
		t.Fatalf("issues: %s", r.raw)
	}
	if issues == nil {
		return
	}
	var got []string
	for _, raw := range list {
		is := raw.(map[string]any)
		got = append(got, is["path"].(string)+" "+is["code"].(string))
	}
	if strings.Join(got, "\n") != strings.Join(issues, "\n") {
		t.Fatalf("issues\n got %q\nwant %q\n%s", got, issues, r.raw)
	}
}

func TestWorkloadDiagnosisFailureBody(t *testing.T) {
	e := newEnv(t, nil)
	valid := func(edit func(w map[string]any)) map[string]any {
		var body map[string]any
		if err := json.Unmarshal([]byte(workloadBody), &body); err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(body["workload"].(map[string]any))
		}
		return body
	}
	cases := []struct {
		name   string
		body   any
		status int
		code   string
		issues []string
	}{
		{"bad JSON", `{"schema_version":`, 400, accountable.ECodeInvalidJSON, []string{" invalid_json"}},
		{"not an object", `[1,2]`, 400, accountable.ECodeInvalidJSON, []string{" invalid_json"}},
		{"duplicate member", `{"schema_version":"workload-diagnosis/0.1","schema_version":"x"}`, 400, accountable.ECodeInvalidJSON, []string{" invalid_json"}},
		{"empty body: every member missing", ``, 400, accountable.ECodeValidationFailed, []string{
			"/schema_version required", "/workload/accountability/acceptance required", "/workload/accountability/consequence required",
			"/workload/accountability/evidence required", "/workload/accountability/retention required", "/workload/agent_count out_of_range",
			"/workload/authority/actions required", "/workload/authority/approval_policy required", "/workload/authority/budget_control required",
			"/workload/coordination required", "/workload/name required", "/workload/outcome required", "/workload/systems required",
			"/workload/time_horizon required"}},
		{"missing members", valid(func(w map[string]any) {
			delete(w, "name")
			delete(w, "systems")
			w["authority"].(map[string]any)["actions"] = nil
		}), 400, accountable.ECodeValidationFailed, []string{"/workload/authority/actions required", "/workload/name required", "/workload/systems required"}},
		{"wrong schema_version", strings.Replace(workloadBody, "workload-diagnosis/0.1", "workload-diagnosis/0.2", 1), 400,
			accountable.ECodeValidationFailed, []string{"/schema_version unsupported_schema_version"}},
		{"unknown enumeration values", valid(func(w map[string]any) {
			w["time_horizon"] = "forever"
			w["systems"].([]any)[1].(map[string]any)["access"] = "root"
			w["authority"].(map[string]any)["actions"] = []any{"research", "teleport", "research"}
		}), 400, accountable.ECodeValidationFailed, []string{"/workload/authority/actions/1 invalid_enum",
			"/workload/authority/actions/2 duplicate", "/workload/systems/1/access invalid_enum", "/workload/time_horizon invalid_enum"}},
		{"bounds", valid(func(w map[string]any) {
			w["name"] = strings.Repeat("é", 201)
			w["agent_count"] = 101
			w["systems"] = make([]any, 16)
		}), 400, accountable.ECodeValidationFailed, []string{"/workload/agent_count out_of_range", "/workload/name too_long", "/workload/systems too_many"}},
		{"inconsistent", valid(func(w map[string]any) {
			w["agent_count"] = 1
			w["coordination"] = "parallel"
			w["authority"].(map[string]any)["approval_policy"] = "not_applicable"
		}), 400, accountable.ECodeValidationFailed, []string{"/workload/authority/approval_policy inconsistent", "/workload/coordination inconsistent"}},
		{"unknown member", valid(func(w map[string]any) { w["owner"] = "me" }), 400, accountable.ECodeValidationFailed,
			[]string{"/workload/owner unknown_member"}},
		{"wrong type", valid(func(w map[string]any) { w["agent_count"] = "three" }), 400, accountable.ECodeValidationFailed,
			[]string{"/workload/agent_count invalid_type"}},
		{"fractional count", valid(func(w map[string]any) { w["agent_count"] = 2.5 }), 400, accountable.ECodeValidationFailed,
			[]string{"/workload/agent_count invalid_type"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			failure(t, e.as(t).do(request{method: "POST", path: "/doctor/workload", body: c.body}), c.status, c.code, c.issues)
		})
	}

	t.Run("not JSON", func(t *testing.T) {
		e := e.as(t)
		r := e.do(request{method: "POST", path: "/doctor/workload", body: workloadBody, headers: map[string]string{"Content-Type": "text/plain"}})
		failure(t, r, http.StatusUnsupportedMediaType, accountable.ECodeUnsupportedMediaType, []string{})
	})
	t.Run("unknown Svc-Version, before the operation runs", func(t *testing.T) {
		e := e.as(t)
		for _, method := range []string{"GET", "POST"} {
			r := e.do(request{method: method, path: "/doctor/workload", body: workloadBody, headers: map[string]string{"Svc-Version": "1999-01-01"}})
			failure(t, r, http.StatusBadRequest, accountable.ECodeUnsupportedAPIVersion, []string{})
		}
	})
	t.Run("too large, refused before the body is read", func(t *testing.T) {
		e := e.as(t)
		for _, path := range []string{"/api/v1/doctor/workload", "/api/client/doctor/workload", "/API/V1/doctor/workload/"} {
			r := e.rawRequest("POST", path, "", 2<<20)
			failure(t, r, http.StatusRequestEntityTooLarge, accountable.ECodePayloadTooLarge, []string{})
			if err := e.oas.validateAt("/components/schemas/WorkloadFailure", r.rawBody); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("another spelling of the path", func(t *testing.T) {
		e := e.as(t)
		r := e.do(request{method: "POST", path: "/DOCTOR/workload/", body: `{}`, noCheck: true})
		failure(t, r, http.StatusBadRequest, accountable.ECodeValidationFailed, nil)
	})
	t.Run("other operations keep the envelope", func(t *testing.T) {
		e := e.as(t)
		r := e.do(request{method: "PUT", path: "/doctor/workload", body: workloadBody, noCheck: true})
		if r.status != http.StatusMethodNotAllowed || r.errorObj()["requestId"] == nil || r.body["ok"] != nil {
			t.Fatalf("PUT: %d %s", r.status, r.raw)
		}
		r = e.do(request{method: "GET", path: "/healthz", root: "/", headers: map[string]string{"Svc-Version": "1999-01-01"}})
		expect(t, r, http.StatusBadRequest, accountable.ECodeUnsupportedAPIVersion)
		if r.errorObj()["requestId"] == nil {
			t.Fatalf("healthz: %s", r.raw)
		}
	})
}

// The document describes the area: its failure body (x-failure-body) for every error
// status, the bounds of the result and the enumerations of the request.
func TestWorkloadDiagnosisDocument(t *testing.T) {
	e := newEnv(t, nil)
	doc := e.oas.doc
	for _, method := range []string{"get", "post"} {
		o := doc["paths"].(map[string]any)["/doctor/workload"].(map[string]any)[method].(map[string]any)
		if o["x-failure-body"] != "#/components/schemas/WorkloadFailure" || len(o["security"].([]any)) != 0 ||
			o["tags"].([]any)[0] != "Workload diagnosis" {
			t.Fatalf("%s: %v", method, o)
		}
		for status, raw := range o["responses"].(map[string]any) {
			ref := raw.(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)["$ref"]
			if want := "#/components/schemas/WorkloadFailure"; status >= "400" && ref != want {
				t.Fatalf("%s %s: %v", method, status, ref)
			}
		}
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	bounds := map[string]string{}
	var walk func(name string, s map[string]any)
	walk = func(name string, s map[string]any) {
		for prop, raw := range s["properties"].(map[string]any) {
			p := raw.(map[string]any)
			for _, k := range []string{"minItems", "maxItems", "minLength", "maxLength"} {
				if v, ok := p[k]; ok {
					bounds[name+"."+prop] += k + "=" + toJSON(v) + " "
				}
			}
			if list, ok := p["type"].([]any); ok && slices.Contains(list, "null") {
				t.Fatalf("%s.%s may be null: arrays of the result are always present", name, prop)
			}
		}
	}
	for _, name := range []string{"WorkloadDiagnosis", "WorkloadRecommendation", "WorkloadProposedResource", "WorkloadHumanApproval", "WorkloadRisk"} {
		walk(name, schemas[name].(map[string]any))
	}
	for field, want := range map[string]string{
		"WorkloadDiagnosis.proposed_resources":              "maxItems=15 ",
		"WorkloadDiagnosis.missing_capabilities":            "maxItems=13 ",
		"WorkloadRecommendation.rationale":                  "minItems=1 maxItems=6 ",
		"WorkloadDiagnosis.risks":                           "maxItems=15 ",
		"WorkloadDiagnosis.human_approvals":                 "maxItems=10 ",
		"WorkloadDiagnosis.capabilities_after_installation": "maxItems=32 ",
		"WorkloadRecommendation.summary":                    "minLength=1 maxLength=300 ",
		"WorkloadRisk.mitigation":                           "minLength=1 maxLength=300 ",
	} {
		if bounds[field] != want {
			t.Errorf("%s: %q, want %q", field, bounds[field], want)
		}
	}
	if enum := schemas["WorkloadAction"].(map[string]any)["enum"].([]any); len(enum) != 11 {
		t.Fatalf("actions: %v", enum)
	}
	if p := schemas["WorkloadDiagnosis"].(map[string]any)["properties"].(map[string]any)["diagnosis_id"].(map[string]any); p["pattern"] != "^wdg_[a-f0-9]{24}$" {
		t.Fatalf("diagnosis_id: %v", p)
	}
	if !regexp.MustCompile(`^wdg_[a-f0-9]{24}$`).MatchString(workload.Diagnose(workload.WorkloadRequest{}).DiagnosisID) {
		t.Fatal("id")
	}
}
