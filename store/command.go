package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// The one command path. Every state change of the service runs through runCommand, which
//
//  1. opens a transaction and, in the same round trip, takes the idempotency key's lock,
//     reads its record and locks the heads of the aggregates the command declares, in one
//     fixed order (aggregate type, then id), so commands never deadlock on each other;
//  2. replays a completed record of the same request, refuses one of another request, and
//     answers idempotency_request_in_progress while another request holds the key;
//  3. runs the command's function, which reads and changes its rows and appends its events
//     with tx.Append: each event takes its version and previousHash from the locked head
//     (null only at version 1; a missing predecessor is an error), and moves the head;
//  4. sends the queued writes, the moved heads, the outbox messages and the idempotency
//     record together with the COMMIT in one round trip;
//  5. maps failures once: a serialization failure, a deadlock or an unexpected unique
//     violation is retried a bounded number of times and then answered 409 write_conflict;
//     a unique constraint the command relies on ("first claimant wins") becomes the domain
//     error the command names for it; a lock wait beyond lock_timeout is 409
//     resource_busy; a statement or request deadline is 504 deadline_exceeded.
//
// A command costs two round trips (begin, then the writes with the COMMIT) plus those of
// its own reads; statements it can queue before reading anything ride in the first
// (command.prepare). Both are batches of pgbatch.go (each statement prepared once per
// connection, the common parameters written as text). A command that only creates
// (blind) is sent in one round trip (runBlind), and so is a command that is one statement
// (single, runSingle: a completion), which takes the long way only when that statement
// matches nothing.

// command is one state change, as given to runCommand.
type command[T any] struct {
	workspaceID string
	actor       accountable.Actor
	idempotency *accountable.Idempotency
	causation   accountable.Causation
	// locks are the existing aggregates the command changes; runCommand locks their heads.
	// Aggregates the command creates need no lock.
	locks []aggregateRef
	// constraints maps the name of a unique constraint the command relies on to the
	// domain error its violation means.
	constraints map[string]error
	// blind commands read nothing (they only create): runCommand sends them in one round
	// trip (runBlind). Their function may only queue writes and append events; tx's
	// QueryRow, Query and Exec are not available to them.
	blind bool
	// prepare, when set, queues the command's first statements into the first round trip,
	// after the head locks: statements that need nothing the command reads (the
	// version-checked UPDATE of a completion), whose results run then uses. Saving the
	// round trip is worth it on the hottest commands.
	prepare func(p *prelude)
	// completesPending marks the last step of a workflow-backed operation (workflowop.go):
	// a pending record of the same request is its own claim, which the command's record
	// completes, instead of a request in progress.
	completesPending bool
	run              func(ctx context.Context, tx *tx) (T, error)
	// single, when set, is the whole command as one statement, tried first in one round
	// trip as a blind command is sent (runSingle): it queues the statement on t's batch,
	// after the idempotency gate, and returns done, which makes the result from what the
	// statement returned once the round trip is read, or answers errNoMatch when the
	// statement wrote nothing; the command then runs the long way (locks, prepare, run),
	// which tells why. Its statement writes the idempotency record itself.
	single func(t *tx) (done func() (T, error), err error)
}

// prelude is what a command's prepare queues its statements on.
type prelude struct {
	batch *batch
	idem  *accountable.Idempotency
	cc    commandContext
}

// QueryRow queues a statement returning at most one row; scan receives it (pgx.ErrNoRows
// when there is none) when the round trip's results are read, before run. Every prelude
// statement must hold Gate in its WHERE clause.
func (p *prelude) QueryRow(sql string, scan func(row pgx.Row) error, args ...any) {
	p.batch.QueryRow(sql, scan, args...)
}

// Gate returns the SQL condition that every prelude statement carries, with its arguments
// numbered from n (append GateArgs to the statement's arguments). It holds while this
// transaction holds the request's idempotency key (always, without one): a request whose
// key another request holds must answer in-progress at once, never wait for the rows
// that request locked.
func (p *prelude) Gate(n int) string {
	return fmt.Sprintf(preludeGateSQL, "$"+strconv.Itoa(n), "$"+strconv.Itoa(n+1))
}

// preludeGateSQL is Gate's condition: %[1]s is the workspace id, %[2]s the key (NULL
// without one).
const preludeGateSQL = "(%[2]s::text IS NULL OR pg_try_advisory_xact_lock(hashtextextended(%[1]s::text || '/' || %[2]s::text, 0)))"

// GateArgs are the arguments of Gate.
func (p *prelude) GateArgs() []any {
	if p.idem == nil {
		return []any{p.cc.WorkspaceID, nil}
	}
	return []any{p.cc.WorkspaceID, p.idem.Key}
}

// aggregateRef names one aggregate of the workspace.
type aggregateRef struct {
	Type string
	ID   string
}

func aggregate(typ, id string) aggregateRef { return aggregateRef{Type: typ, ID: id} }

// head is the newest event of an aggregate's chain.
type head struct {
	version int64
	eventID string
	hash    string
	moved   bool // appended to in this command
	isNew   bool // no head row before this command
}

// tx is what a command's function works with inside its transaction.
type tx struct {
	conn   *pgxpool.Conn
	cc     commandContext
	heads  map[aggregateRef]*head
	order  []aggregateRef // heads in the order they were first appended to
	batch  *batch
	events []accountable.Event
	outbox int
	// messages returns the DB's WorkflowMessages, read when the command sends a message.
	messages func() WorkflowMessages
	// unheaded are the aggregates the command declared that had no head: another command
	// may create one before this one commits (errCreatedMeanwhile).
	unheaded []aggregateRef
}

// errBlindRead means a command marked blind tried to read: its statements are only sent
// with its COMMIT.
var errBlindRead = errors.New("store: a blind command cannot read or write before its commit")

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// QueryRow runs a query whose result the command needs now.
func (t *tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.conn == nil {
		return errRow{errBlindRead}
	}
	return t.conn.QueryRow(ctx, sql, args...)
}

// Query runs a query whose rows the command needs now.
func (t *tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.conn == nil {
		return nil, errBlindRead
	}
	return t.conn.Query(ctx, sql, args...)
}

// Exec runs a write now (one that later statements of the command depend on).
func (t *tx) Exec(ctx context.Context, sql string, args ...any) error {
	if t.conn == nil {
		return errBlindRead
	}
	_, err := t.conn.Exec(ctx, sql, args...)
	return err
}

// Queue adds a write whose result the command does not need: it is sent with the COMMIT.
func (t *tx) Queue(sql string, args ...any) { t.batch.Queue(sql, args...) }

// Now is the instant of the command: every row and event it writes carries it.
func (t *tx) Now() time.Time { return t.cc.Now }

// Head returns the locked head of an aggregate the command declared, if it exists.
func (t *tx) Head(ref aggregateRef) (version int64, ok bool) {
	h, ok := t.heads[ref]
	if !ok || h.isNew {
		return 0, false
	}
	return h.version, true
}

// errMissingPredecessor means a command appended to an aggregate whose chain it had not
// locked: it would fork the chain or silently restart it, so it is refused (by Append when
// the head is known, by the unique version of events and heads otherwise).
var errMissingPredecessor = errors.New("store: append to an existing aggregate without its locked head")

// Append adds an event to the aggregate's chain: its version follows the locked head (or
// is 1 for an aggregate the command creates), its previousHash is the head's eventHash,
// and the head moves to it.
func (t *tx) Append(ref aggregateRef, eventType string, payload any) (accountable.Event, error) {
	h, ok := t.heads[ref]
	if !ok {
		h = &head{isNew: true}
		t.heads[ref] = h
	}
	var prev *string
	if h.version > 0 {
		p := h.hash
		prev = &p
	}
	version := h.version + 1
	if version > 1 && prev == nil {
		return accountable.Event{}, errMissingPredecessor
	}
	ev, err := newEvent(t.cc, ref, version, prev, eventType, payload)
	if err != nil {
		return accountable.Event{}, err
	}
	queueEvent(t.batch, ev)
	if !h.moved {
		t.order = append(t.order, ref)
	}
	h.version, h.eventID, h.hash, h.moved = version, ev.ID, ev.EventHash, true
	t.events = append(t.events, ev)
	return ev, nil
}

// Messages makes the workflow messages the command sends (WorkflowMessages): a command
// builds its message with it where it sends it.
func (t *tx) Messages() WorkflowMessages { return t.messages() }

// Send queues a workflow message, delivered by the relay once the command has committed.
func (t *tx) Send(m accountable.WorkflowMessage) {
	t.batch.Queue(`INSERT INTO outbox (workspace_id, kind, workflow_name, workflow_id, signal_name, payload,
		created_at, available_at) VALUES ($1, $2, $3, $4, NULLIF($5, ''), $6, $7, $7)`,
		t.cc.WorkspaceID, string(m.Kind), m.WorkflowName, m.WorkflowID, m.SignalName, string(m.Input), t.cc.Now)
	t.outbox++
}

// errCreatedMeanwhile wraps the unique violation of a command that declared an aggregate
// whose head did not exist yet, when another command created that aggregate first: one
// whose id is not one the service made (a controller's domain). It is retried like any
// lost race, and runs again on the new head.
var errCreatedMeanwhile = errors.New("store: a declared aggregate was created meanwhile")

// createdMeanwhile says whether err, the failed commit of t, is a head taken as new that
// another command created first: an aggregate t declared without a head has one now. Any
// other head violation stays what it is (errMissingPredecessor: a bug).
func createdMeanwhile(ctx context.Context, db *DB, t *tx, err error) bool {
	if len(t.unheaded) == 0 || !(aggregateVersionViolation(err) || uniqueViolation(err, "ledger_heads_pkey")) {
		return false
	}
	types, ids := make([]string, len(t.unheaded)), make([]string, len(t.unheaded))
	for i, ref := range t.unheaded {
		types[i], ids[i] = ref.Type, ref.ID
	}
	var exists bool
	qerr := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ledger_heads h
		JOIN unnest($2::text[], $3::text[]) AS a(aggregate_type, aggregate_id) USING (aggregate_type, aggregate_id)
		WHERE h.workspace_id = $1)`, t.cc.WorkspaceID, types, ids).Scan(&exists)
	return qerr == nil && exists
}

// maxCommandAttempts bounds the retries of a command that lost a race (serialization
// failure, deadlock, unique violation it does not name).
const maxCommandAttempts = 4

// runCommand runs cmd as one transaction (see the top of this file). It reports whether
// the result is the replay of an earlier request with the same idempotency key.
func runCommand[T any](ctx context.Context, db *DB, cmd command[T]) (T, bool, error) {
	var zero T
	for attempt := 1; ; attempt++ {
		res, dup, sent, err := runOnce(ctx, db, cmd)
		if err == nil {
			if sent > 0 && db.outboxNudge != nil {
				db.outboxNudge()
			}
			return res, dup, nil
		}
		if domainErr, ok := constraintError(err, cmd.constraints); ok {
			return zero, false, domainErr
		}
		if (aggregateVersionViolation(err) || uniqueViolation(err, "ledger_heads_pkey")) && !errors.Is(err, errCreatedMeanwhile) {
			// A head taken as new was not, and the command had declared every aggregate it
			// found: it appended to an existing aggregate it had not declared (ids are the
			// service's own, so no other creator races it). A bug, never retried.
			return zero, false, fmt.Errorf("%w: %v", errMissingPredecessor, err)
		}
		if !retryable(err) {
			return zero, false, mapError(err)
		}
		if attempt == maxCommandAttempts {
			db.metrics.conflict("exhausted")
			return zero, false, accountable.Errorf(accountable.ECodeWriteConflict,
				"The request conflicted with concurrent changes %d times; retry it.", attempt)
		}
		db.metrics.conflict("retried")
		// Back off a little, with jitter, so that the racers do not collide again.
		select {
		case <-time.After(time.Duration(attempt*attempt)*time.Millisecond + rand.N(5*time.Millisecond)):
		case <-ctx.Done():
			return zero, false, mapError(ctx.Err())
		}
	}
}

func runOnce[T any](ctx context.Context, db *DB, cmd command[T]) (result T, duplicate bool, sent int, err error) {
	cc := commandContext{WorkspaceID: cmd.workspaceID, Actor: cmd.actor, Idempotency: cmd.idempotency,
		Causation: cmd.causation, Now: accountable.Now()}
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return result, false, 0, err
	}
	// Release destroys a connection left inside a transaction, so nothing leaks.
	defer conn.Release()
	committed := false
	defer func() {
		if !committed { // ROLLBACK outside a transaction is only a warning
			conn.Exec(context.WithoutCancel(ctx), "ROLLBACK") //nolint:errcheck // the connection is dropped if this fails
		}
	}()

	if cmd.blind || cmd.single != nil {
		t := &tx{cc: cc, heads: map[aggregateRef]*head{}, batch: &batch{}, messages: db.workflowMessages}
		if cmd.blind {
			result, err = runBlind(ctx, conn, t, cmd)
		} else {
			result, err = runSingle(ctx, conn, t, cmd)
		}
		switch {
		case err == nil:
			committed = true
			db.appended(cc.WorkspaceID, len(t.events))
			return result, false, t.outbox, nil
		case !errors.Is(err, errGateClosed) && !errors.Is(err, errNoMatch):
			return result, false, 0, err
		}
		// Another request holds the key, or the key has a record, or the single statement
		// matched nothing: the long way below says which (and runs the command after all
		// if that has changed meanwhile). The implicit transaction of the batch has ended,
		// with its failure or having written nothing.
	}

	t := &tx{conn: conn, cc: cc, heads: map[aggregateRef]*head{}, batch: &batch{}, messages: db.workflowMessages}
	stored, err := begin(ctx, t, cmd.locks, cmd.prepare)
	if err != nil {
		return result, false, 0, err
	}
	if stored == nil && cmd.completesPending && cc.Idempotency != nil {
		return result, false, 0, errClaimReleased
	}
	if stored != nil && !(cmd.completesPending && stored.pendingFor(cc.Idempotency)) {
		res, err := replay[T](stored, cc.Idempotency)
		return res, err == nil, 0, err
	}
	if result, err = cmd.run(ctx, t); err != nil {
		return result, false, 0, err
	}
	encoded, err := queueCommit(t, result, true)
	if err != nil {
		return result, false, 0, err
	}
	if err := t.batch.send(ctx, conn.Conn()).Close(); err != nil {
		if createdMeanwhile(ctx, db, t, err) {
			err = fmt.Errorf("%w: %w", errCreatedMeanwhile, err)
		}
		return result, false, 0, err
	}
	committed = true
	db.appended(cc.WorkspaceID, len(t.events))
	return remember(result, encoded), false, t.outbox, nil
}

// appended counts the n events a command of workspaceID committed and tells the feed.
func (db *DB) appended(workspaceID string, n int) {
	db.metrics.appended(n)
	if n > 0 && db.onAppended != nil {
		db.onAppended(workspaceID)
	}
}

// remember keeps the JSON text of result in it when it embeds accountable.Encoded.
func remember[T any](result T, text []byte) T {
	if r, ok := any(&result).(interface{ RememberJSON([]byte) }); ok && text != nil {
		r.RememberJSON(text)
	}
	return result
}

// queueCommit queues what every command ends with: the moved heads, the idempotency
// record of the result, and (for a transaction begun explicitly) the COMMIT. It returns
// the JSON text of the result when it made one (for the record).
func queueCommit[T any](t *tx, result T, explicit bool) ([]byte, error) {
	for _, ref := range t.order {
		queueHead(t, ref, t.heads[ref])
	}
	var data []byte
	if idem := t.cc.Idempotency; idem != nil {
		// The replay document {"v":1,"data":…}, as encoding/json writes replayDocument; the
		// result's JSON is the part after the prefix.
		doc, err := appendResultJSON(append(make([]byte, 0, 2<<10), replayDocumentPrefix...), result)
		if err != nil {
			return nil, fmt.Errorf("store: encode the response document: %w", err)
		}
		data = doc[len(replayDocumentPrefix):len(doc):len(doc)]
		doc = append(doc, '}')
		t.batch.Queue(`INSERT INTO idempotency_records (workspace_id, key, operation, request_digest, response,
				status, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, 'completed', $6, $7) `+idempotencyRecordConflictSQL,
			t.cc.WorkspaceID, idem.Key, idem.Operation, idem.RequestDigest, string(doc), t.cc.Now,
			t.cc.Now.Add(accountable.IdempotencyRetention))
	}
	if explicit {
		t.batch.Queue("COMMIT")
	}
	return data, nil
}

// idempotencyRecordConflictSQL ends the insert of a command's idempotency record: a record
// of the key that has expired is replaced, and so is the pending record of the same
// request (a workflow-backed operation's claim, which its last step completes); any other
// is left as it is.
const idempotencyRecordConflictSQL = `ON CONFLICT (workspace_id, key) DO UPDATE SET operation = excluded.operation,
		request_digest = excluded.request_digest, response = excluded.response, status = 'completed',
		workflow_id = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at
	WHERE idempotency_records.expires_at <= excluded.created_at
	   OR (idempotency_records.status = 'pending' AND idempotency_records.operation = excluded.operation
	       AND idempotency_records.request_digest = excluded.request_digest)`

// errGateClosed means a blind command found its idempotency key held by another request
// or already answered (SQLSTATE AW001 or AW002 from idempotency_gate, migration 004).
var errGateClosed = errors.New("store: the idempotency key is in use or answered")

// runBlind runs a blind command (one that reads nothing: it only creates) in one round
// trip: the idempotency gate, the command's writes and the idempotency record, as one
// batch, which PostgreSQL runs as one implicit transaction (a pipeline up to its Sync),
// so no BEGIN and COMMIT are needed. The gate takes the key's lock and checks that it has
// no record; if either fails it aborts the transaction before any write runs, and
// runBlind answers errGateClosed.
func runBlind[T any](ctx context.Context, conn *pgxpool.Conn, t *tx, cmd command[T]) (T, error) {
	queueGate(t)
	result, err := cmd.run(ctx, t)
	if err != nil {
		return result, err
	}
	encoded, err := queueCommit(t, result, false)
	if err != nil {
		return result, err
	}
	if err := sendGated(ctx, conn, t); err != nil {
		return result, err
	}
	return remember(result, encoded), nil
}

// errNoMatch means a command's single statement matched nothing and wrote nothing.
var errNoMatch = errors.New("store: the command's single statement matched nothing")

// runSingle runs a command's single statement (command.single) in one round trip, as
// runBlind runs a blind command: the idempotency gate and the statement, one implicit
// transaction. It answers errGateClosed as runBlind does, and errNoMatch when the
// statement matched nothing.
func runSingle[T any](ctx context.Context, conn *pgxpool.Conn, t *tx, cmd command[T]) (T, error) {
	var zero T
	queueGate(t)
	done, err := cmd.single(t)
	if err != nil {
		return zero, err
	}
	if err := sendGated(ctx, conn, t); err != nil {
		return zero, err
	}
	return done()
}

// queueGate queues the idempotency gate of a command sent in one round trip (runBlind,
// runSingle) as the first statement of its batch, when the request has a key: it takes
// the key's lock and checks that the key has no record, or aborts the transaction before
// any write runs (SQLSTATE AW001 or AW002, migration 004).
func queueGate(t *tx) {
	if idem := t.cc.Idempotency; idem != nil {
		t.batch.Queue(`SELECT idempotency_gate($1, $2, $3)`, t.cc.WorkspaceID, idem.Key, t.cc.Now)
	}
}

// sendGated sends the batch of a command sent in one round trip, whose first statement is
// its gate (queueGate): errGateClosed when the gate refused.
func sendGated(ctx context.Context, conn *pgxpool.Conn, t *tx) error {
	err := t.batch.send(ctx, conn.Conn()).Close()
	if code := sqlState(err); code == "AW001" || code == "AW002" {
		return errGateClosed
	}
	return err
}

// queueHead writes the moved head of ref: inserted for a new aggregate (an aggregate that
// existed already violates the primary key: errMissingPredecessor), updated for a locked
// one.
func queueHead(t *tx, ref aggregateRef, h *head) {
	if h.isNew {
		t.batch.Queue(`INSERT INTO ledger_heads (workspace_id, aggregate_type, aggregate_id, version, event_id, event_hash, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, t.cc.WorkspaceID, ref.Type, ref.ID, h.version, h.eventID, h.hash, t.cc.Now)
		return
	}
	t.batch.Queue(`UPDATE ledger_heads SET version = $4, event_id = $5, event_hash = $6, updated_at = $7
		WHERE workspace_id = $1 AND aggregate_type = $2 AND aggregate_id = $3`,
		t.cc.WorkspaceID, ref.Type, ref.ID, h.version, h.eventID, h.hash, t.cc.Now)
}

// replayVersion is the version of the response documents this build writes. A change to
// a response's shape that a stored document cannot be decoded into bumps it (and teaches
// replay to read the old version).
const replayVersion = 1

// appendResultJSON appends json.Marshal's encoding of a command's result: written by the
// result itself where it has an encoder of those bytes (the work commands', on every
// request of make bench's write lines).
func appendResultJSON(buf []byte, result any) ([]byte, error) {
	if a, ok := result.(interface{ AppendJSON([]byte) ([]byte, error) }); ok {
		return a.AppendJSON(buf)
	}
	data, err := json.Marshal(result)
	return append(buf, data...), err
}

// replayDocumentPrefix is what a replay document's text begins with, before its data.
var replayDocumentPrefix = `{"v":` + strconv.Itoa(replayVersion) + `,"data":`

// replayDocument is how a command's response is kept for replays: its JSON under explicit
// names (the wire names of the response types), so renaming a Go field cannot change a
// replay.
type replayDocument[T any] struct {
	Version int `json:"v"`
	Data    T   `json:"data"`
}

// storedRecord is an idempotency record found under the key.
type storedRecord struct {
	operation  string
	digest     string
	status     string
	workflowID *string
	response   []byte
}

// pendingFor reports whether s is the pending record of the request idem.
func (s *storedRecord) pendingFor(idem *accountable.Idempotency) bool {
	return s.status == "pending" && s.operation == idem.Operation && s.digest == idem.RequestDigest
}

// errClaimReleased refuses the last step of a workflow-backed operation whose pending
// record is gone: its request released the claim, because the start of its workflow
// failed, and answered that nothing was stored. A start can fail ambiguously (Temporal
// accepted it as the request's deadline ran out), so the run may exist all the same; it
// must then store nothing either. (A completed record is replayed instead, and a retry
// of the same request re-claims the key with a pending record this run completes.)
var errClaimReleased = accountable.Errorf(accountable.ECodeInvalidStateTransition,
	"The request this run answers for released its claim (its start was reported as failed); nothing is stored.")

// errIdempotencyInProgress means another request holds the key (a transaction still
// running, or a workflow-backed operation not finished yet).
func errIdempotencyInProgress(key string) error {
	return accountable.Errorf(accountable.ECodeIdempotencyInProgress,
		"A request with Idempotency-Key %q is still in progress; retry later.", key)
}

// replay answers a request whose key has a record: the stored response when the request
// is the same, idempotency_key_reused when it is not.
func replay[T any](s *storedRecord, idem *accountable.Idempotency) (T, error) {
	var zero T
	if s.operation != idem.Operation || s.digest != idem.RequestDigest {
		return zero, accountable.Errorf(accountable.ECodeIdempotencyKeyReused,
			"The Idempotency-Key %q was already used with a different request.", idem.Key)
	}
	if s.status != "completed" {
		return zero, errIdempotencyInProgress(idem.Key)
	}
	var doc replayDocument[T]
	if err := decodeStored(s.response, &doc); err != nil {
		return zero, fmt.Errorf("store: decode the stored response: %w", err)
	}
	if doc.Version != replayVersion {
		return zero, fmt.Errorf("store: stored response document version %d is not %d", doc.Version, replayVersion)
	}
	return doc.Data, nil
}

// begin opens the transaction and, in the same round trip, takes the idempotency key's
// lock without waiting, reads its record (idempotency_claim, migration 005) and locks the
// declared heads. The record is read by a query after the lock, so under READ COMMITTED
// it sees a record committed by the previous holder of the lock.
func begin(ctx context.Context, t *tx, locks []aggregateRef, prepare func(*prelude)) (*storedRecord, error) {
	cc := t.cc
	b := &batch{}
	b.Queue("BEGIN")
	idem := cc.Idempotency
	if idem != nil {
		b.Queue(`SELECT locked, operation, request_digest, status, workflow_id, response FROM idempotency_claim($1, $2, $3)`,
			cc.WorkspaceID, idem.Key, cc.Now)
	}
	locks = slices.Clone(locks)
	slices.SortFunc(locks, func(a, b aggregateRef) int {
		if a.Type != b.Type {
			return compareStrings(a.Type, b.Type)
		}
		return compareStrings(a.ID, b.ID)
	})
	locks = slices.Compact(locks)
	for _, ref := range locks {
		// One statement per head, in the fixed order: each waits for its lock in turn. With
		// an idempotency key, a head is locked only while this transaction holds the key's
		// lock (taking it again costs nothing): a request whose key another request holds
		// must answer in-progress at once, not queue behind the heads that request locked.
		if idem != nil {
			b.Queue(`SELECT version, event_id, event_hash FROM ledger_heads
				WHERE workspace_id = $1 AND aggregate_type = $2 AND aggregate_id = $3
				  AND pg_try_advisory_xact_lock(hashtextextended($4::text || '/' || $5::text, 0)) FOR UPDATE`,
				cc.WorkspaceID, ref.Type, ref.ID, cc.WorkspaceID, idem.Key)
			continue
		}
		b.Queue(`SELECT version, event_id, event_hash FROM ledger_heads
			WHERE workspace_id = $1 AND aggregate_type = $2 AND aggregate_id = $3 FOR UPDATE`, cc.WorkspaceID, ref.Type, ref.ID)
	}
	if prepare != nil {
		prepare(&prelude{batch: b, idem: idem, cc: cc})
	}
	br := b.send(ctx, t.conn.Conn())
	defer br.Close()
	if err := br.Exec(); err != nil {
		return nil, err
	}
	var stored *storedRecord
	if idem != nil {
		var locked bool
		var operation, digest, status, response *string
		var s storedRecord
		if err := br.QueryRow().Scan(&locked, &operation, &digest, &status, &s.workflowID, &response); err != nil {
			return nil, err
		}
		if !locked {
			return nil, errIdempotencyInProgress(idem.Key)
		}
		if operation != nil { // the key has a live record
			s.operation, s.digest, s.status = *operation, *digest, *status
			if response != nil {
				s.response = []byte(*response)
			}
			stored = &s
		}
	}
	for _, ref := range locks {
		var h head
		err := br.QueryRow().Scan(&h.version, &h.eventID, &h.hash)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			// No such aggregate (yet): the command finds out in its own reads.
			t.unheaded = append(t.unheaded, ref)
		case err != nil:
			return nil, err
		default:
			t.heads[ref] = &h
		}
	}
	return stored, br.Close()
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// commandContext is who runs a command and why: it fills the ledger event's envelope.
type commandContext struct {
	WorkspaceID string
	Actor       accountable.Actor
	Idempotency *accountable.Idempotency
	Causation   accountable.Causation
	Now         time.Time
}

// newEvent builds the ledger event with its payload digest and event hash.
func newEvent(cc commandContext, ref aggregateRef, version int64, previousHash *string, eventType string, payload any) (accountable.Event, error) {
	e, err := newUnchainedEvent(cc, ref, version, previousHash, eventType, payload)
	if err == nil {
		e.EventHash = eventHash(e.EventHeader)
	}
	return e, err
}

// newUnchainedEvent builds the ledger event with its payload digest, without its hash: the
// hash of an event whose version and previous hash come from a head a statement reads is
// made by the statement (eventHashSQL).
func newUnchainedEvent(cc commandContext, ref aggregateRef, version int64, previousHash *string, eventType string, payload any) (accountable.Event, error) {
	body, err := canonical.JSON(payload)
	if err != nil {
		return accountable.Event{}, fmt.Errorf("store: canonical payload: %w", err)
	}
	now := accountable.TimeOf(cc.Now)
	e := accountable.Event{EventHeader: accountable.EventHeader{
		ID:               uuid.Must(uuid.NewV7()).String(),
		WorkspaceID:      cc.WorkspaceID,
		AggregateType:    ref.Type,
		AggregateID:      ref.ID,
		AggregateVersion: version,
		EventType:        eventType,
		SchemaVersion:    accountable.SchemaVersion,
		ActorType:        cc.Actor.Type,
		ActorID:          cc.Actor.ID,
		PayloadDigest:    canonical.Digest(body),
		OccurredAt:       now,
		RecordedAt:       now,
		CausationID:      cc.Causation.CausationID,
		CorrelationID:    cc.Causation.CorrelationID,
		PreviousHash:     previousHash,
	}, Payload: body}
	if cc.Idempotency != nil {
		k := cc.Idempotency.Key
		e.IdempotencyKey = &k
	}
	return e, nil
}

const insertEventSQL = `INSERT INTO ledger_events (workspace_id, id, aggregate_type, aggregate_id,
	aggregate_version, event_type, schema_version, actor_type, actor_id, payload, payload_digest,
	occurred_at, recorded_at, idempotency_key, causation_id, correlation_id, previous_hash, event_hash)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`

// queueEvent adds the insert of e to b. The unique (aggregate, version) constraint makes a
// second writer of the same version fail instead of forking the chain.
func queueEvent(b *batch, e accountable.Event) {
	b.Queue(insertEventSQL, e.WorkspaceID, e.ID, e.AggregateType, e.AggregateID, e.AggregateVersion,
		e.EventType, e.SchemaVersion, string(e.ActorType), e.ActorID, string(e.Payload), e.PayloadDigest,
		e.OccurredAt.Time, e.RecordedAt.Time, e.IdempotencyKey, e.CausationID, e.CorrelationID, e.PreviousHash, e.EventHash)
}
