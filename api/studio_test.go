package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store/storetest"
)

// POST /studio/checkout, which the public clients call to buy an estimate ({estimateId}):
// a self-hosted service sells nothing, so an authenticated request is answered 501
// not_offered from the catalogue (not 404 route_not_found), with an estimate or without,
// on both mounts, and nothing is written; without a key it is 401 like its neighbours.
// The document declares the refusal and no success; the access log does not count it as
// a server fault.
func TestStudioCheckoutIsNotOffered(t *testing.T) {
	e := newEnv(t, nil)
	ten := storetest.NewTenant(t, e.db)
	conn := storetest.Conn(t)
	tables := workspaceTables(t, conn)
	est := e.do(request{method: "POST", path: "/studio/estimate", key: ten.Key, body: map[string]any{"format": "blog_post"}})
	expect(t, est, http.StatusOK, "")
	before := workspaceState(t, conn, tables, ten.Principal.WorkspaceID)

	for _, root := range []string{api.V1Root, api.ClientRoot} {
		for _, body := range []any{map[string]any{"estimateId": est.data()["estimate_id"]}, map[string]any{}, nil} {
			r := e.do(request{method: "POST", path: "/studio/checkout", root: root, key: ten.Key, body: body})
			expect(t, r, http.StatusNotImplemented, accountable.ECodeNotOffered)
			if msg := r.errorObj()["message"].(string); !strings.Contains(msg, "Checkout is not offered here") ||
				!strings.HasSuffix(r.errorObj()["docsUrl"].(string), "/errors#not_offered") {
				t.Fatalf("%s with %v: %s", root, body, r.raw)
			}
		}
	}
	expect(t, e.do(request{method: "POST", path: "/studio/checkout", body: map[string]any{"estimateId": "est_0"}}), http.StatusUnauthorized, "")
	expect(t, e.do(request{method: "POST", path: "/studio/checkout", key: ten.Key, body: map[string]any{"estimateId": 7}}),
		http.StatusBadRequest, accountable.ECodeValidationFailed)
	if d := stateDiff(before, workspaceState(t, conn, tables, ten.Principal.WorkspaceID)); d != "" {
		t.Fatalf("a checkout changed the workspace:\n%s", d)
	}

	// The catalogue serves the code; the document declares it, and no success.
	catalogued := false
	for _, c := range e.do(request{method: "GET", path: "/errors"}).dataList() {
		spec := c.(map[string]any)
		catalogued = catalogued || spec["code"] == accountable.ECodeNotOffered && spec["status"] == 501.0
	}
	responses := fetchDocument(t, e).raw["paths"].(map[string]any)["/studio/checkout"].(map[string]any)["post"].(map[string]any)["responses"].(map[string]any)
	for status := range responses {
		if strings.HasPrefix(status, "2") {
			t.Fatalf("the document gives the checkout a success: %v", responses)
		}
	}
	if !catalogued || !strings.Contains(toJSON(responses["501"]), "not_offered") {
		t.Fatalf("not_offered catalogued %v; the checkout's answers %v", catalogued, responses)
	}

	// The access log: the refusal is the service doing what it says, not a fault.
	e.logsMu.Lock()
	logs := e.logs.String()
	e.logsMu.Unlock()
	seen := 0
	for _, line := range strings.Split(logs, "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) != nil || entry["msg"] != "request" || entry["status"] != 501.0 {
			continue
		}
		seen++
		if entry["level"] != "INFO" {
			t.Fatalf("a checkout logged as %v: %s", entry["level"], line)
		}
	}
	if seen != 6 {
		t.Fatalf("%d access lines of 501, want 6", seen)
	}
}
