package api_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store"
)

// Every collaborator in Deps is either bound by NewDeps, which the service (cmd) and the
// API tests both build their Deps with, or set per process: a field added to Deps and
// bound in neither, or in one of them only, fails here rather than as a nil interface
// in one of the two. NewDeps binding the service's store (no database needed: binding
// calls nothing) also shows it implements every store interface an area registered.
func TestNewDepsBindsEveryStore(t *testing.T) {
	// What a process sets on NewDeps' result itself, and why.
	perProcess := map[string]string{
		"Feed":           "each process runs its own ledger feed",
		"OAuth":          "the authorization server exists only with a token secret",
		"Metrics":        "Prometheus in the service; none in tests",
		"MetricsHandler": "served only when the service is configured to",
	}
	// Embedding the interface makes a value that satisfies it and is never called.
	deps, err := api.NewDeps((*store.DB)(nil), struct{ api.WorkflowClient }{})
	if err != nil {
		t.Fatalf("NewDeps refuses the service's store: %v", err)
	}
	v, typ := reflect.ValueOf(deps), reflect.TypeFor[api.Deps]()
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

// A store that lacks an area's store interface is refused when the Deps are built (the
// service at start-up, every API test at its first env), naming the interface and the
// method, rather than failing as a nil interface on the area's first request.
func TestNewDepsNamesTheStoreInterfaceMissing(t *testing.T) {
	_, err := api.NewDeps(struct{ api.Stores }{}, struct{ api.WorkflowClient }{})
	if err == nil || !strings.Contains(err.Error(), "api.ArtifactStore (no method ") {
		t.Fatalf("NewDeps of a value with the cross-cutting stores only: %v; want it to name api.ArtifactStore and a method it lacks", err)
	}
}
