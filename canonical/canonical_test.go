package canonical_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// The RFC 8785 appendix's number examples (IEEE 754 bit patterns and their canonical form).
func TestCanonicalNumbersFollowRFC8785(t *testing.T) {
	cases := map[uint64]string{
		0x0000000000000000: "0", 0x8000000000000000: "0", 0x0000000000000001: "5e-324",
		0x8000000000000001: "-5e-324", 0x7fefffffffffffff: "1.7976931348623157e+308",
		0xffefffffffffffff: "-1.7976931348623157e+308", 0x4340000000000000: "9007199254740992",
		0xc340000000000000: "-9007199254740992", 0x4430000000000000: "295147905179352830000",
		0x44b52d02c7e14af5: "9.999999999999997e+22", 0x44b52d02c7e14af6: "1e+23",
		0x44b52d02c7e14af7: "1.0000000000000001e+23", 0x444b1ae4d6e2ef4e: "999999999999999700000",
		0x444b1ae4d6e2ef4f: "999999999999999900000", 0x444b1ae4d6e2ef50: "1e+21",
		0x3eb0c6f7a0b5ed8c: "9.999999999999997e-7", 0x3eb0c6f7a0b5ed8d: "0.000001",
		0x41b3de4355555553: "333333333.3333332", 0x41b3de4355555554: "333333333.33333325",
		0x41b3de4355555555: "333333333.3333333", 0x41b3de4355555556: "333333333.3333334",
		0x41b3de4355555557: "333333333.33333343", 0xbecbf647612f3696: "-0.0000033333333333333333",
		0x43143ff3c1cb0959: "1424953923781206.2",
	}
	for bits, want := range cases {
		got, err := canonical.JSON(math.Float64frombits(bits))
		if err != nil || string(got) != want {
			t.Errorf("%#016x: got %s (%v), want %s", bits, got, err, want)
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := canonical.JSON(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

type canonSample struct {
	Name     string          `json:"name"`
	Omitted  *string         `json:"omitted,omitzero"`
	Empty    string          `json:"empty,omitempty"`
	Nullable *int64          `json:"nullable"`
	Nested   *canonSample    `json:"nested,omitempty"`
	Raw      json.RawMessage `json:"raw,omitempty"`
	Map      map[string]any  `json:"map"`
	List     []float64       `json:"list"`
	When     accountable.Time
	Ignored  string `json:"-"`
	canonEmbedded
}

type canonEmbedded struct {
	Promoted string `json:"promoted"`
	Name     string `json:"name"` // shadowed by the outer field
}

// Go values canonicalise to what an independent RFC 8785 implementation makes of their
// encoding/json text.
func TestCanonicalJSONMatchesAnIndependentImplementation(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		v := randomJSONValue(rng, 0)
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jcs.Transform(raw)
		if err != nil {
			t.Fatal(err)
		}
		got, err := canonical.JSON(v)
		if err != nil || string(got) != string(want) {
			t.Fatalf("value %d:\n got  %s (%v)\n want %s", i, got, err, want)
		}
		fromText, err := canonical.Transform(raw)
		if err != nil || string(fromText) != string(want) {
			t.Fatalf("text %d:\n got  %s (%v)\n want %s", i, fromText, err, want)
		}
	}
	n := int64(-7)
	s := canonSample{Name: "outer", Nullable: &n, Raw: json.RawMessage(`{"b": 1, "a": [true, null, 1.50]}`),
		Map:  map[string]any{"\u20ac": 1, "\r": "x", "1": nil, "\U0001F600": 2.5, "\ufb33": false},
		List: []float64{1e21, 1e-7, 0.1, -0}, When: accountable.TimeOf(time.Date(2026, 11, 22, 1, 2, 3, 4000, time.UTC)),
		Ignored: "not encoded", canonEmbedded: canonEmbedded{Promoted: "p", Name: "shadowed"}}
	s.Nested = &canonSample{Name: "inner\u2028\u0007\"\\"}
	raw, _ := json.Marshal(s)
	want, _ := jcs.Transform(raw)
	got, err := canonical.JSON(s)
	if err != nil || string(got) != string(want) {
		t.Fatalf("struct:\n got  %s (%v)\n want %s", got, err, want)
	}
	if strings.Contains(string(got), "shadowed") || strings.Contains(string(got), "not encoded") {
		t.Fatalf("hidden fields encoded: %s", got)
	}
}

func randomJSONValue(rng *rand.Rand, depth int) any {
	k := rng.IntN(8)
	if depth > 3 {
		k = rng.IntN(5)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		switch rng.IntN(4) {
		case 0:
			return float64(rng.Int64N(1<<60) - 1<<59)
		case 1:
			return math.Float64frombits(rng.Uint64()&^(0x7ff<<52) | uint64(rng.IntN(0x7fe))<<52)
		case 2:
			return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
		default:
			return float64(rng.IntN(1000))
		}
	case 3, 4:
		return randomString(rng)
	case 5:
		n := rng.IntN(5)
		out := make([]any, n)
		for i := range out {
			out[i] = randomJSONValue(rng, depth+1)
		}
		return out
	default:
		n := rng.IntN(6)
		out := map[string]any{}
		for range n {
			out[randomString(rng)] = randomJSONValue(rng, depth+1)
		}
		return out
	}
}

func randomString(rng *rand.Rand) string {
	alphabet := []rune{'a', 'B', '0', ' ', '"', '\\', '/', '\n', '\t', 0x01, 0x1f, 0x7f, 'é', '€', 0x2028, 0xfb33, 0xffff, 0x10000, 0x1F600, 0x10FFFF, '<', '&'}
	n := rng.IntN(8)
	var b strings.Builder
	for range n {
		b.WriteRune(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

func TestDigest(t *testing.T) {
	if got := canonical.Digest([]byte("abc")); got != "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatal(got)
	}
}

// Text that is canonical already is recognised as such and kept (the fast path of raw
// JSON, such as a request's evidence): the canonical form of random values is, and no
// text is taken for canonical that an independent implementation would change. Random
// single-byte edits of canonical text probe the edges.
func TestCanonicalTextIsRecognisedAndNothingElse(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	recognised := 0
	for i := range 3000 {
		text, err := canonical.JSON(randomJSONValue(rng, 0))
		if err != nil {
			t.Fatal(err)
		}
		if canonical.IsCanonical(text) {
			recognised++
			if again, err := canonical.Transform(text); err != nil || string(again) != string(text) {
				t.Fatalf("value %d: canonical text %s became %s (%v)", i, text, again, err)
			}
		}
		for range 5 {
			edited := []byte(string(text))
			pos := rng.IntN(len(edited))
			edited[pos] = []byte(` ,:{}[]"\\/-+.0123456789eEubfnrtaxé` + "\x00\x1f\xff")[rng.IntN(38)]
			if !canonical.IsCanonical(edited) {
				continue
			}
			want, err := jcs.Transform(edited)
			if err != nil || string(want) != string(edited) {
				t.Fatalf("value %d: %q taken for text, but its text form is %q (%v)", i, edited, want, err)
			}
		}
	}
	if recognised < 1000 {
		t.Fatalf("only %d of 3000 canonical texts recognised", recognised)
	}
	for _, text := range []string{` {}`, `{"b":1,"a":2}`, `{"a":1,"a":2}`, `"\/"`, `"\u0041"`, `"\u001F"`, `"\u000a"`,
		`-0`, `1.0`, `1e2`, `01`, `1234567890123456`, "\"\xff\"", `"\ud800"`, `{"a":1}x`, `[1,]`, `{"\u00e9":1}`, `tru`, `"a`} {
		if canonical.IsCanonical([]byte(text)) {
			t.Errorf("%s taken for canonical", text)
		}
	}
	for _, text := range []string{`{}`, `[]`, `{"":1,"a":[true,false,null,-12,"\u001f\n"]}`, `"é€😀"`, `0`, `123456789012345`} {
		if !canonical.IsCanonical([]byte(text)) {
			t.Errorf("%s not recognised as canonical", text)
		}
	}
}

// Whatever the text, isCanonical never takes for canonical what is not: what it accepts,
// an independent RFC 8785 implementation leaves as it is.
func FuzzIsCanonical(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":[true,null,"x"]}`, `{"b":1,"a":2}`, `"\u001f"`, `-0`, `1.5`, `"é"`, `[1,2]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		if !canonical.IsCanonical(text) {
			return
		}
		want, err := jcs.Transform(text)
		if err != nil || string(want) != string(text) {
			t.Fatalf("%q taken for canonical, but its canonical form is %q (%v)", text, want, err)
		}
	})
}

// nestedJSON returns n objects (or arrays) nested in each other around inner.
func nestedJSON(n int, arrays bool, inner string) string {
	open, close := `{"a":`, `}`
	if arrays {
		open, close = `[`, `]`
	}
	return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
}

// Nesting is counted alike on every path of the canonical form: a value canonicalises
// exactly when its JSON text does, compact (the fast path) or spaced as PostgreSQL's
// jsonb renders it (the long path), at the top level or inside a payload. The ledger
// computes an event's digest from the value and verifies it from the stored text, so a
// difference here is an event that is written and then fails verification (a request
// fuzz run found one: a decision context nested 1,000 deep inside its payload).
func TestNestingIsCountedAlikeOnEveryPath(t *testing.T) {
	type payload struct {
		ID      string          `json:"id"`
		Context json.RawMessage `json:"context"`
	}
	limit := canonical.MaxDepth
	for _, arrays := range []bool{false, true} {
		for _, inner := range []string{`1`, `{}`, `[]`} {
			for _, n := range []int{limit - 2, limit - 1, limit, limit + 1} {
				text := nestedJSON(n, arrays, inner)
				depth := n
				if inner != `1` {
					depth++
				}
				fits := depth <= limit
				name := fmt.Sprintf("arrays=%v inner=%s n=%d", arrays, inner, n)

				_, err := canonical.Transform([]byte(text))
				if (err == nil) != fits {
					t.Errorf("%s: compact text: fits %v, error %v", name, fits, err)
				}
				if err != nil && !errors.Is(err, canonical.ErrNestedTooDeep) {
					t.Errorf("%s: want ErrNestedTooDeep, got %v", name, err)
				}
				spaced := strings.ReplaceAll(strings.ReplaceAll(text, ":", ": "), "[", "[ ")
				if _, err := canonical.Transform([]byte(spaced)); (err == nil) != fits {
					t.Errorf("%s: spaced text: fits %v, error %v", name, fits, err)
				}
				var v any
				dec := json.NewDecoder(strings.NewReader(text))
				dec.UseNumber()
				if err := dec.Decode(&v); err != nil {
					t.Fatal(err)
				}
				if _, err := canonical.JSON(v); (err == nil) != fits {
					t.Errorf("%s: decoded value: fits %v, error %v", name, fits, err)
				}

				// Inside a payload, one level deeper: the digest's path (a struct with raw
				// JSON in it) and the verifier's (the stored text) agree.
				inPayload := depth+1 <= limit
				_, errValue := canonical.JSON(payload{ID: "x", Context: json.RawMessage(text)})
				_, errText := canonical.Transform([]byte(`{"id": "x", "context": ` + spaced + `}`))
				if (errValue == nil) != inPayload || (errText == nil) != inPayload {
					t.Errorf("%s: in a payload: fits %v, from the value %v, from the text %v", name, inPayload, errValue, errText)
				}
			}
		}
	}
}
