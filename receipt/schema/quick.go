package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The quick pass: a yes-or-no check of a document against the compiled schema, without
// the error tree. santhosh-tekuri/jsonschema builds a validator, a scope and an
// evaluation record per keyword and per value even for a document it accepts (1,260
// allocations for the Codex fixture: half of a validation's time); most documents sent are
// valid, and a valid document's verdict carries nothing of the schema stage. So the
// schema is checked first by this pass, which reads the library's compiled schema (its
// exported keywords) and allocates nothing for the keywords of this format, and only a
// document it does not prove valid is validated again by the library, whose errors make
// the issues. The verdict is therefore the library's whenever there are issues.
//
// The pass answers in three values so that not, anyOf and oneOf can use it: valid and
// invalid are certain (each keyword is checked as the library checks it: the same format
// functions, the same regular expressions, numbers compared exactly), and unknown is
// anything it does not decide, which sends the document to the library. A schema with a
// keyword the pass does not implement gets no quick pass at all (compileQuick fails).

// quickVerdict is the quick pass's answer.
type quickVerdict uint8

const (
	quickUnknown quickVerdict = iota
	quickValid
	quickInvalid
)

// maxQuickRefs bounds the $refs followed without descending into the value (a reference
// cycle): beyond it the answer is unknown and the library reports the cycle.
const maxQuickRefs = 32

// JSON types, as bits.
const (
	quickNull uint8 = 1 << iota
	quickBoolean
	quickNumber
	quickInteger
	quickString
	quickArray
	quickObject
)

// quickSchema is one compiled schema as the quick pass reads it.
type quickSchema struct {
	always *bool // a boolean schema
	types  uint8 // 0: any type

	// const and enum: the string values, and whether there are others (then a non-string
	// value is unknown; a string never equals a value of another type)
	constSet, enumSet    bool
	constString          string
	constOther           bool
	enumStrings          map[string]struct{}
	enumOther            bool
	format               func(any) error
	ref                  *quickSchema
	not                  *quickSchema
	allOf, anyOf, oneOf  []*quickSchema
	required             []string
	minProps, maxProps   *int
	properties           map[string]*quickSchema
	patternProperties    []quickPatternProperty
	additionalAllowed    *bool // additionalProperties: true or false
	additionalSchema     *quickSchema
	minItems, maxItems   *int
	prefixItems          []*quickSchema
	items                *quickSchema
	minLength, maxLength *int
	pattern              func(string) bool // the pattern's MatchString
	minimum, maximum     *big.Rat
	minInt64, maxInt64   int64 // the bounds as integers, when they are small ones (minIsInt, maxIsInt)
	minIsInt, maxIsInt   bool
}

type quickPatternProperty struct {
	re     jsonschema.Regexp
	schema *quickSchema
}

// errQuickUnsupported: the schema uses a keyword the quick pass does not implement.
var errQuickUnsupported = errors.New("receipt schema: a keyword the quick pass does not implement")

// compileQuick makes the quick pass of a compiled schema.
func compileQuick(root *jsonschema.Schema) (*quickSchema, error) {
	seen := map[*jsonschema.Schema]*quickSchema{}
	return quickOf(root, seen)
}

func quickOf(s *jsonschema.Schema, seen map[*jsonschema.Schema]*quickSchema) (*quickSchema, error) {
	if s == nil {
		return nil, nil
	}
	if q, ok := seen[s]; ok {
		return q, nil
	}
	q := &quickSchema{}
	seen[s] = q
	if s.Bool != nil {
		q.always = s.Bool
		return q, nil
	}
	if s.DraftVersion < 2020 || s.RecursiveRef != nil || s.DynamicRef != nil || s.If != nil || s.Then != nil || s.Else != nil ||
		s.PropertyNames != nil || len(s.Dependencies) > 0 || len(s.DependentRequired) > 0 || len(s.DependentSchemas) > 0 ||
		s.UnevaluatedProperties != nil || s.UnevaluatedItems != nil || s.UniqueItems || s.Contains != nil ||
		s.MinContains != nil || s.MaxContains != nil || s.Items != nil || s.AdditionalItems != nil ||
		s.ContentEncoding != nil || s.ContentMediaType != nil || s.ContentSchema != nil ||
		s.ExclusiveMaximum != nil || s.ExclusiveMinimum != nil || s.MultipleOf != nil || len(s.Extensions) > 0 {
		return nil, fmt.Errorf("%w (%s)", errQuickUnsupported, s.Location)
	}
	if s.Types != nil {
		for _, t := range s.Types.ToStrings() {
			q.types |= map[string]uint8{"null": quickNull, "boolean": quickBoolean, "number": quickNumber, "integer": quickInteger,
				"string": quickString, "array": quickArray, "object": quickObject}[t]
		}
	}
	if s.Const != nil {
		q.constSet = true
		q.constString, q.constOther = quickStringValue(*s.Const)
	}
	if s.Enum != nil {
		q.enumSet, q.enumStrings = true, map[string]struct{}{}
		for _, v := range s.Enum.Values {
			if str, other := quickStringValue(v); other {
				q.enumOther = true
			} else {
				q.enumStrings[str] = struct{}{}
			}
		}
	}
	if s.Format != nil {
		if s.Format.Name == "regex" { // the library may check it with another engine
			return nil, fmt.Errorf("%w (%s: format regex)", errQuickUnsupported, s.Location)
		}
		q.format = s.Format.Validate
	}
	var err error
	sub := func(s *jsonschema.Schema) *quickSchema {
		if err != nil {
			return nil
		}
		var q *quickSchema
		q, err = quickOf(s, seen)
		return q
	}
	subs := func(ss []*jsonschema.Schema) []*quickSchema {
		var out []*quickSchema
		for _, s := range ss {
			out = append(out, sub(s))
		}
		return out
	}
	q.ref, q.not = sub(s.Ref), sub(s.Not)
	q.allOf, q.anyOf, q.oneOf = subs(s.AllOf), subs(s.AnyOf), subs(s.OneOf)
	q.required, q.minProps, q.maxProps = s.Required, s.MinProperties, s.MaxProperties
	if len(s.Properties) > 0 {
		q.properties = map[string]*quickSchema{}
		for name, p := range s.Properties {
			q.properties[name] = sub(p)
		}
	}
	for re, p := range s.PatternProperties {
		q.patternProperties = append(q.patternProperties, quickPatternProperty{re: re, schema: sub(p)})
	}
	switch a := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		q.additionalAllowed = &a
	case *jsonschema.Schema:
		q.additionalSchema = sub(a)
	default:
		return nil, fmt.Errorf("%w (%s: additionalProperties %T)", errQuickUnsupported, s.Location, a)
	}
	q.minItems, q.maxItems, q.prefixItems, q.items = s.MinItems, s.MaxItems, subs(s.PrefixItems), sub(s.Items2020)
	q.minLength, q.maxLength = s.MinLength, s.MaxLength
	if s.Pattern != nil {
		q.pattern = quickPattern(s.Pattern)
	}
	q.minimum, q.maximum = s.Minimum, s.Maximum
	if s.Minimum != nil && quickSmallInt(s.Minimum) {
		q.minInt64, q.minIsInt = s.Minimum.Num().Int64(), true
	}
	if s.Maximum != nil && quickSmallInt(s.Maximum) {
		q.maxInt64, q.maxIsInt = s.Maximum.Num().Int64(), true
	}
	if err != nil {
		return nil, err
	}
	return q, nil
}

// quickPattern is the match of a pattern: the format's "\\S" (a string with something
// besides white space, on most of its strings) without the regular expression machinery:
// RE2's \\S is any character but the ASCII tab, newline, form feed, carriage return and
// space, so a byte that is none of those is one (a byte of a longer UTF-8 sequence, or an
// invalid one that RE2 reads as U+FFFD, is not white space either).
func quickPattern(re jsonschema.Regexp) func(string) bool {
	if std, ok := re.(*regexp.Regexp); ok && std.String() == `\S` {
		return hasNonSpace
	}
	return re.MatchString
}

func hasNonSpace(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\t', '\n', '\f', '\r', ' ':
		default:
			return true
		}
	}
	return false
}

// quickSmallInt reports whether a bound is an integer within ±2^62, which the integer and
// decimal comparisons take (nothing they compute can overflow: the numbers they read have
// at most 18 digits, 15 before a decimal point).
func quickSmallInt(r *big.Rat) bool {
	return r.IsInt() && r.Num().IsInt64() && r.Num().Int64() <= 1<<62 && r.Num().Int64() >= -1<<62
}

// quickStringValue returns a const or enum value as a string, or other when it is not one.
func quickStringValue(v any) (s string, other bool) {
	s, ok := v.(string)
	return s, !ok
}

// quickTally combines the verdicts of a schema's keywords: any invalid makes it invalid,
// else any unknown makes it unknown.
type quickTally struct{ unknown bool }

func (t *quickTally) add(v quickVerdict) bool {
	switch v {
	case quickInvalid:
		return false
	case quickUnknown:
		t.unknown = true
	}
	return true
}

func (t quickTally) verdict() quickVerdict {
	if t.unknown {
		return quickUnknown
	}
	return quickValid
}

// check answers whether v (decoded as the input stage decodes: map[string]any, []any,
// string, json.Number, bool, nil) is valid against q. refs counts the $refs followed at
// this value.
func (q *quickSchema) check(v any, refs int) quickVerdict {
	if q.always != nil {
		if *q.always {
			return quickValid
		}
		return quickInvalid
	}
	var t quickTally
	kind, ok := quickTypeOf(v)
	if !ok {
		return quickUnknown
	}
	if q.types != 0 && q.types&kind == 0 {
		if kind != quickNumber || q.types&quickInteger == 0 || !quickIsInteger(v.(json.Number)) {
			return quickInvalid
		}
	}
	str, isString := v.(string)
	if q.constSet {
		switch {
		case isString && !q.constOther:
			if str != q.constString {
				return quickInvalid
			}
		case !q.constOther: // a value of another type than the const's string
			return quickInvalid
		case isString: // the const is not a string
			return quickInvalid
		default:
			t.unknown = true
		}
	}
	if q.enumSet {
		switch {
		case isString:
			if _, in := q.enumStrings[str]; !in {
				return quickInvalid
			}
		case !q.enumOther:
			return quickInvalid
		default:
			t.unknown = true
		}
	}
	if q.format != nil && q.format(v) != nil {
		return quickInvalid
	}
	if q.ref != nil {
		if refs >= maxQuickRefs {
			return quickUnknown
		}
		if !t.add(q.ref.check(v, refs+1)) {
			return quickInvalid
		}
	}
	switch v := v.(type) {
	case map[string]any:
		if !t.add(q.checkObject(v)) {
			return quickInvalid
		}
	case []any:
		if !t.add(q.checkArray(v)) {
			return quickInvalid
		}
	case string:
		if q.minLength != nil || q.maxLength != nil {
			n := utf8.RuneCountInString(v)
			if q.minLength != nil && n < *q.minLength || q.maxLength != nil && n > *q.maxLength {
				return quickInvalid
			}
		}
		if q.pattern != nil && !q.pattern(v) {
			return quickInvalid
		}
	case json.Number:
		if !t.add(q.checkNumber(v)) {
			return quickInvalid
		}
	}
	if q.not != nil {
		switch q.not.check(v, refs+1) {
		case quickValid:
			return quickInvalid
		case quickUnknown:
			t.unknown = true
		}
	}
	for _, s := range q.allOf {
		if !t.add(s.check(v, refs+1)) {
			return quickInvalid
		}
	}
	if len(q.anyOf) > 0 {
		matched, unknown := false, false
		for _, s := range q.anyOf {
			switch s.check(v, refs+1) {
			case quickValid:
				matched = true
			case quickUnknown:
				unknown = true
			}
			if matched {
				break
			}
		}
		switch {
		case matched:
		case unknown:
			t.unknown = true
		default:
			return quickInvalid
		}
	}
	if len(q.oneOf) > 0 {
		valid, unknown := 0, false
		for _, s := range q.oneOf {
			switch s.check(v, refs+1) {
			case quickValid:
				valid++
			case quickUnknown:
				unknown = true
			}
		}
		switch {
		case valid > 1:
			return quickInvalid
		case unknown:
			t.unknown = true
		case valid == 0:
			return quickInvalid
		}
	}
	return t.verdict()
}

func (q *quickSchema) checkObject(obj map[string]any) quickVerdict {
	if q.minProps != nil && len(obj) < *q.minProps || q.maxProps != nil && len(obj) > *q.maxProps {
		return quickInvalid
	}
	for _, name := range q.required {
		if _, ok := obj[name]; !ok {
			return quickInvalid
		}
	}
	var t quickTally
	for name, value := range obj {
		evaluated := false
		if s, ok := q.properties[name]; ok {
			evaluated = true
			if !t.add(s.check(value, 0)) {
				return quickInvalid
			}
		}
		for _, p := range q.patternProperties {
			if p.re.MatchString(name) {
				evaluated = true
				if !t.add(p.schema.check(value, 0)) {
					return quickInvalid
				}
			}
		}
		if evaluated {
			continue
		}
		if q.additionalAllowed != nil && !*q.additionalAllowed {
			return quickInvalid
		}
		if q.additionalSchema != nil && !t.add(q.additionalSchema.check(value, 0)) {
			return quickInvalid
		}
	}
	return t.verdict()
}

func (q *quickSchema) checkArray(arr []any) quickVerdict {
	if q.minItems != nil && len(arr) < *q.minItems || q.maxItems != nil && len(arr) > *q.maxItems {
		return quickInvalid
	}
	var t quickTally
	for i, item := range arr {
		s := q.items
		if i < len(q.prefixItems) {
			s = q.prefixItems[i]
		}
		if s != nil && !t.add(s.check(item, 0)) {
			return quickInvalid
		}
	}
	return t.verdict()
}

// checkNumber checks minimum and maximum exactly: as integers when both are, else as
// rationals (the library's big.Rat of the number's text).
func (q *quickSchema) checkNumber(n json.Number) quickVerdict {
	if q.minimum == nil && q.maximum == nil {
		return quickValid
	}
	if i, ok := quickInt64(n); ok && (q.minimum == nil || q.minIsInt) && (q.maximum == nil || q.maxIsInt) {
		if q.minimum != nil && i < q.minInt64 || q.maximum != nil && i > q.maxInt64 {
			return quickInvalid
		}
		return quickValid
	}
	if (q.minimum == nil || q.minIsInt) && (q.maximum == nil || q.maxIsInt) {
		if whole, fraction, negative, ok := quickDecimal(n); ok {
			return q.checkDecimal(whole, fraction, negative)
		}
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return quickUnknown
	}
	if q.minimum != nil && r.Cmp(q.minimum) < 0 || q.maximum != nil && r.Cmp(q.maximum) > 0 {
		return quickInvalid
	}
	return quickValid
}

// quickTypeOf is the JSON type of a decoded value (false for a Go type the input stage
// does not make).
func quickTypeOf(v any) (uint8, bool) {
	switch v.(type) {
	case nil:
		return quickNull, true
	case bool:
		return quickBoolean, true
	case json.Number:
		return quickNumber, true
	case string:
		return quickString, true
	case []any:
		return quickArray, true
	case map[string]any:
		return quickObject, true
	}
	return 0, false
}

// quickIsInteger is the library's integer test (a number whose value is an integer: 1.0
// and 1e2 are), without big.Rat for the plain integers documents hold.
func quickIsInteger(n json.Number) bool {
	if _, ok := quickInt64(n); ok {
		return true
	}
	r, ok := new(big.Rat).SetString(string(n))
	return ok && r.IsInt()
}

// quickInt64 reads a number written as a plain integer of at most 18 digits.
func quickInt64(n json.Number) (int64, bool) {
	s := string(n)
	digits := s
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	i, err := strconv.ParseInt(s, 10, 64)
	return i, err == nil
}

// checkDecimal checks integer bounds against the number ±(whole + f), where 0 <= f < 1 and
// fraction says whether f > 0: exactly, as big.Rat would, for the prices and quantities
// documents hold (0.42) without making one.
func (q *quickSchema) checkDecimal(whole int64, fraction, negative bool) quickVerdict {
	if q.minimum != nil {
		var below bool
		switch {
		case !negative: // whole + f >= min  <=>  whole >= min
			below = whole < q.minInt64
		case fraction: // -(whole + f) >= min  <=>  whole + 1 <= -min
			below = whole+1 > -q.minInt64
		default:
			below = -whole < q.minInt64
		}
		if below {
			return quickInvalid
		}
	}
	if q.maximum != nil {
		var above bool
		switch {
		case negative: // -(whole + f) <= max  <=>  whole >= -max
			above = whole < -q.maxInt64
		case fraction: // whole + f <= max  <=>  whole < max
			above = whole >= q.maxInt64
		default:
			above = whole > q.maxInt64
		}
		if above {
			return quickInvalid
		}
	}
	return quickValid
}

// quickDecimal reads a number written -?digits.digits (no exponent) whose whole part has
// at most 15 digits: its whole part, whether its fraction is not zero, and its sign.
func quickDecimal(n json.Number) (whole int64, fraction, negative, ok bool) {
	s := string(n)
	if len(s) > 0 && s[0] == '-' {
		negative, s = true, s[1:]
	}
	dot := len(s)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.' && dot == len(s) && i > 0:
			dot = i
		case c >= '0' && c <= '9':
			if i > dot && c != '0' {
				fraction = true
			}
		default:
			return 0, false, false, false
		}
	}
	if dot == 0 || dot > 15 || dot == len(s)-1 {
		return 0, false, false, false
	}
	for i := 0; i < dot; i++ {
		whole = whole*10 + int64(s[i]-'0')
	}
	return whole, fraction, negative, true
}
