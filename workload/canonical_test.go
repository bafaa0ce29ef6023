package workload_test

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/workload"
)

// TestWorkloadCanonicalJSON: the hand-written canonical JSON of a request is
// canonical.JSON's, byte for byte, on the golden corpus and on requests with any strings
// (escapes, invalid UTF-8, U+2028), nil and empty slices and integers beyond a double's.
func TestWorkloadCanonicalJSON(t *testing.T) {
	check := func(name string, r workload.WorkloadRequest) {
		t.Helper()
		want, err := canonical.JSON(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := workload.AppendCanonicalRequest(nil, &r); !bytes.Equal(got, want) {
			t.Fatalf("%s:\n got %s\nwant %s", name, got, want)
		}
		if id := workload.WorkloadDiagnosisID(r); id != "wdg_"+strings.TrimPrefix(canonical.Digest(want), "sha256:")[:24] {
			t.Fatalf("%s: id %s", name, id)
		}
	}
	for _, c := range goldenCorpus(t) {
		check(c.name, c.req)
	}
	r := rand.New(rand.NewPCG(8785, 1))
	texts := []string{"", "a", "\x00\x01\x1f\x7f", "\"\\/", "\b\f\n\r\t", "<>&", "\u2028\u2029", "\xff\xfe", "é😀\u202e", "\xed\xa0\x80"}
	text := func() string {
		var b strings.Builder
		for range r.IntN(4) {
			b.WriteString(texts[r.IntN(len(texts))])
		}
		return b.String()
	}
	for range 2000 {
		q := randomWorkload(r)
		w := &q.Workload
		q.SchemaVersion, w.Name, w.Outcome = text(), text(), text()
		w.TimeHorizon = workload.WorkloadTimeHorizon(text())
		w.AgentCount = []int64{0, -1, 1 << 53, -(1 << 53), 1<<53 + 1, 1<<63 - 1, -1 << 63, r.Int64()}[r.IntN(8)]
		switch r.IntN(3) {
		case 0:
			w.Systems = nil
		case 1:
			w.Systems = append(w.Systems, workload.WorkloadSystem{Category: workload.WorkloadSystemCategory(text()), Access: workload.WorkloadAccess(text()),
				SideEffect: workload.WorkloadSideEffect(text()), DataClass: workload.WorkloadDataClass(text())})
		}
		switch r.IntN(3) {
		case 0:
			w.Authority.Actions = nil
		case 1:
			w.Authority.Actions = append(w.Authority.Actions, workload.WorkloadAction(text()))
		}
		w.Accountability.Retention = workload.WorkloadRetention(text())
		check("random", q)
	}
}
