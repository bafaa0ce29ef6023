package workload_test

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/accountablework/accountable/workload"
)

// plainRequest is WorkloadRequest with every enumeration a plain string, and without
// Workload's decoder: go-json-experiment decodes it by default, as it decoded the
// request before Workload had a decoder of its own.
type plainRequest struct {
	SchemaVersion string `json:"schema_version"`
	Workload      struct {
		Name         string `json:"name"`
		Outcome      string `json:"outcome"`
		TimeHorizon  string `json:"time_horizon"`
		AgentCount   int64  `json:"agent_count"`
		Coordination string `json:"coordination"`
		Systems      []struct {
			Category   string `json:"category"`
			Access     string `json:"access"`
			SideEffect string `json:"side_effect"`
			DataClass  string `json:"data_class"`
		} `json:"systems"`
		Authority struct {
			Actions        []string `json:"actions"`
			ApprovalPolicy string   `json:"approval_policy"`
			BudgetControl  string   `json:"budget_control"`
		} `json:"authority"`
		Accountability struct {
			Evidence    string `json:"evidence"`
			Acceptance  string `json:"acceptance"`
			Consequence string `json:"consequence"`
			Retention   string `json:"retention"`
		} `json:"accountability"`
	} `json:"workload"`
}

// TestWorkloadPlainDecoding: Workload's decoder gives what the default decoding gives,
// value and error, on the golden corpus's requests and on bodies with members changed to
// other strings (escaped, unknown, invalid UTF-8), numbers, other types, null, repeated
// and unknown members, whitespace and broken text. An error is compared as the API
// reads it (decodeError) and more: whether it is semantic, its JSON Pointer and kind,
// the Go kind it names and its cause; any other error by its text.
func TestWorkloadPlainDecoding(t *testing.T) {
	opts := jsonv2.RejectUnknownMembers(true)
	check := func(name string, body []byte) {
		t.Helper()
		var got workload.WorkloadRequest
		var want plainRequest
		gotErr := jsonv2.Unmarshal(body, &got, opts)
		wantErr := jsonv2.Unmarshal(body, &want, opts)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%s: %s\n got error %v\nwant error %v", name, body, gotErr, wantErr)
		}
		if gotErr != nil {
			var gs, ws *jsonv2.SemanticError
			gotSemantic, wantSemantic := errors.As(gotErr, &gs), errors.As(wantErr, &ws)
			if gotSemantic != wantSemantic {
				t.Fatalf("%s: %s\n got error %v\nwant error %v", name, body, gotErr, wantErr)
			}
			if gotSemantic && (gs.JSONPointer != ws.JSONPointer || gs.JSONKind != ws.JSONKind ||
				(gs.GoType == nil) != (ws.GoType == nil) || gs.GoType != nil && gs.GoType.Kind() != ws.GoType.Kind() ||
				errors.Is(gs.Err, jsonv2.ErrUnknownName) != errors.Is(ws.Err, jsonv2.ErrUnknownName) ||
				(gs.Err == nil) != (ws.Err == nil) || gs.Err != nil && gs.Err.Error() != ws.Err.Error()) {
				t.Fatalf("%s: %s\n got error %#v\nwant error %#v", name, body, gs, ws)
			}
			if !gotSemantic && gotErr.Error() != wantErr.Error() {
				t.Fatalf("%s: %s\n got error %v\nwant error %v", name, body, gotErr, wantErr)
			}
			return
		}
		// The same members, as plain strings: marshal both and compare.
		g, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		w, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if string(g) != string(w) {
			t.Fatalf("%s: %s\n got %s\nwant %s", name, body, g, w)
		}
		if gotNil, wantNil := got.Workload.Systems == nil, want.Workload.Systems == nil; gotNil != wantNil {
			t.Fatalf("%s: systems nil %v, want %v", name, gotNil, wantNil)
		}
		if gotNil, wantNil := got.Workload.Authority.Actions == nil, want.Workload.Authority.Actions == nil; gotNil != wantNil {
			t.Fatalf("%s: actions nil %v, want %v", name, gotNil, wantNil)
		}
	}
	// The whole body in one pass (DecodePlainBody): what it takes, it decodes as the
	// default decoding does; what it declines, it leaves alone.
	plainBodies := 0
	checkBody := func(name string, body []byte) {
		t.Helper()
		check(name, body)
		fast := workload.WorkloadRequest{SchemaVersion: "untouched"}
		if !fast.DecodePlainBody(body) {
			if fast.SchemaVersion != "untouched" || fast.Workload.Name != "" {
				t.Fatalf("%s: %s\n a declined body changed the request: %+v", name, body, fast)
			}
			return
		}
		plainBodies++
		var want plainRequest
		if err := jsonv2.Unmarshal(body, &want, opts); err != nil {
			t.Fatalf("%s: %s\n decoded in one pass, but the default decoding fails: %v", name, body, err)
		}
		g, _ := json.Marshal(fast)
		w, _ := json.Marshal(want)
		if string(g) != string(w) || (fast.Workload.Systems == nil) != (want.Workload.Systems == nil) ||
			(fast.Workload.Authority.Actions == nil) != (want.Workload.Authority.Actions == nil) {
			t.Fatalf("%s: %s\n one pass %s\n    want %s", name, body, g, w)
		}
	}
	var bodies [][]byte
	for _, c := range goldenCorpus(t) {
		b, err := json.Marshal(c.req)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, b)
	}
	for i, b := range bodies {
		checkBody("golden "+strconv.Itoa(i), b)
	}
	// Clients' bodies are of the plain form: so is the example (the one make bench posts),
	// and a good part of the corpus's (the rest are there for their nulls, empty values
	// and other edges).
	example, err := os.ReadFile("testdata/release-notes-agent.json")
	if err != nil {
		t.Fatal(err)
	}
	golden := plainBodies
	if checkBody("the example", example); golden < len(bodies)/4 || plainBodies != golden+1 {
		t.Fatalf("%d of %d golden bodies decoded in one pass; the example: %v", golden, len(bodies), plainBodies > golden)
	}
	// The request's own members: another member, a repeat, text after the body, around it.
	for _, b := range bodies {
		for _, body := range []string{`{"workspace_id":"x",` + string(b[1:]), `{"schema_version":"a",` + string(b[1:]),
			`{"extra":1,` + string(b[1:]), string(b) + " x", string(b) + "}", " \n" + string(b) + "\t ", string(b[:len(b)-1]),
			strings.Replace(string(b), `"workload":`, `"Workload":`, 1), strings.Replace(string(b), `"schema_version":`, `"schema_versio\u006e":`, 1),
			strings.Replace(string(b), `"name":"`, "\"name\":\"\xff", 1), strings.Replace(string(b), `"name":"`, "\"name\":\"\u00e9", 1),
			strings.Replace(string(b), `"name":"`, `"name":"é`, 1), `{}`, `{"workload":null}`, `[]`} {
			checkBody("request members", []byte(body))
		}
	}
	// The members an enumeration decodes, and what each may be replaced with.
	members := []string{`"time_horizon":`, `"coordination":`, `"category":`, `"access":`, `"side_effect":`, `"data_class":`,
		`"approval_policy":`, `"budget_control":`, `"evidence":`, `"acceptance":`, `"consequence":`, `"retention":`, `"actions":[`,
		`"name":`, `"outcome":`, `"agent_count":`, `"systems":`, `"authority":`, `"accountability":`, `"workload":`, `"actions":`}
	values := []string{`"research"`, `"re\u0073earch"`, `"draft\n"`, `"\u0064raft"`, `"unknown"`, `""`, `"READ"`, `"read "`,
		`"é"`, `"\ud83d\ude00"`, `"\ud800"`, "\"\xff\"", `"\x"`, `"a`, `null`, `0`, `1.5`, `true`, `false`, `{}`, `[]`, `["read"]`,
		`{"a":1}`, `"recurring"`, `"write"`, `"admin"`, `"regulated"`, `"handoff"`, `"fixed_limit"`, `"human"`, `"artifact"`,
		`"long_term"`, `"messaging"`, `"<&>"`, `"\u2028"`, `-`, ``, "\"\x7f\"", "\"a\tb\"",
		// integers and what only looks like one
		`1`, `100`, `007`, `-1`, `-0`, `1.0`, `1e1`, `1E2`, `2.5e0`, `123456789012345678`, `1234567890123456789`,
		`9223372036854775807`, `9223372036854775808`, `99999999999999999999`, `0x1`, `+1`, `1 `, ` 2`,
		// objects and arrays of the schema's members, and others
		`[{}]`, `[{"category":"crm"}]`, `[{"category":"crm","category":"crm"}]`, `[{"Category":"crm"}]`, `[{"category":"crm",}]`,
		`[{"category":"crm","x":1}]`, `[null]`, `[{"access":"read"},{"access":"write"}]`, `["research","research"]`, `[1]`,
		`{"actions":[]}`, `{"actions":null}`, `{"actions":["draft"],"actions":["draft"]}`, `{"evidence":"none","retention":"none"}`,
		`{"approval_policy":"per_action","extra":true}`, `{"ev\u0069dence":"none"}`, `{"name":"x"}`, `{ }`, `[ ]`, "{\n}"}
	// Whitespace, repeats and unknown members at a member's start.
	insertions := []string{" ", "\n\t ", `"name":"again",`, `"extra":1,`, `"Name":"x",`, `"agent_count":3,`, `"n\u0061me":"x",`}
	r := rand.New(rand.NewPCG(2027, 3))
	for range 8000 {
		body := string(bodies[r.IntN(len(bodies))])
		for range 1 + r.IntN(3) {
			m := members[r.IntN(len(members))]
			at := strings.Index(body, m)
			if at < 0 {
				continue
			}
			// Skip past this many occurrences, then replace the value that follows.
			for k := r.IntN(3); k > 0; k-- {
				if next := strings.Index(body[at+len(m):], m); next >= 0 {
					at += len(m) + next
				}
			}
			start := at + len(m)
			end := start
			if end < len(body) && body[end] == '"' {
				end++
				for end < len(body) && body[end] != '"' {
					end++
				}
				end++
			} else {
				for end < len(body) && !strings.ContainsRune(",]}", rune(body[end])) {
					end++
				}
			}
			body = body[:start] + values[r.IntN(len(values))] + body[min(end, len(body)):]
		}
		if r.IntN(3) == 0 { // and something inserted before a member
			m := members[r.IntN(len(members))]
			if at := strings.Index(body, m); at >= 0 {
				body = body[:at] + insertions[r.IntN(len(insertions))] + body[at:]
			}
		}
		checkBody("changed", []byte(body))
		// And broken anywhere: a byte changed, or the text cut short.
		b := []byte(body)
		switch r.IntN(3) {
		case 0:
			const breaks = "\"\\{}[],:0an \xff"
			b[r.IntN(len(b))] = breaks[r.IntN(len(breaks))]
		case 1:
			b = b[:r.IntN(len(b))]
		}
		checkBody("broken", b)
	}
}
