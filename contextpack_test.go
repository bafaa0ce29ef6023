package accountable_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/accountablework/accountable"
)

// fillRandom sets every exported field of v (through pointers, slices and arrays) to
// random values: nil and set pointers, nil, empty and full slices, escape-worthy strings,
// integers of every size. A field added to a type is filled too, so an encoder that does
// not write it fails TestContextAppendJSON.
func fillRandom(r *rand.Rand, v reflect.Value) {
	if v.Type() == reflect.TypeFor[accountable.Time]() {
		v.Set(reflect.ValueOf(accountable.Time{Time: time.Unix(r.Int64N(1<<34)-1<<33, int64(r.IntN(1e9))).UTC()}))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(randomJSONText(r))
	case reflect.Int, reflect.Int64:
		v.SetInt([]int64{0, 1, -7, 1 << 53, 1<<53 + 1, -(1 << 62), r.Int64()}[r.IntN(7)])
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Pointer:
		if r.IntN(4) == 0 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		fillRandom(r, p.Elem())
		v.Set(p)
	case reflect.Slice:
		if r.IntN(5) == 0 {
			v.SetZero()
			return
		}
		n := r.IntN(4)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fillRandom(r, s.Index(i))
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fillRandom(r, v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillRandom(r, v.Field(i))
			}
		}
	default:
		panic("fillRandom: a field of kind " + v.Kind().String())
	}
}

// TestContextAppendJSON: the hand-written encoders of POST /context-pack's answer and of
// a capsule's items write json.Marshal's bytes for random values.
func TestContextAppendJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 1))
	check := func(v any, got []byte) {
		t.Helper()
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
			t.Fatalf("%T:\n got %s\nwant %s", v, got, want)
		}
	}
	for i := range 5000 {
		var p accountable.ContextPreparation
		fillRandom(r, reflect.ValueOf(&p).Elem())
		if i == 0 {
			p = accountable.ContextPreparation{}
		}
		got, err := p.AppendJSON([]byte("prefix"))
		if err != nil {
			t.Fatal(err)
		}
		check(p, got)
		var d accountable.ContextDecision
		var h accountable.ContextHandoff
		var run accountable.ContextRun
		var e accountable.ContextEvent
		var a accountable.ContextArtifact
		var ref accountable.ContextRef
		for _, v := range []any{&d, &h, &run, &e, &a, &ref} {
			fillRandom(r, reflect.ValueOf(v).Elem())
		}
		check(d, d.AppendJSON([]byte("prefix")))
		check(h, h.AppendJSON([]byte("prefix")))
		check(run, run.AppendJSON([]byte("prefix")))
		check(e, e.AppendJSON([]byte("prefix")))
		check(a, a.AppendJSON([]byte("prefix")))
		check(ref, ref.AppendJSON([]byte("prefix")))
	}
}
