package accountable_test

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/accountablework/accountable"
)

// The hand-written checks accept exactly what their regular expressions accept.
func TestHandWrittenChecksMatchTheirPatterns(t *testing.T) {
	checks := []struct {
		name    string
		pattern string
		check   func(string) bool
		seeds   []string
	}{
		{"uuid", accountable.UUIDPattern, accountable.ValidUUID,
			[]string{"01a20849-9914-79cb-b9de-aef3e51afceb", "01A20849-9914-79CB-B9DE-AEF3E51AFCEB"}},
		{"idempotency key", accountable.IdempotencyKeyPattern, accountable.ValidIdempotencyKey,
			[]string{"a", "A.b_c:d/e-f", strings.Repeat("k", 200)}},
		{"request id", `^[A-Za-z0-9._:/-]{1,128}$`, accountable.ValidRequestID,
			[]string{".", "req-1", strings.Repeat("r", 128)}},
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const alphabet = "0123456789abcdefABCDEFgzGZ-_.:/ svk\x00\xffé"
	for _, c := range checks {
		re := regexp.MustCompile(c.pattern)
		try := func(s string) {
			if got, want := c.check(s), re.MatchString(s); got != want {
				t.Fatalf("%s: %q: the check says %v, the pattern %v", c.name, s, got, want)
			}
		}
		for _, seed := range c.seeds {
			try(seed)
			for range 2000 { // edits of a valid value probe the edges
				b := []byte(seed)
				switch rng.IntN(3) {
				case 0:
					b[rng.IntN(len(b))] = alphabet[rng.IntN(len(alphabet))]
				case 1:
					b = b[:rng.IntN(len(b))]
				default:
					b = append(b, alphabet[rng.IntN(len(alphabet))])
				}
				try(string(b))
			}
		}
		for range 2000 {
			b := make([]byte, rng.IntN(60))
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			try(string(b))
		}
		try("")
	}
}
