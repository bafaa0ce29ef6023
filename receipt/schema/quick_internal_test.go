package schema

import (
	"encoding/json"
	"math/big"
	"regexp"
	"testing"
)

// hasNonSpace is RE2's \S, for every one- and two-character string of white space,
// control and other characters, and invalid UTF-8.
func TestHasNonSpaceIsRE2NonSpace(t *testing.T) {
	re := regexp.MustCompile(`\S`)
	if quickPattern(re)("") || !quickPattern(re)("x") {
		t.Fatal("quickPattern does not use hasNonSpace")
	}
	chars := []string{"", " ", "\t", "\n", "\v", "\f", "\r", "\x00", "\x1f", "\u0085", "\u00a0", "\u2028", "\u3000", "\ufeff",
		"a", "-", "\xff", "\xc3", "\U0001F600"}
	for _, a := range chars {
		for _, b := range chars {
			for _, s := range []string{a + b, a + b + a, " " + a + b + "\t"} {
				if hasNonSpace(s) != re.MatchString(s) {
					t.Errorf("%q: %v, RE2 %v", s, hasNonSpace(s), re.MatchString(s))
				}
			}
		}
	}
}

// The quick pass's integer and decimal comparisons are big.Rat's (the library's), at and
// around every bound.
func TestQuickNumberBoundsAreExact(t *testing.T) {
	bounds := []int64{-9007199254740991, -1000, -5, -1, 0, 1, 5, 1000, 9007199254740991, 1 << 62, -1 << 62}
	var numbers []string
	for _, whole := range []string{"0", "1", "4", "5", "6", "999", "1000", "1001", "123456789012345", "9007199254740990", "9007199254740991", "9007199254740992"} {
		for _, frac := range []string{"", ".0", ".000", ".5", ".0001", ".9999"} {
			numbers = append(numbers, whole+frac, "-"+whole+frac)
		}
	}
	for _, b := range bounds {
		for _, which := range []string{"minimum", "maximum", "both"} {
			bound := new(big.Rat).SetInt64(b)
			q := &quickSchema{}
			if which != "maximum" {
				q.minimum, q.minInt64, q.minIsInt = bound, b, quickSmallInt(bound)
			}
			if which != "minimum" {
				q.maximum, q.maxInt64, q.maxIsInt = bound, b, quickSmallInt(bound)
			}
			for _, n := range numbers {
				r, _ := new(big.Rat).SetString(n)
				want := quickValid
				if q.minimum != nil && r.Cmp(q.minimum) < 0 || q.maximum != nil && r.Cmp(q.maximum) > 0 {
					want = quickInvalid
				}
				if got := q.checkNumber(json.Number(n)); got != want {
					t.Errorf("%s %s %d: %v, want %v", n, which, b, got, want)
				}
			}
		}
	}
}
