package canonical_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/payload"
)

// appenderGen makes random values of the types that write their own canonical JSON: every
// optional field nil or not, strings of what canonical JSON escapes and what it does not
// (control characters, " \ U+2028, < > &, invalid UTF-8, supplementary characters, runs
// longer than a word of plain bytes), integers beyond a double's exact range, numbers of
// every ECMAScript form, times beyond year 9999, and metadata objects in canonical form
// and not (names in random order and of every UTF-16 ordering case, spaces, numbers to
// rewrite, nesting), some of them not JSON at all.
type appenderGen struct{ r *rand.Rand }

var appenderPieces = []string{"", "a", "Z", "0", " ", `"`, `\`, "/", "\n", "\r", "\t", "\b", "\f", "\x00", "\x01", "\x1f", "\x7f",
	"é", "€", "\u2028", "\u2029", "\ufeff", "\ufffd", "\uffff", "\U00010000", "😀", "\U0010FFFF", "<", ">", "&",
	"\xff", "\xc3", "\xe2\x80", "\xed\xa0\x80", "plain text of some length ", "01a20eb2-8b0f-77a5-8e99-d935ffff857a"}

func (g appenderGen) str() string {
	var b strings.Builder
	for range g.r.IntN(8) {
		if g.r.IntN(6) == 0 {
			b.WriteByte(byte(g.r.IntN(256)))
		} else {
			b.WriteString(appenderPieces[g.r.IntN(len(appenderPieces))])
		}
	}
	return b.String()
}

func (g appenderGen) optStr() *string {
	if g.r.IntN(3) == 0 {
		return nil
	}
	s := g.str()
	return &s
}

var appenderInts = []int64{0, 1, -1, 42, 1<<53 - 1, 1 << 53, 1<<53 + 1, -(1<<53 - 1), -(1 << 53), -(1<<53 + 1),
	math.MaxInt64, math.MinInt64, 1e15, 1e16 + 1, 123456789012345678}

func (g appenderGen) int() int64 {
	switch g.r.IntN(3) {
	case 0:
		return appenderInts[g.r.IntN(len(appenderInts))]
	case 1:
		return g.r.Int64N(1<<20) - 1<<19
	default:
		return int64(g.r.Uint64())
	}
}

func (g appenderGen) optInt() *int64 {
	if g.r.IntN(3) == 0 {
		return nil
	}
	n := g.int()
	return &n
}

var appenderFloats = []float64{0, math.Copysign(0, -1), 1.5, 0.1, -0.25, 1e21, 1e20, 999999999999999900000, 1e-6, 1e-7,
	9.999999999999997e-7, 5e-324, -5e-324, math.MaxFloat64, -math.MaxFloat64, 1 << 53, 1<<53 + 2, 333333333.3333332, 1e23}

// float is a finite number; NaN and the infinities are given apart.
func (g appenderGen) float() float64 {
	switch g.r.IntN(4) {
	case 0:
		return appenderFloats[g.r.IntN(len(appenderFloats))]
	case 1:
		return g.r.NormFloat64() * math.Pow(10, float64(g.r.IntN(50)-25))
	case 2:
		return float64(g.r.IntN(100000)) / 8
	default:
		return math.Float64frombits(g.r.Uint64()&^(0x7ff<<52) | uint64(g.r.IntN(0x7fe))<<52)
	}
}

func (g appenderGen) time() accountable.Time {
	switch g.r.IntN(8) {
	case 0:
		return accountable.Time{}
	case 1: // years of five digits and before year 1
		return accountable.Time{Time: time.Date(g.r.IntN(30000)-10000, time.Month(1+g.r.IntN(12)), 1+g.r.IntN(28), 0, 0, 0, g.r.IntN(1e9), time.UTC)}
	}
	zone := time.FixedZone("z", (g.r.IntN(48)-24)*1800)
	t := time.Unix(g.r.Int64N(4e9), g.r.Int64N(1e9)).In(zone)
	if g.r.IntN(2) == 0 {
		return accountable.TimeOf(t)
	}
	return accountable.Time{Time: t} // nanoseconds and a zone: not as the store keeps it
}

func (g appenderGen) optTime() *accountable.Time {
	if g.r.IntN(3) == 0 {
		return nil
	}
	t := g.time()
	return &t
}

// names are member names whose UTF-16 order differs from their byte order (U+FFFF and a
// supplementary character), and ones that share prefixes.
var appenderNames = []string{"a", "b", "ab", "a b", "", "\uffff", "\U00010000", "😀", "é", "\u2028", "z\"", `\`, "\x01", "A", "é1", "source", "labels"}

// object is the text of a random JSON object, in random member order with random
// spacing; nested inside depth others.
func (g appenderGen) object(depth int) string {
	var b strings.Builder
	sp := func() {
		if g.r.IntN(4) == 0 {
			b.WriteString([]string{" ", "\n", "\t ", "\r\n"}[g.r.IntN(4)])
		}
	}
	b.WriteByte('{')
	names := slices.Clone(appenderNames)
	g.r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for i, name := range names[:g.r.IntN(6)] {
		if i > 0 {
			b.WriteByte(',')
		}
		sp()
		q, _ := json.Marshal(name)
		if g.r.IntN(5) == 0 { // an escaped name: the long way
			q = []byte(strings.ReplaceAll(string(q), "a", `\u0061`))
		}
		b.Write(q)
		sp()
		b.WriteByte(':')
		sp()
		b.WriteString(g.member(depth + 1))
		sp()
	}
	b.WriteByte('}')
	return b.String()
}

func (g appenderGen) member(depth int) string {
	k := g.r.IntN(9)
	if depth > 4 {
		k = g.r.IntN(6)
	}
	switch k {
	case 0:
		return "null"
	case 1:
		return []string{"true", "false"}[g.r.IntN(2)]
	case 2:
		return []string{"1", "-0", "0.1", "1e21", "1E-7", "12345678901234567", "100", "1.0", "-5e-324", "2.5e+3"}[g.r.IntN(10)]
	case 3:
		return fmt.Sprint(g.float())
	case 4, 5:
		q, _ := json.Marshal(g.str()) // encoding/json's escapes: \u003c, \ufffd, \u2028
		return string(q)
	case 6:
		var parts []string
		for range g.r.IntN(4) {
			parts = append(parts, g.member(depth+1))
		}
		return "[" + strings.Join(parts, ",") + "]"
	default:
		return g.object(depth)
	}
}

// metadata is an Object as requests and the store give them, and odd ones.
func (g appenderGen) metadata() accountable.Object {
	switch g.r.IntN(12) {
	case 0:
		return nil
	case 1:
		return accountable.Object{}
	case 2:
		return accountable.Object([]string{`{"a":`, `{"a":1}x`, `{"a":1e400}`, `[1,2]`, `"plain"`, `"tab\t"`, `17`, `{"\ud800":1}`}[g.r.IntN(8)])
	case 3, 4, 5, 6:
		raw := g.object(0)
		if c, err := canonical.Transform([]byte(raw)); err == nil {
			return accountable.Object(c) // as the API keeps it
		}
		return accountable.Object(raw)
	default:
		return accountable.Object(g.object(0))
	}
}

var (
	timeType   = reflect.TypeFor[accountable.Time]()
	objectType = reflect.TypeFor[accountable.Object]()
)

// fill sets v to a random value of its type, field by field (a field added to a type is
// generated too): times and objects as above, any pointer, slice or struct zero now and
// then (omitempty, omitzero), and one number in ten NaN or an infinity.
func (g appenderGen) fill(v reflect.Value) {
	switch v.Type() {
	case timeType:
		v.Set(reflect.ValueOf(g.time()))
		return
	case objectType:
		v.Set(reflect.ValueOf(g.metadata()))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(g.str())
	case reflect.Int, reflect.Int64:
		v.SetInt(g.int())
	case reflect.Float64:
		if g.r.IntN(10) == 0 {
			v.SetFloat([]float64{math.NaN(), math.Inf(1), math.Inf(-1)}[g.r.IntN(3)])
		} else {
			v.SetFloat(g.float())
		}
	case reflect.Bool:
		v.SetBool(g.r.IntN(2) == 0)
	case reflect.Pointer:
		if g.r.IntN(3) > 0 {
			p := reflect.New(v.Type().Elem())
			g.fill(p.Elem())
			v.Set(p)
		}
	case reflect.Slice:
		if g.r.IntN(3) > 0 {
			n := g.r.IntN(4)
			s := reflect.MakeSlice(v.Type(), n, n)
			for i := range n {
				g.fill(s.Index(i))
			}
			v.Set(s)
		}
	case reflect.Struct:
		if g.r.IntN(6) > 0 {
			g.fillFields(v)
		}
	default:
		panic(fmt.Sprintf("fill: no values of %s", v.Type()))
	}
}

// fillFields fills the exported fields of the struct v, each left zero now and then.
func (g appenderGen) fillFields(v reflect.Value) {
	for i := range v.NumField() {
		if v.Type().Field(i).IsExported() && g.r.IntN(6) > 0 {
			g.fill(v.Field(i))
		}
	}
}

// appenderValues are the types that write their own canonical JSON, and
// appenderRefusals those whose values have none now and then (a NaN, metadata that is
// not JSON).
var (
	appenderValues = []canonical.Appender{accountable.Task{}, accountable.Receipt{}, accountable.Object{},
		payload.WorkCreated{}, payload.WorkCompleted{}, payload.HandoffChanged{}, payload.LaunchJobChanged{}, payload.RunChanged{},
		payload.InitiativeCreated{}, payload.MilestoneCreated{}, accountable.CreateWork{}, accountable.CompleteWork{}}
	appenderRefusals = []string{"accountable.Task", "accountable.Receipt", "accountable.Object", "payload.WorkCreated",
		"payload.WorkCompleted", "payload.HandoffChanged", "accountable.CreateWork", "accountable.CompleteWork"}
)

// value is a random value of a type with its own canonical form.
func (g appenderGen) value() canonical.Appender {
	v := reflect.New(reflect.TypeOf(appenderValues[g.r.IntN(len(appenderValues))])).Elem()
	if v.Kind() == reflect.Struct {
		g.fillFields(v)
	} else {
		g.fill(v)
	}
	return v.Interface().(canonical.Appender)
}

// Every payload type that writes its own canonical form is compared with the reflective
// encoding below.
func TestEveryAppenderIsCompared(t *testing.T) {
	compared := map[reflect.Type]bool{}
	for _, v := range appenderValues {
		compared[reflect.TypeOf(v)] = true
	}
	appender := reflect.TypeFor[canonical.Appender]()
	for event, typ := range payload.Types {
		if typ.Implements(appender) && !compared[typ] {
			t.Errorf("%s: %s writes its own canonical JSON, and appenderValues does not list it", event, typ)
		}
	}
}

// sameResult fails unless the two encodings gave the same bytes, or the same error.
func sameResult(t *testing.T, what string, got []byte, gotErr error, want []byte, wantErr error) {
	t.Helper()
	if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("%s: error %v, the reflective encoding's %v", what, gotErr, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s:\n got  %s\n want %s", what, got, want)
	}
}

// The types' own canonical forms are the reflective encoder's, byte for byte: called
// directly, through canonical.JSON, and as a value inside other values (behind a
// pointer, in a slice, in a map, in a struct).
func TestAppendersWriteTheReflectiveEncoding(t *testing.T) {
	g := appenderGen{rand.New(rand.NewPCG(30, 8785))}
	kinds := map[string]int{}
	for i := range 40000 {
		v := g.value()
		what := fmt.Sprintf("value %d %T %+v", i, v, v)
		want, wantErr := canonical.ReflectiveJSON(v)
		kinds[fmt.Sprintf("%T ok=%v", v, wantErr == nil)]++

		got, gotErr := v.AppendCanonicalJSON(nil, 0, canonical.AppendFreeForm)
		if wantErr != nil { // the encoder discards an Appender's error and encodes reflectively
			if gotErr == nil {
				t.Fatalf("%s: direct: %s, the reflective encoding fails: %v", what, got, wantErr)
			}
		} else {
			sameResult(t, what+" (direct)", got, gotErr, want, wantErr)
		}
		got, gotErr = canonical.JSON(v)
		sameResult(t, what+" (canonical.JSON)", got, gotErr, want, wantErr)

		prefix := []byte(`{"x":`)
		got, gotErr = canonical.AppendJSON(slices.Clone(prefix), v)
		if gotErr == nil && !bytes.HasPrefix(got, prefix) {
			t.Fatalf("%s: AppendJSON lost its prefix: %s", what, got)
		}
		if gotErr == nil {
			got = got[len(prefix):]
		}
		sameResult(t, what+" (AppendJSON)", got, gotErr, want, wantErr)

		if i%10 == 0 {
			type holder struct {
				Ptr   any            `json:"ptr"`
				List  []any          `json:"list"`
				Map   map[string]any `json:"map"`
				Value any            `json:"value,omitempty"`
			}
			h := holder{Ptr: &v, List: []any{v, nil}, Map: map[string]any{"v": v}, Value: v}
			want, wantErr := canonical.ReflectiveJSON(h)
			got, gotErr := canonical.JSON(h)
			sameResult(t, what+" (inside)", got, gotErr, want, wantErr)
		}
	}
	for kind, n := range kinds {
		if !strings.HasSuffix(kind, "ok=true") || n < 500 {
			t.Logf("%s: %d values", kind, n)
		}
	}
	// The generator reaches both outcomes of every type (the counts above).
	for _, v := range appenderValues {
		if name := fmt.Sprintf("%T", v); kinds[name+" ok=true"] < 500 {
			t.Errorf("%s: %d canonicalised: too few to compare", name, kinds[name+" ok=true"])
		}
	}
	for _, name := range appenderRefusals {
		if kinds[name+" ok=false"] < 50 {
			t.Errorf("%s: %d refused: too few to compare", name, kinds[name+" ok=false"])
		}
	}
}

// A payload nested deep in other values: the encoder's bound on nesting fails the same
// values with and without Appenders (which pass the depth of the free-form JSON on, and
// are not used within MaxAppenderNesting of the bound).
func TestAppendersKeepTheNestingBound(t *testing.T) {
	limit := canonical.MaxDepth
	for _, outer := range []int{0, 1, limit - 40, limit - canonical.MaxAppenderNesting - 2, limit - canonical.MaxAppenderNesting, limit - 3, limit - 2, limit} {
		for _, inner := range []int{0, 1, 10, 30, 37, 38, 39, 40} {
			meta := accountable.Object(`{"n":` + nestedJSON(inner, false, `1`) + `}`)
			for _, v := range []any{meta, accountable.Task{Metadata: meta}, accountable.Receipt{Evidence: meta},
				payload.WorkCreated{Task: accountable.Task{Metadata: meta}}, payload.WorkCompleted{Receipt: accountable.Receipt{Evidence: meta}},
				payload.HandoffChanged{Result: meta}} {
				what := fmt.Sprintf("%T in %d arrays, its free-form JSON %d deep", v, outer, inner)
				if outer+canonical.MaxAppenderNesting <= limit { // where the encoder would use it
					// Directly: a depth passed on too deep fails where the encoder would not
					// (which would only cost it the reflective pass), too shallow succeeds
					// where it would fail.
					_, err := v.(canonical.Appender).AppendCanonicalJSON(nil, outer, canonical.AppendFreeForm)
					var arrays any = v
					for range outer {
						arrays = []any{arrays}
					}
					if _, want := canonical.ReflectiveJSON(arrays); (err == nil) != (want == nil) {
						t.Fatalf("%s, called directly: error %v, the reflective encoding's %v", what, err, want)
					}
				}
				for range outer {
					v = []any{v}
				}
				want, wantErr := canonical.ReflectiveJSON(v)
				got, gotErr := canonical.JSON(v)
				sameResult(t, what, got, gotErr, want, wantErr)
			}
		}
	}
}

// canonical.JSON uses an Appender's form (these are wrong on purpose, so that using them
// shows), at the top and inside other values; not one a struct has only by embedding,
// nor one with a pointer receiver; and not after it failed.
type wrongAppender struct {
	A string `json:"a"`
}

func (w wrongAppender) AppendCanonicalJSON(buf []byte, depth int, _ canonical.FreeForm) ([]byte, error) {
	if w.A == "fail" {
		return append(buf, "garbage"...), errors.New("no")
	}
	return fmt.Appendf(buf, `"own form at depth %d"`, depth), nil
}

type embedsAppender struct {
	wrongAppender
	B string `json:"b"`
}

type pointerAppender struct {
	A string `json:"a"`
}

func (p *pointerAppender) AppendCanonicalJSON(buf []byte, _ int, _ canonical.FreeForm) ([]byte, error) {
	return append(buf, `"own form"`...), nil
}

func TestCanonicalJSONUsesAppenders(t *testing.T) {
	var nilPtr *wrongAppender
	for _, c := range []struct {
		v    any
		want string
	}{
		{wrongAppender{A: "x"}, `"own form at depth 0"`},
		{&wrongAppender{A: "x"}, `"own form at depth 0"`},
		{nilPtr, `null`},
		{[]any{map[string]any{"k": wrongAppender{}}}, `[{"k":"own form at depth 2"}]`},
		{struct {
			W wrongAppender `json:"w"`
		}{}, `{"w":"own form at depth 1"}`},
		{wrongAppender{A: "fail"}, `{"a":"fail"}`},
		{embedsAppender{wrongAppender{A: "x"}, "y"}, `{"a":"x","b":"y"}`},
		{pointerAppender{A: "x"}, `{"a":"x"}`},
		{&pointerAppender{A: "x"}, `{"a":"x"}`},
	} {
		got, err := canonical.JSON(c.v)
		if err != nil || string(got) != c.want {
			t.Errorf("%T %+v: got %s (%v), want %s", c.v, c.v, got, err, c.want)
		}
	}
	// The real ones are used: canonical.JSON of a payload allocates no more than its
	// output, the value's box and the buffer it outgrew.
	cmd := "c"
	p := payload.WorkCreated{Task: accountable.Task{ID: "t", Metadata: accountable.Object(`{"a":[1,{"b":"c"}]}`)}, CommandID: &cmd}
	var v any = p
	// The race detector makes sync.Pool drop what is put in it now and then, so under -race
	// (make test) only the comparison with the reflective encoding holds.
	own := testing.AllocsPerRun(100, func() { _, _ = canonical.JSON(v) })
	reflective := testing.AllocsPerRun(100, func() { _, _ = canonical.ReflectiveJSON(v) })
	if own >= reflective {
		t.Errorf("canonical.JSON of a work.created payload: %v allocations, the reflective encoding's %v", own, reflective)
	}
	if !raceEnabled && own > 2 {
		t.Errorf("canonical.JSON of a work.created payload: %v allocations, want its own form's 2 at most", own)
	}
	if reflective <= 2 {
		t.Errorf("the reflective encoding: %v allocations: the check above cannot tell them apart", reflective)
	}
}

// The root's canonical strings and numbers are canonical.AppendString's, AppendNumber's
// and AppendInt's.
func TestRootCanonicalScalarsAreTheCanonicalPackages(t *testing.T) {
	checkString := func(s string) {
		t.Helper()
		if got, want := accountable.AppendCanonicalString(nil, s), canonical.AppendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	}
	for b := range 256 {
		checkString(string([]byte{byte(b)}))
		checkString("plain ascii " + string([]byte{byte(b)}) + " and more plain ascii")
	}
	g := appenderGen{rand.New(rand.NewPCG(8785, 30))}
	for range 20000 {
		checkString(g.str())
	}
	checkFloat := func(f float64) {
		t.Helper()
		got, err := accountable.AppendCanonicalNumber(nil, f)
		if want := canonical.AppendNumber(nil, f); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%v (%#x): got %s (%v), want %s", f, math.Float64bits(f), got, err, want)
		}
	}
	for _, f := range appenderFloats {
		checkFloat(f)
		checkFloat(-f)
	}
	for range 100000 {
		checkFloat(g.float())
		checkFloat(math.Float64frombits(g.r.Uint64()&^(0x7ff<<52) | uint64(g.r.IntN(0x7ff))<<52))
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got, err := accountable.AppendCanonicalNumber(nil, f); err == nil {
			t.Errorf("%v: %s", f, got)
		}
	}
	for range 100000 {
		n := g.int()
		if got, want := accountable.AppendCanonicalInt(nil, n), canonical.AppendInt(nil, n); !bytes.Equal(got, want) {
			t.Fatalf("%d: got %s, want %s", n, got, want)
		}
	}
}

// The canonical-text check orders names as CompareUTF16 does.
func TestCompareUTF16Bytes(t *testing.T) {
	g := appenderGen{rand.New(rand.NewPCG(16, 16))}
	sign := func(n int) int { return min(max(n, -1), 1) }
	for range 50000 {
		a, b := g.str(), g.str()
		if g.r.IntN(3) == 0 {
			b = a + g.str()
		}
		if got, want := sign(canonical.CompareUTF16Bytes([]byte(a), []byte(b))), sign(canonical.CompareUTF16(a, b)); got != want {
			t.Fatalf("%q, %q: %d, CompareUTF16 %d", a, b, got, want)
		}
	}
}

// nestedPair writes its own canonical form correctly, with an object and a pointer of its
// own: where the encoder's bounds fail it reflectively, they fail it with its Appender too.
type nestedPair struct {
	A struct {
		B *int64 `json:"b"`
	} `json:"a"`
}

func (p nestedPair) AppendCanonicalJSON(buf []byte, _ int, _ canonical.FreeForm) ([]byte, error) {
	buf = append(buf, `{"a":{"b":`...)
	if p.A.B == nil {
		buf = append(buf, "null"...)
	} else {
		buf = canonical.AppendInt(buf, *p.A.B)
	}
	return append(buf, "}}"...), nil
}

func TestAppendersAreNotUsedNearTheBounds(t *testing.T) {
	n := int64(7)
	var p nestedPair
	p.A.B = &n
	if got, err := canonical.JSON(p); err != nil || string(got) != `{"a":{"b":7}}` {
		t.Fatalf("got %s (%v)", got, err)
	}
	for outer := canonical.MaxDepth - 2*canonical.MaxAppenderNesting; outer <= canonical.MaxDepth; outer++ {
		var v any = p
		for range outer {
			v = []any{v}
		}
		want, wantErr := canonical.ReflectiveJSON(v)
		got, gotErr := canonical.JSON(v)
		sameResult(t, fmt.Sprintf("in %d arrays", outer), got, gotErr, want, wantErr)
	}
	for levels := canonical.MaxDepth/2 - canonical.MaxAppenderNesting; levels <= canonical.MaxDepth/2+1; levels++ {
		var v any = p
		for range levels { // each a pointer and an interface to follow
			inner := v
			v = &inner
		}
		want, wantErr := canonical.ReflectiveJSON(v)
		got, gotErr := canonical.JSON(v)
		sameResult(t, fmt.Sprintf("behind %d pointers", levels), got, gotErr, want, wantErr)
	}
}
