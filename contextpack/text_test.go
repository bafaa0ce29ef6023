package contextpack

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// fill sets every exported field of v (through pointers, slices and arrays) to random
// values: nil pointers and slices, empty slices, strings that escape (quotes, control
// characters, < > &, U+2028, invalid UTF-8, non-BMP), integers past 2^53. A field added to
// a capsule's type is filled too, so the hand-written writers' tests fail until they
// write it.
func fill(r *rand.Rand, v reflect.Value) {
	if v.Type() == reflect.TypeFor[accountable.Time]() {
		sec := r.Int64N(400 * 365 * 86400)
		v.Set(reflect.ValueOf(accountable.Time{Time: time.Unix(sec+int64(r.IntN(2))*-62135596800*2, int64(r.IntN(1e6))*1000).UTC()}))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(randomText(r))
	case reflect.Int, reflect.Int64:
		v.SetInt([]int64{0, 1, -7, 42, 1 << 53, 1<<53 + 1, -(1 << 60), r.Int64()}[r.IntN(8)])
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Pointer:
		if r.IntN(5) == 0 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(r, p.Elem())
		v.Set(p)
	case reflect.Slice:
		if r.IntN(6) == 0 {
			v.SetZero()
			return
		}
		n := r.IntN(4)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(r, s.Index(i))
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(r, v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(r, v.Field(i))
			}
		}
	default:
		panic("fill: a field of kind " + v.Kind().String())
	}
}

func randomText(r *rand.Rand) string {
	pieces := []string{"", "plain", "a \"quoted\" word", "back\\slash", "tab\t", "new\nline", "\x01\x1f", "<b>&amp;</b>",
		"line\u2028sep\u2029", "résumé", "中文", "🚀", "\xff\xfe bad", "\u007f", "sha256:0123abcd", " lead", "trail ",
		`name": value`, `ends in a backslash\`, "\": "}
	var b []byte
	for range r.IntN(4) {
		b = append(b, pieces[r.IntN(len(pieces))]...)
	}
	return string(b)
}

// The hand-written writer writes what canonical.JSON writes of a capsule and a delivery,
// compact and indented as the text indents them.
func TestCanonicalWriter(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 30))
	for i := range 3000 {
		var c accountable.ContextCapsule
		var d accountable.ContextDelivery
		fill(r, reflect.ValueOf(&c).Elem())
		fill(r, reflect.ValueOf(&d).Elem())
		for _, v := range []struct {
			value any
			write func(*canonWriter)
		}{{&c, func(w *canonWriter) { w.capsule(&c) }}, {&d, func(w *canonWriter) { w.delivery(&d) }}} {
			want, err := canonical.JSON(v.value)
			if err != nil {
				t.Fatal(err)
			}
			w := canonWriter{buf: []byte("x")}
			v.write(&w)
			if !bytes.Equal(w.buf[1:], want) {
				t.Fatalf("case %d: compact\n got %s\nwant %s", i, w.buf[1:], want)
			}
			for depth := range 3 {
				want, err := serializeAt(v.value, depth)
				if err != nil {
					t.Fatal(err)
				}
				w := canonWriter{indent: true, depth: depth}
				v.write(&w)
				if string(w.buf) != want {
					t.Fatalf("case %d: indented at %d\n got %s\nwant %s", i, depth, w.buf, want)
				}
				compact := canonWriter{}
				v.write(&compact)
				if got := dedent(nil, w.buf); !bytes.Equal(got, compact.buf) {
					t.Fatalf("case %d: dedent at %d\n got %s\nwant %s", i, depth, got, compact.buf)
				}
			}
		}
	}
}

// An item's text is json.MarshalIndent's, and indentJSON indents as json.Indent does.
func TestSectionText(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 30))
	var c accountable.ContextCapsule
	for i := range 300 {
		fill(r, reflect.ValueOf(&c).Elem())
		m := &c.OmittedCounts
		sections := []*section{sectionOf("a", 1, &c.ActiveConstraints, 0, &m.ActiveConstraints, nil), sectionOf("b", 1, &c.OpenRisks, 0, &m.OpenRisks, nil),
			sectionOf("c", 1, &c.Runs, 0, &m.Runs, nil), sectionOf("d", 1, &c.RecentEvents, 0, &m.RecentEvents, nil),
			sectionOf("e", 1, &c.Artifacts, 0, &m.Artifacts, nil), sectionOf("f", 1, &c.RecentReceiptRefs, 0, &m.RecentReceiptRefs, nil)}
		var scratch []byte
		for _, s := range sections {
			s.scratch = &scratch
		}
		items := []any{c.ActiveConstraints, c.OpenRisks, c.Runs, c.RecentEvents, c.Artifacts, c.RecentReceiptRefs}
		for k, s := range sections {
			list := reflect.ValueOf(items[k])
			for j := range s.len() {
				want, err := json.MarshalIndent(list.Index(j).Interface(), "   ", " ")
				if err != nil {
					t.Fatal(err)
				}
				if n := s.size(j); n != len(want) {
					t.Fatalf("case %d: section %s item %d: size %d, want %d", i, s.name, j, n, len(want))
				}
				if got := s.text(j); got != string(want) {
					t.Fatalf("case %d: section %s item %d:\n got %s\nwant %s", i, s.name, j, got, want)
				}
			}
		}
		// Any JSON json.Marshal writes, containers empty and nested included.
		for _, v := range []any{c, c.Scope, []any{}, map[string]any{}, [][]int{{}, {1}}, map[string]any{"a": []any{map[string]any{}}}, "x\"\\"} {
			raw, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"", "   "} {
				var want bytes.Buffer
				if err := json.Indent(&want, raw, p, " "); err != nil {
					t.Fatal(err)
				}
				if got := indentJSON([]byte("x"), raw, p, " "); string(got[1:]) != want.String() {
					t.Fatalf("case %d: indentJSON\n got %s\nwant %s", i, got[1:], want.String())
				}
				if n := indentedLen(raw, len(p), 1); n != want.Len() {
					t.Fatalf("case %d: indentedLen %d, want %d", i, n, want.Len())
				}
			}
		}
	}
}

// canonPlain is true for the strings canonical.AppendString writes as they are: exactly
// for ASCII ones (non-ASCII ones go to AppendString).
func TestCanonPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(s string) {
		t.Helper()
		plain := string(canonical.AppendString(nil, s)) == `"`+s+`"`
		ascii := !strings.ContainsFunc(s, func(r rune) bool { return r >= 0x80 })
		if got := canonPlain(s); (got && !plain) || (ascii && got != plain) {
			t.Fatalf("canonPlain(%q) = %v", s, got)
		}
	}
	for c := range 256 {
		for _, at := range []int{0, 3, 7, 8, 15, 20} {
			b := []byte("abcdefghijklmnopqrstuvwxyz")[:at+1]
			b[at] = byte(c)
			check(string(b))
		}
	}
	for range 20000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(0x20 + r.IntN(0x60))
			if r.IntN(30) == 0 {
				b[i] = byte(r.IntN(256))
			}
		}
		check(string(b))
	}
}
