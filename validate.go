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

// Enumerated is a type with a closed set of values (its JSON Schema enum).
type Enumerated interface{ Enum() []any }

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
		r := fieldRule{name: f.name, index: f.index, required: !f.omitEmpty && !f.omitZero, minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}
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

func checkStruct(v reflect.Value, path string, is *Issues) {
	for _, r := range rulesOf(v.Type()) {
		fv, ok := fieldByIndex(v, r.index)
		if !ok {
			continue
		}
		checkValue(fv, r, path+"/"+escapePointerToken(r.name), is)
	}
}

func checkValue(v reflect.Value, r fieldRule, path string, is *Issues) {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.Interface {
		return // free-form JSON
	}
	if e, ok := v.Interface().(Enumerated); ok && v.Kind() != reflect.Slice && v.Kind() != reflect.Map {
		if r.required && v.IsZero() {
			is.Add(path, "is required")
			return
		}
		if !enumContains(e.Enum(), v.Interface()) {
			is.Add(path, "must be one of %s", enumList(e.Enum()))
		}
		return
	}
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if s == "" && r.required {
			is.Add(path, "is required")
			return
		}
		n := utf8.RuneCountInString(s)
		switch {
		case strings.IndexByte(s, 0) >= 0: // PostgreSQL text cannot hold NUL: refused before any work
			is.Add(path, "must not contain NUL characters")
		case r.minLength >= 0 && n < r.minLength:
			is.Add(path, "must be at least %d characters long", r.minLength)
		case r.maxLength >= 0 && n > r.maxLength:
			is.Add(path, "must be at most %d characters long", r.maxLength)
		case r.format == "uuid" && !ValidUUID(s):
			is.Add(path, "must be a UUID")
		case r.pattern != nil && !r.pattern.MatchString(s):
			is.Add(path, "must match %s", r.pattern)
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
			is.Add(path, "must have at least %d items", r.minItems)
		case r.maxItems >= 0 && n > r.maxItems:
			is.Add(path, "must have at most %d items", r.maxItems)
		}
		for i := range n {
			checkElement(v.Index(i), path+"/"+strconv.Itoa(i), is)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			if k.Kind() == reflect.String {
				checkElement(v.MapIndex(k), path+"/"+escapePointerToken(k.String()), is)
			}
		}
	case reflect.Struct:
		if v.Type() != timeType && v.Type().Kind() == reflect.Struct {
			checkStruct(v, path, is)
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
	if e, ok := v.Interface().(Enumerated); ok {
		if !enumContains(e.Enum(), v.Interface()) {
			is.Add(path, "must be one of %s", enumList(e.Enum()))
		}
		return
	}
	if v.Kind() == reflect.Struct && v.Type() != timeType {
		checkStruct(v, path, is)
	}
}

func checkNumber(f float64, r fieldRule, path string, is *Issues) {
	switch {
	case r.minimum != nil && f < *r.minimum:
		is.Add(path, "must be at least %s", strconv.FormatFloat(*r.minimum, 'f', -1, 64))
	case r.maximum != nil && f > *r.maximum:
		is.Add(path, "must be at most %s", strconv.FormatFloat(*r.maximum, 'f', -1, 64))
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
