package accountable

import (
	"slices"
	"strconv"
)

// Context packs: one read that gives an agent the scope it works in (its task, workstream
// and initiative; the decisions, handoffs and runs around them; the newest ledger events
// and the artifacts it can cite) as a capsule bounded in tokens, delivered whole or as a
// line delta against the capsule text it already holds. The shapes are the public
// clients' (orgx.context-capsule/v1, orgx.context-delivery/v1, orgx.context-transfer/v1);
// the contextpack package builds them.

const (
	ContextCapsuleSchema  = "orgx.context-capsule/v1"
	ContextDeliverySchema = "orgx.context-delivery/v1"
	ContextTransferSchema = "orgx.context-transfer/v1"

	// ContextTransferMaxBytes bounds a transfer's text, as the clients do (8 MiB).
	ContextTransferMaxBytes = 8 << 20
	// ContextTransferMaxOperations bounds a delta's operations, as the clients do.
	ContextTransferMaxOperations = 65536
	// ContextPreparedMaxBytes is the prepared byte bound: a response_profile "prepared"
	// answer is meant to be used directly, without a transfer, so its text is kept under
	// this size (meets_prepared_byte_bound says whether it could be).
	ContextPreparedMaxBytes = 64 << 10

	DefaultContextPayloadTokens = 8192
	MinContextPayloadTokens     = 256
	MaxContextPayloadTokens     = 200000

	// ContextSectionReadLimit is how many items of each section a capsule reads, newest
	// or most urgent first, before its budget trims them.
	ContextSectionReadLimit = 50
	// ContextRefSystem names this service in a capsule's references.
	ContextRefSystem = "accountable"
)

// ContextTokenizer is a BPE vocabulary a capsule's tokens are counted with.
type ContextTokenizer string

const (
	TokenizerO200k  ContextTokenizer = "o200k_base"
	TokenizerCl100k ContextTokenizer = "cl100k_base"

	DefaultContextTokenizer = TokenizerO200k
)

func (ContextTokenizer) Enum() []any { return EnumStrings(TokenizerO200k, TokenizerCl100k) }

// ContextDeliveryMode is how the capsule text travels: whole, or as a delta against the
// version the client acknowledged.
type ContextDeliveryMode string

const (
	ContextDeliveryFull  ContextDeliveryMode = "full"
	ContextDeliveryDelta ContextDeliveryMode = "delta"
)

func (ContextDeliveryMode) Enum() []any {
	return EnumStrings(ContextDeliveryFull, ContextDeliveryDelta)
}

// ContextResponseProfile is "full" (the capsule, and a transfer when a delivery_mode is
// asked for) or "prepared" (compact direct delivery: the capsule alone, kept under
// ContextPreparedMaxBytes, no transfer).
type ContextResponseProfile string

const (
	ContextProfileFull     ContextResponseProfile = "full"
	ContextProfilePrepared ContextResponseProfile = "prepared"
)

func (ContextResponseProfile) Enum() []any {
	return EnumStrings(ContextProfileFull, ContextProfilePrepared)
}

// PrepareContext is the request of POST /context-pack (its workspace_id, required, selects
// the workspace as any body's does: the operation's BodyWorkspaceRequired). The scope's ids are hints: the
// narrowest one given (task, else workstream, else initiative, else the workspace) is read
// in the caller's workspace (another workspace's is not found), and the scope above it is
// the one the service holds, whatever the request says.
type PrepareContext struct {
	InitiativeID               *string                 `json:"initiative_id,omitzero" format:"uuid"`
	WorkstreamID               *string                 `json:"workstream_id,omitzero" format:"uuid"`
	TaskID                     *string                 `json:"task_id,omitzero" format:"uuid"`
	AcknowledgedCapsuleID      *string                 `json:"acknowledged_capsule_id,omitzero" maxLength:"200" description:"The legacy acknowledgement: answered in full, saying whether it is the current capsule."`
	ReaderTokenizer            *ContextTokenizer       `json:"reader_tokenizer,omitzero" description:"The tokenizer the budget is counted with (default o200k_base)."`
	MaxPayloadTokens           *int64                  `json:"max_payload_tokens,omitzero" minimum:"256" maximum:"200000" description:"The budget of the serialized data, delivery metadata included (default 8192)."`
	DeliveryMode               *ContextDeliveryMode    `json:"delivery_mode,omitzero" description:"Ask for a context_transfer: full, or delta against acknowledged_context_version."`
	AcknowledgedContextVersion *string                 `json:"acknowledged_context_version,omitzero" pattern:"^sha256:[a-f0-9]{64}$" description:"The version (sha256 of the serialized text) the client holds, the base of a delta."`
	ResponseProfile            *ContextResponseProfile `json:"response_profile,omitzero"`
}

// Validate checks the request's fields; a scope's hints are checked against the store.
func (p PrepareContext) Validate() error {
	is := CheckFields(p)
	if p.AcknowledgedContextVersion != nil && p.DeliveryMode != nil && *p.DeliveryMode == ContextDeliveryFull {
		is.Add("acknowledged_context_version", "is the base of a delta: send it with delivery_mode delta")
	}
	return is.Err()
}

// Tokenizer is the request's tokenizer, or the default.
func (p PrepareContext) Tokenizer() ContextTokenizer {
	if p.ReaderTokenizer != nil {
		return *p.ReaderTokenizer
	}
	return DefaultContextTokenizer
}

// Budget is the request's token budget, or the default.
func (p PrepareContext) Budget() int {
	if p.MaxPayloadTokens != nil {
		return int(*p.MaxPayloadTokens)
	}
	return DefaultContextPayloadTokens
}

// Prepared reports whether the request asks for the compact direct delivery.
func (p PrepareContext) Prepared() bool {
	return p.ResponseProfile != nil && *p.ResponseProfile == ContextProfilePrepared
}

// ContextScopeRequest is the scope a capsule is asked for: the narrowest id given wins.
type ContextScopeRequest struct {
	InitiativeID, WorkstreamID, TaskID *string
}

// ContextScopeKind is how narrow a capsule's scope is.
type ContextScopeKind string

const (
	ContextScopeWorkspace  ContextScopeKind = "workspace"
	ContextScopeInitiative ContextScopeKind = "initiative"
	ContextScopeWorkstream ContextScopeKind = "workstream"
	ContextScopeTask       ContextScopeKind = "task"
)

func (ContextScopeKind) Enum() []any {
	return EnumStrings(ContextScopeWorkspace, ContextScopeInitiative, ContextScopeWorkstream, ContextScopeTask)
}

// ContextRef names a resource: system, type and id.
type ContextRef struct {
	System string `json:"system"`
	Type   string `json:"type"`
	ID     string `json:"id"`
}

// Ref is a reference to a resource of this service.
func Ref(typ, id string) ContextRef { return ContextRef{System: ContextRefSystem, Type: typ, ID: id} }

// ContextIntent is what the scope is for: its narrowest resource's title and status.
type ContextIntent struct {
	Ref     ContextRef `json:"ref"`
	Summary string     `json:"summary"`
	Status  string     `json:"status"`
}

// ContextScope is the scope the capsule was read for, each level as the service holds it.
type ContextScope struct {
	Kind       ContextScopeKind   `json:"kind"`
	Initiative *ContextInitiative `json:"initiative"`
	Workstream *ContextWorkstream `json:"workstream"`
	Task       *ContextTask       `json:"task"`
}

// ContextInitiative is an initiative in a capsule.
type ContextInitiative struct {
	Ref     ContextRef `json:"ref"`
	Title   string     `json:"title"`
	Summary string     `json:"summary"`
	Status  string     `json:"status"`
}

// ContextWorkstream is a workstream in a capsule.
type ContextWorkstream struct {
	Ref       ContextRef `json:"ref"`
	Name      string     `json:"name"`
	Goal      string     `json:"goal"`
	Domain    string     `json:"domain"`
	AgentName *string    `json:"agent_name"`
}

// ContextTask is a task in a capsule, with the version a completion names.
type ContextTask struct {
	Ref                ContextRef `json:"ref"`
	Title              string     `json:"title"`
	Description        *string    `json:"description"`
	Status             string     `json:"status"`
	Priority           string     `json:"priority"`
	DueDate            *Time      `json:"due_date"`
	EstimatedCostCents *int64     `json:"estimated_cost_cents"`
	AggregateVersion   int64      `json:"aggregate_version"`
}

// ContextDecision is a decision in a capsule: pending ones are its active constraints,
// decided ones its authoritative decisions.
type ContextDecision struct {
	Ref            ContextRef `json:"ref"`
	Summary        string     `json:"summary"`
	Status         string     `json:"status"`
	Provenance     string     `json:"provenance"`
	Urgency        string     `json:"urgency"`
	DueAt          *Time      `json:"due_at"`
	SelectedOption *string    `json:"selected_option"`
}

// ContextHandoff is an open handoff in a capsule (its open risks), the most urgent first.
type ContextHandoff struct {
	Ref         ContextRef `json:"ref"`
	Summary     string     `json:"summary"`
	Status      string     `json:"status"`
	Priority    string     `json:"priority"`
	From        string     `json:"from_stage_key"`
	To          string     `json:"to_stage_key"`
	DueAt       *Time      `json:"due_at"`
	SLABreached bool       `json:"sla_breached"`
}

// ContextRun is a run of the scope's launches in a capsule.
type ContextRun struct {
	Ref          ContextRef `json:"ref"`
	Summary      string     `json:"summary"`
	Status       string     `json:"status"`
	OutcomeKind  *string    `json:"outcome_kind"`
	CostCents    int64      `json:"cost_cents"`
	WorkstreamID string     `json:"workstream_id"`
}

// ContextEvent is a ledger event in a capsule, with the hash an agent cites it by.
type ContextEvent struct {
	Ref              ContextRef `json:"ref"`
	EventType        string     `json:"event_type"`
	AggregateType    string     `json:"aggregate_type"`
	AggregateID      string     `json:"aggregate_id"`
	AggregateVersion int64      `json:"aggregate_version"`
	RecordedAt       Time       `json:"recorded_at"`
	EventHash        string     `json:"event_hash"`
}

// ContextArtifact is an artifact in a capsule: GET /artifacts/{id}?expected_version=n
// reads it as cited.
type ContextArtifact struct {
	Ref          ContextRef `json:"ref"`
	Summary      string     `json:"summary"`
	ArtifactType string     `json:"artifact_type"`
	Status       string     `json:"status"`
	Version      int64      `json:"version"`
}

// ContextSectionCounts is a number per section of a capsule.
type ContextSectionCounts struct {
	ActiveConstraints      int `json:"active_constraints"`
	AuthoritativeDecisions int `json:"authoritative_decisions"`
	OpenRisks              int `json:"open_risks"`
	Runs                   int `json:"runs"`
	RecentEvents           int `json:"recent_events"`
	Artifacts              int `json:"artifacts"`
	RecentReceiptRefs      int `json:"recent_receipt_refs"`
}

// ContextSourceStatus says whether a section holds every item of the scope (complete) or
// some (partial: more than the read limit, or trimmed by the budget).
type ContextSourceStatus struct {
	Status   string `json:"status" enum:"complete,partial"`
	Returned int    `json:"returned"`
}

// ContextSourceCompleteness is a status per section.
type ContextSourceCompleteness struct {
	ActiveConstraints      ContextSourceStatus `json:"active_constraints"`
	AuthoritativeDecisions ContextSourceStatus `json:"authoritative_decisions"`
	OpenRisks              ContextSourceStatus `json:"open_risks"`
	Runs                   ContextSourceStatus `json:"runs"`
	RecentEvents           ContextSourceStatus `json:"recent_events"`
	Artifacts              ContextSourceStatus `json:"artifacts"`
	RecentReceiptRefs      ContextSourceStatus `json:"recent_receipt_refs"`
}

// ContextCapsule is what an agent gets: its scope and what surrounds it, each section
// ranked (most urgent or newest first) and trimmed to the budget. capsule_id and
// content_digest name the content: sha256 of the RFC 8785 canonical JSON of the capsule
// without them.
type ContextCapsule struct {
	SchemaVersion          string                    `json:"schema_version" const:"orgx.context-capsule/v1"`
	CapsuleID              string                    `json:"capsule_id"`
	WorkspaceID            string                    `json:"workspace_id" format:"uuid"`
	AsOfGlobalSequence     int64                     `json:"as_of_global_sequence" description:"The stream position of the workspace's newest event the capsule was read after."`
	ProjectionConsistency  string                    `json:"projection_consistency" enum:"database_snapshot,best_effort_multi_read"`
	Scope                  ContextScope              `json:"scope"`
	CurrentIntent          *ContextIntent            `json:"current_intent"`
	ActiveConstraints      []ContextDecision         `json:"active_constraints" description:"Pending decisions of the scope: nothing they hold proceeds until a person decides."`
	AuthoritativeDecisions []ContextDecision         `json:"authoritative_decisions"`
	OpenRisks              []ContextHandoff          `json:"open_risks" description:"The workspace's open handoffs, breached and nearest their SLA first."`
	Runs                   []ContextRun              `json:"runs"`
	RecentEvents           []ContextEvent            `json:"recent_events"`
	Artifacts              []ContextArtifact         `json:"artifacts"`
	RecentReceiptRefs      []ContextRef              `json:"recent_receipt_refs"`
	OmittedCounts          ContextSectionCounts      `json:"omitted_counts" description:"Items read but left out to fit the budget."`
	SourceCompleteness     ContextSourceCompleteness `json:"source_completeness"`
	ContentDigest          string                    `json:"content_digest" pattern:"^sha256:[a-f0-9]{64}$"`
}

// ContextSources is what a capsule is built from: the scope, and each section's items as
// read (ranked, at most ContextSectionReadLimit each), with whether there were more.
type ContextSources struct {
	WorkspaceID        string
	AsOfGlobalSequence int64
	Scope              ContextScope
	// Reasons say how the request's scope hints were read (an id that is not the
	// narrowest one's).
	Reasons    []string
	Pending    []ContextDecision
	Decided    []ContextDecision
	Handoffs   []ContextHandoff
	Runs       []ContextRun
	Events     []ContextEvent
	Artifacts  []ContextArtifact
	Receipts   []ContextRef
	MoreOfEach ContextSectionCounts // 1 where the read limit left items unread
}

// ContextAccounting is what the serialized data costs.
type ContextAccounting struct {
	SerializedDataBytes   int     `json:"serialized_data_bytes"`
	ModelInputTokens      *int    `json:"model_input_tokens"`
	Tokenizer             *string `json:"tokenizer"`
	SerializedDataTokens  *int    `json:"serialized_data_tokens"`
	SourceExpansionTokens *int    `json:"source_expansion_tokens"`
}

// ContextDelivery says how the capsule was delivered and what it may be used for (never
// authority for a consequential action: recheck before acting).
type ContextDelivery struct {
	SchemaVersion                  string            `json:"schema_version" const:"orgx.context-delivery/v1"`
	Mode                           string            `json:"mode" enum:"full,delta"`
	Consistency                    string            `json:"consistency" enum:"database_snapshot,best_effort_multi_read"`
	Completeness                   string            `json:"completeness" enum:"incomplete,unknown"`
	ReusableForConsequentialAction bool              `json:"reusable_for_consequential_action"`
	BaseVerified                   bool              `json:"base_verified"`
	RebootstrapRequired            bool              `json:"rebootstrap_required"`
	Reasons                        []string          `json:"reasons"`
	Accounting                     ContextAccounting `json:"accounting"`
	PerformanceProfile             string            `json:"performance_profile" enum:"unqualified_snapshot,unqualified_best_effort"`
	MeetsPreparedByteBound         bool              `json:"meets_prepared_byte_bound"`
}

// ContextOperation is one step of a delta: exactly one of Insert (text) and Copy
// ([start, count] of the base text's lines, each line ending after its "\n").
type ContextOperation struct {
	Insert *string   `json:"insert,omitzero"`
	Copy   *[2]int64 `json:"copy,omitzero"`
}

// ContextTransfer is the capsule text as it travels: whole (serialized) or as a delta
// against base_version. version is "sha256:" + the hex SHA-256 of the UTF-8 text.
type ContextTransfer struct {
	SchemaVersion string             `json:"schema_version" const:"orgx.context-transfer/v1"`
	Mode          string             `json:"mode" enum:"full,delta"`
	Version       string             `json:"version" pattern:"^sha256:[a-f0-9]{64}$"`
	Serialized    *string            `json:"serialized,omitzero"`
	BaseVersion   *string            `json:"base_version,omitzero" pattern:"^sha256:[a-f0-9]{64}$"`
	Operations    []ContextOperation `json:"operations,omitzero"`
}

// ContextPreparation is the answer of POST /context-pack. context_capsule is left out of a
// delta (the transfer carries it); context_transfer is there when a delivery_mode was asked
// for, but not for the prepared profile.
type ContextPreparation struct {
	ContextCapsule  *ContextCapsule  `json:"context_capsule,omitzero"`
	ContextDelivery ContextDelivery  `json:"context_delivery"`
	ContextTransfer *ContextTransfer `json:"context_transfer,omitzero"`
}

// Hand-written encoders of the answer of POST /context-pack and of a capsule's items:
// encoding/json's reflective pass over the capsule was a large share of the request's CPU
// (the capsule is in the answer, and each item's JSON sizes it against the budget). They
// write exactly the bytes json.Marshal writes (HTML escaping on, as Fiber's c.JSON
// encodes); TestContextAppendJSON compares the two on random values, and fails on a field
// added to a type but not to its encoder.

func appendContextStringPtr(buf []byte, s *string) []byte {
	if s == nil {
		return append(buf, "null"...)
	}
	return AppendJSONString(buf, *s)
}

func appendContextTime(buf []byte, t *Time) []byte {
	if t == nil {
		return append(buf, "null"...)
	}
	buf = append(buf, '"')
	buf = appendTime(buf, t.Time)
	return append(buf, '"')
}

func appendContextInt(buf []byte, n *int) []byte {
	if n == nil {
		return append(buf, "null"...)
	}
	return strconv.AppendInt(buf, int64(*n), 10)
}

// appendContextList appends items as a JSON array (null for a nil slice).
func appendContextList[T interface{ AppendJSON([]byte) []byte }](buf []byte, items []T) []byte {
	if items == nil {
		return append(buf, "null"...)
	}
	buf = append(buf, '[')
	for i := range items {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = items[i].AppendJSON(buf)
	}
	return append(buf, ']')
}

// AppendJSON appends r as json.Marshal encodes it.
func (r ContextRef) AppendJSON(buf []byte) []byte {
	buf = append(buf, `{"system":`...)
	buf = AppendJSONString(buf, r.System)
	buf = append(buf, `,"type":`...)
	buf = AppendJSONString(buf, r.Type)
	buf = append(buf, `,"id":`...)
	buf = AppendJSONString(buf, r.ID)
	return append(buf, '}')
}

// AppendJSON appends d as json.Marshal encodes it.
func (d ContextDecision) AppendJSON(buf []byte) []byte {
	buf = d.Ref.AppendJSON(append(buf, `{"ref":`...))
	buf = AppendJSONString(append(buf, `,"summary":`...), d.Summary)
	buf = AppendJSONString(append(buf, `,"status":`...), d.Status)
	buf = AppendJSONString(append(buf, `,"provenance":`...), d.Provenance)
	buf = AppendJSONString(append(buf, `,"urgency":`...), d.Urgency)
	buf = appendContextTime(append(buf, `,"due_at":`...), d.DueAt)
	buf = appendContextStringPtr(append(buf, `,"selected_option":`...), d.SelectedOption)
	return append(buf, '}')
}

// AppendJSON appends h as json.Marshal encodes it.
func (h ContextHandoff) AppendJSON(buf []byte) []byte {
	buf = h.Ref.AppendJSON(append(buf, `{"ref":`...))
	buf = AppendJSONString(append(buf, `,"summary":`...), h.Summary)
	buf = AppendJSONString(append(buf, `,"status":`...), h.Status)
	buf = AppendJSONString(append(buf, `,"priority":`...), h.Priority)
	buf = AppendJSONString(append(buf, `,"from_stage_key":`...), h.From)
	buf = AppendJSONString(append(buf, `,"to_stage_key":`...), h.To)
	buf = appendContextTime(append(buf, `,"due_at":`...), h.DueAt)
	buf = strconv.AppendBool(append(buf, `,"sla_breached":`...), h.SLABreached)
	return append(buf, '}')
}

// AppendJSON appends r as json.Marshal encodes it.
func (r ContextRun) AppendJSON(buf []byte) []byte {
	buf = r.Ref.AppendJSON(append(buf, `{"ref":`...))
	buf = AppendJSONString(append(buf, `,"summary":`...), r.Summary)
	buf = AppendJSONString(append(buf, `,"status":`...), r.Status)
	buf = appendContextStringPtr(append(buf, `,"outcome_kind":`...), r.OutcomeKind)
	buf = strconv.AppendInt(append(buf, `,"cost_cents":`...), r.CostCents, 10)
	buf = AppendJSONString(append(buf, `,"workstream_id":`...), r.WorkstreamID)
	return append(buf, '}')
}

// AppendJSON appends e as json.Marshal encodes it.
func (e ContextEvent) AppendJSON(buf []byte) []byte {
	buf = e.Ref.AppendJSON(append(buf, `{"ref":`...))
	buf = AppendJSONString(append(buf, `,"event_type":`...), e.EventType)
	buf = AppendJSONString(append(buf, `,"aggregate_type":`...), e.AggregateType)
	buf = AppendJSONString(append(buf, `,"aggregate_id":`...), e.AggregateID)
	buf = strconv.AppendInt(append(buf, `,"aggregate_version":`...), e.AggregateVersion, 10)
	buf = appendContextTime(append(buf, `,"recorded_at":`...), &e.RecordedAt)
	buf = AppendJSONString(append(buf, `,"event_hash":`...), e.EventHash)
	return append(buf, '}')
}

// AppendJSON appends a as json.Marshal encodes it.
func (a ContextArtifact) AppendJSON(buf []byte) []byte {
	buf = a.Ref.AppendJSON(append(buf, `{"ref":`...))
	buf = AppendJSONString(append(buf, `,"summary":`...), a.Summary)
	buf = AppendJSONString(append(buf, `,"artifact_type":`...), a.ArtifactType)
	buf = AppendJSONString(append(buf, `,"status":`...), a.Status)
	buf = strconv.AppendInt(append(buf, `,"version":`...), a.Version, 10)
	return append(buf, '}')
}

func (s ContextScope) appendJSON(buf []byte) []byte {
	buf = AppendJSONString(append(buf, `{"kind":`...), string(s.Kind))
	buf = append(buf, `,"initiative":`...)
	if i := s.Initiative; i == nil {
		buf = append(buf, "null"...)
	} else {
		buf = i.Ref.AppendJSON(append(buf, `{"ref":`...))
		buf = AppendJSONString(append(buf, `,"title":`...), i.Title)
		buf = AppendJSONString(append(buf, `,"summary":`...), i.Summary)
		buf = AppendJSONString(append(buf, `,"status":`...), i.Status)
		buf = append(buf, '}')
	}
	buf = append(buf, `,"workstream":`...)
	if w := s.Workstream; w == nil {
		buf = append(buf, "null"...)
	} else {
		buf = w.Ref.AppendJSON(append(buf, `{"ref":`...))
		buf = AppendJSONString(append(buf, `,"name":`...), w.Name)
		buf = AppendJSONString(append(buf, `,"goal":`...), w.Goal)
		buf = AppendJSONString(append(buf, `,"domain":`...), w.Domain)
		buf = appendContextStringPtr(append(buf, `,"agent_name":`...), w.AgentName)
		buf = append(buf, '}')
	}
	buf = append(buf, `,"task":`...)
	if t := s.Task; t == nil {
		buf = append(buf, "null"...)
	} else {
		buf = t.Ref.AppendJSON(append(buf, `{"ref":`...))
		buf = AppendJSONString(append(buf, `,"title":`...), t.Title)
		buf = appendContextStringPtr(append(buf, `,"description":`...), t.Description)
		buf = AppendJSONString(append(buf, `,"status":`...), t.Status)
		buf = AppendJSONString(append(buf, `,"priority":`...), t.Priority)
		buf = appendContextTime(append(buf, `,"due_date":`...), t.DueDate)
		buf = append(buf, `,"estimated_cost_cents":`...)
		if t.EstimatedCostCents == nil {
			buf = append(buf, "null"...)
		} else {
			buf = strconv.AppendInt(buf, *t.EstimatedCostCents, 10)
		}
		buf = strconv.AppendInt(append(buf, `,"aggregate_version":`...), t.AggregateVersion, 10)
		buf = append(buf, '}')
	}
	return append(buf, '}')
}

func (c ContextSectionCounts) appendJSON(buf []byte) []byte {
	buf = strconv.AppendInt(append(buf, `{"active_constraints":`...), int64(c.ActiveConstraints), 10)
	buf = strconv.AppendInt(append(buf, `,"authoritative_decisions":`...), int64(c.AuthoritativeDecisions), 10)
	buf = strconv.AppendInt(append(buf, `,"open_risks":`...), int64(c.OpenRisks), 10)
	buf = strconv.AppendInt(append(buf, `,"runs":`...), int64(c.Runs), 10)
	buf = strconv.AppendInt(append(buf, `,"recent_events":`...), int64(c.RecentEvents), 10)
	buf = strconv.AppendInt(append(buf, `,"artifacts":`...), int64(c.Artifacts), 10)
	buf = strconv.AppendInt(append(buf, `,"recent_receipt_refs":`...), int64(c.RecentReceiptRefs), 10)
	return append(buf, '}')
}

func (s ContextSourceStatus) appendJSON(buf []byte) []byte {
	buf = AppendJSONString(append(buf, `{"status":`...), s.Status)
	buf = strconv.AppendInt(append(buf, `,"returned":`...), int64(s.Returned), 10)
	return append(buf, '}')
}

func (c ContextSourceCompleteness) appendJSON(buf []byte) []byte {
	buf = c.ActiveConstraints.appendJSON(append(buf, `{"active_constraints":`...))
	buf = c.AuthoritativeDecisions.appendJSON(append(buf, `,"authoritative_decisions":`...))
	buf = c.OpenRisks.appendJSON(append(buf, `,"open_risks":`...))
	buf = c.Runs.appendJSON(append(buf, `,"runs":`...))
	buf = c.RecentEvents.appendJSON(append(buf, `,"recent_events":`...))
	buf = c.Artifacts.appendJSON(append(buf, `,"artifacts":`...))
	buf = c.RecentReceiptRefs.appendJSON(append(buf, `,"recent_receipt_refs":`...))
	return append(buf, '}')
}

// AppendJSON appends c as json.Marshal encodes it.
func (c *ContextCapsule) AppendJSON(buf []byte) []byte {
	buf = AppendJSONString(append(buf, `{"schema_version":`...), c.SchemaVersion)
	buf = AppendJSONString(append(buf, `,"capsule_id":`...), c.CapsuleID)
	buf = AppendJSONString(append(buf, `,"workspace_id":`...), c.WorkspaceID)
	buf = strconv.AppendInt(append(buf, `,"as_of_global_sequence":`...), c.AsOfGlobalSequence, 10)
	buf = AppendJSONString(append(buf, `,"projection_consistency":`...), c.ProjectionConsistency)
	buf = c.Scope.appendJSON(append(buf, `,"scope":`...))
	buf = append(buf, `,"current_intent":`...)
	if i := c.CurrentIntent; i == nil {
		buf = append(buf, "null"...)
	} else {
		buf = i.Ref.AppendJSON(append(buf, `{"ref":`...))
		buf = AppendJSONString(append(buf, `,"summary":`...), i.Summary)
		buf = AppendJSONString(append(buf, `,"status":`...), i.Status)
		buf = append(buf, '}')
	}
	buf = appendContextList(append(buf, `,"active_constraints":`...), c.ActiveConstraints)
	buf = appendContextList(append(buf, `,"authoritative_decisions":`...), c.AuthoritativeDecisions)
	buf = appendContextList(append(buf, `,"open_risks":`...), c.OpenRisks)
	buf = appendContextList(append(buf, `,"runs":`...), c.Runs)
	buf = appendContextList(append(buf, `,"recent_events":`...), c.RecentEvents)
	buf = appendContextList(append(buf, `,"artifacts":`...), c.Artifacts)
	buf = appendContextList(append(buf, `,"recent_receipt_refs":`...), c.RecentReceiptRefs)
	buf = c.OmittedCounts.appendJSON(append(buf, `,"omitted_counts":`...))
	buf = c.SourceCompleteness.appendJSON(append(buf, `,"source_completeness":`...))
	buf = AppendJSONString(append(buf, `,"content_digest":`...), c.ContentDigest)
	return append(buf, '}')
}

// AppendJSON appends d as json.Marshal encodes it.
func (d *ContextDelivery) AppendJSON(buf []byte) []byte {
	buf = AppendJSONString(append(buf, `{"schema_version":`...), d.SchemaVersion)
	buf = AppendJSONString(append(buf, `,"mode":`...), d.Mode)
	buf = AppendJSONString(append(buf, `,"consistency":`...), d.Consistency)
	buf = AppendJSONString(append(buf, `,"completeness":`...), d.Completeness)
	buf = strconv.AppendBool(append(buf, `,"reusable_for_consequential_action":`...), d.ReusableForConsequentialAction)
	buf = strconv.AppendBool(append(buf, `,"base_verified":`...), d.BaseVerified)
	buf = strconv.AppendBool(append(buf, `,"rebootstrap_required":`...), d.RebootstrapRequired)
	buf = append(buf, `,"reasons":`...)
	if d.Reasons == nil {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, '[')
		for i, r := range d.Reasons {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = AppendJSONString(buf, r)
		}
		buf = append(buf, ']')
	}
	a := &d.Accounting
	buf = strconv.AppendInt(append(buf, `,"accounting":{"serialized_data_bytes":`...), int64(a.SerializedDataBytes), 10)
	buf = appendContextInt(append(buf, `,"model_input_tokens":`...), a.ModelInputTokens)
	buf = appendContextStringPtr(append(buf, `,"tokenizer":`...), a.Tokenizer)
	buf = appendContextInt(append(buf, `,"serialized_data_tokens":`...), a.SerializedDataTokens)
	buf = appendContextInt(append(buf, `,"source_expansion_tokens":`...), a.SourceExpansionTokens)
	buf = AppendJSONString(append(buf, `},"performance_profile":`...), d.PerformanceProfile)
	buf = strconv.AppendBool(append(buf, `,"meets_prepared_byte_bound":`...), d.MeetsPreparedByteBound)
	return append(buf, '}')
}

// AppendJSON appends t as json.Marshal encodes it.
func (t *ContextTransfer) AppendJSON(buf []byte) []byte {
	buf = AppendJSONString(append(buf, `{"schema_version":`...), t.SchemaVersion)
	buf = AppendJSONString(append(buf, `,"mode":`...), t.Mode)
	buf = AppendJSONString(append(buf, `,"version":`...), t.Version)
	if t.Serialized != nil {
		buf = AppendJSONString(append(buf, `,"serialized":`...), *t.Serialized)
	}
	if t.BaseVersion != nil {
		buf = AppendJSONString(append(buf, `,"base_version":`...), *t.BaseVersion)
	}
	if t.Operations != nil {
		buf = append(buf, `,"operations":[`...)
		for i, op := range t.Operations {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, '{')
			if op.Insert != nil {
				buf = AppendJSONString(append(buf, `"insert":`...), *op.Insert)
			}
			if op.Copy != nil {
				if op.Insert != nil {
					buf = append(buf, ',')
				}
				buf = strconv.AppendInt(append(buf, `"copy":[`...), op.Copy[0], 10)
				buf = strconv.AppendInt(append(buf, ','), op.Copy[1], 10)
				buf = append(buf, ']')
			}
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
	}
	return append(buf, '}')
}

// AppendJSON appends p as json.Marshal encodes it (the data of POST /context-pack's
// answer); it never fails.
func (p ContextPreparation) AppendJSON(buf []byte) ([]byte, error) {
	if t := p.ContextTransfer; t != nil && t.Serialized != nil {
		// The text escaped, and the capsule it holds (its JSON is shorter than the
		// indented text): grown once rather than doubling through both.
		n := len(*t.Serialized)
		buf = slices.Grow(buf, 2*n+n/4+1024)
	}
	buf = append(buf, '{')
	if p.ContextCapsule != nil {
		buf = append(p.ContextCapsule.AppendJSON(append(buf, `"context_capsule":`...)), ',')
	}
	buf = p.ContextDelivery.AppendJSON(append(buf, `"context_delivery":`...))
	if p.ContextTransfer != nil {
		buf = p.ContextTransfer.AppendJSON(append(buf, `,"context_transfer":`...))
	}
	return append(buf, '}'), nil
}
