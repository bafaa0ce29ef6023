package payload_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/payload"
)

// withoutPayloadType are the event types Types leaves out, each with why.
var withoutPayloadType = map[string]string{
	accountable.EventReceiptImported: "its payload, receipt.ReceiptImported, is made of the receipt format's own types " +
		"(signatures, cost components, usage, steps) and lives with them in package receipt, which payload may not import",
}

// prefixConstants are the root's Event constants that are the start of a family of event
// types rather than one, with the family's event types.
var prefixConstants = map[string]func() []string{
	"EventProcessTransitions": func() []string {
		var events []string
		for _, a := range accountable.ProcessActions {
			events = append(events, a.Event())
		}
		return events
	},
}

// rootEventTypes reads the event type constants of the root package from its source: every
// constant whose name starts with "Event", by name, with its value.
func rootEventTypes(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, "Event") {
						continue
					}
					lit, ok := valueAt(vs, i).(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: %s is not a string literal: read its value here", fset.Position(id.Pos()), id.Name)
					}
					consts[id.Name], _ = strconv.Unquote(lit.Value)
				}
			}
		}
	}
	if len(consts) == 0 {
		t.Fatal("found no Event constants in the root package")
	}
	return consts
}

func valueAt(vs *ast.ValueSpec, i int) ast.Expr {
	if i < len(vs.Values) {
		return vs.Values[i]
	}
	return nil
}

// uncovered says which event types of consts (name -> value) have neither a payload type
// in types nor a line in without, and which entries of types and without name no event type.
func uncovered(consts map[string]string, types map[string]reflect.Type, without map[string]string) []string {
	var problems []string
	events := map[string]bool{}
	for name, value := range consts {
		family := []string{value}
		if expand, ok := prefixConstants[name]; ok {
			family = expand()
		} else if strings.HasSuffix(value, ".") {
			problems = append(problems, name+" ("+value+") looks like the prefix of a family of event types: "+
				"list its family in prefixConstants")
			continue
		}
		for _, ev := range family {
			events[ev] = true
			_, typed := types[ev]
			_, excused := without[ev]
			switch {
			case typed && excused:
				problems = append(problems, ev+" has a payload type and a line in withoutPayloadType: remove the line")
			case !typed && !excused:
				problems = append(problems, ev+" (accountable."+name+") has no payload type: declare it in its area's file of "+
					"package payload and register it in that file's init: describes[<its type>](<the event type>)")
			}
		}
	}
	for ev := range types {
		if !events[ev] {
			problems = append(problems, "payload.Types has "+ev+", which is no event type of the root package")
		}
	}
	for ev := range without {
		if !events[ev] {
			problems = append(problems, "withoutPayloadType has "+ev+", which is no event type of the root package")
		}
	}
	slices.Sort(problems)
	return problems
}

// Every event type the root declares has its payload type here, so that a new event's
// payload is written down in the one place clients and verification rely on.
func TestEveryEventTypeHasAPayload(t *testing.T) {
	for _, p := range uncovered(rootEventTypes(t), payload.Types, withoutPayloadType) {
		t.Error(p)
	}
}

// A check that cannot fail is a defect: it catches each kind of drift.
func TestEveryEventTypeHasAPayloadCatchesDrift(t *testing.T) {
	consts := rootEventTypes(t)
	for _, d := range []struct {
		name    string
		consts  map[string]string
		types   map[string]reflect.Type
		without map[string]string
		want    string
	}{
		{"a new event type", with(consts, "EventThingHappened", "thing.happened"), payload.Types, withoutPayloadType,
			"thing.happened (accountable.EventThingHappened) has no payload type"},
		{"a new family", with(consts, "EventThingTransitions", "thing."), payload.Types, withoutPayloadType,
			"EventThingTransitions (thing.) looks like the prefix"},
		{"a removed event type", consts, withType(payload.Types, "thing.gone"), withoutPayloadType,
			"payload.Types has thing.gone, which is no event type"},
		{"an excuse kept", consts, withType(payload.Types, accountable.EventReceiptImported), withoutPayloadType,
			"receipt.imported has a payload type and a line in withoutPayloadType"},
	} {
		if got := uncovered(d.consts, d.types, d.without); !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, d.want) }) {
			t.Errorf("%s: got %q, want a problem starting %q", d.name, got, d.want)
		}
	}
}

func with(m map[string]string, k, v string) map[string]string {
	c := maps.Clone(m)
	c[k] = v
	return c
}

func withType(m map[string]reflect.Type, ev string) map[string]reflect.Type {
	c := maps.Clone(m)
	c[ev] = reflect.TypeFor[struct{}]()
	return c
}

// Every payload is a JSON object: a struct, whose fields all have a JSON name.
func TestPayloadsAreObjectsWithNamedFields(t *testing.T) {
	for ev, typ := range payload.Types {
		if typ.Kind() != reflect.Struct {
			t.Errorf("%s: payload %s is a %s, not a struct", ev, typ, typ.Kind())
			continue
		}
		for f := range typ.Fields() {
			if tag := f.Tag.Get("json"); tag == "" && !f.Anonymous {
				t.Errorf("%s: %s.%s has no json tag", ev, typ, f.Name)
			}
		}
	}
}
