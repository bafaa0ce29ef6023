package api_test

import (
	"slices"
	"strings"
	"testing"
)

// clientOperations are the operations the public clients (the Python and TypeScript
// clients of the hosted product this API comes from) call, as (method, path relative to
// the v1 root); {} is a path parameter, whatever the clients or the document name it.
// CONTRACT.md: an existing client works by changing only its base URL, so none of them
// may be missing from the document. (Issue 25 section 6 lists them.)
var clientOperations = func() []string {
	ops := []string{
		"POST /agent-work-receipts", "GET /agent-work-receipts/validate", "POST /agent-work-receipts/validate",
		"GET /artifact-types", "GET /artifacts", "POST /artifacts", "GET /artifacts/by-entity", "GET /artifacts/{}",
		"POST /context-pack",
		"GET /decisions", "POST /decisions",
		"GET /discovery-runs", "POST /discovery-runs", "GET /discovery-runs/{}", "POST /discovery-runs/{}/propose",
		"GET /doctor/workload", "POST /doctor/workload",
		"GET /episodes", "GET /events/stream",
		"GET /handoffs", "POST /handoffs", "GET /handoffs/{}",
		"POST /initiatives", "GET /initiatives/{}", "POST /initiatives/proposals", "GET /initiatives/proposals/{}",
		"POST /lifecycle", "POST /live/dedup/claim", "GET /operating-map",
		"GET /operating-processes", "POST /operating-processes", "GET /operating-processes/{}",
		"POST /studio/checkout", "POST /studio/estimate", "GET /studio/showcase",
		"GET /work", "POST /work", "GET /work/{}", "POST /work/{}/complete",
		"GET /controllers/{}", "POST /controllers/{}/reconcile",
	}
	// The handoff transitions: claim, fulfill, and the clients' return, escalate, cancel.
	for _, a := range []string{"claim", "fulfill", "return", "escalate", "cancel"} {
		ops = append(ops, "POST /handoffs/{}/"+a)
	}
	// The process transitions the clients call.
	for _, a := range []string{"confirm", "activate"} {
		ops = append(ops, "POST /operating-processes/{}/"+a)
	}
	for _, p := range []string{"adoption", "meter-usage", "value-case", "work-ledger"} {
		ops = append(ops, "GET /projections/"+p)
	}
	// The Python client's control_run: pause, resume, cancel, rollback.
	for _, a := range []string{"pause", "resume", "cancel", "rollback"} {
		ops = append(ops, "POST /runs/{}/actions/"+a)
	}
	return ops
}()

// pendingClientOperations are client operations known not to be served yet, each with
// the work that brings it. The test fails once one is in the document, so that its line
// here is removed when it lands.
var pendingClientOperations = map[string]string{}

// clientPathKey is method and path with every path parameter written {}: parameters
// match by position whatever their names, and only parameters match parameters (a
// literal segment such as by-entity is not taken for an id).
func clientPathKey(method, path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			parts[i] = "{}"
		}
	}
	return strings.ToUpper(method) + " " + strings.Join(parts, "/")
}

// The served document (GET /openapi.json) has every operation the public clients call,
// but for those known to be pending.
func TestOpenAPIHasTheClientsOperations(t *testing.T) {
	e := newEnv(t, nil)
	documented := map[string]bool{}
	for _, op := range fetchDocument(t, e).operations(t) {
		documented[clientPathKey(op.Method, op.Path)] = true
	}
	var missing, landed []string
	for _, op := range clientOperations {
		method, path, _ := strings.Cut(op, " ")
		key := clientPathKey(method, path)
		_, pending := pendingClientOperations[op]
		switch {
		case pending && documented[key]:
			landed = append(landed, op)
		case !pending && !documented[key]:
			missing = append(missing, op)
		}
	}
	for op := range pendingClientOperations {
		if !slices.Contains(clientOperations, op) {
			t.Errorf("pendingClientOperations lists %s, which is not a client operation", op)
		}
	}
	for _, op := range landed {
		t.Errorf("%s is served now: remove its line from pendingClientOperations in api/clientpaths_test.go (%s)", op, pendingClientOperations[op])
	}
	if len(missing) > 0 {
		t.Errorf("the document does not have these operations the public clients call: %v", missing)
	}
	for op, why := range pendingClientOperations {
		if !slices.Contains(landed, op) {
			t.Logf("pending: %s (%s)", op, why)
		}
	}
}
