package store

import (
	"strconv"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// eventHash is an event's hash: the digest of its header's canonical JSON (RFC 8785), as
// canonical.DigestOf(h) makes it, written member by member in the canonical order of the
// names instead of through reflection. Every event a command appends takes one, and
// verification one for every event it reads; TestEventHashIsTheCanonicalDigest checks
// the two against each other on generated headers.
func eventHash(h accountable.EventHeader) string {
	buf, _ := appendEventHeader(make([]byte, 0, 640), h)
	return canonical.Digest(buf)
}

// headValues are where an event header's text holds the values that come from its
// aggregate's head: aggregateVersion's at [version, version+versionLen), previousHash's
// at [previous, previous+previousLen).
type headValues struct{ version, versionLen, previous, previousLen int }

// eventHeaderAround returns h's canonical header without the values of its members that
// come from the aggregate's head: the text is before, the version, middle, the previous
// hash (a JSON string, or null), after. A command that reads the head and writes the event
// in one statement hashes it in PostgreSQL from them (eventHashSQL).
func eventHeaderAround(h accountable.EventHeader) (before, middle, after []byte) {
	buf, at := appendEventHeader(make([]byte, 0, 640), h)
	return buf[:at.version:at.version], buf[at.version+at.versionLen : at.previous : at.previous], buf[at.previous+at.previousLen:]
}

// appendEventHeader appends h's canonical header (RFC 8785) to buf.
func appendEventHeader(buf []byte, h accountable.EventHeader) ([]byte, headValues) {
	var at headValues
	buf = append(buf, `{"actorId":`...)
	buf = canonical.AppendString(buf, h.ActorID)
	buf = append(buf, `,"actorType":`...)
	buf = canonical.AppendString(buf, string(h.ActorType))
	buf = append(buf, `,"aggregateId":`...)
	buf = canonical.AppendString(buf, h.AggregateID)
	buf = append(buf, `,"aggregateType":`...)
	buf = canonical.AppendString(buf, h.AggregateType)
	buf = append(buf, `,"aggregateVersion":`...)
	at.version = len(buf)
	buf = canonical.AppendInt(buf, h.AggregateVersion)
	at.versionLen = len(buf) - at.version
	buf = append(buf, `,"causationId":`...)
	buf = appendNullableString(buf, h.CausationID)
	buf = append(buf, `,"correlationId":`...)
	buf = appendNullableString(buf, h.CorrelationID)
	buf = append(buf, `,"eventType":`...)
	buf = canonical.AppendString(buf, h.EventType)
	buf = append(buf, `,"id":`...)
	buf = canonical.AppendString(buf, h.ID)
	buf = append(buf, `,"idempotencyKey":`...)
	buf = appendNullableString(buf, h.IdempotencyKey)
	buf = append(buf, `,"occurredAt":`...)
	buf = canonical.AppendString(buf, accountable.FormatTime(h.OccurredAt.Time))
	buf = append(buf, `,"payloadDigest":`...)
	buf = canonical.AppendString(buf, h.PayloadDigest)
	buf = append(buf, `,"previousHash":`...)
	at.previous = len(buf)
	buf = appendNullableString(buf, h.PreviousHash)
	at.previousLen = len(buf) - at.previous
	buf = append(buf, `,"recordedAt":`...)
	buf = canonical.AppendString(buf, accountable.FormatTime(h.RecordedAt.Time))
	buf = append(buf, `,"schemaVersion":`...)
	buf = canonical.AppendString(buf, h.SchemaVersion)
	buf = append(buf, `,"workspaceId":`...)
	buf = canonical.AppendString(buf, h.WorkspaceID)
	return append(buf, '}'), at
}

// eventHashSQL is an event's hash made by PostgreSQL from eventHeaderAround's parts (the
// bytea parameters $parts, $parts+1 and $parts+2) and the version and previous hash the
// statement takes from the head (the SQL expressions version, a bigint, and previous,
// text or NULL; a version below 2^53 and a hash of "sha256:" and hex digits, which
// canonical JSON writes as they are). TestEventHashSQLIsEventHash holds it to eventHash.
func eventHashSQL(parts int, version, previous string) string {
	p := func(i int) string { return "$" + strconv.Itoa(parts+i) + "::bytea" }
	return "'sha256:' || encode(sha256(" + p(0) + " || convert_to((" + version + ")::text, 'UTF8') || " + p(1) +
		" || convert_to(coalesce('\"' || (" + previous + ") || '\"', 'null'), 'UTF8') || " + p(2) + "), 'hex')"
}

// appendNullableString appends the canonical JSON of s: null, or the string.
func appendNullableString(buf []byte, s *string) []byte {
	if s == nil {
		return append(buf, "null"...)
	}
	return canonical.AppendString(buf, *s)
}
