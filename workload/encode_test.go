package workload_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/accountablework/accountable/workload"
)

// TestWorkloadDiagnosisAppendJSON: AppendJSON writes json.Marshal's bytes, on the golden
// corpus's diagnoses (their handoff URL also under a site URL to escape) and on diagnoses
// with every field random (any strings, nil and empty slices), filled by reflection so a
// field AppendJSON does not write fails here.
func TestWorkloadDiagnosisAppendJSON(t *testing.T) {
	check := func(name string, d workload.WorkloadDiagnosis) {
		t.Helper()
		want, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.AppendJSON(nil); !bytes.Equal(got, want) {
			t.Fatalf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	for _, c := range goldenCorpus(t) {
		d := workload.Diagnose(c.req)
		check(c.name, d)
		d.ApprovalHandoff.URL = "https://a.example/x?a=<b>&c=\u2028" + d.ApprovalHandoff.URL
		check(c.name+" under a site URL", d)
	}
	// The lists made from the catalogues, out of order, repeated, and with a field of an
	// entry changed (by bytes, or to another entry's): an element equal to an entry is
	// written from the entry's JSON made once, any other field by field.
	r := rand.New(rand.NewPCG(7, 1128))
	for i, c := range goldenCorpus(t) {
		if i%4 != 0 {
			continue
		}
		d := workload.Diagnose(c.req)
		reorder(r, d.MissingCapabilities)
		reorder(r, d.WhatRemainsLocal)
		reorder(r, d.Risks)
		d.MissingCapabilities = append(d.MissingCapabilities, d.MissingCapabilities...)
		d.Risks = append(d.Risks, d.Risks...)
		if n := len(d.MissingCapabilities); n > 1 {
			d.MissingCapabilities[r.IntN(n)].Reason += "<"
			d.MissingCapabilities[r.IntN(n)].Boundary = d.MissingCapabilities[r.IntN(n)].Boundary
		}
		if n := len(d.Risks); n > 1 {
			d.Risks[r.IntN(n)].Severity = workload.WorkloadSeverity([]string{"high", "critical", "&", ""}[r.IntN(4)])
			d.Risks[r.IntN(n)].Description = d.Risks[r.IntN(n)].Mitigation
		}
		d.WhatRemainsLocal[0].Item = strings.Clone(d.WhatRemainsLocal[0].Item)
		if n := len(d.WhatRemainsLocal); n > 1 {
			d.WhatRemainsLocal[r.IntN(n)].Reason = ""
		}
		check(c.name+" reordered", d)
	}
	// Every byte that needs escaping, and every non-ASCII form, at every offset of a longer
	// plain text: the eight-byte scan must find it wherever it is.
	specials := []string{"\x00", "\x1f", "\x7f", "\"", "\\", "<", ">", "&", "\n", "é", "\u2028", "\u2029", "\xff", "😀", "\xe2\x80"}
	for _, sp := range specials {
		for at := range 20 {
			for _, n := range []int{at, at + 1, at + 7, at + 8, at + 16} {
				plain := strings.Repeat("abcdefgh ", 5)[:n]
				check("at "+strconv.Itoa(at), workload.WorkloadDiagnosis{Recommendation: workload.WorkloadRecommendation{
					Summary: plain[:min(at, n)] + sp + plain[min(at, n):]}})
			}
		}
	}
	r = rand.New(rand.NewPCG(7, 1127))
	for range 3000 {
		var d workload.WorkloadDiagnosis
		fillRandom(r, reflect.ValueOf(&d).Elem())
		check("random", d)
	}
}

// reorder shuffles xs, or reverses it, or leaves it.
func reorder[T any](r *rand.Rand, xs []T) {
	switch r.IntN(3) {
	case 0:
		r.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	case 1:
		slices.Reverse(xs)
	}
}

// fillRandom sets v, and everything in it, to random values: its strings are any text, a
// text the encoder knows in advance (workload.KnownTexts: the very string, or one of the
// same bytes, or one made of it and more) or pieces of both.
func fillRandom(r *rand.Rand, v reflect.Value) {
	texts := []string{"", "a", "\x00\x01\x1f\x7f", "\"\\/", "\b\f\n\r\t", "<>&", "\u2028\u2029", "\xff\xfe", "é😀\u202e",
		"\xed\xa0\x80", "\xf0\x9f", "…"}
	known := workload.KnownTexts()
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fillRandom(r, v.Field(i))
		}
	case reflect.String:
		if r.IntN(4) == 0 {
			v.SetString(known[r.IntN(len(known))])
			break
		}
		var b strings.Builder
		for range r.IntN(4) {
			if r.IntN(2) == 0 {
				b.WriteString(known[r.IntN(len(known))])
			} else {
				b.WriteString(texts[r.IntN(len(texts))])
			}
		}
		v.SetString(b.String())
	case reflect.Int, reflect.Int64:
		v.SetInt([]int64{0, -1, 1, 100, 1 << 62, -1 << 63, r.Int64()}[r.IntN(7)])
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Slice:
		switch n := r.IntN(5); n {
		case 0: // nil
		default:
			s := reflect.MakeSlice(v.Type(), n-1, n-1)
			for i := range n - 1 {
				fillRandom(r, s.Index(i))
			}
			v.Set(s)
		}
	default:
		panic("fillRandom: " + v.Kind().String())
	}
}
