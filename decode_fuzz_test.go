package accountable_test

import (
	"testing"
	"time"

	"github.com/accountablework/accountable"
)

// The opaque strings clients send back (stream and list cursors, version tokens; API keys
// are package tokens') are decoded from whatever a caller writes. Each decoder must refuse
// without panicking, and what it accepts must be a value whose own encoding decodes to it
// again: a cursor or token the service hands out is the one it reads.

func FuzzParseStreamCursor(f *testing.F) {
	f.Add(accountable.StreamPosition{Position: 42, Seq: 3}.Encode())
	f.Add(accountable.StreamPosition{}.Encode())
	f.Add("ZTEuLTEuMA") // "e1.-1.0"
	f.Add("ZTEuMS4tMQ") // "e1.1.-1": a negative sequence is refused
	f.Add("")
	f.Add("!!!")
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := accountable.ParseStreamCursor(s)
		if !ok {
			return
		}
		if p.Seq < 0 {
			t.Fatalf("%q decoded to a negative sequence %d", s, p.Seq)
		}
		again, ok := accountable.ParseStreamCursor(p.Encode())
		if !ok || again != p {
			t.Fatalf("%q decoded to %+v, whose encoding decodes to %+v, %v", s, p, again, ok)
		}
	})
}

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

func FuzzParseWorkCursor(f *testing.F) {
	f.Add(accountable.WorkCursor{CreatedAt: time.UnixMicro(1_800_000_000_000_001), ID: "0190a0b0-c0d0-7e0f-8a0b-0c0d0e0f1011"}.Encode())
	f.Add("")
	f.Add("MTIzLm5vdC1hLXV1aWQ") // "123.not-a-uuid"
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := accountable.ParseWorkCursor(s)
		if !ok {
			return
		}
		if !accountable.ValidUUID(c.ID) {
			t.Fatalf("%q decoded to an id that is not a UUID: %q", s, c.ID)
		}
		again, ok := accountable.ParseWorkCursor(c.Encode())
		if !ok || again.ID != c.ID || !again.CreatedAt.Equal(c.CreatedAt) {
			t.Fatalf("%q decoded to %+v, whose encoding decodes to %+v, %v", s, c, again, ok)
		}
	})
}
