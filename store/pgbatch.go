package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/accountablework/accountable"
)

// batch is the statements of one round trip of the command path (begin's, and the writes
// sent with the COMMIT or, for a blind command, as one implicit transaction). It is sent
// on pgconn rather than as a pgx.Batch: each distinct statement is prepared once per
// connection, and the common parameter types are written as text directly, instead of
// through pgx's batch, whose encoding, queueing and result reading were a fifth of a
// creation's CPU. Every other parameter is encoded exactly as pgx encodes it (same type
// map, same choice of format), and rows are scanned through the connection's type map, so
// the values PostgreSQL receives and the Go values a command reads are the same as pgx's.
// Like a pgx.Batch, it is sent with a single Sync: statements sent outside a transaction
// run as one implicit transaction, which runBlind relies on.
type batch struct {
	queries []queuedQuery
}

type queuedQuery struct {
	sql  string
	args []any
	// row, when set, receives the statement's first row (QueryRow) when the results are
	// read by Close.
	row  func(pgx.Row) error
	stmt *preparedStatement // set by send
}

// Queue adds a statement whose result only matters by its error.
func (b *batch) Queue(sql string, args ...any) {
	b.queries = append(b.queries, queuedQuery{sql: sql, args: args})
}

// QueryRow adds a statement returning at most one row, which scan receives (pgx.ErrNoRows
// when there is none) when Close reads the results.
func (b *batch) QueryRow(sql string, scan func(row pgx.Row) error, args ...any) {
	b.queries = append(b.queries, queuedQuery{sql: sql, args: args, row: scan})
}

// statementsKey is where a connection keeps the statements the batches prepared on it
// (pgconn's CustomData, which lives and dies with the connection).
const statementsKey = "accountable/store.statements"

// maxStatements bounds the statements prepared on one connection. The command path's
// statements are constants, so the bound is never reached; past it, every statement is
// deallocated and the batch's are prepared again.
const maxStatements = 512

// connStatements are the statements prepared on one connection, by SQL text. Their names
// come from a counter that is never reset, so a name is never prepared twice on a
// connection, even after a failed prepare or a cleared cache.
type connStatements struct {
	bySQL map[string]*preparedStatement
	next  uint64
	enc   paramEncoder // reused by the connection's batches, one at a time
}

type preparedStatement struct {
	sd *pgconn.StatementDescription
	// resultFormats are the formats pgx asks for the statement's columns (binary where its
	// type map has a binary codec), so rows scan exactly as pgx would scan them.
	resultFormats []int16
}

func statementsOf(pc *pgconn.PgConn) *connStatements {
	data := pc.CustomData()
	if s, ok := data[statementsKey].(*connStatements); ok {
		return s
	}
	s := &connStatements{bySQL: map[string]*preparedStatement{}}
	data[statementsKey] = s
	return s
}

// prepare prepares sqls on conn in one round trip of its own (a pipeline with its own
// Sync: preparing runs nothing, so the batch that follows is still one transaction).
func (c *connStatements) prepare(ctx context.Context, conn *pgx.Conn, sqls []string) error {
	var stale []string
	if len(c.bySQL)+len(sqls) > maxStatements {
		for _, s := range c.bySQL {
			stale = append(stale, s.sd.Name)
		}
		clear(c.bySQL)
	}
	pl := conn.PgConn().StartPipeline(ctx)
	for _, name := range stale {
		pl.SendDeallocate(name)
	}
	names := make([]string, len(sqls))
	for i, sql := range sqls {
		c.next++
		names[i] = "accountable_" + strconv.FormatUint(c.next, 10)
		pl.SendPrepare(names[i], sql, nil)
	}
	if err := pl.Sync(); err != nil {
		pl.Close()
		return err
	}
	fail := func(err error) error {
		pl.Close()
		return err
	}
	for range stale {
		if _, err := pl.GetResults(); err != nil {
			return fail(err)
		}
	}
	m := conn.TypeMap()
	for i, sql := range sqls {
		res, err := pl.GetResults()
		if err != nil {
			return fail(err)
		}
		sd, ok := res.(*pgconn.StatementDescription)
		if !ok {
			return fail(fmt.Errorf("store: preparing a statement answered %T", res))
		}
		sd.Name, sd.SQL = names[i], sql
		formats := make([]int16, len(sd.Fields))
		for j, f := range sd.Fields {
			formats[j] = m.FormatCodeForOID(f.DataTypeOID)
		}
		c.bySQL[sql] = &preparedStatement{sd: sd, resultFormats: formats}
	}
	if res, err := pl.GetResults(); err != nil {
		return fail(err)
	} else if _, ok := res.(*pgconn.PipelineSync); !ok {
		return fail(fmt.Errorf("store: preparing statements answered %T, not their Sync", res))
	}
	return pl.Close()
}

// staleStatement says whether err means a prepared statement no longer matches the
// schema (a migration changed a table it reads: "cached plan must not change result
// type") or no longer exists: the connection's statements are then forgotten, and
// prepared again under new names by the next batch. (pgx does the same with its own.)
func staleStatement(err error) bool {
	code := sqlState(err)
	return code == "0A000" || code == "26000"
}

// send prepares what conn has not prepared yet and sends b in one round trip; the
// results are read in order from what it returns, which must be closed.
func (b *batch) send(ctx context.Context, conn *pgx.Conn) *batchResults {
	r := &batchResults{conn: conn, b: b}
	if len(b.queries) == 0 {
		r.closed = true
		return r
	}
	pc := conn.PgConn()
	cache := statementsOf(pc)
	var missing []string
	for i := range b.queries {
		q := &b.queries[i]
		if q.stmt = cache.bySQL[q.sql]; q.stmt == nil && !slices.Contains(missing, q.sql) {
			missing = append(missing, q.sql)
		}
	}
	if len(missing) > 0 {
		if err := cache.prepare(ctx, conn, missing); err != nil {
			r.err, r.closed = err, true
			return r
		}
		for i := range b.queries {
			if q := &b.queries[i]; q.stmt == nil {
				q.stmt = cache.bySQL[q.sql]
			}
		}
	}
	m := conn.TypeMap()
	var pb pgconn.Batch
	enc := &cache.enc
	for _, q := range b.queries {
		s := q.stmt
		if len(s.sd.ParamOIDs) != len(q.args) {
			r.err, r.closed = errors.New("mismatched param and argument count"), true
			return r
		}
		values, formats, err := enc.encode(m, s.sd.ParamOIDs, q.args)
		if err != nil {
			r.err, r.closed = err, true
			return r
		}
		pb.ExecStatement(s.sd, values, formats, s.resultFormats)
	}
	r.mrr = pc.ExecBatch(ctx, &pb)
	return r
}

// batchResults reads a sent batch's results in the order of its statements, as pgx's
// BatchResults does: the first error ends the batch (PostgreSQL skips the rest until the
// Sync), every later read returns it, and Close returns it.
type batchResults struct {
	conn   *pgx.Conn
	b      *batch
	mrr    *pgconn.MultiResultReader
	next   int                  // the statement whose result is read next
	open   *pgconn.ResultReader // the result a row has not finished reading
	err    error
	closed bool
}

// result advances to the next statement's result.
func (r *batchResults) result() (*pgconn.ResultReader, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.closed {
		return nil, errors.New("batch already closed")
	}
	if err := r.finishOpen(); err != nil {
		return nil, err
	}
	if r.next >= len(r.b.queries) {
		return nil, errors.New("no more results in batch")
	}
	r.next++
	if !r.mrr.NextResult() {
		err := r.mrr.Close()
		if err == nil {
			err = errors.New("store: the batch ended before its results")
		}
		r.err = err
		return nil, err
	}
	return r.mrr.ResultReader(), nil
}

// finishOpen reads the rest of the result a row was read from.
func (r *batchResults) finishOpen() error {
	if r.open == nil {
		return nil
	}
	rr := r.open
	r.open = nil
	if _, err := rr.Close(); err != nil {
		r.err = err
		return err
	}
	return nil
}

// Exec reads the next statement's result, of which only the error matters.
func (r *batchResults) Exec() error {
	rr, err := r.result()
	if err != nil {
		return err
	}
	if _, err := rr.Close(); err != nil {
		r.err = err
		return err
	}
	return nil
}

// QueryRow reads the next statement's first row.
func (r *batchResults) QueryRow() pgx.Row {
	rr, err := r.result()
	if err != nil {
		return errRow{err}
	}
	r.open = rr
	return &batchRow{r: r, rr: rr}
}

// Close reads the results not read yet, giving the rows of QueryRow statements to their
// functions (until an error), and returns the batch's first error.
func (r *batchResults) Close() error {
	if r.closed {
		return r.err
	}
	for r.err == nil && r.next < len(r.b.queries) {
		if fn := r.b.queries[r.next].row; fn != nil {
			if err := fn(r.QueryRow()); err != nil && r.err == nil {
				r.err = err
			}
			continue
		}
		r.Exec() //nolint:errcheck // kept in r.err
	}
	r.closed = true
	if r.open != nil {
		r.open.Close() // the batch's error is the first one
		r.open = nil
	}
	if err := r.mrr.Close(); r.err == nil {
		r.err = err
	}
	if staleStatement(r.err) {
		clear(statementsOf(r.conn.PgConn()).bySQL)
	}
	return r.err
}

// batchRow is a statement's first row, scanned as pgx scans a QueryRow.
type batchRow struct {
	r       *batchResults
	rr      *pgconn.ResultReader
	scanned bool
}

func (row *batchRow) Scan(dest ...any) error {
	r := row.r
	if row.scanned || r.open != row.rr {
		return errors.New("store: a batch's row was read already")
	}
	row.scanned = true
	rr := row.rr
	if !rr.NextRow() {
		if err := r.finishOpen(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	err := scanValues(r.conn.TypeMap(), rr.FieldDescriptions(), rr.Values(), dest)
	if cerr := r.finishOpen(); err == nil {
		err = cerr
	}
	if err != nil && r.err == nil {
		r.err = err
	}
	return err
}

// scanValues scans a row's values into dest as pgx's Rows.Scan does.
func scanValues(m *pgtype.Map, fields []pgconn.FieldDescription, values [][]byte, dest []any) error {
	if len(fields) != len(values) {
		return fmt.Errorf("number of field descriptions must equal number of values, got %d and %d", len(fields), len(values))
	}
	if len(fields) != len(dest) {
		return fmt.Errorf("number of field descriptions must equal number of destinations, got %d and %d", len(fields), len(dest))
	}
	for i, d := range dest {
		if d == nil {
			continue
		}
		if err := m.Scan(fields[i].DataTypeOID, fields[i].Format, values[i], d); err != nil {
			return pgx.ScanArgError{ColumnIndex: i, FieldName: fields[i].Name, Err: err}
		}
	}
	return nil
}

// paramEncoder writes a statement's parameters. Its buffers are reused from one
// statement to the next (pgconn copies them into the message it builds).
type paramEncoder struct {
	buf     []byte
	ends    []int // each value's end in buf; -1 for NULL
	values  [][]byte
	formats []int16
}

// encode writes args for the parameter types oids. The common types are written as text
// by appendText; the rest as pgx's ExtendedQueryBuilder writes them: text for strings,
// else the type map's format for the type, and the other format if that one fails.
func (e *paramEncoder) encode(m *pgtype.Map, oids []uint32, args []any) ([][]byte, []int16, error) {
	if e.buf == nil || cap(e.buf) > 64<<10 {
		// Never nil: the type map answers NULL with a nil buffer, so an empty value must
		// be appended to a non-nil one. (A large one is not kept for the connection's life.)
		e.buf = make([]byte, 0, 512)
	}
	e.buf, e.ends, e.values, e.formats = e.buf[:0], e.ends[:0], e.values[:0], e.formats[:0]
	binary := false
	for i, arg := range args {
		oid := oids[i]
		buf, null, ok := appendText(e.buf, oid, arg)
		format := int16(pgtype.TextFormatCode)
		if !ok {
			var err error
			buf, null, format, err = appendLikePgx(m, oid, arg, e.buf)
			if err != nil {
				return nil, nil, fmt.Errorf("failed to encode args[%d]: %w", i, err)
			}
		}
		e.buf = buf
		if null {
			e.ends = append(e.ends, -1)
		} else {
			e.ends = append(e.ends, len(e.buf))
		}
		e.formats = append(e.formats, format)
		binary = binary || format != pgtype.TextFormatCode
	}
	start := 0
	for _, end := range e.ends {
		if end < 0 {
			e.values = append(e.values, nil)
			continue
		}
		e.values = append(e.values, e.buf[start:end:end])
		start = end
	}
	if !binary {
		return e.values, nil, nil // no format codes: every parameter is text
	}
	return e.values, e.formats, nil
}

// appendLikePgx encodes arg as pgx.ExtendedQueryBuilder does for a prepared statement.
func appendLikePgx(m *pgtype.Map, oid uint32, arg any, buf []byte) ([]byte, bool, int16, error) {
	preferred := m.FormatCodeForOID(oid)
	switch arg.(type) {
	case string, *string:
		preferred = pgtype.TextFormatCode
	}
	out, err := m.Encode(oid, preferred, arg, buf)
	if err == nil {
		return notNull(out, buf), out == nil, preferred, nil
	}
	other := int16(pgtype.TextFormatCode)
	if preferred == pgtype.TextFormatCode {
		other = pgtype.BinaryFormatCode
	}
	if out, otherErr := m.Encode(oid, other, arg, buf); otherErr == nil {
		return notNull(out, buf), out == nil, other, nil
	}
	return buf, false, preferred, err
}

// notNull is the buffer after an encoding: out, or buf when the value was NULL (nil).
func notNull(out, buf []byte) []byte {
	if out == nil {
		return buf
	}
	return out
}

// The parameter types appendText writes directly.
const (
	oidBool        = pgtype.BoolOID
	oidInt4        = pgtype.Int4OID
	oidInt8        = pgtype.Int8OID
	oidTimestamptz = pgtype.TimestamptzOID
)

// textual reports whether a string's text is the parameter's text as it is, for a
// parameter of type oid, as pgx sends it (TestBatchTextParamsAsPgx holds appendText to
// pgx's encoding).
func textual(oid uint32) bool {
	switch oid {
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID, pgtype.UUIDOID,
		pgtype.JSONOID, pgtype.JSONBOID:
		return true
	}
	return false
}

// appendText writes the common parameter values as text: strings, integers, booleans and
// instants for the types they are usually sent to. ok is false for anything else.
func appendText(buf []byte, oid uint32, arg any) (out []byte, null, ok bool) {
	switch v := arg.(type) {
	case nil:
		return buf, true, true
	case string:
		if textual(oid) {
			return append(buf, v...), false, true
		}
	case *string:
		if v == nil {
			return buf, true, true
		}
		if textual(oid) {
			return append(buf, *v...), false, true
		}
	case []byte:
		if v == nil {
			return buf, true, true
		}
		if oid == pgtype.TextOID || oid == pgtype.JSONOID || oid == pgtype.JSONBOID {
			return append(buf, v...), false, true
		}
	case int64:
		return appendInt(buf, oid, v)
	case *int64:
		if v == nil {
			return buf, true, true
		}
		return appendInt(buf, oid, *v)
	case int:
		return appendInt(buf, oid, int64(v))
	case *int:
		if v == nil {
			return buf, true, true
		}
		return appendInt(buf, oid, int64(*v))
	case int32:
		return appendInt(buf, oid, int64(v))
	case *int32:
		if v == nil {
			return buf, true, true
		}
		return appendInt(buf, oid, int64(*v))
	case bool:
		return appendBool(buf, oid, v)
	case *bool:
		if v == nil {
			return buf, true, true
		}
		return appendBool(buf, oid, *v)
	case time.Time:
		return appendTimestamptz(buf, oid, v)
	case *time.Time:
		if v == nil {
			return buf, true, true
		}
		return appendTimestamptz(buf, oid, *v)
	case accountable.Time:
		return appendTimestamptz(buf, oid, v.Time)
	case *accountable.Time:
		if v == nil {
			return buf, true, true
		}
		return appendTimestamptz(buf, oid, v.Time)
	}
	return buf, false, false
}

func appendInt(buf []byte, oid uint32, v int64) ([]byte, bool, bool) {
	switch {
	case oid == oidInt8, oid == oidInt4 && v >= math.MinInt32 && v <= math.MaxInt32:
		return strconv.AppendInt(buf, v, 10), false, true
	}
	return buf, false, false // pgx's error for a value out of range, or another type
}

func appendBool(buf []byte, oid uint32, v bool) ([]byte, bool, bool) {
	if oid != oidBool {
		return buf, false, false
	}
	if v {
		return append(buf, 't'), false, true
	}
	return append(buf, 'f'), false, true
}

// appendTimestamptz writes an instant as PostgreSQL reads it back to the same
// microsecond (pgx's binary encoding truncates to the microsecond as the format does),
// in UTC with its offset, so the session's TimeZone plays no part.
func appendTimestamptz(buf []byte, oid uint32, t time.Time) ([]byte, bool, bool) {
	if oid != oidTimestamptz {
		return buf, false, false
	}
	t = t.UTC()
	if y := t.Year(); y < 1 || y > 9999 {
		return buf, false, false // beyond the format's four-digit years: pgx's encoding
	}
	buf = t.AppendFormat(buf, "2006-01-02 15:04:05.999999")
	return append(buf, "+00"...), false, true
}
