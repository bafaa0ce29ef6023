package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store/storetest"
)

// failingKeys answers every key lookup with one shared error value.
type failingKeys struct {
	api.KeyStore
	err error
}

func (k failingKeys) KeyByPrefix(context.Context, string) (accountable.APIKey, []byte, error) {
	return accountable.APIKey{}, nil, k.err
}

// Concurrent requests that fail with the same error value each get their own answer (their
// own requestId, the error's details and retryAfter) and the value is left as it was; with
// -race, an error handler that decorated it in place is a data race.
func TestSharedErrorIsNotChangedByConcurrentAnswers(t *testing.T) {
	shared := &accountable.Error{Code: accountable.ECodeRateLimited, Message: "Shared by every request.",
		Details: map[string]any{"scope": "test"}, RetryAfter: 3 * time.Second}
	e := newEnv(t, nil, func(_ *api.Config, d *api.Deps) {
		d.Keys = failingKeys{KeyStore: d.Keys, err: fmt.Errorf("looking up the key: %w", shared)}
	})
	tenant := storetest.NewTenant(t, e.db)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 10 {
				id := fmt.Sprintf("shared-%d-%d", g, i)
				r := e.do(request{method: "GET", path: "/work", key: tenant.Key, headers: map[string]string{"X-Request-Id": id}})
				if r.status != http.StatusTooManyRequests || r.errorCode() != accountable.ECodeRateLimited {
					t.Errorf("%s: %d %s", id, r.status, r.raw)
					return
				}
				body := r.errorObj()
				details, _ := body["details"].(map[string]any)
				if body["requestId"] != id || r.header.Get("X-Request-Id") != id || len(details) != 1 || details["scope"] != "test" ||
					body["retryAfter"] != 3.0 || r.header.Get("Retry-After") != "3" || body["message"] != shared.Message {
					t.Errorf("%s: %s (Retry-After %q)", id, r.raw, r.header.Get("Retry-After"))
					return
				}
			}
		})
	}
	wg.Wait()
	if len(shared.Details) != 1 || shared.Details["scope"] != "test" || shared.Message != "Shared by every request." ||
		shared.RetryAfter != 3*time.Second || shared.Code != accountable.ECodeRateLimited {
		t.Fatalf("the shared error changed: %+v", shared)
	}
}
