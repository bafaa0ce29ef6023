package accountable_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
)

func TestVersionTokenRoundTrips(t *testing.T) {
	v := accountable.TaskVersion{AggregateVersion: 42, UpdatedAt: time.Date(2026, 11, 22, 6, 41, 50, 953363000, time.UTC)}
	got, ok := accountable.ParseVersionToken(v.Token())
	if !ok || !got.Equal(v) {
		t.Fatalf("round trip: %+v %v", got, ok)
	}
	for _, bad := range []string{"", "x", "djEuMS4", "!!!!", "djIuMS4x" /* v2.1.1 */, "djEuLTEuMQ" /* v1.-1.1 */} {
		if _, ok := accountable.ParseVersionToken(bad); ok {
			t.Errorf("token %q accepted", bad)
		}
	}
	other := v
	other.UpdatedAt = other.UpdatedAt.Add(time.Microsecond)
	if v.Equal(other) || v.Token() == other.Token() {
		t.Fatal("versions a microsecond apart compare equal")
	}
}

func TestIdempotencyKeyPattern(t *testing.T) {
	cases := map[string]bool{
		"a": true, "A.b_c:d/e-f": true, strings.Repeat("k", 200): true,
		"": false, "-a": false, ".a": false, "a b": false, "a\n": false, strings.Repeat("k", 201): false, "ключ": false,
	}
	for k, want := range cases {
		if got := accountable.ValidIdempotencyKey(k); got != want {
			t.Errorf("%q: got %v want %v", k, got, want)
		}
	}
}

func TestErrorCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range accountable.ErrorCatalogue() {
		if seen[s.Code] || s.Status < 400 || s.Status > 599 || s.Title == "" || s.Description == "" {
			t.Errorf("bad entry %+v", s)
		}
		seen[s.Code] = true
	}
	for code, status := range map[string]int{
		accountable.ECodeTaskVersionStale: 409, accountable.ECodeValidationFailed: 400, accountable.ECodeNotFound: 404,
		accountable.ECodeLedgerUnavailable: 503, accountable.ECodeRateLimited: 429, accountable.ECodePayloadTooLarge: 413,
		accountable.ECodeUnsupportedMediaType: 415, accountable.ECodeIdempotencyInProgress: 409, "no_such_code": 500,
	} {
		if got := accountable.ErrorStatus(code); got != status {
			t.Errorf("%s: %d, want %d", code, got, status)
		}
	}
	if err := (accountable.Issues{}).Err(); err != nil {
		t.Fatal("no issues is no error")
	}
	var is accountable.Issues
	is.Add("/title", "is required")
	if accountable.ErrorCode(is.Err()) != accountable.ECodeValidationFailed {
		t.Fatal(is.Err())
	}
}

func TestTimesRoundTripAtStoredPrecision(t *testing.T) {
	now := accountable.Now()
	s := accountable.FormatTime(now)
	back, err := accountable.ParseTime(s)
	if err != nil || !back.Equal(now) || len(s) != len("2026-11-22T06:41:50.953363Z") {
		t.Fatalf("%s -> %v %v", s, back, err)
	}
}

// Instants written by hand read exactly as time.Format writes them.
func TestFormatTimeMatchesTheLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		v := time.Unix(rng.Int64N(1<<37)-1<<36, rng.Int64N(1e9)).In(time.FixedZone("x", rng.IntN(50000)-25000))
		want := v.UTC().Truncate(time.Microsecond).Format(accountable.TimeLayout)
		if got := accountable.FormatTime(v); got != want {
			t.Fatalf("%v: %s, want %s", v, got, want)
		}
		if got, _ := accountable.TimeOf(v).MarshalJSON(); string(got) != `"`+want+`"` {
			t.Fatalf("%v: JSON %s, want %q", v, got, want)
		}
	}
}
