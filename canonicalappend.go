package accountable

import (
	"errors"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Hand-written canonical JSON (RFC 8785) of the types ledger payloads carry: the
// canonical package's encoder uses a type's AppendCanonicalJSON instead of reflecting
// over it (its Appender interface, which these methods satisfy without the root importing
// it). They write exactly the bytes that encoder writes: members in the UTF-16 order of
// their names, strings escaped as AppendCanonicalString escapes them, numbers in
// ECMAScript form. Tests in package canonical compare them with its reflective encoding on
// random values; a new field of a type here must be added to its method too (they fail
// until it is).
//
// Their rules are not encoding/json's (jsonappend.go): no HTML escaping, U+2028 and
// U+2029 literal, U+FFFD literal for invalid UTF-8, numbers as doubles.

// CanonicalFreeForm appends the canonical form of the JSON text a MarshalJSON returned,
// found depth objects and arrays deep (canonical.FreeForm, spelled with standard types).
type CanonicalFreeForm = func(buf []byte, depth int, text []byte) ([]byte, error)

// errNoCanonicalNumber is the failure of a number JSON cannot carry (NaN, infinities). The
// canonical encoder never returns it: it encodes the value reflectively then, and returns
// its own error.
var errNoCanonicalNumber = errors.New("accountable: a number without canonical JSON form")

// canonicalPlainPrefix returns the length of the longest prefix of s that canonical JSON
// writes as it is, byte for byte, whatever follows: ASCII but control characters, " and \.
// Eight bytes at a time, as jsonPlainPrefix (which explains the bit tricks).
func canonicalPlainPrefix(s string) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8]
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		quote := x ^ ones*'"'
		slash := x ^ ones*'\\'
		special := (x | // non-ASCII
			(x-ones*0x20)&^x | // a control character
			(quote-ones)&^quote | (slash-ones)&^slash) & highs
		if special != 0 {
			return i + bits.TrailingZeros64(special)/8
		}
	}
	for i < len(s) {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			break
		}
		i++
	}
	return i
}

// AppendCanonicalString appends s as a canonical JSON string, as canonical.AppendString
// does: \" \\ \b \f \n \r \t, other control characters as \u00xx, invalid UTF-8 as
// U+FFFD (literally), everything else literally.
func AppendCanonicalString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	for {
		n := canonicalPlainPrefix(s)
		buf = append(buf, s[:n]...)
		s = s[n:]
		if s == "" {
			return append(buf, '"')
		}
		if b := s[0]; b < utf8.RuneSelf {
			buf = appendEscapedASCII(buf, b)
			s = s[1:]
			continue
		}
		c, size := utf8.DecodeRuneInString(s)
		if c == utf8.RuneError && size == 1 {
			buf = append(buf, "\uFFFD"...)
		} else {
			buf = append(buf, s[:size]...)
		}
		s = s[size:]
	}
}

// AppendCanonicalStringPtr appends *s, or null for nil.
func AppendCanonicalStringPtr(buf []byte, s *string) []byte {
	if s == nil {
		return append(buf, "null"...)
	}
	return AppendCanonicalString(buf, *s)
}

// AppendCanonicalNumber appends the ECMAScript string form of f, as canonical.AppendNumber
// does (the shortest digits that round-trip, plainly for exponents from -7 to 20,
// exponentially otherwise), and fails for NaN and the infinities.
func AppendCanonicalNumber(buf []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return buf, errNoCanonicalNumber
	}
	if f == 0 {
		return append(buf, '0'), nil // also for -0
	}
	if f < 0 {
		buf = append(buf, '-')
		f = -f
	}
	var tmp [32]byte
	sci := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64) // d[.ddd]e±xx
	e := len(sci) - 1
	for sci[e] != 'e' {
		e--
	}
	exp := 0
	for _, c := range sci[e+2:] {
		exp = exp*10 + int(c-'0')
	}
	if sci[e+1] == '-' {
		exp = -exp
	}
	var digitBuf [24]byte
	digits := append(digitBuf[:0], sci[0])
	if e > 2 {
		digits = append(digits, sci[2:e]...)
	}
	k, n := len(digits), exp+1 // value = 0.d1..dk × 10^n
	switch {
	case k <= n && n <= 21:
		buf = append(buf, digits...)
		for range n - k {
			buf = append(buf, '0')
		}
	case 0 < n && n <= 21:
		buf = append(buf, digits[:n]...)
		buf = append(buf, '.')
		buf = append(buf, digits[n:]...)
	case -6 < n && n <= 0:
		buf = append(buf, '0', '.')
		for range -n {
			buf = append(buf, '0')
		}
		buf = append(buf, digits...)
	default:
		buf = append(buf, digits[0])
		if k > 1 {
			buf = append(buf, '.')
			buf = append(buf, digits[1:]...)
		}
		buf = append(buf, 'e')
		if n-1 >= 0 {
			buf = append(buf, '+')
		}
		buf = strconv.AppendInt(buf, int64(n-1), 10)
	}
	return buf, nil
}

// AppendCanonicalInt appends the ECMAScript string form of n, as canonical.AppendInt
// does: its digits when a double holds it exactly, else the double nearest to it.
func AppendCanonicalInt(buf []byte, n int64) []byte {
	if n > -1<<53 && n < 1<<53 {
		return strconv.AppendInt(buf, n, 10)
	}
	buf, _ = AppendCanonicalNumber(buf, float64(n)) // finite
	return buf
}

// appendCanonicalIntPtr appends *n, or null for nil.
func appendCanonicalIntPtr(buf []byte, n *int64) []byte {
	if n == nil {
		return append(buf, "null"...)
	}
	return AppendCanonicalInt(buf, *n)
}

// appendCanonicalNumberPtr appends *f, or null for nil.
func appendCanonicalNumberPtr(buf []byte, f *float64) ([]byte, error) {
	if f == nil {
		return append(buf, "null"...), nil
	}
	return AppendCanonicalNumber(buf, *f)
}

// AppendCanonicalTime appends t's canonical form: its MarshalJSON's string, which has
// nothing to escape (digits, - : . T Z), so the encoder keeps it as it is.
func AppendCanonicalTime(buf []byte, t Time) []byte { return t.appendJSON(buf) }

// AppendCanonicalTimePtr appends *t, or null for nil.
func AppendCanonicalTimePtr(buf []byte, t *Time) []byte {
	if t == nil {
		return append(buf, "null"...)
	}
	return t.appendJSON(buf)
}

// emptyObject is what an absent Object renders as.
var emptyObject = []byte("{}")

// AppendCanonicalJSON appends o's canonical form (canonical.Appender), found depth
// objects and arrays deep: its MarshalJSON's text ({} when absent) as freeForm
// canonicalises it.
func (o Object) AppendCanonicalJSON(buf []byte, depth int, freeForm CanonicalFreeForm) ([]byte, error) {
	if len(o) == 0 {
		return freeForm(buf, depth, emptyObject)
	}
	return freeForm(buf, depth, o)
}

// AppendCanonicalJSON appends t's canonical form (canonical.Appender): the members of its
// JSON sorted by name, concurrency only when set (omitzero), workspace never.
func (t Task) AppendCanonicalJSON(buf []byte, depth int, freeForm CanonicalFreeForm) ([]byte, error) {
	// Room for it at once: its names, ids and times take about 500 bytes; then its texts,
	// and what follows it in a payload.
	n := 600 + len(t.Title) + len(t.Metadata) + len(t.Priority) + len(t.Status)
	if t.Description != nil {
		n += len(*t.Description)
	}
	buf = slices.Grow(buf, n)
	buf = append(buf, `{"aggregate_version":`...)
	buf = AppendCanonicalInt(buf, t.AggregateVersion)
	if c := t.Concurrency; c != (TaskConcurrency{}) { // omitzero: the zero value, field by field
		buf = append(buf, `,"concurrency":{"expected_aggregate_version":`...)
		buf = AppendCanonicalInt(buf, c.ExpectedAggregateVersion)
		buf = append(buf, `,"expected_updated_at":`...)
		buf = AppendCanonicalTime(buf, c.ExpectedUpdatedAt)
		buf = append(buf, `,"version_token":`...)
		buf = AppendCanonicalString(buf, c.VersionToken)
		buf = append(buf, '}')
	}
	buf = append(buf, `,"created_at":`...)
	buf = AppendCanonicalTime(buf, t.CreatedAt)
	buf = append(buf, `,"description":`...)
	buf = AppendCanonicalStringPtr(buf, t.Description)
	buf = append(buf, `,"due_date":`...)
	buf = AppendCanonicalTimePtr(buf, t.DueDate)
	buf = append(buf, `,"estimated_cost_cents":`...)
	buf = appendCanonicalIntPtr(buf, t.EstimatedCostCents)
	buf = append(buf, `,"id":`...)
	buf = AppendCanonicalString(buf, t.ID)
	buf = append(buf, `,"initiative_id":`...)
	buf = AppendCanonicalStringPtr(buf, t.InitiativeID)
	buf = append(buf, `,"metadata":`...)
	buf, err := t.Metadata.AppendCanonicalJSON(buf, depth+1, freeForm)
	if err != nil {
		return buf, err
	}
	buf = append(buf, `,"milestone_id":`...)
	buf = AppendCanonicalStringPtr(buf, t.MilestoneID)
	buf = append(buf, `,"priority":`...)
	buf = AppendCanonicalString(buf, string(t.Priority))
	buf = append(buf, `,"status":`...)
	buf = AppendCanonicalString(buf, string(t.Status))
	buf = append(buf, `,"title":`...)
	buf = AppendCanonicalString(buf, t.Title)
	buf = append(buf, `,"updated_at":`...)
	buf = AppendCanonicalTime(buf, t.UpdatedAt)
	buf = append(buf, `,"workstream_id":`...)
	buf = AppendCanonicalStringPtr(buf, t.WorkstreamID)
	return append(buf, '}'), nil
}

// AppendCanonicalJSON appends r's canonical form (canonical.Appender): the members of its
// JSON sorted by name.
func (r Receipt) AppendCanonicalJSON(buf []byte, depth int, freeForm CanonicalFreeForm) ([]byte, error) {
	// Room for it at once: its names, ids and time take about 230 bytes; then its texts,
	// and what follows it in a payload (a work.completed's status and task id).
	buf = slices.Grow(buf, 360+len(r.Summary)+len(r.Evidence)+len(r.Status))
	buf = append(buf, `{"cost_cents":`...)
	buf = appendCanonicalIntPtr(buf, r.CostCents)
	buf = append(buf, `,"created_at":`...)
	buf = AppendCanonicalTime(buf, r.CreatedAt)
	buf = append(buf, `,"evidence":`...)
	buf, err := r.Evidence.AppendCanonicalJSON(buf, depth+1, freeForm)
	if err != nil {
		return buf, err
	}
	buf = append(buf, `,"id":`...)
	buf = AppendCanonicalString(buf, r.ID)
	buf = append(buf, `,"measured_duration_hours":`...)
	if buf, err = appendCanonicalNumberPtr(buf, r.MeasuredDurationHours); err != nil {
		return buf, err
	}
	buf = append(buf, `,"status":`...)
	buf = AppendCanonicalString(buf, r.Status)
	buf = append(buf, `,"summary":`...)
	buf = AppendCanonicalString(buf, r.Summary)
	buf = append(buf, `,"task_id":`...)
	buf = AppendCanonicalString(buf, r.TaskID)
	return append(buf, '}'), nil
}

// canonicalMembers writes the members of an object whose members may be omitted
// (omitzero): each name is preceded by the object's opening brace or a comma.
type canonicalMembers struct {
	buf  []byte
	open bool
}

// name appends the next member's name (with its colon: `"title":`).
func (m *canonicalMembers) name(nameColon string) {
	if m.open {
		m.buf = append(m.buf, ',')
	} else {
		m.buf, m.open = append(m.buf, '{'), true
	}
	m.buf = append(m.buf, nameColon...)
}

// end closes the object ({} when every member was omitted).
func (m *canonicalMembers) end() []byte {
	if !m.open {
		m.buf = append(m.buf, '{')
	}
	return append(m.buf, '}')
}

// causation appends c's members that are set; they sort before every other member of the
// commands that embed it (causation_id, command_id, correlation_id).
func (m *canonicalMembers) causation(c Causation) {
	if c.CausationID != nil {
		m.name(`"causation_id":`)
		m.buf = AppendCanonicalString(m.buf, *c.CausationID)
	}
	if c.CommandID != nil {
		m.name(`"command_id":`)
		m.buf = AppendCanonicalString(m.buf, *c.CommandID)
	}
	if c.CorrelationID != nil {
		m.name(`"correlation_id":`)
		m.buf = AppendCanonicalString(m.buf, *c.CorrelationID)
	}
}

// AppendCanonicalJSON appends c's canonical form (canonical.Appender): the request
// fingerprint of every POST /work digests it. Members sorted by name, the unset ones
// omitted (omitzero).
func (c CreateWork) AppendCanonicalJSON(buf []byte, depth int, freeForm CanonicalFreeForm) ([]byte, error) {
	m := canonicalMembers{buf: buf}
	m.causation(c.Causation)
	if c.Description != nil {
		m.name(`"description":`)
		m.buf = AppendCanonicalString(m.buf, *c.Description)
	}
	if c.DueDate != nil && !c.DueDate.IsZero() { // omitzero asks the time's IsZero
		m.name(`"due_date":`)
		m.buf = AppendCanonicalTime(m.buf, c.DueDate.Time)
	}
	if c.EstimatedCostCents != nil {
		m.name(`"estimated_cost_cents":`)
		m.buf = AppendCanonicalInt(m.buf, *c.EstimatedCostCents)
	}
	if c.InitiativeID != nil {
		m.name(`"initiative_id":`)
		m.buf = AppendCanonicalString(m.buf, *c.InitiativeID)
	}
	if c.Metadata != nil {
		m.name(`"metadata":`)
		var err error
		if m.buf, err = c.Metadata.AppendCanonicalJSON(m.buf, depth+1, freeForm); err != nil {
			return m.buf, err
		}
	}
	if c.MilestoneID != nil {
		m.name(`"milestone_id":`)
		m.buf = AppendCanonicalString(m.buf, *c.MilestoneID)
	}
	if c.Priority != nil {
		m.name(`"priority":`)
		m.buf = AppendCanonicalString(m.buf, string(*c.Priority))
	}
	m.name(`"title":`)
	m.buf = AppendCanonicalString(m.buf, c.Title)
	if c.WorkstreamID != nil {
		m.name(`"workstream_id":`)
		m.buf = AppendCanonicalString(m.buf, *c.WorkstreamID)
	}
	return m.end(), nil
}

// AppendCanonicalJSON appends c's canonical form (canonical.Appender): the request
// fingerprint of every POST /work/{taskId}/complete digests it (the task id is the path's,
// not a member). Members sorted by name, the unset ones omitted (omitzero).
func (c CompleteWork) AppendCanonicalJSON(buf []byte, depth int, freeForm CanonicalFreeForm) ([]byte, error) {
	m := canonicalMembers{buf: buf}
	m.causation(c.Causation)
	if c.CostCents != nil {
		m.name(`"cost_cents":`)
		m.buf = AppendCanonicalInt(m.buf, *c.CostCents)
	}
	var err error
	if c.Evidence != nil {
		m.name(`"evidence":`)
		if m.buf, err = c.Evidence.AppendCanonicalJSON(m.buf, depth+1, freeForm); err != nil {
			return m.buf, err
		}
	}
	if c.ExpectedAggregateVersion != nil {
		m.name(`"expected_aggregate_version":`)
		m.buf = AppendCanonicalInt(m.buf, *c.ExpectedAggregateVersion)
	}
	if c.ExpectedUpdatedAt != nil && !c.ExpectedUpdatedAt.IsZero() { // omitzero asks the time's IsZero
		m.name(`"expected_updated_at":`)
		m.buf = AppendCanonicalTime(m.buf, *c.ExpectedUpdatedAt)
	}
	if c.MeasuredDurationHours != nil {
		m.name(`"measured_duration_hours":`)
		if m.buf, err = AppendCanonicalNumber(m.buf, *c.MeasuredDurationHours); err != nil {
			return m.buf, err
		}
	}
	if c.Summary != nil {
		m.name(`"summary":`)
		m.buf = AppendCanonicalString(m.buf, *c.Summary)
	}
	if c.VersionToken != nil {
		m.name(`"version_token":`)
		m.buf = AppendCanonicalString(m.buf, *c.VersionToken)
	}
	return m.end(), nil
}
