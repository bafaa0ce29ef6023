package accountable_test

import (
	"testing"
	"time"

	"github.com/accountablework/accountable"
)

// The opaque strings clients send back (version tokens here; stream and list cursors are
// package cursors', API keys package tokens') are decoded from whatever a caller writes.
// Each decoder must refuse without panicking, and what it accepts must be a value whose own
// encoding decodes to it again: a token the service hands out is the one it reads.

func FuzzParseVersionToken(f *testing.F) {
	f.Add(accountable.TaskVersion{AggregateVersion: 3, UpdatedAt: time.UnixMicro(1_800_000_000_123_456)}.Token())
	f.Add(accountable.TaskVersion{}.Token())
	f.Add("djEuLTEuMA") // "v1.-1.0": a negative version is refused
	f.Add("")
	f.Add("v1.1.1")
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := accountable.ParseVersionToken(s)
		if !ok {
			return
		}
		if v.AggregateVersion < 0 || v.UpdatedAt.Location() != time.UTC {
			t.Fatalf("%q decoded to %+v", s, v)
		}
		again, ok := accountable.ParseVersionToken(v.Token())
		if !ok || !again.Equal(v) {
			t.Fatalf("%q decoded to %+v, whose token decodes to %+v, %v", s, v, again, ok)
		}
	})
}
