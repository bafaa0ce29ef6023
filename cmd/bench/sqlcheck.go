package main

import (
	"fmt"
	"github.com/accountablework/accountable/store"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The pgbench scripts must keep sending what the service sends. sameStatements reads the
// SQL of the command path from the store's source (store/command.go, store/work.go) and
// compares it with the scripts, statement by statement, once values are set aside
// (the service's $n and pgbench's :variables, the ids computed from k, NULL literals all
// become ?). The test runs it, and `make bench` reports a difference in its notes. The
// completion's one statement (store.CompleteWorkSQL) is the store's value itself, which
// the complete script sends with pgbench's values in place of its parameters.

// storeStatement names a statement of the store's source: the function (or constant) it
// is in and, when the function has several, the start of its text.
type storeStatement struct {
	fn     string
	prefix string
}

var (
	createStatements = []storeStatement{
		{"queueGate", "SELECT idempotency_gate"},
		{"insertEventSQL", ""}, {"appendTask", "INSERT INTO tasks"}, {"queueHead", "INSERT INTO ledger_heads"},
		{"queueCommit", "INSERT INTO idempotency_records"},
	}
	completeStatements = []storeStatement{{"queueGate", "SELECT idempotency_gate"}, {"queueCompletion", "WITH head"}}
)

// sameStatements reports how the scripts differ from the store's statements ("" when they
// do not), reading the store's source under root.
func sameStatements(root string) (string, error) {
	sqls, err := storeSQL(filepath.Join(root, "store"), "command.go", "work.go")
	if err != nil {
		return "", err
	}
	var diffs []string
	for _, c := range []struct {
		name   string
		script string
		want   []storeStatement
	}{{"create", createScript(), createStatements}, {"complete", completeScript(), completeStatements}} {
		var want []string
		for _, st := range c.want {
			found := ""
			for _, s := range sqls[st.fn] {
				if strings.HasPrefix(s, st.prefix) {
					found = s
					break
				}
			}
			if found == "" {
				diffs = append(diffs, fmt.Sprintf("the store no longer has a statement %q in %s", st.prefix, st.fn))
				continue
			}
			want = append(want, normalizeSQL(found))
		}
		var got []string
		for _, s := range scriptStatements(c.script) {
			if s != "BEGIN" && s != "COMMIT" {
				got = append(got, normalizeSQL(s))
			}
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				diffs = append(diffs, fmt.Sprintf("the %s script lacks the store's\n    %s", c.name, w))
			}
		}
		for _, g := range got {
			if !slices.Contains(want, g) {
				diffs = append(diffs, fmt.Sprintf("the %s script sends what the store does not:\n    %s", c.name, g))
			}
		}
	}
	return strings.Join(diffs, "\n"), nil
}

// scriptStatements splits a pgbench script into its SQL statements.
func scriptStatements(script string) []string {
	var out []string
	var cur strings.Builder
	for _, l := range strings.Split(script, "\n") {
		if strings.HasPrefix(l, `\`) {
			continue
		}
		cur.WriteString(l)
		cur.WriteString(" ")
		if strings.HasSuffix(strings.TrimSpace(l), ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	return out
}

var (
	reIDExpr  = regexp.MustCompile(`\('[0-9a-f-]+' \|\| lpad\(to_hex\(:k::bigint\), 12, '0'\)\)(::uuid)?`)
	reKeyExpr = regexp.MustCompile(`\(?'pgbench-\w+-' \|\| :k\)?`)
	reVar     = regexp.MustCompile(`(^|[^:]):[a-z_][a-z0-9_]*`)
	reParam   = regexp.MustCompile(`\$\d+`)
	reSpace   = regexp.MustCompile(`\s+`)
	reNull    = regexp.MustCompile(`\bNULL\b`)
)

// normalizeSQL sets values aside: parameters, pgbench variables, per-transaction ids and
// NULL literals become ?, and white space is one space.
func normalizeSQL(s string) string {
	s = reSpace.ReplaceAllString(strings.TrimSpace(s), " ")
	s = reIDExpr.ReplaceAllString(s, "?")
	s = reKeyExpr.ReplaceAllString(s, "?")
	s = reVar.ReplaceAllString(s, "$1?")
	s = reParam.ReplaceAllString(s, "?")
	s = reNull.ReplaceAllString(s, "?")
	// A value cast to uuid is a value (the id expressions take their cast with them).
	return strings.ReplaceAll(s, "?::uuid", "?")
}

// storeSQL returns the SQL strings of the named files of dir by the function (or
// constant) they are in: string expressions (literals, constants and their
// concatenations) that start with SELECT, INSERT, UPDATE or DELETE.
func storeSQL(dir string, files ...string) (map[string][]string, error) {
	fset := token.NewFileSet()
	pkgFiles, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	consts := map[string]ast.Expr{}
	var parsed []*ast.File
	for _, f := range pkgFiles {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range af.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.CONST {
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							consts[n.Name] = vs.Values[i]
						}
					}
				}
			}
		}
		if slices.Contains(files, filepath.Base(f)) {
			parsed = append(parsed, af)
		}
	}
	storeValues := map[string]string{"CompletableStatusesSQL": store.CompletableStatusesSQL, "CompleteWorkSQL": store.CompleteWorkSQL}
	var eval func(e ast.Expr) (string, bool)
	eval = func(e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind != token.STRING {
				return "", false
			}
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		case *ast.Ident:
			if c, ok := consts[e.Name]; ok {
				return eval(c)
			}
			// A list the store makes from a domain rule when it starts.
			if v, ok := storeValues[e.Name]; ok {
				return v, true
			}
		case *ast.BinaryExpr:
			if e.Op == token.ADD {
				l, ok1 := eval(e.X)
				r, ok2 := eval(e.Y)
				return l + r, ok1 && ok2
			}
		case *ast.ParenExpr:
			return eval(e.X)
		case *ast.CallExpr:
			// A prelude statement's gate (store/command.go): its condition, with both of its
			// parameters ("$0"; parameters are set aside when compared).
			if sel, ok := e.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Gate" {
				if tmpl, ok := eval(consts["preludeGateSQL"]); ok {
					return strings.NewReplacer("%[1]s", "$0", "%[2]s", "$0").Replace(tmpl), true
				}
			}
		}
		return "", false
	}
	isSQL := func(s string) bool {
		s = strings.TrimSpace(s)
		for _, p := range []string{"SELECT ", "INSERT ", "UPDATE ", "DELETE ", "WITH "} {
			if strings.HasPrefix(s, p) {
				return true
			}
		}
		return false
	}
	out := map[string][]string{}
	for _, af := range parsed {
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				ast.Inspect(d, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					for _, a := range call.Args {
						if s, ok := eval(a); ok && isSQL(s) {
							out[d.Name.Name] = append(out[d.Name.Name], strings.TrimSpace(s))
						}
					}
					return true
				})
			case *ast.GenDecl:
				if d.Tok != token.CONST {
					continue
				}
				for _, spec := range d.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							if s, ok := eval(vs.Values[i]); ok && isSQL(s) {
								out[n.Name] = append(out[n.Name], strings.TrimSpace(s))
							}
						}
					}
				}
			}
		}
	}
	return out, nil
}
