package canonical_test

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/accountablework/accountable/canonical"
)

// sameAsDecoded fails unless the one pass gives up on text, or gives what encoding/json's
// long way gives.
func sameAsDecoded(t *testing.T, text []byte, limit int) (answered bool) {
	t.Helper()
	got, ok := canonical.RawFast(text, limit)
	if !ok {
		return false
	}
	want, err := canonical.RawDecoded(text, limit)
	if err != nil || string(got) != string(want) {
		t.Fatalf("%q within %d: the one pass gives %q, the long way %q (%v)", text, limit, got, want, err)
	}
	return true
}

// randomJSON is JSON text as clients write it, spaced or not, members in any order, with
// escapes, non-ASCII text and numbers of every form; now and then a repeated name, a lone
// surrogate, invalid UTF-8 or a number beyond double range, on which the one pass gives up.
func randomJSON(r *rand.Rand, depth int) string {
	ws := func() string { return []string{"", "", "", " ", "\n  ", "\t", "\r\n"}[r.IntN(7)] }
	str := func() string {
		return []string{`""`, `"a"`, `"b"`, `"name"`, `"é"`, `"€"`, `"😀"`, `"\u00e9"`, `"\ud83d\ude00"`, `"tab\t"`,
			`"q\"b\\s\/"`, `"\u0000\u001f\b\f\n\r\t"`, `"\u2028"`, `"A\u0042C"`, `"\uD800"`, "\"\xff\"", `"𐐷"`, `"ｚ"`, `"aa"`, `"a b"`}[r.IntN(20)]
	}
	switch k := r.IntN(10); {
	case depth > 4 || k < 3:
		switch r.IntN(6) {
		case 0:
			return str()
		case 1:
			return []string{"true", "false", "null"}[r.IntN(3)]
		case 2:
			return strconv.FormatInt(r.Int64N(1<<62)-1<<61, 10)
		case 3:
			return []string{"0", "-0", "1.0", "1e2", "1E-7", "-1.5e+300", "1e400", "0.000001", "123456789012345678901", "1e21",
				"9007199254740993", "5e-324", "0.1", "100", "-12", "2.50"}[r.IntN(16)]
		default:
			return strconv.FormatFloat(r.NormFloat64()*1e6, 'g', -1, 64)
		}
	case k < 6:
		var parts []string
		for range r.IntN(5) {
			parts = append(parts, ws()+randomJSON(r, depth+1)+ws())
		}
		return "[" + strings.Join(parts, ",") + "]"
	default:
		var parts []string
		for range r.IntN(6) {
			parts = append(parts, ws()+str()+ws()+":"+ws()+randomJSON(r, depth+1)+ws())
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
}

// The one pass gives what encoding/json's long way gives, on random client text, and it
// answers for most of it (only the unusual gives up).
func TestRawFastIsTheLongWay(t *testing.T) {
	r := rand.New(rand.NewPCG(8785, 30))
	answered := 0
	const n = 20000
	for range n {
		text := randomJSON(r, 0)
		for _, limit := range []int{2, 64, canonical.MaxDepth} {
			if sameAsDecoded(t, []byte(text), limit) && limit == canonical.MaxDepth {
				answered++
			}
		}
	}
	if answered < n/2 {
		t.Fatalf("the one pass answered %d of %d texts", answered, n)
	}
	for _, text := range []string{`{"b":1,"a":2}`, ` { "a" : [ 1.0 , -0 , "\u00e9" ] } `, `{"\u0062":1,"a":2}`, `1e2`, `"\ud83d\ude00"`} {
		if !sameAsDecoded(t, []byte(text), canonical.MaxDepth) {
			t.Errorf("%s: the one pass gave up", text)
		}
	}
	for _, text := range []string{`{"a":1,"a":2}`, `"\ud800"`, "\"\xff\"", `1e400`, `{"a":1}]`, `{"a":1}x`, `[1,]`, `01`, `-`, `{"a"}`, `tru`, ``, `[[[1]]]`} {
		if _, ok := canonical.RawFast([]byte(text), 2); ok {
			t.Errorf("%q: the one pass answered; the long way decides it", text)
		}
	}
}

// Whatever the text, the one pass answers only what the long way answers, the same.
func FuzzRawFast(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		f.Add([]byte(randomJSON(r, 0)), uint8(64))
	}
	f.Add([]byte(`{"b":[1,{"d":null,"c":"\u00e9"}],"a":-0}`), uint8(2))
	f.Fuzz(func(t *testing.T, text []byte, limit uint8) {
		sameAsDecoded(t, text, int(limit%8)+1)
		sameAsDecoded(t, text, canonical.MaxDepth)
	})
}
