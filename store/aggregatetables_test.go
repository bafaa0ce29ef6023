package store_test

import (
	"context"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

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
			func(string) []byte { return []byte("sealed") },
			// Never relayed: no worker reads this test database's outbox.
			func(workspaceID, webhookID string) (accountable.WorkflowMessage, error) {
				return accountable.WorkflowMessage{WorkspaceID: workspaceID, Kind: accountable.StartWorkflow, WorkflowName: "WebhookDelivery",
					WorkflowID: "webhook-delivery/" + workspaceID + "/" + webhookID, Input: []byte(`{}`)}, nil
			})
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
