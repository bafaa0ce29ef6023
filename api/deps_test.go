package api

import (
	"reflect"
	"testing"
)

// Every collaborator in Deps is either bound by NewDeps, which the service (cmd) and the
// API tests both build their Deps with, or set per process: a field added to Deps and
// bound in neither, or in one of them only, fails here rather than as a nil interface
// in one of the two.
func TestNewDepsBindsEveryStore(t *testing.T) {
	// What a process sets on NewDeps' result itself, and why.
	perProcess := map[string]string{
		"Feed":           "each process runs its own ledger feed",
		"OAuth":          "the authorization server exists only with a token secret",
		"Metrics":        "Prometheus in the service; none in tests",
		"MetricsHandler": "served only when the service is configured to",
	}
	// Embedding the interfaces makes values that satisfy them and are never called.
	deps := NewDeps(struct{ Stores }{}, struct{ WorkflowClient }{})
	v, typ := reflect.ValueOf(deps), reflect.TypeFor[Deps]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		_, later := perProcess[name]
		switch set := !v.Field(i).IsZero(); {
		case later && set:
			t.Errorf("NewDeps sets Deps.%s, which perProcess says each process sets: drop one of the two", name)
		case !later && !set:
			t.Errorf("NewDeps leaves Deps.%s unset: add its interface to Stores (or WorkflowClient) and bind it in NewDeps, "+
				"or, if each process sets it, list it in perProcess with why", name)
		}
	}
	for name := range perProcess {
		if _, ok := typ.FieldByName(name); !ok {
			t.Errorf("perProcess names Deps.%s, which does not exist", name)
		}
	}
}
