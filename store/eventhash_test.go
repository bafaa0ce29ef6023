package store_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// The hand-written event hash is canonical.DigestOf of the header, on generated headers:
// strings with every character class RFC 8785 escapes or sorts differently (quotes,
// backslashes, controls, non-ASCII, astral, invalid UTF-8), nulls and values, versions
// at and beyond the integers a double holds exactly, and instants in any zone and
// precision.
func TestEventHashIsTheCanonicalDigest(t *testing.T) {
	header := randomHeaders(rand.New(rand.NewPCG(30, 2026)))
	for i := range 20000 {
		h := header()
		want, err := canonical.DigestOf(h)
		if err != nil {
			t.Fatal(err)
		}
		if got := store.EventHash(h); got != want {
			t.Fatalf("header %d %+v: hash %s, canonical.DigestOf %s", i, h, got, want)
		}
	}
}

// randomHeaders makes the headers TestEventHashIsTheCanonicalDigest describes.
func randomHeaders(r *rand.Rand) func() accountable.EventHeader {
	pieces := []string{"", "a", "Z", "0", "-", " ", `"`, `\`, "/", "\n", "\t", "\x00", "\x1f", "\x7f", "é", "€", "😀",
		"\u2028", "\u2029", "<", ">", "&", "\xff", "\xc3", "sha256:", "01a20eb2-8b0f-77a5-8e99-d935ffff857a"}
	str := func() string {
		s := ""
		for range r.IntN(6) {
			s += pieces[r.IntN(len(pieces))]
		}
		return s
	}
	opt := func() *string {
		if r.IntN(3) == 0 {
			return nil
		}
		s := str()
		return &s
	}
	versions := []int64{1, 2, 42, 1<<53 - 1, 1 << 53, 1<<53 + 1, math.MaxInt64, -1, 0, math.MinInt64}
	instant := func() accountable.Time {
		if r.IntN(10) == 0 {
			return accountable.Time{}
		}
		zone := time.FixedZone("z", (r.IntN(48)-24)*1800)
		return accountable.TimeOf(time.Unix(r.Int64N(4e9), r.Int64N(1e9)).In(zone))
	}
	return func() accountable.EventHeader {
		h := accountable.EventHeader{ID: str(), WorkspaceID: str(), AggregateType: str(), AggregateID: str(),
			AggregateVersion: versions[r.IntN(len(versions))], EventType: str(), SchemaVersion: str(),
			ActorType: accountable.ActorType(str()), ActorID: str(), PayloadDigest: str(),
			OccurredAt: instant(), RecordedAt: instant(), IdempotencyKey: opt(), CausationID: opt(),
			CorrelationID: opt(), PreviousHash: opt()}
		if r.IntN(2) == 0 {
			h.AggregateVersion = r.Int64N(1 << 40)
		}
		return h
	}
}

// PostgreSQL makes an event's hash from the header's text around the head's values
// exactly as the service does, for any header, with the versions and previous hashes a
// head holds (a version from 1 to 2^53, a hash or none).
func TestEventHashSQLIsEventHash(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	r := rand.New(rand.NewPCG(8, 2026))
	header := randomHeaders(r)
	for i := range 300 {
		h := header()
		h.AggregateVersion = 1 + r.Int64N([]int64{10, 1 << 20, 1<<53 - 1}[r.IntN(3)])
		h.PreviousHash = nil
		if r.IntN(5) > 0 {
			prev := fmt.Sprintf("sha256:%064x", r.Uint64())
			h.PreviousHash = &prev
		}
		got, err := store.EventHashInPostgres(ctx, db, h)
		if err != nil {
			t.Fatal(err)
		}
		if want := store.EventHash(h); got != want {
			t.Fatalf("header %d %+v: PostgreSQL's hash %s, the service's %s", i, h, got, want)
		}
	}
}

func BenchmarkEventHash(b *testing.B) {
	key, prev := "bench-1", "sha256:0f2b2d6c5d1b8a4e2f7a1c3d9e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b"
	h := accountable.EventHeader{ID: "01a20eb2-8b0f-77a5-8e99-d935ffff857a", WorkspaceID: "01a20eb2-7486-758e-a1b1-0aa0f7f07708",
		AggregateType: "task", AggregateID: "01a20eb2-8b0f-77a5-8e99-d935ffff857b", AggregateVersion: 2, EventType: "work.completed",
		SchemaVersion: "1.0.0", ActorType: "human", ActorID: "01a20eb2-7486-758e-a1b1-0aa0f7f07709",
		PayloadDigest: "sha256:1f2b2d6c5d1b8a4e2f7a1c3d9e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b",
		OccurredAt:    accountable.NowTime(), RecordedAt: accountable.NowTime(), IdempotencyKey: &key, PreviousHash: &prev}
	b.Run("canonical.DigestOf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := canonical.DigestOf(h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("eventHash", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			store.EventHash(h)
		}
	})
}
