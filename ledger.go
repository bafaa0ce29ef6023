package accountable

import (
	"time"
)

// Event is one accepted, replayable ledger event: an item of GET /events/stream. Events of
// one aggregate form a hash chain: PreviousHash is the EventHash of the aggregate's
// previous version (nil at version 1).
type Event struct {
	EventHeader
	Payload   Object `json:"payload"`
	EventHash string `json:"eventHash" pattern:"^sha256:[a-f0-9]{64}$"`
}

// EventHeader is every field of an event except its payload (covered by PayloadDigest) and
// its EventHash, which is the digest of the header's canonical JSON:
// eventHash = "sha256:" + hex SHA-256 of the RFC 8785 canonical JSON of the header.
type EventHeader struct {
	ID               string    `json:"id" format:"uuid"`
	WorkspaceID      string    `json:"workspaceId" format:"uuid"`
	AggregateType    string    `json:"aggregateType"`
	AggregateID      string    `json:"aggregateId"`
	AggregateVersion int64     `json:"aggregateVersion" minimum:"1"`
	EventType        string    `json:"eventType"`
	SchemaVersion    string    `json:"schemaVersion" const:"1.0.0"`
	ActorType        ActorType `json:"actorType"`
	ActorID          string    `json:"actorId"`
	PayloadDigest    string    `json:"payloadDigest" pattern:"^sha256:[a-f0-9]{64}$"`
	OccurredAt       Time      `json:"occurredAt"`
	RecordedAt       Time      `json:"recordedAt"`
	IdempotencyKey   *string   `json:"idempotencyKey"`
	CausationID      *string   `json:"causationId"`
	CorrelationID    *string   `json:"correlationId"`
	PreviousHash     *string   `json:"previousHash" pattern:"^sha256:[a-f0-9]{64}$"`
}

// Ref returns the event reference commands return.
func (e Event) Ref() EventRef {
	return EventRef{EventID: e.ID, AggregateVersion: e.AggregateVersion, EventHash: e.EventHash, PayloadDigest: e.PayloadDigest}
}

// StreamPosition is a position in a workspace's event stream. Events are ordered by the
// position of the transaction that wrote them (its id plus the offset of the cluster the
// database runs on, so positions keep growing across a dump and restore), then by
// insertion order within it, and are only read once every older transaction has finished,
// so a late commit is never skipped. Clients see it as an opaque cursor (package cursor).
type StreamPosition struct {
	Position int64
	Seq      int64
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
	Events    []Event
	Positions []StreamPosition // the position of each event (the cursor that resumes after it)
	Next      StreamPosition
	HasMore   bool
	// Held says that events after the page are committed but not readable yet: an older
	// transaction still running holds the stream's horizon below them. Read again shortly.
	Held bool
}

// LedgerScope narrows a verification to one aggregate; empty means the whole workspace.
type LedgerScope struct {
	AggregateType string
	AggregateID   string
}

// LedgerVerification is the result of recomputing every digest and hash link, and of
// comparing the chains with their anchored heads and with the aggregates they describe.
type LedgerVerification struct {
	Verified           bool    `json:"verified"`
	EventCount         int64   `json:"eventCount" minimum:"0"`
	HeadHash           *string `json:"headHash" pattern:"^sha256:[a-f0-9]{64}$"` // eventHash of the newest event in stream order
	FirstBrokenEventID *string `json:"firstBrokenEventId" format:"uuid"`
	FirstBrokenReason  *string `json:"firstBrokenReason"`
}

// Ledger vocabulary of background verifications.
const (
	AggregateLedgerVerification      = "ledger_verification"
	EventLedgerVerificationRequested = "ledger.verification_requested"
	EventLedgerVerificationCompleted = "ledger.verification_completed"
	EventLedgerVerificationFailed    = "ledger.verification_failed"
)

// VerificationStatus is the state of a background ledger verification.
type VerificationStatus string

// Statuses of a background ledger verification.
const (
	VerificationRunning   VerificationStatus = "running"
	VerificationCompleted VerificationStatus = "completed"
	VerificationFailed    VerificationStatus = "failed" // the workflow gave up without a result
)

// Enum lists the verification statuses.
func (VerificationStatus) Enum() []any {
	return EnumStrings(VerificationRunning, VerificationCompleted, VerificationFailed)
}

// StartLedgerVerification is the command that asks for a background verification of a
// workspace's ledger (POST /events/verifications); its body has no fields of its own.
type StartLedgerVerification struct{}

// Validate accepts every StartLedgerVerification.
func (StartLedgerVerification) Validate() error { return nil }

// LedgerVerificationJob is a background verification of a workspace's ledger, run by the
// LedgerVerification workflow and recorded in the ledger when it ends.
type LedgerVerificationJob struct {
	ID          string              `json:"id" format:"uuid"`
	WorkspaceID string              `json:"-"`
	Status      VerificationStatus  `json:"status"`
	WorkflowID  string              `json:"workflowId"`
	RequestedAt Time                `json:"requestedAt"`
	CompletedAt *Time               `json:"completedAt"`
	Result      *LedgerVerification `json:"result"`
}

// StreamTransport is how GET /events/stream answers: pages of JSON (no transport), or
// one lease of Server-Sent Events.
type StreamTransport string

// The stream transports.
const StreamTransportSSE StreamTransport = "sse"

// Enum lists the transports.
func (StreamTransport) Enum() []any { return []any{StreamTransportSSE} }

// The bounds of a live-stream lease (CONTRACT.md: stream_ms default 25,000, at most
// 60,000): how long it lasts, how many events it carries, how often it reads when live
// notifications are unavailable, and how often an idle stream sends a heartbeat.
const (
	StreamLeaseDefault   = 25 * time.Second
	StreamLeaseMin       = time.Second
	StreamLeaseMax       = 60 * time.Second
	StreamLeaseEvents    = 1000 // default and most events of one lease
	StreamPollDefault    = time.Second
	StreamPollMin        = 100 * time.Millisecond
	StreamPollMax        = 10 * time.Second
	StreamHeartbeatEvery = 5 * time.Second // at most 10 s apart, as CONTRACT.md requires
)

// LedgerCheckpoint is a signed checkpoint of a workspace's ledger log (package ledgerlog):
// the C2SP tlog-checkpoint of the tree of its first TreeSize events, as a C2SP signed note.
type LedgerCheckpoint struct {
	TreeSize   int64
	RootHash   []byte
	SignedNote string
	SignedAt   Time
	// Cosignatures are the witnesses' signature lines of the checkpoint (C2SP
	// tlog-cosignature), to add after the log's own (ledgerlog.WithCosignatures).
	Cosignatures []string
}

// Note is the signed note as published: the log's signed checkpoint with the witnesses'
// cosignature lines after the log's signature.
func (c LedgerCheckpoint) Note() string {
	n := c.SignedNote
	for _, l := range c.Cosignatures {
		n += l
	}
	return n
}

// LedgerCheckpointMissing is the not_found of a size a workspace's log was never signed at.
func LedgerCheckpointMissing(size int64) error {
	return Errorf(ECodeNotFound, "The workspace's log has no checkpoint of size %d.", size)
}

// LedgerLeaf is an event's place in its workspace's log: its leaf index and its entry
// (the canonical JSON of its header).
type LedgerLeaf struct {
	Index int64
	Entry []byte
}

// The answers of the transparency log's operations (api/ledgerlog.go). Hashes are in
// standard base64, as the signed checkpoints and the C2SP specifications write them, so
// that a client compares them with a checkpoint's text as they are.

// SignedCheckpoint is the newest signed checkpoint of a workspace's log (GET
// /events/checkpoint).
type SignedCheckpoint struct {
	Origin     string `json:"origin" description:"The log's origin: the log name, /workspaces/ and the workspace id."`
	TreeSize   int64  `json:"treeSize" minimum:"1" description:"How many events the checkpoint's tree holds: the first treeSize events of the stream."`
	RootHash   string `json:"rootHash" description:"The tree's RFC 6962 root hash, in standard base64 (as in the checkpoint)."`
	Checkpoint string `json:"checkpoint" description:"The C2SP signed note, verbatim: the checkpoint's text, a blank line, the log's signature and the cosignatures of the witnesses that have cosigned it (C2SP tlog-cosignature)."`
	SignedAt   Time   `json:"signedAt"`
	PublicKey  string `json:"publicKey" description:"The log's public key as a C2SP signed-note verifier key (<name>+<hash>+<base64>)."`
	// Witnesses say what each witness the log submits to did last: a refusal is the
	// ledger-level error of a log that showed a witness a history inconsistent with one
	// it cosigned before (or a witness that does not know the log).
	Witnesses []LedgerWitness `json:"witnesses" description:"What each witness did with the workspace's log last: the size it cosigned, and its refusal of a later checkpoint, if any (an alert)."`
}

// LedgerWitness is a witness's state for a workspace's log (GET /events/checkpoint).
type LedgerWitness struct {
	Name             string  `json:"name" description:"The witness's key name, the name of its cosignature lines."`
	CosignedTreeSize int64   `json:"cosignedTreeSize" minimum:"0" description:"The size of the newest checkpoint it cosigned."`
	Refusal          *string `json:"refusal" description:"Why it refused the log's newer checkpoint (null: it has refused nothing since it last cosigned)."`
	RefusedAt        *Time   `json:"refusedAt"`
}

// LedgerInclusionProof proves that an event is a leaf of a signed tree (GET
// /events/{eventId}/proof).
type LedgerInclusionProof struct {
	EventID    string   `json:"eventId" format:"uuid"`
	LeafIndex  int64    `json:"leafIndex" minimum:"0" description:"The event's place in the log: its position in the stream, from 0."`
	TreeSize   int64    `json:"treeSize" minimum:"1"`
	Entry      string   `json:"entry" description:"The leaf's entry: the canonical JSON of the event's header, whose SHA-256 is its eventHash."`
	LeafHash   string   `json:"leafHash" description:"The RFC 6962 leaf hash of entry, in standard base64."`
	Proof      []string `json:"proof" description:"The inclusion proof: RFC 6962 hashes in standard base64, from the leaf up."`
	Checkpoint string   `json:"checkpoint" description:"The signed note of the tree of size treeSize, verbatim."`
}

// LedgerConsistencyProof proves that a signed tree extends an earlier one (GET
// /events/consistency).
type LedgerConsistencyProof struct {
	From           int64    `json:"from" minimum:"0"`
	To             int64    `json:"to" minimum:"1"`
	Proof          []string `json:"proof" description:"The consistency proof: RFC 6962 hashes in standard base64 (empty when from is 0 or equals to)."`
	FromCheckpoint *string  `json:"fromCheckpoint" description:"The signed note of the tree of size from, verbatim; null for from 0, the empty tree, which is never signed."`
	ToCheckpoint   string   `json:"toCheckpoint" description:"The signed note of the tree of size to, verbatim."`
}

// LedgerLogKey is what a client needs to check every workspace's log of this service
// (GET /events/log/key).
type LedgerLogKey struct {
	LogName      string `json:"logName" description:"The log name: the key's name, and the start of every workspace's origin."`
	PublicKey    string `json:"publicKey" description:"The C2SP signed-note verifier key (<name>+<hash>+<base64>) that signs every checkpoint."`
	OriginPrefix string `json:"originPrefix" description:"A workspace's origin is this prefix followed by its id."`
}

// LedgerLogBrokenError means an event of the stream does not match its own hashes: it
// never becomes a leaf of the workspace's log, and the log stops growing (and no
// checkpoint is signed) until it is dealt with.
type LedgerLogBrokenError struct {
	EventID string
	Reason  string
}

func (e *LedgerLogBrokenError) Error() string {
	return "event " + e.EventID + " cannot enter the ledger log: " + e.Reason
}
