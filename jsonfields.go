package accountable

import (
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// The JSON members of the root's structs, for the field rules of validate.go: which
// members there are is encoding/json's rule, and the order (that of the issues a request
// gets) is RFC 8785's, the UTF-16 code units of their names. The canonical package
// (canonical JSON, which the root may not import) enumerates members alike.

type jsonField struct {
	name      string
	index     []int
	omitEmpty bool
	omitZero  bool
}

var jsonFieldCache sync.Map // reflect.Type -> []jsonField

// jsonFieldsOf lists the JSON members of struct type t as encoding/json would encode
// them (json tag names, "-", promoted fields of embedded structs, the shallowest name
// winning), sorted by the UTF-16 code units of their names.
func jsonFieldsOf(t reflect.Type) []jsonField {
	if c, ok := jsonFieldCache.Load(t); ok {
		return c.([]jsonField)
	}
	type candidate struct {
		jsonField
		depth  int
		tagged bool
	}
	var all []candidate
	var walk func(t reflect.Type, index []int, depth int)
	walk = func(t reflect.Type, index []int, depth int) {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(slices.Clone(index), i)
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if sf.Anonymous && name == "" && ft.Kind() == reflect.Struct {
				walk(ft, idx, depth+1)
				continue
			}
			if !sf.IsExported() {
				continue
			}
			tagged := name != ""
			if name == "" {
				name = sf.Name
			}
			all = append(all, candidate{jsonField: jsonField{
				name: name, index: idx,
				omitEmpty: hasOption(opts, "omitempty"), omitZero: hasOption(opts, "omitzero"),
			}, depth: depth, tagged: tagged})
		}
	}
	walk(t, nil, 0)
	// encoding/json's dominance rule: the shallowest field of a name wins, a tagged one over
	// an untagged one at the same depth; a tie drops the name.
	byName := map[string][]candidate{}
	for _, c := range all {
		byName[c.name] = append(byName[c.name], c)
	}
	var fields []jsonField
	for _, cs := range byName {
		slices.SortFunc(cs, func(a, b candidate) int {
			if a.depth != b.depth {
				return a.depth - b.depth
			}
			if a.tagged != b.tagged {
				if a.tagged {
					return -1
				}
				return 1
			}
			return 0
		})
		if len(cs) > 1 && cs[0].depth == cs[1].depth && cs[0].tagged == cs[1].tagged {
			continue
		}
		fields = append(fields, cs[0].jsonField)
	}
	slices.SortFunc(fields, func(a, b jsonField) int { return compareUTF16(a.name, b.name) })
	jsonFieldCache.Store(t, fields)
	return fields
}

func hasOption(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

// fieldByIndex is v's field at index, through embedded pointers; false when one is nil.
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

// compareUTF16 orders strings by their UTF-16 code units (RFC 8785's order of member
// names), as canonical.CompareUTF16 does.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ua, ub := utf16Unit(ra), utf16Unit(rb)
			if ua != ub {
				if ua < ub {
					return -1
				}
				return 1
			}
			// Same leading unit: both are supplementary; compare the trailing units.
			if ra < rb {
				return -1
			}
			return 1
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

func utf16Unit(r rune) rune {
	if r >= 0x10000 {
		hi, _ := utf16.EncodeRune(r)
		return hi
	}
	return r
}
