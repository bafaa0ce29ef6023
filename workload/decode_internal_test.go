package workload

import (
	"strings"
	"testing"
)

// TestPlainTextLen: the word-at-a-time scan stops where the byte-at-a-time one does, for
// every byte value at every offset of texts up to past three words (plain ASCII and UTF-8
// before it, which the scan must not stop at).
func TestPlainTextLen(t *testing.T) {
	slow := func(b []byte) int {
		i := 0
		for i < len(b) && plainTextByte[b[i]] {
			i++
		}
		return i
	}
	for _, plain := range []string{strings.Repeat("abcdefgh ~}|{0123", 2), strings.Repeat("é😀\x7f\u2028", 4)} {
		for n := range 30 {
			for at := 0; at <= n; at++ {
				for c := range 256 {
					b := []byte(plain[:at] + string([]byte{byte(c)}) + plain[at:n])
					if got, want := plainTextLen(b), slow(b); got != want {
						t.Fatalf("%q: %d, want %d", b, got, want)
					}
				}
			}
		}
	}
}
