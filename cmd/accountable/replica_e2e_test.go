package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// `serve` with DATABASE_READ_URL set to a streaming replica (pg_basebackup of a private
// primary, following it): every write is read back at once through the event stream,
// verification and a projection, and /metrics shows those reads served by the replica.
func TestServeReadsTheLedgerFromAReplica(t *testing.T) {
	ctx := context.Background()
	primary, owner, service := storetest.NewMigratedCluster(t)
	standby := primary.NewStandby(t)
	db, err := store.Open(ctx, store.Config{URL: service})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	tenant := storetest.NewTenant(t, db)
	base := startApp(t, serveOptions, func(cfg *Config) {
		cfg.DatabaseURL, cfg.MigrationDatabaseURL = service, owner
		cfg.DatabaseReadURL = standby.URL("accountable_service", "accountable")
		cfg.TaskQueue = fmt.Sprintf("e2e-replica-%d", time.Now().UnixNano())
	}).SiteURL
	c := apiClient{t: t, base: base, key: tenant.Key}

	const writes = 20
	for i := range writes {
		status, body := c.call("POST", "/work", fmt.Sprintf("replica-%d", i), map[string]any{"title": fmt.Sprintf("read back %d", i)})
		if status != http.StatusCreated {
			t.Fatalf("create: %d %v", status, body)
		}
		id := body["data"].(map[string]any)["taskId"].(string)
		status, body = c.call("GET", "/events/stream?limit=1000", "", nil)
		if status != http.StatusOK {
			t.Fatalf("stream: %d %v", status, body)
		}
		events := body["data"].([]any)
		if last := events[len(events)-1].(map[string]any); last["aggregateId"] != id {
			t.Fatalf("write %d: the stream read right after it ends with %v, want task %s's event", i, last, id)
		}
	}
	status, body := c.call("GET", "/events/verify", "", nil)
	if status != http.StatusOK || body["data"].(map[string]any)["verified"] != true {
		t.Fatalf("verify: %d %v", status, body)
	}
	if status, body := c.call("GET", "/projections/work-ledger", "", nil); status != http.StatusOK {
		t.Fatalf("work-ledger projection: %d %v", status, body)
	}

	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	text, _ := io.ReadAll(res.Body)
	m := regexp.MustCompile(`(?m)^accountable_ledger_reads_total\{reason="",served_by="replica"\} (\d+)$`).FindSubmatch(text)
	if m == nil {
		t.Fatalf("/metrics has no reads served by the replica:\n%s", regexp.MustCompile(`(?m)^accountable_ledger_reads.*$`).FindAll(text, -1))
	}
	if n, _ := strconv.Atoi(string(m[1])); n < writes {
		t.Fatalf("%d ledger reads served by the replica, want at least %d (of %d)", n, writes, writes+2)
	}
	t.Logf("%s", regexp.MustCompile(`(?m)^accountable_ledger_reads.*$`).FindAll(text, -1))
}
