package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/ledgerlog"
)

// The transparency log of each workspace's ledger (package ledgerlog; migration 025).
//
// Leaves are appended by the log integrator, off the request path, in the stream's order:
// a dense leaf index assigned in the command's own transaction would make every command of
// a workspace wait, from its leaf to its commit (fsync included), for the one before it,
// where today commands of different aggregates commit side by side. The integrator reads
// the stream below its horizon (so a transaction that commits late is integrated on a
// later run, never skipped), checks each event's hashes, and writes each leaf's stored
// hashes (tlog.StoredHashes: two per leaf on average, never a recomputation) in one
// transaction per batch.

func init() {
	appendOnlyTables = append(appendOnlyTables, "ledger_log_leaves", "ledger_log_hashes", "ledger_checkpoints", "ledger_cosignatures")
}

// IntegrateLedgerLog appends to the workspace's log, as leaves, up to limit of the events
// committed since its last run, in stream order, and returns how many it appended. Another
// integrator at work on the same log makes it return 0 at once (that one appends them).
func (db *DB) IntegrateLedgerLog(ctx context.Context, workspaceID string, limit int) (int, error) {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return 0, mapError(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after a commit, a no-op
	if _, err := tx.Exec(ctx, `INSERT INTO ledger_logs (workspace_id, updated_at) VALUES ($1, now())
		ON CONFLICT (workspace_id) DO NOTHING`, workspaceID); err != nil {
		return 0, mapError(err)
	}
	var size int64
	var after accountable.StreamPosition
	err = tx.QueryRow(ctx, `SELECT tree_size, last_position, last_seq FROM ledger_logs
		WHERE workspace_id = $1 FOR UPDATE SKIP LOCKED`, workspaceID).Scan(&size, &after.Position, &after.Seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, mapError(err)
	}
	page, err := streamEvents(ctx, tx, workspaceID, after, nil, nil, limit)
	if err != nil {
		return 0, err
	}
	if len(page.Events) == 0 {
		return 0, nil
	}
	r := &logHashReader{ctx: ctx, q: tx, workspaceID: workspaceID, fresh: map[int64]tlog.Hash{}}
	leafIndexes := make([]int64, 0, len(page.Events))
	eventIDs := make([]string, 0, len(page.Events))
	var hashIndexes []int64
	var hashes [][]byte
	for i, e := range page.Events {
		entry, err := leafEntry(e)
		if err != nil {
			return 0, err
		}
		n := size + int64(i)
		stored, err := tlog.StoredHashesForRecordHash(n, ledgerlog.LeafHash(entry), r)
		if err != nil {
			return 0, fmt.Errorf("store: the stored hashes of leaf %d: %w", n, err)
		}
		first := tlog.StoredHashIndex(0, n)
		for j, h := range stored {
			r.fresh[first+int64(j)] = h
			hashIndexes = append(hashIndexes, first+int64(j))
			hashes = append(hashes, h[:])
		}
		leafIndexes = append(leafIndexes, n)
		eventIDs = append(eventIDs, e.ID)
	}
	last := page.Positions[len(page.Positions)-1]
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO ledger_log_leaves (workspace_id, leaf_index, event_id)
		SELECT $1, unnest($2::bigint[]), unnest($3::uuid[])`, workspaceID, leafIndexes, eventIDs)
	b.Queue(`INSERT INTO ledger_log_hashes (workspace_id, hash_index, hash)
		SELECT $1, unnest($2::bigint[]), unnest($3::bytea[])`, workspaceID, hashIndexes, hashes)
	b.Queue(`UPDATE ledger_logs SET tree_size = $2, last_position = $3, last_seq = $4, updated_at = now()
		WHERE workspace_id = $1`, workspaceID, size+int64(len(page.Events)), last.Position, last.Seq)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return 0, mapError(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, mapError(err)
	}
	return len(page.Events), nil
}

// leafEntry is e's log entry, once e is seen to match its own hashes: an event whose
// payload or header was changed after it was written never becomes a leaf.
func leafEntry(e accountable.Event) ([]byte, error) {
	canon, err := canonical.Transform(e.Payload)
	if err != nil || canonical.Digest(canon) != e.PayloadDigest {
		return nil, &accountable.LedgerLogBrokenError{EventID: e.ID, Reason: "payloadDigest does not match the payload"}
	}
	entry, err := ledgerlog.Entry(e.EventHeader)
	if err != nil {
		return nil, err
	}
	if ledgerlog.EventHashOf(entry) != e.EventHash {
		return nil, &accountable.LedgerLogBrokenError{EventID: e.ID, Reason: "eventHash does not match the event"}
	}
	return entry, nil
}

// logHashReader reads a workspace's stored hashes (tlog.HashReader): the ones written by
// the batch being integrated from memory, the others from the table.
type logHashReader struct {
	ctx         context.Context
	q           querier
	workspaceID string
	fresh       map[int64]tlog.Hash
	// holds, when above 0, is the size the log must have reached for the read to stand
	// (a proof or tile of a tree of that size): the statement that reads the hashes asks
	// it too, so the read is one round trip, and only a read that finds hashes missing asks
	// the log's size to say why (proved). read says whether a read was made at all.
	holds int64
	read  bool
}

// holdsHashesSQL reads stored hashes of a log that has reached a size ($3): none of a log
// that has not. The log's size is asked once for the statement (a one-time filter), and
// the hashes are read as the plain statement reads them.
const holdsHashesSQL = `SELECT h.hash_index, h.hash FROM ledger_log_hashes h
	WHERE h.workspace_id = $1 AND h.hash_index = ANY ($2)
		AND EXISTS (SELECT FROM ledger_logs l WHERE l.workspace_id = $1 AND l.tree_size >= $3)`

func (r *logHashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	r.read = true
	out := make([]tlog.Hash, len(indexes))
	var missing []int64
	for i, x := range indexes {
		if h, ok := r.fresh[x]; ok {
			out[i] = h
		} else {
			missing = append(missing, x)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	var rows pgx.Rows
	var err error
	if r.holds > 0 {
		rows, err = r.q.Query(r.ctx, holdsHashesSQL, r.workspaceID, missing, r.holds)
	} else {
		rows, err = r.q.Query(r.ctx, `SELECT hash_index, hash FROM ledger_log_hashes
		WHERE workspace_id = $1 AND hash_index = ANY ($2)`, r.workspaceID, missing)
	}
	if err != nil {
		return nil, mapError(err)
	}
	found := make(map[int64]tlog.Hash, len(missing))
	for rows.Next() {
		var x int64
		var h []byte
		if err := rows.Scan(&x, &h); err != nil {
			rows.Close()
			return nil, mapError(err)
		}
		if len(h) != tlog.HashSize {
			rows.Close()
			return nil, fmt.Errorf("store: stored hash %d of the log is %d bytes", x, len(h))
		}
		found[x] = tlog.Hash(h)
	}
	if err := rows.Err(); err != nil {
		return nil, mapError(err)
	}
	for i, x := range indexes {
		if _, ok := r.fresh[x]; ok {
			continue
		}
		h, ok := found[x]
		if !ok {
			return nil, fmt.Errorf("store: stored hash %d of the log is missing", x)
		}
		out[i] = h
		if r.fresh != nil {
			r.fresh[x] = h
		}
	}
	return out, nil
}

// logHolds checks that the workspace's log has reached the reader's size: not_found if
// it has not.
func (r *logHashReader) logHolds() error {
	var have int64
	err := r.q.QueryRow(r.ctx, `SELECT tree_size FROM ledger_logs WHERE workspace_id = $1`, r.workspaceID).Scan(&have)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return mapError(err)
	}
	if r.holds > have {
		return accountable.Errorf(accountable.ECodeNotFound, "The workspace's log has %d leaves, not %d.", have, r.holds)
	}
	return nil
}

// proved ends a read of a tree of the reader's size. Where the tlog computation failed
// (a hash missing: a log short of the size, or a hash lost) or read no stored hash at all,
// the log's size says whether the tree is one the log holds (not_found if not); any other
// failure is wrapped in what.
func (r *logHashReader) proved(err error, what string, args ...any) error {
	if err != nil || !r.read {
		if herr := r.logHolds(); herr != nil {
			return herr
		}
	}
	if err != nil {
		return fmt.Errorf("store: "+what+": %w", append(args, err)...)
	}
	return nil
}

// LedgerLogTree is the workspace's log as the database has it now: its size and root.
func (db *DB) LedgerLogTree(ctx context.Context, workspaceID string) (tlog.Tree, error) {
	var size int64
	err := db.pool.QueryRow(ctx, `SELECT tree_size FROM ledger_logs WHERE workspace_id = $1`, workspaceID).Scan(&size)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return tlog.Tree{}, mapError(err)
	}
	return db.ledgerLogTreeAt(ctx, workspaceID, size)
}

func (db *DB) ledgerLogTreeAt(ctx context.Context, workspaceID string, size int64) (tlog.Tree, error) {
	h, err := tlog.TreeHash(size, db.logHashes(ctx, workspaceID))
	if err != nil {
		return tlog.Tree{}, err
	}
	return tlog.Tree{N: size, Hash: h}, nil
}

func (db *DB) logHashes(ctx context.Context, workspaceID string) *logHashReader {
	return &logHashReader{ctx: ctx, q: db.pool, workspaceID: workspaceID}
}

// LedgerLogsBehind returns (up to limit of) the workspaces whose log has not integrated
// every event of their stream, or whose tree is larger than their newest checkpoint.
func (db *DB) LedgerLogsBehind(ctx context.Context, limit int) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT w.id::text FROM workspaces w
		LEFT JOIN ledger_logs l ON l.workspace_id = w.id
		WHERE EXISTS (SELECT 1 FROM ledger_events e WHERE e.workspace_id = w.id
				AND (e.stream_position, e.seq) > (coalesce(l.last_position, 0), coalesce(l.last_seq, 0)))
		   OR l.tree_size > coalesce((SELECT max(c.tree_size) FROM ledger_checkpoints c WHERE c.workspace_id = w.id), 0)
		LIMIT $1`, limit)
	if err != nil {
		return nil, mapError(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, mapError(err)
}

// LedgerCheckpoint is the newest checkpoint of the workspace's log (size 0 in none).
func (db *DB) LedgerCheckpoint(ctx context.Context, workspaceID string) (accountable.LedgerCheckpoint, error) {
	return db.ledgerCheckpoint(ctx, workspaceID, -1)
}

// LedgerCheckpointAt is the checkpoint of the workspace's log at size (not_found if the
// log was never signed at that size).
func (db *DB) LedgerCheckpointAt(ctx context.Context, workspaceID string, size int64) (accountable.LedgerCheckpoint, error) {
	return db.ledgerCheckpoint(ctx, workspaceID, size)
}

func (db *DB) ledgerCheckpoint(ctx context.Context, workspaceID string, size int64) (accountable.LedgerCheckpoint, error) {
	var c accountable.LedgerCheckpoint
	sql, args := checkpointSQL(workspaceID, size)
	if err := scanCheckpoint(db.pool.QueryRow(ctx, sql, args...), &c); err != nil {
		return c, err
	}
	if c.TreeSize == 0 && size >= 0 {
		return c, accountable.LedgerCheckpointMissing(size)
	}
	return c, nil
}

// LedgerCheckpointsAt are the checkpoints of the workspace's log at sizes (-1: the
// newest), read in one round trip; a size the log was never signed at has a checkpoint of
// size 0 (the caller says what that means for it).
func (db *DB) LedgerCheckpointsAt(ctx context.Context, workspaceID string, sizes ...int64) ([]accountable.LedgerCheckpoint, error) {
	out := make([]accountable.LedgerCheckpoint, len(sizes))
	b := &pgx.Batch{}
	for i, size := range sizes {
		queueCheckpoint(b, workspaceID, size, &out[i])
	}
	return out, mapError(db.pool.SendBatch(ctx, b).Close())
}

// LedgerLeafIn is an event's leaf (not_found for an event of another workspace, or one
// not yet integrated) with the checkpoint of the log at size (-1: the newest; size 0 if
// there is none), read in one round trip: what an inclusion proof starts from.
func (db *DB) LedgerLeafIn(ctx context.Context, workspaceID, eventID string, size int64) (accountable.LedgerLeaf, accountable.LedgerCheckpoint, error) {
	var leaf accountable.LedgerLeaf
	var c accountable.LedgerCheckpoint
	b := &pgx.Batch{}
	b.Queue(leafSQL, workspaceID, eventID).QueryRow(func(row pgx.Row) (err error) {
		leaf, err = scanLeaf(row, eventID)
		return err
	})
	queueCheckpoint(b, workspaceID, size, &c)
	return leaf, c, mapError(db.pool.SendBatch(ctx, b).Close())
}

// checkpointSQL is the statement that reads a checkpoint of the workspace's log, the
// newest (size < 0) or the one of size, with its witnesses' cosignatures in their order:
// one statement, each with its own plan (a size asked is a primary-key lookup, however
// many checkpoints the log has; the newest is the key's last).
func checkpointSQL(workspaceID string, size int64) (string, []any) {
	if size < 0 {
		return checkpointColumns + ` WHERE c.workspace_id = $1 ORDER BY c.tree_size DESC LIMIT 1`, []any{workspaceID}
	}
	return checkpointColumns + ` WHERE c.workspace_id = $1 AND c.tree_size = $2`, []any{workspaceID, size}
}

const checkpointColumns = `SELECT c.tree_size, c.root_hash, c.signed_note, c.signed_at,
		ARRAY(SELECT k.signature FROM ledger_cosignatures k
			WHERE k.workspace_id = c.workspace_id AND k.tree_size = c.tree_size ORDER BY k.witness)
	FROM ledger_checkpoints c`

// queueCheckpoint queues the read of a checkpoint (checkpointSQL) into c.
func queueCheckpoint(b *pgx.Batch, workspaceID string, size int64, c *accountable.LedgerCheckpoint) {
	sql, args := checkpointSQL(workspaceID, size)
	b.Queue(sql, args...).QueryRow(func(row pgx.Row) error { return scanCheckpoint(row, c) })
}

// scanCheckpoint reads a row of checkpointSQL into c, which stays of size 0 if there is
// none.
func scanCheckpoint(row pgx.Row, c *accountable.LedgerCheckpoint) error {
	var root []byte
	var signedAt time.Time
	err := row.Scan(&c.TreeSize, &root, &c.SignedNote, &signedAt, &c.Cosignatures)
	if errors.Is(err, pgx.ErrNoRows) {
		*c = accountable.LedgerCheckpoint{}
		return nil
	}
	if err != nil {
		return mapError(err)
	}
	c.RootHash, c.SignedAt = root, accountable.TimeOf(signedAt)
	return nil
}

// SaveLedgerCheckpoint keeps a signed checkpoint. A second one of the same size (another
// signer, the same tree) is not kept: the first stands.
func (db *DB) SaveLedgerCheckpoint(ctx context.Context, workspaceID string, tree tlog.Tree, signed []byte) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO ledger_checkpoints (workspace_id, tree_size, root_hash, signed_note, signed_at)
		VALUES ($1, $2, $3, $4, now()) ON CONFLICT (workspace_id, tree_size) DO NOTHING`,
		workspaceID, tree.N, tree.Hash[:], string(signed))
	return mapError(err)
}

// ProveLedgerConsistency is the consistency proof of the workspace's log from size from
// to size to (both at most the log's size).
func (db *DB) ProveLedgerConsistency(ctx context.Context, workspaceID string, from, to int64) (tlog.TreeProof, error) {
	r := db.heldHashes(ctx, workspaceID, to)
	p, err := tlog.ProveTree(to, from, r)
	if err := r.proved(err, "the consistency proof from %d to %d", from, to); err != nil {
		return nil, err
	}
	return p, nil
}

// LedgerLeafOf returns the leaf of an event (not_found for an event of another workspace,
// or one not yet integrated).
func (db *DB) LedgerLeafOf(ctx context.Context, workspaceID, eventID string) (accountable.LedgerLeaf, error) {
	return scanLeaf(db.pool.QueryRow(ctx, leafSQL, workspaceID, eventID), eventID)
}

const leafSQL = `SELECT ` + eventColumns + `, l.leaf_index FROM ledger_log_leaves l
		JOIN ledger_events USING (workspace_id)
		WHERE l.workspace_id = $1 AND l.event_id = $2::uuid AND ledger_events.id = l.event_id`

// scanLeaf reads a row of leafSQL: the leaf's index and its entry, made from the event.
func scanLeaf(row pgx.Row, eventID string) (accountable.LedgerLeaf, error) {
	var idx int64
	e, _, err := scanEvent(row, &idx)
	if errors.Is(err, pgx.ErrNoRows) {
		return accountable.LedgerLeaf{}, accountable.Errorf(accountable.ECodeNotFound, "The event %s is not in the workspace's log (yet).", eventID)
	}
	if err != nil {
		return accountable.LedgerLeaf{}, mapError(err)
	}
	entry, err := ledgerlog.Entry(e.EventHeader)
	if err != nil {
		return accountable.LedgerLeaf{}, err
	}
	return accountable.LedgerLeaf{Index: idx, Entry: entry}, nil
}

// ProveLedgerInclusion is the inclusion proof of leaf index in the workspace's tree of
// size size.
func (db *DB) ProveLedgerInclusion(ctx context.Context, workspaceID string, index, size int64) (tlog.RecordProof, error) {
	r := db.heldHashes(ctx, workspaceID, size)
	p, err := tlog.ProveRecord(size, index, r)
	if err := r.proved(err, "the inclusion proof of leaf %d in size %d", index, size); err != nil {
		return nil, err
	}
	return p, nil
}

// heldHashes reads the stored hashes of the workspace's tree of size size, which the log
// must have reached (not_found if it has not; any log holds the empty tree).
func (db *DB) heldHashes(ctx context.Context, workspaceID string, size int64) *logHashReader {
	return &logHashReader{ctx: ctx, q: db.pool, workspaceID: workspaceID, holds: size}
}

// LedgerLogTile is the data of a hash tile of the workspace's log (C2SP tlog-tiles): the
// tile must lie within a tree of size treeSize the log has reached.
func (db *DB) LedgerLogTile(ctx context.Context, workspaceID string, t tlog.Tile, treeSize int64) ([]byte, error) {
	r := db.heldHashes(ctx, workspaceID, treeSize)
	data, err := tlog.ReadTileData(t, r)
	if err := r.proved(err, "tile %s", t.Path()); err != nil {
		return nil, err
	}
	return data, nil
}

// LedgerLogEntries returns the entries of leaves [start, start+count) of the workspace's
// log, in order.
func (db *DB) LedgerLogEntries(ctx context.Context, workspaceID string, start, count int64) ([][]byte, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+eventColumns+`, l.leaf_index FROM ledger_log_leaves l
		JOIN ledger_events USING (workspace_id)
		WHERE l.workspace_id = $1 AND ledger_events.id = l.event_id AND l.leaf_index >= $2 AND l.leaf_index < $2 + $3
		ORDER BY l.leaf_index`, workspaceID, start, count)
	if err != nil {
		return nil, mapError(err)
	}
	defer rows.Close()
	entries := make([][]byte, 0, count)
	for rows.Next() {
		var idx int64
		e, _, err := scanEvent(rows, &idx)
		if err != nil {
			return nil, mapError(err)
		}
		if idx != start+int64(len(entries)) {
			return nil, fmt.Errorf("store: leaf %d of the log has no event", start+int64(len(entries)))
		}
		entry, err := ledgerlog.Entry(e.EventHeader)
		if err != nil {
			return nil, err
		}
		entries = append(entries, entry)
	}
	if err := rows.Err(); err != nil {
		return nil, mapError(err)
	}
	if int64(len(entries)) != count {
		return nil, accountable.Errorf(accountable.ECodeNotFound, "The workspace's log has no leaves %d to %d.", start, start+count-1)
	}
	return entries, nil
}

// LedgerLogsUnwitnessed returns (up to limit of) the workspaces whose newest checkpoint one
// of the witnesses has not cosigned.
func (db *DB) LedgerLogsUnwitnessed(ctx context.Context, limit int, witnesses []string) ([]string, error) {
	if len(witnesses) == 0 {
		return nil, nil
	}
	rows, err := db.pool.Query(ctx, `SELECT c.workspace_id::text FROM
			(SELECT workspace_id, max(tree_size) AS tree_size FROM ledger_checkpoints GROUP BY workspace_id) c
		WHERE EXISTS (SELECT 1 FROM unnest($2::text[]) w(name)
			WHERE NOT EXISTS (SELECT 1 FROM ledger_witness_status s
				WHERE s.workspace_id = c.workspace_id AND s.witness = w.name AND s.cosigned_size >= c.tree_size))
		LIMIT $1`, limit, witnesses)
	if err != nil {
		return nil, mapError(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, mapError(err)
}

// LedgerWitnessStatus is what each witness last did with the workspace's log.
func (db *DB) LedgerWitnessStatus(ctx context.Context, workspaceID string) ([]accountable.LedgerWitness, error) {
	rows, err := db.pool.Query(ctx, `SELECT witness, cosigned_size, refusal, refused_at FROM ledger_witness_status
		WHERE workspace_id = $1 ORDER BY witness`, workspaceID)
	if err != nil {
		return nil, mapError(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (accountable.LedgerWitness, error) {
		var s accountable.LedgerWitness
		var at *time.Time
		if err := r.Scan(&s.Name, &s.CosignedTreeSize, &s.Refusal, &at); err != nil {
			return s, err
		}
		if at != nil {
			t := accountable.TimeOf(*at)
			s.RefusedAt = &t
		}
		return s, nil
	})
	return out, mapError(err)
}

// SaveLedgerCosignature keeps a witness's cosignature of the checkpoint of size treeSize
// and clears its refusal.
func (db *DB) SaveLedgerCosignature(ctx context.Context, workspaceID string, treeSize int64, witness, line string) error {
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO ledger_cosignatures (workspace_id, tree_size, witness, signature, cosigned_at)
		VALUES ($1, $2, $3, $4, now()) ON CONFLICT DO NOTHING`, workspaceID, treeSize, witness, line)
	b.Queue(`INSERT INTO ledger_witness_status (workspace_id, witness, cosigned_size, updated_at) VALUES ($1, $3, $2, now())
		ON CONFLICT (workspace_id, witness) DO UPDATE SET cosigned_size = greatest(ledger_witness_status.cosigned_size, excluded.cosigned_size),
			refusal = NULL, refused_at = NULL, updated_at = now()`, workspaceID, treeSize, witness)
	return mapError(db.pool.SendBatch(ctx, b).Close())
}

// SaveLedgerWitnessRefusal records a witness's refusal of the workspace's newest
// checkpoint.
func (db *DB) SaveLedgerWitnessRefusal(ctx context.Context, workspaceID, witness, refusal string) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO ledger_witness_status (workspace_id, witness, refusal, refused_at, updated_at)
		VALUES ($1, $2, $3, now(), now())
		ON CONFLICT (workspace_id, witness) DO UPDATE SET refusal = excluded.refusal, refused_at = now(), updated_at = now()`,
		workspaceID, witness, refusal)
	return mapError(err)
}
