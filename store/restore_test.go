package store_test

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// openURL opens a store on url, closed when the test ends.
func openURL(t *testing.T, url string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), store.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// queryInt runs a query returning one integer on a connection of its own.
func queryInt(t *testing.T, url, sql string) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// burnTransactionIDs makes the server behind url use up n transaction ids, so that its
// ids are far above those of a new cluster.
func burnTransactionIDs(t *testing.T, url string, n int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// A DO block run outside a transaction block may commit: one id per iteration.
	if _, err := conn.Exec(ctx, `DO $$ BEGIN FOR i IN 1..`+strconv.Itoa(n)+` LOOP PERFORM pg_current_xact_id(); COMMIT; END LOOP; END $$`); err != nil {
		t.Fatal(err)
	}
}

// restore dumps the database of fromOwnerURL and restores it into the (empty) database of
// toOwnerURL the way docs/architecture.md (Backup and restore) says: pg_dump, pg_restore
// without owners and privileges, then `accountable migrate` (store.Migrate), which grants
// the service role its privileges.
func restore(t *testing.T, fromOwnerURL, toOwnerURL, toServiceURL string) {
	t.Helper()
	dump := filepath.Join(t.TempDir(), "accountable.dump")
	storetest.Tool(t, "pg_dump", "--format=custom", "--file="+dump, "--dbname="+fromOwnerURL)
	storetest.Tool(t, "pg_restore", "--no-owner", "--no-privileges", "--exit-on-error", "--dbname="+toOwnerURL, dump)
	if err := store.Migrate(context.Background(), store.MigrateConfig{OwnerURL: toOwnerURL, ServiceURL: toServiceURL}); err != nil {
		t.Fatalf("migrate the restored database: %v", err)
	}
}

func eventIDs(events []accountable.Event) []string {
	ids := make([]string, len(events))
	for i, e := range events {
		ids[i] = e.ID
	}
	return ids
}

// appendSome writes n events in workspace p: each creates a task.
func appendSome(t *testing.T, db *store.DB, p accountable.Principal, n int, title string) {
	t.Helper()
	for range n {
		createTask(t, db, p, title)
	}
}

// A pg_dump of the service database restored into a new cluster keeps the stream complete
// and in order, and events written after the restore come after the old ones, for readers
// that start over and for readers that resume from a cursor taken before the dump. Moved
// back to the first server (restored as another database), the same holds again.
func TestStreamSurvivesDumpAndRestoreIntoANewCluster(t *testing.T) {
	ctx := context.Background()
	srcOwner, srcService := storetest.NewDatabase(t)
	if err := store.Migrate(ctx, store.MigrateConfig{OwnerURL: srcOwner, ServiceURL: srcService}); err != nil {
		t.Fatal(err)
	}
	// The source's transaction ids are far above where a new cluster's start.
	burnTransactionIDs(t, srcOwner, 20000)
	src := openURL(t, srcService)
	tenant := storetest.NewTenant(t, src)
	p := tenant.Principal
	appendSome(t, src, p, 5, "before the dump")
	before, cursor := allEvents(t, src, p.WorkspaceID, storetest.TenantEvents+5)
	if len(before) != storetest.TenantEvents+5 {
		t.Fatalf("the source serves %d events, want %d", len(before), storetest.TenantEvents+5)
	}
	maxOld := queryInt(t, srcOwner, `SELECT max(stream_position) FROM ledger_events`)
	src.Close()

	cluster := storetest.NewCluster(t)
	cluster.CreateDatabase(t, "accountable")
	newOwner, newService := cluster.URL("accountable", "accountable"), cluster.URL(store.ServiceRoleName, "accountable")
	restore(t, srcOwner, newOwner, newService)
	// Without the epoch offset, positions on the new cluster would be its transaction ids,
	// which are below the old positions: new events would sort before the old ones.
	if xid := queryInt(t, newOwner, `SELECT pg_current_xact_id()::text::bigint`); xid >= maxOld {
		t.Fatalf("precondition: the new cluster's transaction id %d is not below the old positions (max %d)", xid, maxOld)
	}

	dst := openURL(t, newService)
	restored, _ := allEvents(t, dst, p.WorkspaceID, len(before))
	if !slices.Equal(eventIDs(restored), eventIDs(before)) {
		t.Fatalf("the restored stream differs:\n got %v\nwant %v", eventIDs(restored), eventIDs(before))
	}
	appendSome(t, dst, p, 3, "after the restore")
	all, _ := allEvents(t, dst, p.WorkspaceID, len(before)+3)
	if len(all) != len(before)+3 || !slices.Equal(eventIDs(all[:len(before)]), eventIDs(before)) {
		t.Fatalf("after the restore the stream has %d events (want %d), old ones first: %v", len(all), len(before)+3, eventIDs(all))
	}
	page, err := dst.StreamEvents(ctx, p.WorkspaceID, accountable.EventFilter{After: cursor, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(eventIDs(page.Events), eventIDs(all[len(before):])) {
		t.Fatalf("a reader resuming from its cursor of before the dump read %v, want the 3 new events %v",
			eventIDs(page.Events), eventIDs(all[len(before):]))
	}
	if v, err := dst.VerifyLedger(ctx, p.WorkspaceID, accountable.LedgerScope{}); err != nil || !v.Verified {
		t.Fatalf("the restored ledger does not verify: %+v %v", v, err)
	}
	dst.Close()

	// And back to the first server, as another database: positions continue again.
	backOwner, backService := storetest.NewDatabase(t)
	restore(t, newOwner, backOwner, backService)
	back := openURL(t, backService)
	appendSome(t, back, p, 2, "moved back")
	again, _ := allEvents(t, back, p.WorkspaceID, len(all)+2)
	if len(again) != len(all)+2 || !slices.Equal(eventIDs(again[:len(all)]), eventIDs(all)) {
		t.Fatalf("moved back, the stream has %d events (want %d), old ones first", len(again), len(all)+2)
	}
	if n := queryInt(t, backOwner, `SELECT count(*) FROM ledger_stream_epochs`); n != 3 {
		t.Errorf("%d stream epochs, want 3 (the source, the new cluster, back on the source's server)", n)
	}
}
