package accountable_test

import (
	"sync"
	"testing"

	"github.com/accountablework/accountable"
)

// Shared error values (package variables, errors kept in caches) are decorated by many
// requests at once: each decoration is the request's own copy and the shared value never
// changes (run with -race: a decoration that wrote to it would be a data race).
func TestDecoratingASharedErrorCopiesIt(t *testing.T) {
	shared := accountable.ErrLedgerUnavailable
	code, message := shared.Code, shared.Message
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 100 {
				d := map[string]any{"goroutine": g, "i": i}
				got := shared.WithDetails(d)
				if got == shared || got.Details["goroutine"] != g || got.Details["i"] != i || got.Code != shared.Code || got.Message != shared.Message {
					t.Errorf("decoration %d/%d: %+v", g, i, got)
					return
				}
			}
		})
	}
	wg.Wait()
	if shared.Details != nil || shared.Code != code || shared.Message != message || shared.RetryAfter != 0 {
		t.Fatalf("the shared error changed: %+v", shared)
	}
}
