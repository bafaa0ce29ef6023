package sizedlru_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable/sizedlru"
)

// A cache is bounded in bytes (the least recently used go first, and a value over an
// eighth of the bound is not held) and in time: an evicted or expired value is one it no
// longer holds (for the context bases: a base answered in full, like a stale one).
func TestEvictAndExpire(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	b := sizedlru.New[string, string](800, 30*time.Minute, func(s string) int { return len(s) }, func() time.Time { return now })
	text := func(i int) string { return strings.Repeat(strconv.Itoa(i%10), 100) }
	for i := range 8 {
		b.Add(strconv.Itoa(i), text(i))
	}
	if _, ok := b.Get("0"); !ok || b.Bytes() != 800 {
		t.Fatalf("8 texts of 100 bytes in 800: first held %v, %d bytes", ok, b.Bytes())
	}
	b.Add("8", text(8)) // evicts the least recently used: 1 (0 was just read)
	if _, ok := b.Get("1"); ok || b.Bytes() != 800 {
		t.Fatalf("the least recently used text is still held (%d bytes)", b.Bytes())
	}
	if got, ok := b.Get("8"); !ok || got != text(8) {
		t.Fatalf("the newest text: %q %v", got, ok)
	}
	b.Add("8", text(8)) // renewed: held once, its bytes counted once
	if b.Bytes() != 800 {
		t.Fatalf("a renewed text counted twice: %d bytes", b.Bytes())
	}
	b.Add("big", strings.Repeat("x", 101))
	if _, ok := b.Get("big"); ok {
		t.Fatal("a text over an eighth of the bound was kept")
	}
	if _, ok := b.Get("other"); ok {
		t.Fatal("a text is held under another key")
	}
	now = now.Add(31 * time.Minute)
	if _, ok := b.Get("8"); ok {
		t.Fatal("an expired text is still held")
	}
	if b.Bytes() != 700 {
		t.Fatalf("an expired text's bytes are still counted: %d", b.Bytes())
	}
}

// With no time to live, a value is held until it is evicted.
func TestNoTTL(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	b := sizedlru.New[[2]int, []byte](100, 0, func(v []byte) int { return len(v) }, func() time.Time { return now })
	b.Add([2]int{1, 2}, []byte("abc"))
	now = now.Add(1000 * time.Hour)
	if v, ok := b.Get([2]int{1, 2}); !ok || string(v) != "abc" {
		t.Fatalf("a value without a time to live was dropped: %q %v", v, ok)
	}
}
