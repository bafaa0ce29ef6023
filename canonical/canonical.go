// Package canonical is canonical JSON (RFC 8785, the JSON Canonicalization Scheme) and
// "sha256:<hex>" digests: ledger payload digests, event hashes, idempotency request
// fingerprints, proposal digests, revision content digests, diagnosis ids, controller
// revisions and webhook signatures. It imports only the standard library; the tests
// check it against an independent implementation (github.com/gowebpki/jcs) on generated
// values and against the RFC's number vectors.
//
// Go values are canonicalised directly (one reflective pass with per-type encoders
// cached), with encoding/json's rules for which fields appear: json tag names, "-",
// omitempty, omitzero and promoted embedded structs; a type that writes its own canonical
// form (Appender: the ledger payloads every command digests) is written by it, which its
// tests compare with that reflective pass. JSON text is canonicalised through
// encoding/json's decoder.
package canonical

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// JSON returns the canonical JSON of v: what encoding/json would encode, with
// object members sorted by the UTF-16 code units of their names, numbers in ECMAScript
// form, strings minimally escaped and no whitespace. json.RawMessage and values that
// implement json.Marshaler are parsed and canonicalised too.
func JSON(v any) ([]byte, error) {
	return AppendJSON(make([]byte, 0, 256), v)
}

// AppendJSON appends the canonical JSON of v to buf (JSON into a buffer the caller
// sizes: a receipt's canonical form is made member by member into one).
func AppendJSON(buf []byte, v any) ([]byte, error) {
	e := canonEncoder{buf: buf, limit: maxCanonDepth}
	if err := e.anyValue(v); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// Transform returns the canonical form of the JSON text raw.
func Transform(raw []byte) ([]byte, error) {
	return TransformWithin(raw, maxCanonDepth)
}

// TransformWithin is Transform with objects and arrays nested at most limit
// deep (the outermost at depth 1); deeper text fails with ErrNestedTooDeep.
func TransformWithin(raw []byte, limit int) ([]byte, error) {
	e := canonEncoder{buf: make([]byte, 0, len(raw)), limit: limit}
	if err := e.raw(raw); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// Digest returns "sha256:" followed by the lower-case hex SHA-256 of b.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	out := make([]byte, 7+hex.EncodedLen(len(sum)))
	copy(out, "sha256:")
	hex.Encode(out[7:], sum[:])
	return string(out)
}

// DigestOf returns the Digest of the canonical JSON of v.
func DigestOf(v any) (string, error) {
	bp := digestBuffers.Get().(*[]byte)
	b, err := AppendJSON((*bp)[:0], v)
	if err != nil {
		digestBuffers.Put(bp)
		return "", err
	}
	d := Digest(b)
	if cap(b) <= maxPooledDigestBuffer {
		*bp = b[:0]
		digestBuffers.Put(bp)
	}
	return d, nil
}

// digestBuffers hold the canonical JSON DigestOf hashes, which nothing keeps: every
// command digests its request (the Idempotency-Key's fingerprint), whose text grew a new
// buffer twice. A buffer grown past maxPooledDigestBuffer is left to the collector.
var digestBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1<<10); return &b }}

const maxPooledDigestBuffer = 64 << 10

// ErrNotCanonicalizable is returned for values JSON cannot carry (NaN, infinities,
// channels, functions, maps without string keys).
var ErrNotCanonicalizable = errors.New("value has no canonical JSON form")

type canonEncoder struct {
	buf   []byte
	depth int // objects and arrays around the value being encoded
	limit int // the most depth may reach
	hops  int // pointers and interfaces followed, which nest nothing in JSON
	// reflective: Appenders' own forms are not used (the tests' reference encoding)
	reflective bool
}

// maxCanonDepth bounds the nesting of objects and arrays in a canonical form, as a guard
// against cyclic values. Every path through the encoder and the canonical-text check
// counts it the same way (the outermost container at depth 1), so a value's JSON text
// canonicalises exactly when the value did: a ledger payload whose digest was computed
// can always be verified from its stored text.
const maxCanonDepth = 1000

// ErrNestedTooDeep is returned (with ErrNotCanonicalizable) for objects and arrays nested
// deeper than the bound of the canonicalisation.
var ErrNestedTooDeep = errors.New("objects and arrays nested too deep")

// enter opens an object or array, one level deeper; leave closes it.
func (e *canonEncoder) enter() error {
	if e.depth++; e.depth > e.limit {
		return fmt.Errorf("%w: %w: more than %d", ErrNotCanonicalizable, ErrNestedTooDeep, e.limit)
	}
	return nil
}

func (e *canonEncoder) leave() { e.depth-- }

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	numberType        = reflect.TypeFor[json.Number]()
)

// anyValue encodes v, without reflection when it is one of the values a decoder of
// arbitrary JSON produces (map[string]any, []any, string, bool, nil, json.Number,
// float64): a receipt document is canonicalised twice a request, and reflecting over its
// maps cost more than the rest of its canonical form.
func (e *canonEncoder) anyValue(v any) error {
	switch v := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case string:
		e.string(v)
	case bool:
		e.buf = strconv.AppendBool(e.buf, v)
	case float64:
		return e.float(v)
	case json.Number:
		return e.numberText(string(v))
	case map[string]any:
		if v == nil {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		return e.dynamicObject(v)
	case []any:
		if v == nil {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		return e.dynamicArray(v)
	default:
		return e.value(reflect.ValueOf(v))
	}
	return nil
}

// dynamicObject is mapValue for a map[string]any.
func (e *canonEncoder) dynamicObject(m map[string]any) error {
	if err := e.enter(); err != nil {
		return err
	}
	var small [16]string // most objects' names fit: no allocation for them
	names := small[:0]
	if len(m) > len(small) {
		names = make([]string, 0, len(m))
	}
	for name := range m {
		names = append(names, name)
	}
	slices.SortFunc(names, CompareUTF16)
	e.buf = append(e.buf, '{')
	for i, name := range names {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.string(name)
		e.buf = append(e.buf, ':')
		if err := e.anyValue(m[name]); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	e.leave()
	return nil
}

// dynamicArray is array for a []any.
func (e *canonEncoder) dynamicArray(a []any) error {
	if err := e.enter(); err != nil {
		return err
	}
	e.buf = append(e.buf, '[')
	for i, v := range a {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.anyValue(v); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, ']')
	e.leave()
	return nil
}

func (e *canonEncoder) value(v reflect.Value) error {
	if !v.IsValid() {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	t := v.Type()
	kind, appender := canonKindOf(t)
	if appender && e.useAppender() && v.CanInterface() {
		if err := e.appender(v.Interface().(Appender)); err == nil {
			return nil
		}
		// An Appender's error is not returned: the reflective pass below makes the same
		// bytes, or fails with the encoder's own error for the value.
	}
	if kind == kindAddrMarshaler {
		if v.CanAddr() {
			return e.marshaler(v.Addr())
		}
		kind = kindPlain
		if t.Implements(textMarshalerType) {
			kind = kindTextMarshaler
		}
	}
	switch kind {
	case kindRaw:
		if v.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		return e.raw(v.Bytes())
	case kindNumber:
		return e.numberText(v.String())
	case kindMarshaler:
		return e.marshaler(v)
	case kindTextMarshaler:
		text, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return err
		}
		e.string(string(text))
		return nil
	}
	switch t.Kind() {
	case reflect.Bool:
		e.buf = strconv.AppendBool(e.buf, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.buf = AppendInt(e.buf, v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n := v.Uint()
		if n < 1<<53 {
			e.buf = strconv.AppendUint(e.buf, n, 10)
			return nil
		}
		return e.float(float64(n))
	case reflect.Float32, reflect.Float64:
		return e.float(v.Float())
	case reflect.String:
		e.string(v.String())
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		return e.indirect(v.Elem())
	case reflect.Struct:
		return e.structValue(v)
	case reflect.Map:
		return e.mapValue(v)
	case reflect.Slice:
		if v.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		if t.Elem().Kind() == reflect.Uint8 && !t.Elem().Implements(marshalerType) {
			e.string(base64.StdEncoding.EncodeToString(v.Bytes())) // as encoding/json encodes []byte
			return nil
		}
		return e.array(v)
	case reflect.Array:
		return e.array(v)
	default:
		return fmt.Errorf("%w: %s", ErrNotCanonicalizable, t)
	}
	return nil
}

// canonKind says how canonEncoder encodes values of a type beyond their reflect.Kind.
type canonKind uint8

const (
	kindPlain         canonKind = iota
	kindRaw                     // json.RawMessage: canonicalised text
	kindNumber                  // json.Number: its text as a double
	kindMarshaler               // implements json.Marshaler
	kindAddrMarshaler           // its pointer implements json.Marshaler
	kindTextMarshaler           // implements encoding.TextMarshaler: a string
)

// canonType is what canonKindOf finds out about a type.
type canonType struct {
	kind     canonKind
	appender bool // implements Appender (with a value receiver)
}

// canonKinds caches canonKindOf: asking a type what it implements costs more than the
// rest of encoding a small value.
var canonKinds sync.Map // reflect.Type -> canonType

// canonKindOf returns how values of t are encoded reflectively, and whether t writes its
// own canonical form (an Appender), which is used instead when it can be.
func canonKindOf(t reflect.Type) (canonKind, bool) {
	if c, ok := canonKinds.Load(t); ok {
		c := c.(canonType)
		return c.kind, c.appender
	}
	k := kindPlain
	direct := t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface
	appender := isAppender(t)
	switch {
	case t == rawMessageType:
		k = kindRaw
	case t == numberType:
		k = kindNumber
	case direct && t.Implements(marshalerType):
		k = kindMarshaler
	case t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(marshalerType):
		k = kindAddrMarshaler
	case direct && t.Implements(textMarshalerType):
		k = kindTextMarshaler
	}
	canonKinds.Store(t, canonType{kind: k, appender: appender})
	return k, appender
}

// indirect encodes the value a pointer or interface holds. Following one nests nothing in
// JSON, so it is bounded apart from depth (a type such as `type P *P` can point at itself).
func (e *canonEncoder) indirect(v reflect.Value) error {
	e.hops++
	defer func() { e.hops-- }()
	if e.hops > maxCanonDepth {
		return fmt.Errorf("%w: pointers followed more than %d deep", ErrNotCanonicalizable, maxCanonDepth)
	}
	return e.value(v)
}

func (e *canonEncoder) marshaler(v reflect.Value) error {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	raw, err := v.Interface().(json.Marshaler).MarshalJSON()
	if err != nil {
		return err
	}
	return e.marshaled(raw)
}

// marshaled appends the canonical form of raw, the text a MarshalJSON returned.
func (e *canonEncoder) marshaled(raw []byte) error {
	if plainJSONString(raw) { // e.g. a Time: already canonical
		e.buf = append(e.buf, raw...)
		return nil
	}
	return e.raw(raw)
}

// plainJSONString reports whether raw is a JSON string literal without escapes or control
// characters, whose canonical form is itself.
func plainJSONString(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	for _, c := range raw[1 : len(raw)-1] {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.Valid(raw)
}

func (e *canonEncoder) array(v reflect.Value) error {
	if err := e.enter(); err != nil {
		return err
	}
	e.buf = append(e.buf, '[')
	for i := range v.Len() {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.value(v.Index(i)); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, ']')
	e.leave()
	return nil
}

func (e *canonEncoder) mapValue(v reflect.Value) error {
	if v.IsNil() {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	if v.Type().Key().Kind() != reflect.String {
		return fmt.Errorf("%w: map key %s", ErrNotCanonicalizable, v.Type().Key())
	}
	keys := v.MapKeys()
	names := make([]string, len(keys))
	order := make([]int, len(keys))
	for i, k := range keys {
		names[i], order[i] = k.String(), i
	}
	slices.SortFunc(order, func(a, b int) int { return CompareUTF16(names[a], names[b]) })
	if err := e.enter(); err != nil {
		return err
	}
	e.buf = append(e.buf, '{')
	for n, i := range order {
		if n > 0 {
			e.buf = append(e.buf, ',')
		}
		e.string(names[i])
		e.buf = append(e.buf, ':')
		if err := e.value(v.MapIndex(keys[i])); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	e.leave()
	return nil
}

func (e *canonEncoder) structValue(v reflect.Value) error {
	fields, err := canonFieldsOf(v.Type())
	if err != nil {
		return err
	}
	if err := e.enter(); err != nil {
		return err
	}
	e.buf = append(e.buf, '{')
	first := true
	for _, f := range fields {
		fv, ok := fieldByIndex(v, f.index)
		if !ok {
			continue // promoted through a nil embedded pointer
		}
		if (f.omitEmpty && isEmptyValue(fv)) || (f.omitZero && isZeroValue(fv)) {
			continue
		}
		if !first {
			e.buf = append(e.buf, ',')
		}
		first = false
		e.buf = append(e.buf, f.quotedName...)
		e.buf = append(e.buf, ':')
		if err := e.value(fv); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	e.leave()
	return nil
}

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

func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

type isZeroer interface{ IsZero() bool }

func isZeroValue(v reflect.Value) bool {
	if z, ok := v.Interface().(isZeroer); ok {
		if v.Kind() == reflect.Pointer && v.IsNil() {
			return true
		}
		return z.IsZero()
	}
	return v.IsZero()
}

type canonField struct {
	name       string
	quotedName []byte
	index      []int
	omitEmpty  bool
	omitZero   bool
}

var canonFieldCache sync.Map // reflect.Type -> []canonField or error

// canonFieldsOf lists the JSON members of struct type t as encoding/json would encode
// them (json tag names, "-", promoted fields of embedded structs, the shallowest name
// winning), sorted by the UTF-16 code units of their names.
func canonFieldsOf(t reflect.Type) ([]canonField, error) {
	if c, ok := canonFieldCache.Load(t); ok {
		if err, isErr := c.(error); isErr {
			return nil, err
		}
		return c.([]canonField), nil
	}
	type candidate struct {
		canonField
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
			all = append(all, candidate{canonField: canonField{
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
	var fields []canonField
	for name, cs := range byName {
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
		f := cs[0].canonField
		var q canonEncoder
		q.string(name)
		f.quotedName = q.buf
		fields = append(fields, f)
	}
	slices.SortFunc(fields, func(a, b canonField) int { return CompareUTF16(a.name, b.name) })
	canonFieldCache.Store(t, fields)
	return fields, nil
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

// CompareUTF16 orders strings by their UTF-16 code units, as RFC 8785 sorts member names.
// It differs from byte order only between supplementary characters (surrogate pairs,
// 0xD800-0xDFFF) and characters 0xE000-0xFFFF.
func CompareUTF16(a, b string) int {
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

// compareUTF16Bytes is CompareUTF16 of text in byte slices.
func compareUTF16Bytes(a, b []byte) int {
	for len(a) > 0 && len(b) > 0 {
		if a[0] < utf8.RuneSelf && b[0] < utf8.RuneSelf { // ASCII: one unit each
			if a[0] != b[0] {
				return int(a[0]) - int(b[0])
			}
			a, b = a[1:], b[1:]
			continue
		}
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if ra != rb {
			ua, ub := utf16Unit(ra), utf16Unit(rb)
			if ua != ub {
				if ua < ub {
					return -1
				}
				return 1
			}
			if ra < rb {
				return -1
			}
			return 1
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// utf16Unit returns the first UTF-16 code unit of r.
func utf16Unit(r rune) rune {
	if r >= 0x10000 {
		hi, _ := utf16.EncodeRune(r)
		return hi
	}
	return r
}

// string appends s as a canonical JSON string (AppendString).
func (e *canonEncoder) string(s string) { e.buf = AppendString(e.buf, s) }

// AppendString appends s as a JSON string escaped as RFC 8785 requires (ECMAScript's
// JSON.stringify): \" \\ \b \f \n \r \t, other control characters as \u00xx, everything
// else literally. Invalid UTF-8 becomes U+FFFD, as encoding/json does. Hand-written
// canonical forms of fixed types (the workload diagnosis id) escape their strings with it.
func AppendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, "\uFFFD"...)
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	buf = append(buf, '"')
	return buf
}

const hexDigits = "0123456789abcdef"

// float appends f in the ECMAScript Number.prototype.toString form RFC 8785 prescribes:
// the shortest digits that round-trip, in plain notation for exponents from -7 to 20 and in
// exponential notation otherwise.
func (e *canonEncoder) float(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%w: %v", ErrNotCanonicalizable, f)
	}
	e.buf = AppendNumber(e.buf, f)
	return nil
}

// AppendNumber appends the ECMAScript string form of the finite number f.
func AppendNumber(buf []byte, f float64) []byte {
	if f == 0 {
		return append(buf, '0') // also for -0
	}
	if f < 0 {
		buf = append(buf, '-')
		f = -f
	}
	var tmp [32]byte
	sci := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64) // d[.ddd]e±xx
	mant, expPart, _ := bytes.Cut(sci, []byte{'e'})
	exp, _ := strconv.Atoi(string(expPart))
	var digits []byte
	digits = append(digits, mant[0])
	if len(mant) > 2 {
		digits = append(digits, mant[2:]...)
	}
	k, n := len(digits), exp+1 // value = 0.d1..dk × 10^n
	switch {
	case k <= n && n <= 21:
		buf = append(buf, digits...)
		for range n - k {
			buf = append(buf, '0')
		}
	case 0 < n && n <= 21:
		buf = append(buf, digits[:n]...)
		buf = append(buf, '.')
		buf = append(buf, digits[n:]...)
	case -6 < n && n <= 0:
		buf = append(buf, '0', '.')
		for range -n {
			buf = append(buf, '0')
		}
		buf = append(buf, digits...)
	default:
		buf = append(buf, digits[0])
		if k > 1 {
			buf = append(buf, '.')
			buf = append(buf, digits[1:]...)
		}
		buf = append(buf, 'e')
		if n-1 >= 0 {
			buf = append(buf, '+')
		}
		buf = strconv.AppendInt(buf, int64(n-1), 10)
	}
	return buf
}

// AppendInt appends the ECMAScript string form of n: its digits when a double holds it
// exactly, else the double nearest to it.
func AppendInt(buf []byte, n int64) []byte {
	if n > -1<<53 && n < 1<<53 { // exact as a double: its digits are its ECMAScript form
		return strconv.AppendInt(buf, n, 10)
	}
	return AppendNumber(buf, float64(n))
}

// numberText appends a JSON number given as text, as the double it denotes.
func (e *canonEncoder) numberText(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("%w: number %s", ErrNotCanonicalizable, s)
	}
	return e.float(f)
}

// raw appends the canonical form of the JSON text raw. Text that is canonical already (an
// Object the API canonicalised when it decoded it, such as a request's evidence) is
// appended as it is; anything else is parsed and encoded again.
func (e *canonEncoder) raw(raw []byte) error {
	if isCanonical(raw, e.depth, e.limit) {
		e.buf = append(e.buf, raw...)
		return nil
	}
	if buf, ok := rawFast(e.buf, raw, e.depth, e.limit); ok {
		e.buf = buf
		return nil
	}
	return e.rawDecoded(raw)
}

// rawDecoded is raw the long way: the text decoded by encoding/json, which says what any
// JSON text means and how text that is not JSON fails, and its value encoded.
func (e *canonEncoder) rawDecoded(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%w: %v", ErrNotCanonicalizable, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data after JSON value", ErrNotCanonicalizable)
	}
	return e.anyValue(v)
}

// isCanonical reports whether raw is one JSON value in its canonical form: no whitespace,
// members in UTF-16 order without repeats, strings escaped as RFC 8785 escapes them and
// numbers that are integers of at most 15 digits (written the same by ECMAScript). It
// answers false whenever in doubt (other numbers, escaped member names): the caller then
// canonicalises the text the long way. depth is the nesting raw sits in and limit the
// encoder's bound, counted as the encoder counts them.
func isCanonical(raw []byte, depth, limit int) bool {
	c := canonChecker{b: raw, limit: limit}
	return c.value(depth) && c.i == len(raw)
}

// canonChecker scans JSON text for isCanonical.
type canonChecker struct {
	b     []byte
	i     int
	limit int
}

// value scans one value inside depth objects and arrays.
func (c *canonChecker) value(depth int) bool {
	if c.i >= len(c.b) {
		return false
	}
	switch b := c.b[c.i]; {
	case b == '{':
		return depth < c.limit && c.object(depth+1)
	case b == '[':
		return depth < c.limit && c.array(depth+1)
	case b == '"':
		_, _, ok := c.string()
		return ok
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	case b == '-' || (b >= '0' && b <= '9'):
		return c.integer()
	}
	return false
}

func (c *canonChecker) literal(word string) bool {
	if !bytes.HasPrefix(c.b[c.i:], []byte(word)) {
		return false
	}
	c.i += len(word)
	return true
}

// integer accepts 0 and integers without leading zeros of at most 15 digits (exact in a
// double, and written without exponent or fraction by ECMAScript); not -0.
func (c *canonChecker) integer() bool {
	start := c.i
	if c.b[c.i] == '-' {
		c.i++
	}
	digits := c.i
	for c.i < len(c.b) && c.b[c.i] >= '0' && c.b[c.i] <= '9' {
		c.i++
	}
	n := c.i - digits
	switch {
	case n == 0 || n > 15:
		return false
	case c.b[digits] == '0' && (n > 1 || digits > start): // leading zero, or -0
		return false
	case c.i < len(c.b) && (c.b[c.i] == '.' || c.b[c.i] == 'e' || c.b[c.i] == 'E'):
		return false
	}
	return true
}

// string scans a string escaped as canonical JSON escapes it and returns its text, which
// is the string itself when it has no escapes (member names are compared by it), as a
// slice of the scanned text (no copy: every member name of every object is one).
func (c *canonChecker) string() (text []byte, escaped, ok bool) {
	c.i++ // the opening quote
	start := c.i
	for c.i < len(c.b) {
		b := c.b[c.i]
		switch {
		case b == '"':
			text = c.b[start:c.i]
			c.i++
			return text, escaped, true
		case b < 0x20:
			return nil, false, false
		case b == '\\':
			if c.i+1 >= len(c.b) {
				return nil, false, false
			}
			escaped = true
			switch c.b[c.i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				c.i += 2
			case 'u':
				// Only control characters without a short escape are written \u00xx.
				if c.i+6 > len(c.b) || string(c.b[c.i+2:c.i+4]) != "00" {
					return nil, false, false
				}
				hi, lo := c.b[c.i+4], c.b[c.i+5]
				if (hi != '0' && hi != '1') || !(lo >= '0' && lo <= '9' || lo >= 'a' && lo <= 'f') {
					return nil, false, false
				}
				switch r := rune(hi-'0')<<4 | rune(hexValue(lo)); r {
				case '\b', '\f', '\n', '\r', '\t':
					return nil, false, false
				}
				c.i += 6
			default:
				return nil, false, false
			}
		case b < utf8.RuneSelf:
			c.i++
		default:
			r, size := utf8.DecodeRune(c.b[c.i:])
			if r == utf8.RuneError && size == 1 {
				return nil, false, false
			}
			c.i += size
		}
	}
	return nil, false, false
}

func hexValue(b byte) byte {
	if b <= '9' {
		return b - '0'
	}
	return b - 'a' + 10
}

// object scans an object at depth (1 for the outermost).
func (c *canonChecker) object(depth int) bool {
	c.i++ // {
	if c.i < len(c.b) && c.b[c.i] == '}' {
		c.i++
		return true
	}
	var prev []byte
	first := true
	for {
		if c.i >= len(c.b) || c.b[c.i] != '"' {
			return false
		}
		name, escaped, ok := c.string()
		if !ok || escaped { // an escaped name: compare decoded names the long way
			return false
		}
		if !first && compareUTF16Bytes(prev, name) >= 0 {
			return false
		}
		prev, first = name, false
		if c.i >= len(c.b) || c.b[c.i] != ':' {
			return false
		}
		c.i++
		if !c.value(depth) {
			return false
		}
		if c.i >= len(c.b) {
			return false
		}
		switch c.b[c.i] {
		case ',':
			c.i++
		case '}':
			c.i++
			return true
		default:
			return false
		}
	}
}

// array scans an array at depth (1 for the outermost).
func (c *canonChecker) array(depth int) bool {
	c.i++ // [
	if c.i < len(c.b) && c.b[c.i] == ']' {
		c.i++
		return true
	}
	for {
		if !c.value(depth) || c.i >= len(c.b) {
			return false
		}
		switch c.b[c.i] {
		case ',':
			c.i++
		case ']':
			c.i++
			return true
		default:
			return false
		}
	}
}
