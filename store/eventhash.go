package store

import (
	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// eventHash is an event's hash: the digest of its header's canonical JSON (RFC 8785), as
// canonical.DigestOf(h) makes it, written member by member in the canonical order of the
// names instead of through reflection. Every event a command appends takes one, and
// verification one for every event it reads; TestEventHashIsTheCanonicalDigest checks
// the two against each other on generated headers.
func eventHash(h accountable.EventHeader) string {
	buf := make([]byte, 0, 640)
	buf = append(buf, `{"actorId":`...)
	buf = canonical.AppendString(buf, h.ActorID)
	buf = append(buf, `,"actorType":`...)
	buf = canonical.AppendString(buf, string(h.ActorType))
	buf = append(buf, `,"aggregateId":`...)
	buf = canonical.AppendString(buf, h.AggregateID)
	buf = append(buf, `,"aggregateType":`...)
	buf = canonical.AppendString(buf, h.AggregateType)
	buf = append(buf, `,"aggregateVersion":`...)
	buf = canonical.AppendInt(buf, h.AggregateVersion)
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
	buf = appendNullableString(buf, h.PreviousHash)
	buf = append(buf, `,"recordedAt":`...)
	buf = canonical.AppendString(buf, accountable.FormatTime(h.RecordedAt.Time))
	buf = append(buf, `,"schemaVersion":`...)
	buf = canonical.AppendString(buf, h.SchemaVersion)
	buf = append(buf, `,"workspaceId":`...)
	buf = canonical.AppendString(buf, h.WorkspaceID)
	return canonical.Digest(append(buf, '}'))
}

// appendNullableString appends the canonical JSON of s: null, or the string.
func appendNullableString(buf []byte, s *string) []byte {
	if s == nil {
		return append(buf, "null"...)
	}
	return canonical.AppendString(buf, *s)
}
