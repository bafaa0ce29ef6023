package store_test

import (
	"context"
	"maps"
	"regexp"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// TestAggregateTablesCoverEveryVersionedTable fails when a table whose rows carry an
// aggregate's version (an aggregate_version column, or version as artifacts name it) is
// not read by ledger verification's aggregateTables (each registered by its area's store
// file with verifiesAggregateTable): removing such an aggregate's events together with its
// anchored head would then go unnoticed. The tables come from the migrated database's
// catalog, so a new area's table is checked without anyone having to remember this test.
func TestAggregateTablesCoverEveryVersionedTable(t *testing.T) {
	// Tables with such a column whose rows describe no ledger aggregate, and why.
	notAggregates := map[string]string{
		"ledger_events":  "the ledger itself: aggregate_version is each event's place in its chain",
		"ledger_heads":   "the chains' anchored heads, which verification compares with the ledger before it reads aggregateTables",
		"schema_version": "tern's count of applied migrations",
	}

	rows, err := storetest.Conn(t).Query(context.Background(), `SELECT table_name::text, column_name::text
		FROM information_schema.columns
		WHERE table_schema = current_schema() AND column_name IN ('aggregate_version', 'version')
		ORDER BY table_name, column_name`)
	if err != nil {
		t.Fatal(err)
	}
	type versionedColumn struct{ Table, Column string }
	versioned, err := pgx.CollectRows(rows, pgx.RowToStructByPos[versionedColumn])
	if err != nil {
		t.Fatal(err)
	}
	if len(versioned) == 0 {
		t.Fatal("the catalog lists no aggregate_version or version column: the query reads the wrong schema")
	}

	queries := store.AggregateTableQueries()
	seen := map[string]bool{}
	for _, c := range versioned {
		seen[c.Table] = true
		if _, ok := notAggregates[c.Table]; ok {
			continue
		}
		// An entry covers the table when its query reads the table and returns the column
		// (NULL as the expected version would compare nothing).
		readsTable := regexp.MustCompile(`\bFROM\s+` + regexp.QuoteMeta(c.Table) + `\b`)
		returnsColumn := regexp.MustCompile(`\b` + regexp.QuoteMeta(c.Column) + `\b`)
		covered := slices.ContainsFunc(queries, func(q string) bool {
			return readsTable.MatchString(q) && returnsColumn.MatchString(q)
		})
		if !covered {
			t.Errorf("table %s carries an aggregate version (column %s) but no entry of aggregateTables reads "+
				"that table and returns its %s, so verification never compares its rows with their chains: register one "+
				"in an init of its area's store file, verifiesAggregateTable(<its aggregate type>, <a query of each row's "+
				"aggregate id and its %s>), or, if its rows describe no ledger aggregate, add the table "+
				"to notAggregates with the reason", c.Table, c.Column, c.Column, c.Column)
		}
	}
	for _, table := range slices.Sorted(maps.Keys(notAggregates)) {
		if !seen[table] {
			t.Errorf("notAggregates names %s, which has no aggregate_version or version column (any more): remove it", table)
		}
	}
}

// webhookFixture is a workspace with two webhook endpoints, one of them deleted.
type webhookFixture struct {
	p       accountable.Principal
	events  []accountable.Event // the whole stream
	kept    accountable.Webhook // registered: version 1
	deleted accountable.Webhook // registered and deleted: version 2
	created accountable.Event   // version 1 of deleted (webhook.created)
	removal accountable.Event   // version 2 of deleted (webhook.deleted)
}

const webhookFixtureEvents = storetest.TenantEvents + 3 // the tenant, 2 x webhook.created, webhook.deleted

func newWebhookFixture(t *testing.T, db *store.DB) webhookFixture {
	t.Helper()
	ctx := context.Background()
	f := webhookFixture{p: storetest.NewTenant(t, db).Principal}
	register := func() accountable.Webhook {
		t.Helper()
		reg, _, err := db.RegisterWebhook(ctx, f.p, nil, accountable.RegisterWebhook{URL: "https://hooks.example.test/in", EventTypes: []string{"*"}}, 10,
			func(string) []byte { return []byte("sealed") })
		if err != nil {
			t.Fatalf("RegisterWebhook: %v", err)
		}
		return reg.Webhook
	}
	f.kept, f.deleted = register(), register()
	var err error
	if f.deleted, err = db.DeleteWebhook(ctx, f.p, f.deleted.ID); err != nil {
		t.Fatalf("DeleteWebhook: %v", err)
	}
	f.events, _ = allEvents(t, db, f.p.WorkspaceID, webhookFixtureEvents)
	if len(f.events) != webhookFixtureEvents {
		t.Fatalf("fixture has %d events, want %d", len(f.events), webhookFixtureEvents)
	}
	for _, e := range f.events {
		switch {
		case e.AggregateID == f.deleted.ID && e.EventType == accountable.EventWebhookCreated:
			f.created = e
		case e.AggregateID == f.deleted.ID && e.EventType == accountable.EventWebhookDeleted:
			f.removal = e
		}
	}
	if f.created.ID == "" || f.removal.ID == "" || f.removal.AggregateVersion != 2 || f.deleted.AggregateVersion != 2 {
		t.Fatalf("fixture events not found or not at the endpoint's version in %+v (endpoint %+v)", f.events, f.deleted)
	}
	return f
}

// TestVerifyLedgerComparesWebhooksWithTheirChains: a workspace with webhook endpoints, one
// of them deleted, verifies; an endpoint whose events are removed together with their
// anchored head, or whose deletion is removed and the head rewound, is caught by the
// endpoint's own row and version (aggregateTables), which nothing else would notice.
func TestVerifyLedgerComparesWebhooksWithTheirChains(t *testing.T) {
	db := storetest.Open(t)
	db.UseWorkflowMessages(fakeMessages{}) // never relayed: no worker reads this test database's outbox

	t.Run("intact", func(t *testing.T) {
		f := newWebhookFixture(t, db)
		wantIntact(t, verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{}), webhookFixtureEvents, f.events[len(f.events)-1].EventHash)
		v := verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{AggregateType: accountable.AggregateWebhook, AggregateID: f.deleted.ID})
		wantIntact(t, v, 2, f.removal.EventHash)
	})

	t.Run("whole endpoint removed", func(t *testing.T) {
		f := newWebhookFixture(t, db)
		conn := tamperConn(t)
		execOne(t, conn, `DELETE FROM ledger_events WHERE workspace_id = $1 AND aggregate_type = 'webhook' AND aggregate_id = $2`,
			f.p.WorkspaceID, f.kept.ID)
		execOne(t, conn, `DELETE FROM ledger_heads WHERE workspace_id = $1 AND aggregate_type = 'webhook' AND aggregate_id = $2`,
			f.p.WorkspaceID, f.kept.ID)
		v := verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{})
		want := "webhook " + f.kept.ID + " exists but has no events in the ledger"
		if v.Verified || v.EventCount != webhookFixtureEvents-1 || str(v.FirstBrokenReason) != want {
			t.Fatalf("removed endpoint: verification %+v (%q); want broken with %d events for %q", v, str(v.FirstBrokenReason), webhookFixtureEvents-1, want)
		}
	})

	t.Run("deletion removed and its head rewound", func(t *testing.T) {
		f := newWebhookFixture(t, db)
		conn := tamperConn(t)
		execOne(t, conn, `DELETE FROM ledger_events WHERE workspace_id = $1 AND id = $2`, f.p.WorkspaceID, f.removal.ID)
		execOne(t, conn, `UPDATE ledger_heads SET version = 1, event_id = $3, event_hash = $4
			WHERE workspace_id = $1 AND aggregate_type = 'webhook' AND aggregate_id = $2`,
			f.p.WorkspaceID, f.deleted.ID, f.created.ID, f.created.EventHash)
		wantBroken(t, verify(t, db, f.p.WorkspaceID, accountable.LedgerScope{}), webhookFixtureEvents-1, f.created.ID,
			"webhook "+f.deleted.ID+" is at version 2 but its chain at version 1")
	})
}
