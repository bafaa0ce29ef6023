package api

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// A completion's Idempotency-Key fingerprint digests the command (which writes its own
// canonical form) in place of the request that embeds it: the two have the same
// canonical JSON, or fail alike, for every command (fields set or not, odd strings and
// numbers, evidence that is not an object), so a key stored before the change replays.
func TestCompleteWorkFingerprintIsTheRequests(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 1))
	strs := []string{"", "plain", "tab\tquote\"back\\slash", "\u2028 é \U0001F600", "\xff broken", "<html>&amp;"}
	str := func() *string {
		if r.IntN(3) == 0 {
			return nil
		}
		s := strs[r.IntN(len(strs))]
		return &s
	}
	ints := []int64{0, 1, 42, 1 << 53, -(1 << 60), math.MaxInt64}
	i64 := func() *int64 {
		if r.IntN(3) == 0 {
			return nil
		}
		n := ints[r.IntN(len(ints))]
		return &n
	}
	floats := []float64{0, 1.5, 1e21, 1e-7, 123456.789, math.NaN(), math.Inf(1)}
	evidence := []accountable.Object{nil, {}, accountable.Object(`{}`), accountable.Object(`{"b":1,"a":[true,null,"x"]}`),
		accountable.Object(`{"a":1e400}`), accountable.Object(`[1]`), accountable.Object(`{"a":`)}
	times := []accountable.Time{{}, accountable.TimeOf(time.Date(2026, 11, 27, 20, 0, 0, 123456000, time.UTC))}
	for i := range 5000 {
		var cmd accountable.CompleteWork
		cmd.VersionToken, cmd.Summary = str(), str()
		cmd.CostCents, cmd.ExpectedAggregateVersion = i64(), i64()
		cmd.CommandID, cmd.CausationID, cmd.CorrelationID = str(), str(), str()
		if r.IntN(2) == 0 {
			f := floats[r.IntN(len(floats))]
			cmd.MeasuredDurationHours = &f
		}
		if r.IntN(2) == 0 {
			tm := times[r.IntN(len(times))]
			cmd.ExpectedUpdatedAt = &tm
		}
		cmd.Evidence = evidence[r.IntN(len(evidence))]
		req := &completeWorkRequest{workRef: workRef{TaskID: "0190c7a2-1b2c-7d3e-8f40-000000000001"}, CompleteWork: cmd}
		want, wantErr := canonical.JSON(req)
		got, gotErr := canonical.JSON(req.fingerprintBody())
		if (wantErr == nil) != (gotErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("command %d %+v:\n got  %s (%v)\n want %s (%v)", i, cmd, got, gotErr, want, wantErr)
		}
	}
}

// The fingerprint's own canonical form is the reflective encoding's, with a body that
// writes its own (a command, by value or behind a pointer) and with one that does not
// (which the encoder encodes reflectively after the method declines), for any path.
func TestRequestFingerprintIsTheReflectiveOne(t *testing.T) {
	type reflectiveFingerprint struct { // requestFingerprint without its method
		Operation string   `json:"operation"`
		Path      []string `json:"path"`
		Body      any      `json:"body"`
	}
	desc, title := "Collect the \"figures\"\n", "Quarterly report é"
	var nilCreate *accountable.CreateWork
	bodies := []any{
		accountable.CreateWork{Title: title},
		&accountable.CreateWork{Title: title, Description: &desc, Metadata: accountable.Object(`{"b":1,"a":[1.5e300]}`)},
		accountable.CompleteWork{Summary: &desc, Evidence: accountable.Object(`{"n":1e400}`)},
		accountable.CompleteWork{},
		nilCreate,
		map[string]any{"title": "not a command"},
		&struct {
			Name string `json:"name"`
		}{"open body"},
		nil,
	}
	paths := [][]string{nil, {}, {"0190c7a2-1b2c-7d3e-8f40-000000000001"}, {"a\"b", "é"}}
	for i, body := range bodies {
		for _, path := range paths {
			got, gotErr := canonical.JSON(requestFingerprint{Operation: "completeWork", Path: path, Body: body})
			want, wantErr := canonical.JSON(reflectiveFingerprint{Operation: "completeWork", Path: path, Body: body})
			if (gotErr == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
				t.Fatalf("body %d, path %q:\n got  %s (%v)\n want %s (%v)", i, path, got, gotErr, want, wantErr)
			}
		}
	}
}
