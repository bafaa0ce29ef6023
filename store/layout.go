package store

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// The partitioned ledger layout (layouts/ledger_partitioned.sql, docs/scaling.md): an
// opt-in layout for large deployments, applied after the migrations, that turns
// ledger_events into a table partitioned by hash of workspace_id. The default schema keeps
// one table.

//go:embed layouts/ledger_partitioned.sql
var partitionedLedgerSQL string

// DefaultLedgerPartitions is the partition count of the layout when none is chosen.
const DefaultLedgerPartitions = 16

// ApplyPartitionedLedger partitions the ledger of the migrated database at ownerURL (the
// owner role, as for Migrate) by hash of workspace_id into partitions partitions, keeping
// every event, column, constraint, index, trigger and privilege (see the script). It runs
// in one transaction and changes nothing when the ledger is already partitioned that way;
// another partition count is an error.
func ApplyPartitionedLedger(ctx context.Context, ownerURL string, partitions int) error {
	if partitions < 1 || partitions > 1024 {
		return fmt.Errorf("store: the ledger's partition count must be between 1 and 1024, not %d", partitions)
	}
	conn, err := pgx.Connect(ctx, ownerURL)
	if err != nil {
		return fmt.Errorf("store: connect to apply the partitioned ledger layout: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `SELECT set_config('accountable.ledger_partitions', $1, false)`, strconv.Itoa(partitions)); err != nil {
		return fmt.Errorf("store: apply the partitioned ledger layout: %w", err)
	}
	// Without arguments, Exec sends the script as one simple query: its statements run in
	// order, in the transaction the script opens.
	if _, err := conn.Exec(ctx, partitionedLedgerSQL); err != nil {
		return fmt.Errorf("store: apply the partitioned ledger layout: %w", err)
	}
	return nil
}
