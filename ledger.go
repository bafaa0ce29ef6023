package accountable

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Event is one accepted, replayable ledger event. Events of one aggregate form a hash
// chain: PreviousHash is the EventHash of the aggregate's previous version (nil at 1).
type Event struct {
	ID               string
	WorkspaceID      string
	AggregateType    string
	AggregateID      string
	AggregateVersion int64
	EventType        string
	SchemaVersion    string
	ActorType        ActorType
	ActorID          string
	Payload          json.RawMessage
	PayloadDigest    string
	OccurredAt       time.Time
	RecordedAt       time.Time
	IdempotencyKey   *string
	CausationID      *string
	CorrelationID    *string
	PreviousHash     *string
	EventHash        string
}

// HashedFields returns the fields an event's hash covers, by their wire names: every field
// of the stream item except payload (covered by payloadDigest) and eventHash itself.
// eventHash = "sha256:" + hex SHA-256 of the RFC 8785 canonical JSON of this object.
func (e Event) HashedFields() map[string]any {
	return map[string]any{
		"id":               e.ID,
		"workspaceId":      e.WorkspaceID,
		"aggregateType":    e.AggregateType,
		"aggregateId":      e.AggregateID,
		"aggregateVersion": e.AggregateVersion,
		"eventType":        e.EventType,
		"schemaVersion":    e.SchemaVersion,
		"actorType":        string(e.ActorType),
		"actorId":          e.ActorID,
		"payloadDigest":    e.PayloadDigest,
		"occurredAt":       FormatTime(e.OccurredAt),
		"recordedAt":       FormatTime(e.RecordedAt),
		"idempotencyKey":   e.IdempotencyKey,
		"causationId":      e.CausationID,
		"correlationId":    e.CorrelationID,
		"previousHash":     e.PreviousHash,
	}
}

// Ref returns the event reference commands return.
func (e Event) Ref() EventRef {
	return EventRef{EventID: e.ID, AggregateVersion: e.AggregateVersion, EventHash: e.EventHash, PayloadDigest: e.PayloadDigest}
}

// StreamPosition is a position in a workspace's event stream. Events are ordered by the
// id of the transaction that wrote them, then by insertion order within it, and are only
// read once every older transaction has finished, so a late commit is never skipped.
type StreamPosition struct {
	TxID uint64
	Seq  int64
}

// Encode returns the opaque cursor string of p.
func (p StreamPosition) Encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte("e1." + strconv.FormatUint(p.TxID, 10) + "." + strconv.FormatInt(p.Seq, 10)))
}

// ParseStreamCursor decodes a cursor made by Encode.
func ParseStreamCursor(s string) (StreamPosition, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return StreamPosition{}, false
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 3 || parts[0] != "e1" {
		return StreamPosition{}, false
	}
	tx, err1 := strconv.ParseUint(parts[1], 10, 64)
	seq, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || seq < 0 {
		return StreamPosition{}, false
	}
	return StreamPosition{TxID: tx, Seq: seq}, true
}

// EventFilter selects a page of the event stream.
type EventFilter struct {
	After          StreamPosition
	EventTypes     []string
	AggregateTypes []string
	Limit          int
}

// EventPage is one page of the event stream.
type EventPage struct {
	Events  []Event
	Next    StreamPosition
	HasMore bool
}

// LedgerScope narrows a verification to one aggregate; empty means the whole workspace.
type LedgerScope struct {
	AggregateType string
	AggregateID   string
}

// LedgerVerification is the result of recomputing every digest and hash link.
type LedgerVerification struct {
	Verified           bool
	EventCount         int64
	HeadHash           *string // eventHash of the newest event in stream order
	FirstBrokenEventID *string
	FirstBrokenReason  *string
}

// Ledger vocabulary of background verifications.
const (
	AggregateLedgerVerification      = "ledger_verification"
	EventLedgerVerificationRequested = "ledger.verification_requested"
	EventLedgerVerificationCompleted = "ledger.verification_completed"
)

// Statuses of a background ledger verification.
const (
	VerificationRunning   = "running"
	VerificationCompleted = "completed"
	VerificationFailed    = "failed" // the workflow ended without recording a result
)

// LedgerVerificationRequest asks for a background verification of a workspace's ledger.
// The LedgerVerification workflow records it (with its ledger event) and then the result.
type LedgerVerificationRequest struct {
	WorkspaceID    string
	VerificationID string
	RequestedBy    Actor
	RequestedAt    time.Time
}

// LedgerVerificationJob is a background verification of a workspace's ledger, run by the
// LedgerVerification workflow and recorded in the ledger when it completes.
type LedgerVerificationJob struct {
	ID          string
	WorkspaceID string
	Status      string
	RequestedAt time.Time
	CompletedAt *time.Time
	Result      *LedgerVerification
}
