package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/accountablework/accountable"
)

// touchRecorder records the batches of last uses written, failing while fail is set.
type touchRecorder struct {
	KeyStore // nothing else is called
	mu       sync.Mutex
	batches  []map[string]time.Time
	fail     bool
}

func (r *touchRecorder) TouchKeys(_ context.Context, batch map[string]time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		return errors.New("the database is away")
	}
	r.batches = append(r.batches, batch)
	return nil
}

// TestKeyUsage checks the batching of keys' last uses: a use is pending until written,
// with accountable.Now's instant; a write sends each key's last use once; a failed write
// keeps them for the next, unless a later use came meanwhile; concurrent uses keep the
// latest.
func TestKeyUsage(t *testing.T) {
	store := &touchRecorder{}
	u := newKeyUsage(store, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	if _, ok := u.pendingUse("a"); ok {
		t.Fatal("a use pending before any")
	}
	before := accountable.Now()
	u.touch("a")
	after := accountable.Now()
	at, ok := u.pendingUse("a")
	if !ok || at.Before(before) || at.After(after) || at.Location() != time.UTC || at.Truncate(time.Microsecond) != at {
		t.Fatalf("pending use %v %v, want accountable.Now's between %v and %v", at, ok, before, after)
	}
	u.use("b", 100)
	u.use("b", 50) // an earlier reading that lost the race
	u.flush(ctx)
	if len(store.batches) != 1 || len(store.batches[0]) != 2 || !store.batches[0]["a"].Equal(at) || !store.batches[0]["b"].Equal(usedAt(100)) {
		t.Fatalf("batches %v", store.batches)
	}
	if _, ok := u.pendingUse("a"); ok {
		t.Fatal("a use pending once written")
	}
	u.flush(ctx)
	if len(store.batches) != 1 {
		t.Fatalf("an empty batch written: %v", store.batches)
	}

	store.fail = true
	u.use("a", 200)
	u.use("b", 300)
	u.flush(ctx)
	u.use("b", 400) // after the failed write: the later one stays
	if at, ok := u.pendingUse("a"); !ok || !at.Equal(usedAt(200)) {
		t.Fatalf("a's use after a failed write: %v %v", at, ok)
	}
	store.fail = false
	u.flush(ctx)
	if got := store.batches[len(store.batches)-1]; len(got) != 2 || !got["a"].Equal(usedAt(200)) || !got["b"].Equal(usedAt(400)) {
		t.Fatalf("the batch after a failed write: %v", got)
	}

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 1000 {
				u.use("c", int64(1+j*8+i))
			}
		})
	}
	wg.Wait()
	if at, _ := u.pendingUse("c"); !at.Equal(usedAt(8000)) {
		t.Fatalf("concurrent uses kept %v, want the latest", at)
	}
}
