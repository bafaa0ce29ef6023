package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// eventColumns are read by scanEvent.
const eventColumns = `id, workspace_id, aggregate_type, aggregate_id, aggregate_version, event_type,
	schema_version, actor_type, actor_id, payload::text, payload_digest, occurred_at, recorded_at,
	idempotency_key, causation_id, correlation_id, previous_hash, event_hash, stream_position, seq`

// scanEvent scans eventColumns, then any columns selected after them into extra.
func scanEvent(row pgx.Row, extra ...any) (accountable.Event, accountable.StreamPosition, error) {
	var e accountable.Event
	var payload, actorType string
	var pos accountable.StreamPosition
	err := row.Scan(append([]any{&e.ID, &e.WorkspaceID, &e.AggregateType, &e.AggregateID, &e.AggregateVersion, &e.EventType,
		&e.SchemaVersion, &actorType, &e.ActorID, &payload, &e.PayloadDigest, &e.OccurredAt, &e.RecordedAt,
		&e.IdempotencyKey, &e.CausationID, &e.CorrelationID, &e.PreviousHash, &e.EventHash, &pos.Position, &pos.Seq}, extra...)...)
	if err != nil {
		return e, pos, err
	}
	e.Payload = accountable.Object(payload)
	e.ActorType = accountable.ActorType(actorType)
	return e, pos, nil
}

// StreamEvents reads one page of the workspace's event stream after f.After. Only events of
// transactions older than the oldest one still running are read, in (stream_position, seq)
// order: an event's position is its transaction's id plus the cluster's offset (migration
// 003), so a transaction that commits late has a position at or above that horizon and is
// read on a later page instead of being skipped. The horizon is computed once per query
// (an uncorrelated subquery), not per row.
func (db *DB) StreamEvents(ctx context.Context, workspaceID string, f accountable.EventFilter) (accountable.EventPage, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = accountable.DefaultPageLimit
	}
	var eventTypes, aggregateTypes []string
	if len(f.EventTypes) > 0 {
		eventTypes = f.EventTypes
	}
	if len(f.AggregateTypes) > 0 {
		aggregateTypes = f.AggregateTypes
	}
	// The page is read below the horizon; the first event at or above it, if any, is read
	// too, only to say that the page is Held. That probe's index scan starts at the later of
	// the cursor and the horizon (the row bound below): started at the cursor, a first page
	// walked the workspace's whole index up to the horizon, a cost growing with the ledger.
	var page accountable.EventPage
	err := db.ledgerRead(ctx, false, func(q readConn) error {
		var err error
		page, err = streamEvents(ctx, q, workspaceID, f.After, eventTypes, aggregateTypes, limit)
		return err
	})
	return page, err
}

// streamEvents reads the page on q: the primary, or a replica that has caught up.
func streamEvents(ctx context.Context, q querier, workspaceID string, after accountable.StreamPosition, eventTypes, aggregateTypes []string, limit int) (accountable.EventPage, error) {
	rows, err := q.Query(ctx, `WITH h AS (
			SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint + ledger_stream_offset() AS horizon),
		matching AS NOT MATERIALIZED (
			SELECT * FROM ledger_events
			WHERE workspace_id = $1
			  AND ($4::text[] IS NULL OR event_type = ANY ($4))
			  AND ($5::text[] IS NULL OR aggregate_type = ANY ($5)))
		(SELECT `+eventColumns+`, true FROM matching
		 WHERE (stream_position, seq) > ($2::bigint, $3::bigint) AND stream_position < (SELECT horizon FROM h)
		 ORDER BY stream_position, seq LIMIT $6)
		UNION ALL
		(SELECT `+eventColumns+`, false FROM matching
		 WHERE (stream_position, seq) > (GREATEST((SELECT horizon FROM h) - 1, $2::bigint),
				CASE WHEN (SELECT horizon FROM h) - 1 > $2::bigint THEN 9223372036854775807 ELSE $3::bigint END)
		   AND stream_position >= (SELECT horizon FROM h)
		 ORDER BY stream_position, seq LIMIT 1)
		ORDER BY stream_position, seq`,
		workspaceID, after.Position, after.Seq, eventTypes, aggregateTypes, limit+1)
	if err != nil {
		return accountable.EventPage{}, mapError(err)
	}
	defer rows.Close()
	page := accountable.EventPage{Next: after, Events: make([]accountable.Event, 0, min(limit, 64))}
	for rows.Next() {
		var settled bool
		e, pos, err := scanEvent(rows, &settled)
		if err != nil {
			return accountable.EventPage{}, mapError(err)
		}
		if !settled {
			page.Held = true
			break
		}
		if len(page.Events) == limit {
			page.HasMore = true
			break
		}
		page.Events = append(page.Events, e)
		page.Positions = append(page.Positions, pos)
		page.Next = pos
	}
	if err := rows.Err(); err != nil {
		return accountable.EventPage{}, mapError(err)
	}
	return page, nil
}

// VerifyLedger recomputes every payload digest, event hash and chain link of the
// workspace's events (or one aggregate's) and reports the first broken event in stream
// order. It reads aggregate by aggregate so each chain is checked in version order. Then
// it compares the chains with their anchored heads (written by every command in its own
// transaction) and with the aggregates' own rows, so deleting the newest events of a chain,
// truncating the ledger or removing an aggregate's events is found too.
//
// It reads in one snapshot: read one query at a time, a command committing between the
// events and the heads (another verification recording its result, say) looked like a
// chain missing its newest events.
//
// It is a long read (longread.go): it runs on the long-read pool, one at a time per
// workspace, and verifications of the same scope that wait together share one run (its
// snapshot is taken after each of them was asked for, so it is the answer each would have
// computed). One whose turn does not come within Config.LongReadWait is refused with 429
// rate_limited.
func (db *DB) VerifyLedger(ctx context.Context, workspaceID string, scope accountable.LedgerScope) (accountable.LedgerVerification, error) {
	res, joined, err := db.long.shared(ctx, workspaceID, scope.AggregateType+"\x00"+scope.AggregateID,
		func(ctx context.Context) (accountable.LedgerVerification, error) {
			db.metrics.longRead(longReadVerification, longReadRan)
			return db.verifyLedgerNow(ctx, workspaceID, scope)
		})
	switch {
	case errors.Is(err, errWorkspaceLongRead) || errors.Is(err, errLongReadsBusy):
		db.metrics.longRead(longReadVerification, longReadRefused)
	case joined && err == nil:
		db.metrics.longRead(longReadVerification, longReadShared)
	}
	return res, err
}

// verifyLedgerNow is one run of a verification, on the long-read pool.
func (db *DB) verifyLedgerNow(ctx context.Context, workspaceID string, scope accountable.LedgerScope) (accountable.LedgerVerification, error) {
	var res accountable.LedgerVerification
	err := db.ledgerSnapshot(ctx, true, func(tx pgx.Tx) error {
		// A large workspace's verification is a long read by design (about 30 s for a million
		// events): it is bounded by its callers' deadlines (the requests', the activity's),
		// not by the statement_timeout that guards every other statement.
		if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 0"); err != nil {
			return mapError(err)
		}
		var err error
		res, err = verifyLedger(ctx, tx, workspaceID, scope)
		return err
	})
	return res, err
}

func verifyLedger(ctx context.Context, q querier, workspaceID string, scope accountable.LedgerScope) (accountable.LedgerVerification, error) {
	var res accountable.LedgerVerification
	rows, err := q.Query(ctx, `SELECT `+eventColumns+` FROM ledger_events
		WHERE workspace_id = $1 AND ($2 = '' OR aggregate_type = $2) AND ($3 = '' OR aggregate_id = $3)
		ORDER BY aggregate_type, aggregate_id, aggregate_version`,
		workspaceID, scope.AggregateType, scope.AggregateID)
	if err != nil {
		return res, mapError(err)
	}
	defer rows.Close()
	var (
		prev       accountable.Event
		havePrev   bool
		headPos    accountable.StreamPosition
		brokenPos  accountable.StreamPosition
		haveBroken bool
		ends       = map[aggregateRef]chainEnd{}
	)
	for rows.Next() {
		e, pos, err := scanEvent(rows)
		if err != nil {
			return res, mapError(err)
		}
		res.EventCount++
		if res.HeadHash == nil || positionAfter(pos, headPos) {
			h := e.EventHash
			res.HeadHash, headPos = &h, pos
		}
		sameAggregate := havePrev && prev.AggregateType == e.AggregateType && prev.AggregateID == e.AggregateID
		if reason := checkEvent(e, prev, sameAggregate); reason != "" {
			if !haveBroken || positionAfter(brokenPos, pos) {
				id, r := e.ID, reason
				res.FirstBrokenEventID, res.FirstBrokenReason, brokenPos, haveBroken = &id, &r, pos, true
			}
		}
		ends[aggregate(e.AggregateType, e.AggregateID)] = chainEnd{version: e.AggregateVersion, hash: e.EventHash, eventID: e.ID}
		prev, havePrev = e, true
	}
	if err := rows.Err(); err != nil {
		return res, mapError(err)
	}
	if !haveBroken {
		eventID, reason, err := checkAnchors(ctx, q, workspaceID, scope, ends)
		if err != nil {
			return res, mapError(err)
		}
		if reason != "" {
			res.FirstBrokenEventID, res.FirstBrokenReason, haveBroken = eventID, &reason, true
		}
	}
	res.Verified = !haveBroken
	return res, nil
}

// chainEnd is the newest event of an aggregate's chain as the ledger has it.
type chainEnd struct {
	version int64
	hash    string
	eventID string
}

// aggregateTable is a table whose rows describe aggregates of one type, each with the
// version its chain must have reached (NULL: any).
type aggregateTable struct {
	aggregateType string
	query         string // $1 workspace id; returns the aggregate id and its expected version
}

// aggregateTables are the tables verification compares with the ledger, sorted by
// aggregate type (so that verification reads them in the same order whatever the order
// of their registrations), so that removing an aggregate's events cannot go unnoticed.
// Each area's file registers its own (verifiesAggregateTable); a table with an
// aggregate_version (or version) column missing here fails
// TestAggregateTablesCoverEveryVersionedTable.
var aggregateTables []aggregateTable

// verifiesAggregateTable registers the table of an aggregate type, from the init of the
// store file of its area. A type registered twice is a programming error: it panics at
// start-up.
func verifiesAggregateTable(aggregateType, query string) {
	i, found := slices.BinarySearchFunc(aggregateTables, aggregateType, func(t aggregateTable, typ string) int {
		return strings.Compare(t.aggregateType, typ)
	})
	if found {
		panic("store: the aggregate table of " + aggregateType + " is registered twice")
	}
	aggregateTables = slices.Insert(aggregateTables, i, aggregateTable{aggregateType, query})
}

// checkAnchors compares the chains the ledger holds with their anchored heads and with
// the aggregates' rows, and returns why they disagree ("" when they do not) and the event
// it concerns, if there is one.
func checkAnchors(ctx context.Context, q querier, workspaceID string, scope accountable.LedgerScope, ends map[aggregateRef]chainEnd) (*string, string, error) {
	inScope := func(ref aggregateRef) bool {
		return scope.AggregateType == "" || (ref.Type == scope.AggregateType && ref.ID == scope.AggregateID)
	}
	rows, err := q.Query(ctx, `SELECT aggregate_type, aggregate_id, version, event_id::text, event_hash FROM ledger_heads
		WHERE workspace_id = $1 AND ($2 = '' OR aggregate_type = $2) AND ($3 = '' OR aggregate_id = $3)
		ORDER BY aggregate_type, aggregate_id`, workspaceID, scope.AggregateType, scope.AggregateID)
	if err != nil {
		return nil, "", err
	}
	heads := map[aggregateRef]chainEnd{}
	var refs []aggregateRef
	for rows.Next() {
		var ref aggregateRef
		var h chainEnd
		if err := rows.Scan(&ref.Type, &ref.ID, &h.version, &h.eventID, &h.hash); err != nil {
			rows.Close()
			return nil, "", err
		}
		heads[ref] = h
		refs = append(refs, ref)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	for _, ref := range refs {
		h, end := heads[ref], ends[ref]
		switch {
		case end.version == 0:
			return &h.eventID, fmt.Sprintf("the chain of %s %s is missing from the ledger (its anchored head is version %d)", ref.Type, ref.ID, h.version), nil
		case end.version < h.version:
			return &h.eventID, fmt.Sprintf("the newest events of %s %s are missing: the ledger ends at version %d, its anchored head is version %d",
				ref.Type, ref.ID, end.version, h.version), nil
		case end.version > h.version || end.hash != h.hash:
			return &end.eventID, fmt.Sprintf("the chain of %s %s does not end at its anchored head (version %d)", ref.Type, ref.ID, h.version), nil
		}
	}
	var unanchored []aggregateRef
	for ref := range ends {
		if _, ok := heads[ref]; !ok {
			unanchored = append(unanchored, ref)
		}
	}
	if len(unanchored) > 0 {
		slices.SortFunc(unanchored, compareRefs)
		ref := unanchored[0]
		id := ends[ref].eventID
		return &id, fmt.Sprintf("the chain of %s %s has no anchored head", ref.Type, ref.ID), nil
	}
	for _, t := range aggregateTables {
		if scope.AggregateType != "" && scope.AggregateType != t.aggregateType {
			continue
		}
		rows, err := q.Query(ctx, t.query, workspaceID)
		if err != nil {
			return nil, "", err
		}
		type row struct {
			id      string
			version *int64
		}
		found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			return x, r.Scan(&x.id, &x.version)
		})
		if err != nil {
			return nil, "", err
		}
		for _, x := range found {
			ref := aggregate(t.aggregateType, x.id)
			if !inScope(ref) {
				continue
			}
			end, ok := ends[ref]
			switch {
			case !ok:
				return nil, fmt.Sprintf("%s %s exists but has no events in the ledger", ref.Type, ref.ID), nil
			case x.version != nil && end.version != *x.version:
				return &end.eventID, fmt.Sprintf("%s %s is at version %d but its chain at version %d", ref.Type, ref.ID, *x.version, end.version), nil
			}
		}
	}
	return nil, "", nil
}

func compareRefs(a, b aggregateRef) int {
	if c := compareStrings(a.Type, b.Type); c != 0 {
		return c
	}
	return compareStrings(a.ID, b.ID)
}

func positionAfter(a, b accountable.StreamPosition) bool {
	return a.Position > b.Position || (a.Position == b.Position && a.Seq > b.Seq)
}

// checkEvent returns why e is broken, or "" when its digest, hash and link hold.
func checkEvent(e, prev accountable.Event, sameAggregate bool) string {
	canon, err := canonical.Transform(e.Payload)
	if err != nil {
		return "payload is not valid JSON"
	}
	if canonical.Digest(canon) != e.PayloadDigest {
		return "payloadDigest does not match the payload"
	}
	if eventHash(e.EventHeader) != e.EventHash {
		return "eventHash does not match the event"
	}
	switch {
	case !sameAggregate && e.AggregateVersion != 1:
		return fmt.Sprintf("aggregate chain starts at version %d, not 1", e.AggregateVersion)
	case !sameAggregate && e.PreviousHash != nil:
		return "first event of an aggregate has a previousHash"
	case sameAggregate && e.AggregateVersion != prev.AggregateVersion+1:
		return fmt.Sprintf("aggregate version %d follows %d", e.AggregateVersion, prev.AggregateVersion)
	case sameAggregate && (e.PreviousHash == nil || *e.PreviousHash != prev.EventHash):
		return "previousHash does not link to the previous event of the aggregate"
	}
	return ""
}
