package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// backgroundLoad is the bounded generator the worker-fault tests run beside their fault:
// clients of another workspace creating work through the same API process, each with its
// own Idempotency-Key, pausing between requests, at most budget requests in all.
type backgroundLoad struct {
	t         *testing.T
	workspace string
	stop      chan struct{}
	wg        sync.WaitGroup
	mu        sync.Mutex
	answers   map[string]int // Idempotency-Key -> status
	failures  []string
}

const (
	backgroundClients = 2
	backgroundBudget  = 3000
	backgroundPause   = 10 * time.Millisecond
)

// startBackgroundLoad starts the generator against site in a new workspace of db; stop
// checks what it received.
func startBackgroundLoad(t *testing.T, site string, db *store.DB) *backgroundLoad {
	t.Helper()
	tenant := storetest.NewTenant(t, db)
	l := &backgroundLoad{t: t, workspace: tenant.Principal.WorkspaceID, stop: make(chan struct{}), answers: map[string]int{}}
	c := faultClient{site: site, key: tenant.Key, http: &http.Client{Timeout: 30 * time.Second}}
	for g := range backgroundClients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := range backgroundBudget / backgroundClients {
				select {
				case <-l.stop:
					return
				case <-time.After(backgroundPause):
				}
				key := fmt.Sprintf("background-%d-%d", g, i)
				status, body, err := c.do("POST", "/work", key, map[string]any{"title": "background " + key})
				l.mu.Lock()
				l.answers[key] = status
				if err != nil || status != http.StatusCreated {
					l.failures = append(l.failures, fmt.Sprintf("%s: %d %v %v", key, status, body, err))
				}
				l.mu.Unlock()
			}
		}()
	}
	t.Cleanup(func() {
		select {
		case <-l.stop:
		default:
			close(l.stop) // the test ended before it stopped the generator
			l.wg.Wait()
		}
	})
	return l
}

// stopAndCheck stops the generator and checks that the API process answered every request
// 201 throughout the fault (a worker is not on the request path), and that the workspace's
// ledger holds exactly one work.created per acknowledged key, and nothing else from it.
func (l *backgroundLoad) stopAndCheck() {
	t := l.t
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	for i, f := range l.failures {
		if i == 5 {
			t.Errorf("... and %d more", len(l.failures)-5)
			break
		}
		t.Errorf("background load: %s", f)
	}
	ctx := context.Background()
	conn := storetest.Conn(t)
	events := map[string]int{}
	rows, err := conn.Query(ctx, `SELECT idempotency_key, count(*) FROM ledger_events
		WHERE workspace_id = $1 AND event_type = 'work.created' GROUP BY 1`, l.workspace)
	if err != nil {
		t.Fatal(err)
	}
	var key string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&key, &n}, func() error { events[key] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	for k, status := range l.answers {
		if status == http.StatusCreated && events[k] != 1 {
			t.Errorf("background load: %s acknowledged, %d work.created events", k, events[k])
		}
	}
	if len(events) != len(l.answers)-len(l.failures) {
		t.Errorf("background load: %d keys with a work.created event, %d acknowledged", len(events), len(l.answers)-len(l.failures))
	}
	t.Logf("background load: %d creations in another workspace, all 201, each in the ledger once", len(l.answers))
}
