package store_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// The command batch writes strings and byte slices to these parameter types as they are:
// pgx's type map must agree (it sends a string to any parameter as text).
func TestBatchTextParamsAsPgx(t *testing.T) {
	m := store.NewTypeMap()
	oids := []uint32{pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID, pgtype.UUIDOID, pgtype.JSONOID, pgtype.JSONBOID}
	values := []any{"", "plain", "0190a0b1-7c2e-7a3b-9d4e-5f6a7b8c9d0e", "NOT-A-UUID", `{"a":[1,"x"]}`, "quote ' and \\ back", "\u00e9t\u00e9 \U0001F600"}
	for _, oid := range oids {
		for _, v := range values {
			got, null, ok := store.AppendText([]byte{}, oid, v)
			if !ok || null {
				t.Fatalf("oid %d %q: not written as text", oid, v)
			}
			want, err := m.Encode(oid, pgtype.TextFormatCode, v, []byte{})
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("oid %d %q: batch %q, pgx %q (%v)", oid, v, got, want, err)
			}
			s := v.(string)
			if (oid == pgtype.TextOID || oid == pgtype.JSONOID || oid == pgtype.JSONBOID) && len(s) > 0 {
				got, _, ok := store.AppendText([]byte{}, oid, []byte(s))
				want, err := m.Encode(oid, pgtype.TextFormatCode, []byte(s), []byte{})
				if !ok || err != nil || !bytes.Equal(got, want) {
					t.Errorf("oid %d []byte %q: batch %q, pgx %q (%v)", oid, s, got, want, err)
				}
			}
		}
		if _, null, ok := store.AppendText(nil, oid, (*string)(nil)); !ok || !null {
			t.Errorf("oid %d: a nil *string is not NULL", oid)
		}
		if _, null, ok := store.AppendText(nil, oid, []byte(nil)); !ok || !null {
			t.Errorf("oid %d: a nil []byte is not NULL", oid)
		}
		if out, err := m.Encode(oid, pgtype.TextFormatCode, []byte(nil), []byte{}); err != nil || out != nil {
			t.Errorf("oid %d: pgx writes a nil []byte as %q (%v), not NULL", oid, out, err)
		}
	}
}

// Every parameter a command batch writes reaches PostgreSQL as the value pgx sends (read
// back as text in the same session settings), and rows scan into the same Go values.
func TestBatchParamsAsPgx(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	str := "text"
	i64, i32, i := int64(-9007199254740993), int32(math.MinInt32), 42
	yes := true
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		berlin = time.FixedZone("CET", 3600)
	}
	odd := time.FixedZone("LMT", 53*60+28) // an offset with seconds
	times := []time.Time{
		time.Date(2026, 11, 27, 17, 5, 25, 123456789, time.UTC),
		time.Date(2026, 3, 29, 2, 30, 0, 999, berlin),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(1850, 1, 1, 0, 0, 0, 500, odd),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Now(), // with a monotonic reading
	}
	type param struct {
		cast string
		v    any
	}
	params := []param{
		{"text", "x"}, {"text", &str}, {"text", (*string)(nil)}, {"text", nil}, {"text", ""},
		{"uuid", "0190A0B1-7C2E-7A3B-9D4E-5F6A7B8C9D0E"}, {"jsonb", `{"b": 1, "a": [true, null]}`}, {"json", []byte(`{"b": 1}`)},
		{"jsonb", []byte(nil)}, {"int8", i64}, {"int8", &i64}, {"int8", (*int64)(nil)}, {"int4", i32}, {"int4", &i32},
		{"int8", i}, {"int4", i}, {"int2", i}, {"numeric", i64}, {"float8", 1.25}, {"bool", yes}, {"bool", &yes},
		{"bool", false}, {"bool", (*bool)(nil)}, {"text", accountable.TaskCompleted}, {"text[]", []string{"a", "b,c"}},
	}
	for _, tm := range times {
		params = append(params, param{"timestamptz", tm}, param{"timestamptz", &tm}, param{"timestamptz", accountable.Time{Time: tm}},
			param{"timestamptz", &accountable.Time{Time: tm}}, param{"date", tm}, param{"timestamp", tm})
	}
	params = append(params, param{"timestamptz", (*time.Time)(nil)}, param{"timestamptz", (*accountable.Time)(nil)})
	for _, p := range params {
		sql := "SELECT ($1::" + p.cast + ")::text"
		var got, want *string
		gotErr := store.QueryRowBatched(ctx, db, sql, []any{p.v}, &got)
		wantErr := store.QueryRowPgx(ctx, db, sql, []any{p.v}, &want)
		if (gotErr == nil) != (wantErr == nil) || gotErr == nil && !equalText(got, want) {
			t.Errorf("%s %#v: batch %v (%v), pgx %v (%v)", p.cast, p.v, text(got), gotErr, text(want), wantErr)
		}
	}
	// Values out of a type's range fail in both (pgx's error, before anything is sent).
	for _, p := range []param{{"int4", int64(math.MaxInt32 + 1)}, {"int2", 1 << 20}} {
		var got *string
		if err := store.QueryRowBatched(ctx, db, "SELECT ($1::"+p.cast+")::text", []any{p.v}, &got); err == nil {
			t.Errorf("%s %v: batched without an error", p.cast, p.v)
		}
	}

	// Rows: the instants scan to the same microsecond, and the types scan as pgx scans them.
	for _, tm := range times[:5] {
		var got, want time.Time
		var gotN, wantN *int64
		var gotS, wantS string
		sql := `SELECT $1::timestamptz, NULL::int8, $1::timestamptz::text`
		if err := store.QueryRowBatched(ctx, db, sql, []any{tm}, &got, &gotN, &gotS); err != nil {
			t.Fatal(err)
		}
		if err := store.QueryRowPgx(ctx, db, sql, []any{tm}, &want, &wantN, &wantS); err != nil {
			t.Fatal(err)
		}
		if !got.Equal(want) || !got.Equal(tm.Truncate(time.Microsecond)) && tm.Year() > 1 || got.Location().String() != want.Location().String() || gotN != nil || gotS != wantS {
			t.Errorf("%v: batch %v %v %q, pgx %v %v %q", tm, got, gotN, gotS, want, wantN, wantS)
		}
	}
	// No row, and a row of the wrong shape.
	var n int
	if err := store.QueryRowBatched(ctx, db, `SELECT 1 WHERE $1`, []any{false}, &n); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("no row: %v", err)
	}
	var s string
	if err := store.QueryRowBatched(ctx, db, `SELECT 1, 2 WHERE $1`, []any{true}, &n); err == nil {
		t.Error("two columns scanned into one destination")
	}
	if err := store.QueryRowBatched(ctx, db, `SELECT NULL::text WHERE $1`, []any{true}, &s); err == nil {
		t.Error("NULL scanned into a string")
	}
	// A failing statement is PostgreSQL's error.
	var pgErr *pgconn.PgError
	if err := store.QueryRowBatched(ctx, db, `SELECT 1 / $1::int`, []any{0}, &n); !errors.As(err, &pgErr) || pgErr.Code != "22012" {
		t.Errorf("division by zero: %v", err)
	}
}

func equalText(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func text(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}
