package accountable

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"time"
)

// TimeLayout is the one representation of instants on the wire: UTC, RFC 3339 with a fixed
// six-digit fraction, so that a value read back compares equal to the value written (the
// complete operation compares expected_updated_at exactly). PostgreSQL keeps microseconds.
const TimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// Now returns the current instant at the precision the service stores.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// FormatTime renders t in TimeLayout.
func FormatTime(t time.Time) string { return string(appendTime(make([]byte, 0, 27), t)) }

// appendTime appends t in TimeLayout, written digit by digit (instants are written many
// times per request, and time.Format parses its layout every time); years outside
// 0000-9999 go through time.Format. A test keeps the two in agreement.
func appendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Truncate(time.Microsecond).AppendFormat(b, TimeLayout)
	}
	hour, minute, second := t.Clock()
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, minute, 2)
	b = append(b, ':')
	b = appendDigits(b, second, 2)
	b = append(b, '.')
	b = appendDigits(b, t.Nanosecond()/1000, 6)
	return append(b, 'Z')
}

// appendDigits appends n (non-negative) in exactly width decimal digits.
func appendDigits(b []byte, n, width int) []byte {
	var d [8]byte
	for i := width - 1; i >= 0; i-- {
		d[i] = byte('0' + n%10)
		n /= 10
	}
	return append(b, d[:width]...)
}

// ParseTime parses an RFC 3339 instant (any fraction) and normalises it to UTC.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// Time is an instant as the API, the ledger and the database carry it: TimeLayout on the
// wire (read from any RFC 3339 form), timestamptz in PostgreSQL, microsecond precision.
type Time struct{ time.Time }

// TimeOf returns t as a Time at the stored precision.
func TimeOf(t time.Time) Time { return Time{t.UTC().Truncate(time.Microsecond)} }

// NowTime returns the current instant as a Time.
func NowTime() Time { return Time{Now()} }

// TimePtr returns a pointer to TimeOf(t), or nil for nil.
func TimePtr(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	v := TimeOf(*t)
	return &v
}

// String renders t in TimeLayout.
func (t Time) String() string { return FormatTime(t.Time) }

// MarshalJSON renders t as a JSON string in TimeLayout.
func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 29)
	b = append(b, '"')
	b = appendTime(b, t.Time)
	return append(b, '"'), nil
}

// UnmarshalJSON reads an RFC 3339 date-time string.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return errors.New("must be an RFC 3339 date-time string")
	}
	v, err := ParseTime(string(b[1 : len(b)-1]))
	if err != nil {
		return errors.New("must be an RFC 3339 date-time")
	}
	t.Time = v
	return nil
}

// MarshalText renders t in TimeLayout (for query parameters and map keys).
func (t Time) MarshalText() ([]byte, error) { return []byte(FormatTime(t.Time)), nil }

// UnmarshalText reads an RFC 3339 date-time.
func (t *Time) UnmarshalText(b []byte) error {
	v, err := ParseTime(string(b))
	if err != nil {
		return errors.New("must be an RFC 3339 date-time")
	}
	t.Time = v
	return nil
}

// Value stores t as timestamptz.
func (t Time) Value() (driver.Value, error) { return t.Time, nil }

// Scan reads a timestamptz.
func (t *Time) Scan(src any) error {
	v, ok := src.(time.Time)
	if !ok {
		return fmt.Errorf("accountable.Time: cannot scan %T", src)
	}
	t.Time = v.UTC()
	return nil
}

// CalendarTime is an instant that a client may also give as a calendar date (YYYY-MM-DD,
// taken as 00:00 UTC); it is always rendered as a date-time.
type CalendarTime struct{ Time }

// UnmarshalJSON reads an RFC 3339 date-time or a YYYY-MM-DD date.
func (t *CalendarTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		if d, err := time.Parse(time.DateOnly, string(b[1:len(b)-1])); err == nil {
			t.Time = TimeOf(d)
			return nil
		}
	}
	if err := t.Time.UnmarshalJSON(b); err != nil {
		return errors.New("must be an RFC 3339 date-time or a YYYY-MM-DD date")
	}
	return nil
}
