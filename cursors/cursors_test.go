package cursors_test

import (
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/cursors"
)

func TestCursorsRoundTrip(t *testing.T) {
	p := accountable.StreamPosition{Position: 1 << 40, Seq: 7}
	if got, ok := cursors.ParseStream(cursors.EncodeStream(p)); !ok || got != p {
		t.Fatalf("stream cursor: %+v %v", got, ok)
	}
	w := accountable.WorkCursor{CreatedAt: accountable.Now(), ID: "0190c0de-0000-7000-8000-000000000000"}
	if got, ok := cursors.ParseWork(cursors.EncodeWork(w)); !ok || !got.CreatedAt.Equal(w.CreatedAt) || got.ID != w.ID {
		t.Fatalf("work cursor: %+v %v", got, ok)
	}
	for _, bad := range []string{"", "bogus", cursors.EncodeStream(accountable.StreamPosition{})[:3]} {
		if _, ok := cursors.ParseStream(bad); ok {
			t.Errorf("stream cursor %q accepted", bad)
		}
		if _, ok := cursors.ParseWork(bad); ok {
			t.Errorf("work cursor %q accepted", bad)
		}
	}
}

// The cursors clients send back are decoded from whatever a caller writes: each decoder
// must refuse without panicking, and what it accepts must be a value whose own encoding
// decodes to it again (a cursor the service hands out is the one it reads).

func FuzzParseStreamCursor(f *testing.F) {
	f.Add(cursors.EncodeStream(accountable.StreamPosition{Position: 42, Seq: 3}))
	f.Add(cursors.EncodeStream(accountable.StreamPosition{}))
	f.Add("ZTEuLTEuMA") // "e1.-1.0"
	f.Add("ZTEuMS4tMQ") // "e1.1.-1": a negative sequence is refused
	f.Add("")
	f.Add("!!!")
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := cursors.ParseStream(s)
		if !ok {
			return
		}
		if p.Seq < 0 {
			t.Fatalf("%q decoded to a negative sequence %d", s, p.Seq)
		}
		again, ok := cursors.ParseStream(cursors.EncodeStream(p))
		if !ok || again != p {
			t.Fatalf("%q decoded to %+v, whose encoding decodes to %+v, %v", s, p, again, ok)
		}
	})
}

func FuzzParseWorkCursor(f *testing.F) {
	f.Add(cursors.EncodeWork(accountable.WorkCursor{CreatedAt: time.UnixMicro(1_800_000_000_000_001), ID: "0190a0b0-c0d0-7e0f-8a0b-0c0d0e0f1011"}))
	f.Add("")
	f.Add("MTIzLm5vdC1hLXV1aWQ") // "123.not-a-uuid"
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := cursors.ParseWork(s)
		if !ok {
			return
		}
		if !accountable.ValidUUID(c.ID) {
			t.Fatalf("%q decoded to an id that is not a UUID: %q", s, c.ID)
		}
		again, ok := cursors.ParseWork(cursors.EncodeWork(c))
		if !ok || again.ID != c.ID || !again.CreatedAt.Equal(c.CreatedAt) {
			t.Fatalf("%q decoded to %+v, whose encoding decodes to %+v, %v", s, c, again, ok)
		}
	})
}
