package accountable

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Field rules are written once, as JSON Schema keywords in struct tags, next to the json
// name of each field:
//
//	Title string `json:"title" minLength:"1" maxLength:"500"`
//
// Supported: minLength, maxLength (in characters), pattern, format ("uuid"), minimum,
// maximum, minItems, maxItems; a field whose type has an Enum method may take only those
// values. The API description is generated from the same tags (package api), and every
// command's Validate method checks them with CheckFields, so REST, activities and the MCP
// server enforce one set of rules. Rules that span fields live in the Validate methods.

// Enumerated is a type with a closed set of values (its JSON Schema enum). The values are
// the type's, whatever the value Enum is called on: the rules read them once per type.
type Enumerated interface{ Enum() []any }

var enumeratedType = reflect.TypeFor[Enumerated]()

// enumValues are the values of enumerated types, read once per type: checking a value
// against them then costs no Enum call, whose list and boxed values are allocated anew.
var enumValues sync.Map // reflect.Type -> []any

// enumOf returns the values of v's type, which is Enumerated.
func enumOf(v reflect.Value) []any {
	if e, ok := enumValues.Load(v.Type()); ok {
		return e.([]any)
	}
	e := v.Interface().(Enumerated).Enum()
	enumValues.Store(v.Type(), e)
	return e
}

// enumHas reports whether v, of an Enumerated type, is one of its type's values: a
// string-based value is compared as its string (without boxing it), as enumContains
// compares it: equal to a string-based value listed, whatever its type.
func enumHas(v reflect.Value) bool {
	values := enumOf(v)
	if v.Kind() != reflect.String {
		return enumContains(values, v.Interface())
	}
	s := v.String()
	for _, x := range values {
		if xs, ok := x.(string); ok {
			if xs == s {
				return true
			}
		} else if xv := reflect.ValueOf(x); xv.Kind() == reflect.String && xv.String() == s {
			return true
		}
	}
	return false
}

// CheckFields returns an Issue for every field of the struct v (or *v) that breaks the
// rules of its tags, at the JSON Pointer of the value. Nested structs, and structs in
// slices and maps, are checked too. Nil pointers (absent optional fields) are not checked.
func CheckFields(v any) Issues {
	var is Issues
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	if rv.Kind() == reflect.Struct {
		checkStruct(rv, "", &is)
	}
	return is
}

type fieldRule struct {
	name      string
	token     string // name as a JSON Pointer reference token
	index     []int
	required  bool
	minLength int
	maxLength int
	pattern   *regexp.Regexp
	format    string
	minimum   *float64
	maximum   *float64
	minItems  int
	maxItems  int
}

var fieldRuleCache sync.Map // reflect.Type -> []fieldRule

func rulesOf(t reflect.Type) []fieldRule {
	if r, ok := fieldRuleCache.Load(t); ok {
		return r.([]fieldRule)
	}
	fields := jsonFieldsOf(t)
	rules := make([]fieldRule, 0, len(fields))
	for _, f := range fields {
		sf := t.FieldByIndex(f.index)
		r := fieldRule{name: f.name, token: escapePointerToken(f.name), index: f.index, required: !f.omitEmpty && !f.omitZero, minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}
		tag := sf.Tag
		r.minLength = intTag(t, sf, "minLength")
		r.maxLength = intTag(t, sf, "maxLength")
		r.minItems = intTag(t, sf, "minItems")
		r.maxItems = intTag(t, sf, "maxItems")
		r.minimum = floatTag(t, sf, "minimum")
		r.maximum = floatTag(t, sf, "maximum")
		r.format = tag.Get("format")
		if p := tag.Get("pattern"); p != "" {
			r.pattern = regexp.MustCompile(p)
		}
		rules = append(rules, r)
	}
	fieldRuleCache.Store(t, rules)
	return rules
}

func intTag(t reflect.Type, sf reflect.StructField, key string) int {
	s, ok := sf.Tag.Lookup(key)
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(fmt.Sprintf("accountable: %s.%s: tag %s:%q is not an integer", t, sf.Name, key, s))
	}
	return n
}

func floatTag(t reflect.Type, sf reflect.StructField, key string) *float64 {
	s, ok := sf.Tag.Lookup(key)
	if !ok {
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(fmt.Sprintf("accountable: %s.%s: tag %s:%q is not a number", t, sf.Name, key, s))
	}
	return &f
}

var timeType = reflect.TypeFor[Time]()

// fieldPath is the JSON Pointer of a field, written out only when an issue or a nested
// value needs it: most fields are checked without one (a request's every field would
// otherwise cost a string).
type fieldPath struct{ parent, token string }

func (p fieldPath) String() string { return p.parent + "/" + p.token }

func checkStruct(v reflect.Value, path string, is *Issues) {
	for _, r := range rulesOf(v.Type()) {
		fv, ok := fieldByIndex(v, r.index)
		if !ok {
			continue
		}
		checkValue(fv, r, fieldPath{path, r.token}, is)
	}
}

func checkValue(v reflect.Value, r fieldRule, path fieldPath, is *Issues) {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.Interface {
		return // free-form JSON
	}
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Map && v.Type().Implements(enumeratedType) {
		if r.required && v.IsZero() {
			is.Add(path.String(), "is required")
			return
		}
		if !enumHas(v) {
			is.Add(path.String(), "must be one of %s", enumList(enumOf(v)))
		}
		return
	}
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if s == "" && r.required {
			is.Add(path.String(), "is required")
			return
		}
		switch {
		case strings.IndexByte(s, 0) >= 0: // PostgreSQL text cannot hold NUL: refused before any work
			is.Add(path.String(), "must not contain NUL characters")
		case r.minLength >= 0 && utf8.RuneCountInString(s) < r.minLength:
			is.Add(path.String(), "must be at least %d characters long", r.minLength)
		case r.maxLength >= 0 && (len(s) > r.maxLength && utf8.RuneCountInString(s) > r.maxLength):
			is.Add(path.String(), "must be at most %d characters long", r.maxLength)
		case r.format == "uuid" && !ValidUUID(s):
			is.Add(path.String(), "must be a UUID")
		case r.pattern != nil && !r.pattern.MatchString(s):
			is.Add(path.String(), "must match %s", r.pattern)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		checkNumber(float64(v.Int()), r, path, is)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		checkNumber(float64(v.Uint()), r, path, is)
	case reflect.Float32, reflect.Float64:
		checkNumber(v.Float(), r, path, is)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return // raw JSON or bytes
		}
		n := v.Len()
		switch {
		case r.minItems >= 0 && n < r.minItems:
			is.Add(path.String(), "must have at least %d items", r.minItems)
		case r.maxItems >= 0 && n > r.maxItems:
			is.Add(path.String(), "must have at most %d items", r.maxItems)
		}
		if n > 0 {
			p := path.String()
			for i := range n {
				checkElement(v.Index(i), p+"/"+strconv.Itoa(i), is)
			}
		}
	case reflect.Map:
		if v.Len() > 0 {
			p := path.String()
			for _, k := range v.MapKeys() {
				if k.Kind() == reflect.String {
					checkElement(v.MapIndex(k), p+"/"+escapePointerToken(k.String()), is)
				}
			}
		}
	case reflect.Struct:
		if v.Type() != timeType && v.Type().Kind() == reflect.Struct {
			checkStruct(v, path.String(), is)
		}
	}
}

// checkElement checks an element of a slice or map: its own type's rules (an enum, or the
// fields of a struct).
func checkElement(v reflect.Value, path string, is *Issues) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Type().Implements(enumeratedType) {
		if !enumHas(v) {
			is.Add(path, "must be one of %s", enumList(enumOf(v)))
		}
		return
	}
	if v.Kind() == reflect.Struct && v.Type() != timeType {
		checkStruct(v, path, is)
	}
}

func checkNumber(f float64, r fieldRule, path fieldPath, is *Issues) {
	switch {
	case r.minimum != nil && f < *r.minimum:
		is.Add(path.String(), "must be at least %s", strconv.FormatFloat(*r.minimum, 'f', -1, 64))
	case r.maximum != nil && f > *r.maximum:
		is.Add(path.String(), "must be at most %s", strconv.FormatFloat(*r.maximum, 'f', -1, 64))
	}
}

func enumContains(values []any, v any) bool {
	rv := reflect.ValueOf(v)
	for _, x := range values {
		xv := reflect.ValueOf(x)
		if xv.Kind() == rv.Kind() && xv.Kind() == reflect.String && xv.String() == rv.String() {
			return true
		}
		if x == v {
			return true
		}
	}
	return false
}

func enumList(values []any) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ")
}

// escapePointerToken escapes a JSON Pointer reference token (RFC 6901).
func escapePointerToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// EnumStrings converts string-based enum values for an Enum method.
func EnumStrings[T ~string](values ...T) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// ValueRules are the rules of a field's tags for a value of the field's type checked
// alone (a path or query parameter's): built once, they check each value without the
// struct CheckFields would need around it.
type ValueRules struct{ rule fieldRule }

// RulesOfField returns the rules of the tags of f, a field whose json tag is not its own
// (a parameter's, json:"-"): those of a required member with f's other tags.
func RulesOfField(f reflect.StructField) ValueRules {
	elem := f.Type
	if elem.Kind() == reflect.Pointer {
		elem = elem.Elem()
	}
	probe := reflect.StructOf([]reflect.StructField{{Name: "V", Type: elem, Tag: reflect.StructTag(`json:"v" ` + string(f.Tag))}})
	return ValueRules{rulesOf(probe)[0]}
}

// Check returns the message of the first rule v breaks, "" when it breaks none: what
// CheckFields says of a struct whose one field has the rules' tags and the value v.
func (r ValueRules) Check(v reflect.Value) string {
	var is Issues
	checkValue(v, r.rule, fieldPath{"", r.rule.token}, &is)
	if len(is) > 0 {
		return is[0].Message
	}
	return ""
}
