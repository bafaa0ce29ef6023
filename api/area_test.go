package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"log/slog"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// Fiber serves a request with the first route that matches it, in the order of the
// operation table (the areas' ranks, then each area's own order): an operation whose path
// an earlier operation's route also matches is never served. A new area whose rank puts
// a parameter route before another area's static one (or after it, the other way round)
// fails here, naming both.
func TestNoRouteIsTakenByAnEarlierOne(t *testing.T) {
	srv, err := NewServer(Config{SiteURL: "http://routes.test"}, Deps{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for i := range srv.ops {
		o := &srv.ops[i]
		for j := range srv.ops[:i] {
			if earlier := &srv.ops[j]; earlier.Method == o.Method && takes(earlier, o) {
				t.Errorf("%s %s (%s) is never served: the earlier %s %s (%s) takes its requests; give %s's area a rank "+
					"below %s's (servesOperations), or, in one area, list it first", o.Method, o.Path, o.ID,
					earlier.Method, earlier.Path, earlier.ID, o.ID, earlier.ID)
			}
		}
	}
}

// takes reports whether a route of earlier matches a request o serves (on any of their
// roots): a parameter's value is one no static segment has; the tail of a PathTail
// operation is tried with one segment and with two.
func takes(earlier, o *operation) bool {
	probes := []string{pathParam.ReplaceAllString(o.Path, "probe·$1")}
	if o.PathTail {
		probes = append(probes, probes[0]+"/probe·tail")
	}
	for _, root := range o.roots() {
		for _, probe := range probes {
			path := strings.TrimSuffix(root, "/") + probe
			for _, r := range earlier.roots() {
				if routeMatches(strings.TrimSuffix(r, "/")+earlier.route(), path) {
					return true
				}
			}
		}
	}
	return false
}

// routeMatches reports whether the Fiber route (":name" a parameter segment, a last "+"
// the rest of the path) matches path, segment by segment and regardless of case, as
// Fiber's default router does.
func routeMatches(route, path string) bool {
	rs, ps := strings.Split(strings.Trim(route, "/"), "/"), strings.Split(strings.Trim(path, "/"), "/")
	if n := len(rs); n > 0 && rs[n-1] == "+" && len(ps) >= n {
		ps = append(ps[:n-1], strings.Join(ps[n-1:], "/"))
	}
	if len(rs) != len(ps) {
		return false
	}
	for k, seg := range rs {
		if strings.HasPrefix(seg, ":") || seg == "+" {
			if ps[k] == "" {
				return false
			}
			continue
		}
		if !strings.EqualFold(seg, ps[k]) {
			return false
		}
	}
	return true
}

// Every block of operations a file of the package declares (a method of *Server answering
// []operation) is registered by servesOperations: one left out would not be served, and
// would show only as its own tests' 404s.
func TestEveryOperationBlockIsServed(t *testing.T) {
	registered := map[string]bool{}
	for _, b := range operationBlocks {
		name := runtime.FuncForPC(reflect.ValueOf(b.operations).Pointer()).Name()
		registered[name[strings.LastIndex(name, ".")+1:]] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Type.Params.NumFields() != 0 || fn.Type.Results.NumFields() != 1 {
				continue
			}
			recv, result := types.ExprString(fn.Recv.List[0].Type), types.ExprString(fn.Type.Results.List[0].Type)
			// operations is the table the blocks make.
			if recv == "*Server" && result == "[]operation" && fn.Name.Name != "operations" && !registered[fn.Name.Name] {
				t.Errorf("%s: (*Server).%s makes a block of operations that is not served: register it with "+
					"servesOperations(rank, (*Server).%s) in an init of its file", fset.Position(fn.Pos()), fn.Name.Name, fn.Name.Name)
			}
		}
	}
}
