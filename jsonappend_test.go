package accountable_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
)

// randomJSONText is a string of the bytes encoding/json treats specially (every ASCII
// byte, < > &, U+2028 and U+2029, invalid UTF-8, multi-byte runes) among plain ones.
func randomJSONText(r *rand.Rand) string {
	pieces := []string{"a", "Z", " ", "\u2028", "\u2029", "\u00e9", "\U0001F600", "\ufffd", "\xff", "\xe2\x80", "\xe2\x80\xa8",
		"<", ">", "&", `"`, `\`, "/", "\x7f", "plain text ", "0190c7a2-1b2c-7d3e-8f40-123456789abc"}
	var b strings.Builder
	for range r.IntN(24) {
		if r.IntN(3) == 0 {
			b.WriteByte(byte(r.IntN(256)))
		} else {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
	}
	return b.String()
}

// TestAppendJSONString: every byte alone, and random strings, quoted as json.Marshal
// quotes them.
func TestAppendJSONString(t *testing.T) {
	check := func(s string) {
		t.Helper()
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := accountable.AppendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %s\nwant %s", s, got, want)
		}
	}
	for b := range 256 {
		check(string([]byte{byte(b)}))
		check("x" + string([]byte{byte(b)}) + "y")
	}
	for _, s := range []string{"", "\u2028\u2029", "\xe2\x80\xa9", "\xe2\x80", "\xed\xa0\x80", "\U0010FFFF", "\xf4\x90\x80\x80"} {
		check(s)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		check(randomJSONText(r))
	}
}

// TestAppendJSONStringEveryOffset: a byte or rune to escape at every offset of plain
// texts of every length up to past four words, quoted as json.Marshal quotes it: the scan
// reads two words a round, then one, then the last word overlapping what it read, and
// must find the first such byte wherever it falls (in the overlap too).
func TestAppendJSONStringEveryOffset(t *testing.T) {
	specials := []string{"\x00", "\x1f", "\x7f", "\"", "\\", "<", ">", "&", "\n", "\u00e9", "\u2028", "\u2029", "\xff", "\U0001F600", "\xe2\x80"}
	for b := range 256 {
		specials = append(specials, string([]byte{byte(b)}))
	}
	plain := strings.Repeat("abcdefgh ~}|{0123456789", 3)
	for n := range 40 {
		for at := 0; at <= n; at++ {
			for _, sp := range specials {
				s := plain[:at] + sp + plain[at:n]
				want, err := json.Marshal(s)
				if err != nil {
					t.Fatal(err)
				}
				if got := accountable.AppendJSONString(nil, s); !bytes.Equal(got, want) {
					t.Fatalf("%q:\n got %s\nwant %s", s, got, want)
				}
			}
		}
		if got, want := accountable.AppendJSONString(nil, plain[:n]), `"`+plain[:n]+`"`; string(got) != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
}

// objectTexts are metadata texts as the store and requests give them (jsonb's text, with
// its spaces; canonical JSON) and odd ones: whitespace of every kind, escapes, < > & and
// U+2028 in strings and names, invalid UTF-8, and text that is not JSON at all.
var objectTexts = []string{
	"", "{}", `{"a": 1, "b": [1, 2, {"c": null}]}`, "{\n\t\"a\" :\r\n true }", `{"html":"<b>&amp;</b>","<k>":">"}`,
	"{\"sep\":\"\u2028\u2029\",\"\u2028\":1}", `{"esc":"\"\\\/\b\f\n\r\t\u0000\u2028 \\"}`, "{\"bad\":\"\xff\xfe\"}",
	`{"n":-1.5e+300,"s":"  spaced  ","e":{}, "l":[ ]}`, `{"a":"\u00e9\ud83d\ude00"}`,
	`{"a":`, `not json`, `{"a":1}{}`, `[1,2]`,
}

// randomTask fills every field of a Task by reflection, so that a field AppendJSON does
// not write fails the comparison (and a field of a type not filled here fails at once).
func randomTask(t *testing.T, r *rand.Rand) accountable.Task {
	var task accountable.Task
	fillRandomFields(t, r, reflect.ValueOf(&task).Elem())
	return task
}

// fillRandomFields fills every exported field of the struct v at random, as randomTask
// describes (and floats of every magnitude, now and then NaN or an infinity).
func fillRandomFields(t *testing.T, r *rand.Rand, v reflect.Value) {
	var fill func(v reflect.Value, path string)
	fill = func(v reflect.Value, path string) {
		switch v.Interface().(type) {
		case accountable.Object:
			v.Set(reflect.ValueOf(accountable.Object(objectTexts[r.IntN(len(objectTexts))])))
			if r.IntN(8) == 0 {
				v.Set(reflect.Zero(v.Type()))
			}
			return
		case accountable.Time:
			sec := r.Int64N(400*365*86400) - 100*365*86400 // 1870 to 2270
			if r.IntN(20) == 0 {
				sec = r.Int64N(1<<40) - 1<<39 // years beyond 0000-9999
			}
			v.Set(reflect.ValueOf(accountable.Time{Time: time.Unix(sec, r.Int64N(1e9)).UTC()}))
			if r.IntN(10) == 0 {
				v.Set(reflect.Zero(v.Type()))
			}
			return
		}
		switch v.Kind() {
		case reflect.String:
			v.SetString(randomJSONText(r))
		case reflect.Int64:
			v.SetInt(r.Int64() - r.Int64())
		case reflect.Bool:
			v.SetBool(r.IntN(2) == 0)
		case reflect.Float64:
			switch r.IntN(8) {
			case 0:
				v.SetFloat([]float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1e-7, 1e21, 123456.789}[r.IntN(8)])
			default:
				v.SetFloat(r.NormFloat64() * math.Pow(10, float64(r.IntN(50)-25)))
			}
		case reflect.Pointer:
			if r.IntN(3) == 0 {
				v.Set(reflect.Zero(v.Type()))
				return
			}
			v.Set(reflect.New(v.Type().Elem()))
			fill(v.Elem(), path)
		case reflect.Struct:
			if r.IntN(4) == 0 {
				v.Set(reflect.Zero(v.Type())) // a zero struct (omitzero)
				return
			}
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					fill(v.Field(i), path+"."+v.Type().Field(i).Name)
				}
			}
		default:
			t.Fatalf("randomTask: %s is a %s: fill it here (and write it in AppendJSON)", path, v.Type())
		}
	}
	for i := range v.NumField() {
		if v.Type().Field(i).IsExported() {
			fill(v.Field(i), v.Type().Field(i).Name)
		}
	}
}

// TestTaskAppendJSON: AppendJSON writes json.Marshal's bytes for tasks with every field
// random (escape-worthy strings, null and set pointers, zero and set concurrency, every
// shape of metadata), and fails where json.Marshal fails (metadata that is not JSON).
func TestTaskAppendJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 20000 {
		task := randomTask(t, r)
		if i == 0 {
			task = accountable.Task{}
		}
		want, werr := json.Marshal(task)
		got, gerr := task.AppendJSON([]byte("prefix"))
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("%+v:\n json.Marshal: %v\n AppendJSON: %v", task, werr, gerr)
		}
		if werr != nil {
			if werr.Error() != gerr.Error() {
				t.Fatalf("errors differ:\n got %v\nwant %v", gerr, werr)
			}
			continue
		}
		if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
			t.Fatalf("%+v:\n got %s\nwant %s", task, got, want)
		}
	}
}

// The results of creating and completing work, and a receipt, are written as json.Marshal
// writes them, for values with every field random, and fail where it fails (metadata
// that is not JSON, a NaN of measured hours).
func TestCommandResultsAppendJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	type appender interface{ AppendJSON([]byte) ([]byte, error) }
	values := []func() appender{
		func() appender {
			var v accountable.Receipt
			fillRandomFields(t, r, reflect.ValueOf(&v).Elem())
			return v
		},
		func() appender {
			var v accountable.WorkCreated
			fillRandomFields(t, r, reflect.ValueOf(&v).Elem())
			return v
		},
		func() appender {
			var v accountable.WorkCompletion
			fillRandomFields(t, r, reflect.ValueOf(&v).Elem())
			return v
		},
	}
	failed := map[string]int{}
	for i := range 30000 {
		v := values[i%len(values)]()
		want, werr := json.Marshal(v)
		got, gerr := v.AppendJSON([]byte("prefix"))
		if (werr != nil) != (gerr != nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Fatalf("%T %+v:\n json.Marshal: %v\n AppendJSON: %v", v, v, werr, gerr)
		}
		if werr != nil {
			failed[fmt.Sprintf("%T", v)]++
			continue
		}
		if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
			t.Fatalf("%T %+v:\n got %s\nwant %s", v, v, got, want)
		}
	}
	for _, typ := range []string{"accountable.Receipt", "accountable.WorkCreated", "accountable.WorkCompletion"} {
		if failed[typ] == 0 || failed[typ] > 5000 {
			t.Errorf("%s: %d of 10000 failed: the comparison needs both outcomes", typ, failed[typ])
		}
	}
}
