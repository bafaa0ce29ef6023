package store_test

import (
	"context"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
)

// GET /work/{taskId}'s read: one round trip, and the service's CPU of scanning the row
// (pgx plans the scan of each column anew for every row it reads):
//
//	scripts/stack.sh go test -run '^$' -bench GetWork -benchmem ./store
func BenchmarkGetWork(b *testing.B) {
	ctx := context.Background()
	db := storetest.Open(b)
	p := storetest.NewTenant(b, db).Principal
	desc := "Collect the figures from the ledger."
	res, _, err := db.CreateWork(ctx, p, nil, accountable.CreateWork{Title: "Prepare the quarterly report", Description: &desc,
		Metadata: accountable.Object(`{"source":"bench","tags":["q3","finance"]}`)})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := db.GetWork(ctx, p.WorkspaceID, res.TaskID); err != nil {
			b.Fatal(err)
		}
	}
}
