package accountable_test

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The import rules of DESIGN §2 ("Layout and who may import whom"), checked on every Go
// file of the module, so that they are enforced and not hoped. Files are read with
// go/parser (imports only) rather than `go list`, so that files behind build tags
// (clientgone_other.go) obey the rules too and no toolchain runs in the test.

// goFile is one Go file of the module and what it imports.
type goFile struct {
	rel     string // slash path from the module root: "api/work.go"
	dir     string // its package directory: "api"; "" for the root package
	test    bool   // a _test.go file
	imports []string
}

// importRule is one sentence of DESIGN §2 as a check on one import of one file.
type importRule struct {
	name string // the rule, as DESIGN puts it: printed with every breach
	// applies says whether the rule speaks about the file.
	applies func(f goFile) bool
	// forbids says whether the file may not import imp.
	forbids func(f goFile, imp string) bool
	// detail, if set, says what the file's package may import instead.
	detail func(f goFile, imp string) string
}

// allowedBreaches are the imports that break a rule today, each with why it stays. The
// test fails on an entry that no longer breaks its rule, so the list only shrinks.
var allowedBreaches = map[string]string{
	"time.go imports database/sql/driver": "accountable.Time implements driver.Valuer (the standard library's " +
		"interface, no SQL runs here) so that store hands instants to pgx as they are; moving the encoding into " +
		"store needs a pgx type registration, which belongs with issue 26's step on store",
}

// Layers are the packages DESIGN §2 names with an import direction; the other packages
// of the module (passwords, oauth, and the engines issue 26 moves out of the root) are
// engines, which any package but the root and workflows may import and which import no layer.
var layerImports = map[string][]string{
	"api":        {"workflows"},
	"store":      {},
	"workflows":  {"activities"},
	"activities": {},
	"planner":    {},
	"worker":     {"workflows", "activities"},
	// cmd -> anything: it is where interfaces are bound.
}

var importRules = []importRule{
	{
		name:    "the root package imports only the standard library (root -> stdlib)",
		applies: func(f goFile) bool { return f.dir == "" && !f.test },
		forbids: func(_ goFile, imp string) bool { return !isStandard(imp) },
	},
	{
		// Canonical JSON is what every digest of the ledger rests on: it stays a leaf, so
		// that nothing it imports can change a hash.
		name:    "canonical is a leaf (canonical -> stdlib)",
		applies: func(f goFile) bool { return f.dir == "canonical" && !f.test },
		forbids: func(_ goFile, imp string) bool { return !isStandard(imp) },
	},
	{
		// A payload's JSON is what clients read and what verification digests: payload
		// imports only the domain types payloads carry, so that nothing else can change it.
		name:    "payload is a leaf of the root (payload -> root, stdlib)",
		applies: func(f goFile) bool { return f.dir == "payload" && !f.test },
		forbids: func(_ goFile, imp string) bool { return !isStandard(imp) && imp != modulePath },
	},
	{
		// A picture is drawn from the domain's types alone, with the layout library (and
		// the drawn maps are kept by a byte-bounded cache, asked for at once drawn once):
		// what a request may read is the handler's to decide, not the drawing's.
		name:    "pictures draws the domain types (pictures -> root, stdlib, go-graphviz, singleflight, sizedlru)",
		applies: func(f goFile) bool { return f.dir == "pictures" && !f.test },
		forbids: func(_ goFile, imp string) bool {
			return !isStandard(imp) && !slices.Contains([]string{modulePath, "github.com/goccy/go-graphviz",
				"golang.org/x/sync/singleflight", modulePath + "/sizedlru"}, imp)
		},
	},
	{
		// Tests may read rows themselves (DESIGN §5: api and end-to-end tests run against
		// real PostgreSQL), and cmd may import anything.
		name: "SQL only in store (store -> root, pgx; cmd -> anything)",
		applies: func(f goFile) bool {
			return !f.test && layerOf(f.dir) != "store" && layerOf(f.dir) != "cmd"
		},
		forbids: func(_ goFile, imp string) bool {
			return imp == "database/sql" || strings.HasPrefix(imp, "database/sql/") ||
				under(imp, "github.com/jackc/pgx") || under(imp, "github.com/jackc/pgconn") ||
				under(imp, "github.com/jackc/tern") || under(imp, "github.com/lib/pq")
		},
	},
	{
		// Test files too: DESIGN makes no exception, and constructors are plain functions
		// tests call directly.
		name: "fx appears only in fx.go files and cmd",
		applies: func(f goFile) bool {
			return layerOf(f.dir) != "cmd" && path.Base(f.rel) != "fx.go"
		},
		forbids: func(_ goFile, imp string) bool { return under(imp, "go.uber.org/fx") },
	},
	{
		name: "each layer imports only the layers DESIGN gives it (api never imports store or activities; " +
			"engines import no layer)",
		applies: func(f goFile) bool { return !f.test && f.dir != "" && layerOf(f.dir) != "cmd" },
		forbids: func(f goFile, imp string) bool {
			dir, ok := strings.CutPrefix(imp, modulePath+"/")
			if !ok {
				return false
			}
			from, to := layerOf(f.dir), layerOf(dir)
			if to == "" || from == to {
				return false // an engine, or the file's own layer
			}
			allowed, isLayer := layerImports[from]
			if !isLayer {
				return true // an engine importing a layer
			}
			return !slices.Contains(allowed, to)
		},
		detail: func(f goFile, imp string) string {
			from := layerOf(f.dir)
			allowed, isLayer := layerImports[from]
			if !isLayer {
				return "an engine (" + f.dir + ") imports the root and libraries, no layer"
			}
			return from + " may import " + strings.Join(append([]string{"the root"}, allowed...), ", ") +
				" and engines; " + strings.TrimPrefix(imp, modulePath+"/") + " is bound to it in cmd"
		},
	},
	{
		// Workflow code is replayed: it must not reach the network, files, databases or
		// randomness, which go through activities. Beyond the standard library it imports
		// what DESIGN lists; add to that list only a package that does no I/O.
		name: "workflows import no I/O packages (workflows -> root, activities (method refs only), " +
			"Temporal workflow SDK and its enums; deterministic, no I/O)",
		applies: func(f goFile) bool { return !f.test && layerOf(f.dir) == "workflows" },
		forbids: func(_ goFile, imp string) bool {
			if isStandard(imp) {
				return slices.ContainsFunc(ioPackages, func(p string) bool { return under(imp, p) }) &&
					!slices.Contains(pureUnderIO, imp)
			}
			// go.temporal.io/api/enums/v1 is generated constants (a start's id policies).
			return !slices.Contains([]string{modulePath, modulePath + "/activities",
				"go.temporal.io/sdk/workflow", "go.temporal.io/sdk/temporal", "go.temporal.io/api/enums/v1"}, imp)
		},
	},
}

// ioPackages are the standard library's packages (and their subpackages) that reach
// the network, files, processes, databases, the console or the OS's randomness.
var ioPackages = []string{"net", "os", "io/ioutil", "path/filepath", "syscall", "database",
	"log", "crypto/rand", "runtime/pprof", "plugin"}

// pureUnderIO are packages under ioPackages that only parse and format values.
var pureUnderIO = []string{"net/netip", "net/url", "net/mail"}

func TestImportRules(t *testing.T) {
	found, allowed := breaches(moduleFiles(t))
	for _, b := range found {
		t.Error(b)
	}
	for key := range allowedBreaches {
		if !allowed[key] {
			t.Errorf("allowedBreaches has %q, which no longer breaks a rule: remove it", key)
		}
	}
}

// breaches are the imports of files that break a rule, and the allowed breaches met.
func breaches(files []goFile) (found []string, allowed map[string]bool) {
	allowed = map[string]bool{}
	for _, f := range files {
		for _, r := range importRules {
			if !r.applies(f) {
				continue
			}
			for _, imp := range f.imports {
				if !r.forbids(f, imp) {
					continue
				}
				key := f.rel + " imports " + imp
				if _, ok := allowedBreaches[key]; ok {
					allowed[key] = true
					continue
				}
				b := key + ": breaks DESIGN §2: " + r.name
				if r.detail != nil {
					b += ": " + r.detail(f, imp)
				}
				found = append(found, b)
			}
		}
	}
	return found, allowed
}

// DESIGN §2: "No cycles, no "utils"/"common" package." (The compiler refuses cycles.)
func TestNoCatchAllPackage(t *testing.T) {
	for _, f := range moduleFiles(t) {
		if name := path.Base(f.dir); slices.Contains([]string{"util", "utils", "common", "helpers"}, name) {
			t.Errorf("%s: package %q is a catch-all (DESIGN §2: no utils/common package); name it for what it is", f.rel, name)
		}
	}
}

// A check that cannot fail is a defect: each rule catches the drift it is there for.
func TestImportRulesCatchDrift(t *testing.T) {
	for _, d := range []struct {
		file goFile
		rule string // the start of the rule that must catch it
	}{
		{goFile{rel: "work.go", imports: []string{"github.com/google/uuid"}}, "the root package imports only"},
		{goFile{rel: "canonical/canonical.go", dir: "canonical", imports: []string{modulePath}}, "canonical is a leaf"},
		{goFile{rel: "payload/work.go", dir: "payload", imports: []string{modulePath + "/canonical"}}, "payload is a leaf"},
		{goFile{rel: "api/work.go", dir: "api", imports: []string{"github.com/jackc/pgx/v5"}}, "SQL only in store"},
		{goFile{rel: "planner/model.go", dir: "planner", imports: []string{"database/sql"}}, "SQL only in store"},
		{goFile{rel: "store/db_test.go", dir: "store", test: true, imports: []string{"go.uber.org/fx"}}, "fx appears only"},
		{goFile{rel: "api/work.go", dir: "api", imports: []string{modulePath + "/store"}}, "each layer imports only"},
		{goFile{rel: "api/work.go", dir: "api", imports: []string{modulePath + "/activities"}}, "each layer imports only"},
		{goFile{rel: "oauth/grants.go", dir: "oauth", imports: []string{modulePath + "/store"}}, "each layer imports only"},
		{goFile{rel: "workflows/launches.go", dir: "workflows", imports: []string{"net/http"}}, "workflows import no I/O"},
		{goFile{rel: "workflows/launches.go", dir: "workflows", imports: []string{"go.temporal.io/sdk/client"}}, "workflows import no I/O"},
	} {
		found, _ := breaches([]goFile{d.file})
		if !slices.ContainsFunc(found, func(b string) bool { return strings.Contains(b, "DESIGN §2: "+d.rule) }) {
			t.Errorf("%s importing %s: want a breach of %q, got %q", d.file.rel, d.file.imports[0], d.rule, found)
		}
	}
}

const modulePath = "github.com/accountablework/accountable"

// layerOf is the DESIGN layer of a package directory ("cmd" for everything under cmd/),
// or "" for the root and for engines.
func layerOf(dir string) string {
	top, _, _ := strings.Cut(dir, "/")
	if _, ok := layerImports[top]; ok || top == "cmd" {
		return top
	}
	return ""
}

// under says whether imp is p or one of its subpackages.
func under(imp, p string) bool { return imp == p || strings.HasPrefix(imp, p+"/") }

// isStandard says whether imp is in the standard library: the go command reserves
// import paths whose first element has no dot for it.
func isStandard(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return !strings.Contains(first, ".")
}

// moduleFiles reads the imports of every Go file of the module, skipping what the go
// command skips (testdata, directories starting with . or _) and nested modules.
func moduleFiles(t *testing.T) []goFile {
	t.Helper()
	checkModulePath(t)
	var files []goFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != "." && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); p != "." && err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		af, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		f := goFile{rel: filepath.ToSlash(p), test: strings.HasSuffix(p, "_test.go")}
		if dir := path.Dir(f.rel); dir != "." {
			f.dir = dir
		}
		for _, spec := range af.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			f.imports = append(f.imports, imp)
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("read %d Go files: the walk did not start at the module root", len(files))
	}
	return files
}

// checkModulePath keeps modulePath in agreement with go.mod.
func checkModulePath(t *testing.T) {
	t.Helper()
	f, err := os.Open("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(sc.Text(), "module "); ok {
			if strings.TrimSpace(m) != modulePath {
				t.Fatalf("go.mod names module %s, the import rules %s", m, modulePath)
			}
			return
		}
	}
	t.Fatal("go.mod has no module line")
}
