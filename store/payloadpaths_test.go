package store

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/accountablework/accountable/payload"
	"github.com/accountablework/accountable/receipt"
)

// payloadPath matches a path into an event's payload in SQL: payload->'a'->>'b'.
var payloadPath = regexp.MustCompile(`payload((?:\s*->>?\s*'[A-Za-z_]+')+)`)

// payloadMember matches one member name of such a path.
var payloadMember = regexp.MustCompile(`'([A-Za-z_]+)'`)

// TestSQLReadsOnlyPayloadMembersThatExist holds the projections' SQL (and every other
// query of store that reads into ledger payloads by member name) to the payload types:
// each path it reads must be a path of members of some event's payload type (package
// payload, and receipt.ReceiptImported), so that renaming a payload member, which changes
// what new events carry, cannot leave a projection summing a member no new event has.
func TestSQLReadsOnlyPayloadMembersThatExist(t *testing.T) {
	known := map[string]bool{}
	open := map[string]bool{} // paths whose value is free-form JSON: any member below them may exist
	types := []reflect.Type{reflect.TypeFor[receipt.ReceiptImported]()}
	for _, typ := range payload.Types {
		types = append(types, typ)
	}
	for _, typ := range types {
		collectPayloadPaths(typ, "", known, open, 0)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range payloadPath.FindAllStringSubmatch(string(src), -1) {
			seen++
			var names []string
			for _, part := range payloadMember.FindAllStringSubmatch(m[1], -1) {
				names = append(names, part[1])
			}
			if !pathExists(names, known, open) {
				t.Errorf("%s reads %s, a path no payload type has (package payload, receipt.ReceiptImported): "+
					"a member renamed or removed there, or a typo here", f, m[0])
			}
		}
	}
	if seen < 10 {
		t.Fatalf("found %d payload paths in store's SQL; the pattern no longer matches how the queries read payloads", seen)
	}
}

// pathExists reports whether names is a path of known members, or runs into free-form
// JSON on the way.
func pathExists(names []string, known, open map[string]bool) bool {
	for i := range names {
		p := strings.Join(names[:i+1], "/")
		if open[p] {
			return true
		}
		if !known[p] {
			return false
		}
	}
	return true
}

// collectPayloadPaths adds the JSON member paths of t below prefix, by encoding/json's
// naming (tag name, Go name when untagged, "-" left out, untagged embedded structs
// flattened). Members whose type is not a struct (maps, interfaces, raw JSON) are open.
func collectPayloadPaths(t reflect.Type, prefix string, known, open map[string]bool, depth int) {
	for (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t.Elem().Kind() != reflect.Uint8 {
		t = t.Elem()
	}
	switch {
	case depth > 6:
		return
	case t.Kind() == reflect.Map || t.Kind() == reflect.Interface || t.Kind() == reflect.Slice:
		if prefix != "" {
			open[prefix] = true
		}
		return
	case t.Kind() != reflect.Struct:
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			collectPayloadPaths(f.Type, prefix, known, open, depth+1)
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := name
		if prefix != "" {
			p = prefix + "/" + name
		}
		known[p] = true
		collectPayloadPaths(f.Type, p, known, open, depth+1)
	}
}
