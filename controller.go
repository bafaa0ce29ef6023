package accountable

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Domain controllers watch one signal each in a workspace's projections and, in shadow
// mode, propose what a person might do about it: a proposal is admitted as a pending human
// Decision with its decision.proposed event and a neutral reconciliation receipt, in one
// transaction; nothing is dispatched. Without a signal worth a proposal the run is a
// no-op with its reason. The signals (README "Controllers"):
//
//	engineering  work items blocked, or past their due date and not completed
//	operations   handoffs escalated by their SLA, or open and untouched for 24 hours
//	product      initiative proposals not committed that expire within 48 hours
//	growth       launch jobs blocked on their budget decision
//	sales        pending decisions past their due time
//	design       processes discovered from the ledger and still awaiting confirmation

// Ledger vocabulary of controllers.
const (
	AggregateController      = "controller"
	EventControllerReconcile = "controller.reconciled"
	ControllerProtocol       = "svc.controller.v1"
	ControllerModeShadow     = "shadow"
	controllerSpecSchema     = "controller-spec/1"
)

// ControllerStatus is a controller's health.
type ControllerStatus string

// Controller statuses (CONTRACT.md).
const (
	ControllerNeverRun ControllerStatus = "never_run"
	ControllerRunning  ControllerStatus = "running"
	ControllerHealthy  ControllerStatus = "healthy"
	ControllerDegraded ControllerStatus = "degraded"
	ControllerFailed   ControllerStatus = "failed"
)

// Enum lists the statuses.
func (ControllerStatus) Enum() []any {
	return EnumStrings(ControllerNeverRun, ControllerRunning, ControllerHealthy, ControllerDegraded, ControllerFailed)
}

// NoopReason says why a reconcile proposed nothing.
type NoopReason string

// No-op reasons (CONTRACT.md).
const (
	NoopBelowThreshold       NoopReason = "below_threshold"
	NoopSignalCleared        NoopReason = "signal_cleared"
	NoopCooldownActive       NoopReason = "cooldown_active"
	NoopStaleInput           NoopReason = "stale_input"
	NoopInsufficientEvidence NoopReason = "insufficient_evidence"
	NoopSourceUnavailable    NoopReason = "source_unavailable"
	NoopTruncatedInput       NoopReason = "truncated_input"
	NoopStoppedByPolicy      NoopReason = "stopped_by_policy"
)

// SourceHealthState says how a controller's input looked.
type SourceHealthState string

// Source health states (CONTRACT.md).
const (
	SourceHealthy      SourceHealthState = "healthy"
	SourceStale        SourceHealthState = "stale"
	SourceInsufficient SourceHealthState = "insufficient_evidence"
	SourceUnavailable  SourceHealthState = "unavailable"
	SourceTruncated    SourceHealthState = "truncated"
)

// ControllerSpec is a domain controller's configuration; its canonical JSON's digest is
// the controller's spec_revision.
type ControllerSpec struct {
	Schema     string `json:"schema"`
	Domain     Domain `json:"domain"`
	Signal     string `json:"signal"`
	Threshold  int    `json:"threshold"`   // records the signal needs for a proposal
	MaxRecords int    `json:"max_records"` // records read at most (beyond: truncated)
	Shape      string `json:"decision_shape"`
	Action     string `json:"proposal_type"`
	// Title and Suggestion phrase a proposal's decision (%d: the records found).
	Title      string `json:"-"`
	Suggestion string `json:"-"`
}

// ControllerSpecs are the six controllers' specs.
var ControllerSpecs = map[Domain]ControllerSpec{
	DomainEngineering: {Signal: "work items blocked, or past their due date and not completed", Shape: string(ShapePlanAdjust), Action: "engineering.unblock_work",
		Title: "Engineering: %d work items blocked or overdue", Suggestion: "Review the %d blocked or overdue work items: unblock, re-plan or cancel each."},
	DomainOperations: {Signal: "handoffs escalated by their SLA, or open and untouched for 24 hours", Shape: string(ShapeHandoffRoute), Action: "operations.reroute_handoffs",
		Title: "Operations: %d handoffs breached or stalled", Suggestion: "Reroute or reassign the %d breached or stalled handoffs."},
	DomainProduct: {Signal: "initiative proposals not committed that expire within 48 hours", Shape: string(ShapeGeneric), Action: "product.review_expiring_proposals",
		Title: "Product: %d proposals expire within 48 hours", Suggestion: "Commit or let go of the %d proposals before they expire."},
	DomainGrowth: {Signal: "launch jobs blocked on their budget decision", Shape: string(ShapeBudgetApproval), Action: "growth.review_blocked_budgets",
		Title: "Growth: %d launch jobs wait for their budget", Suggestion: "Approve or decline the budgets the %d blocked launch jobs wait for."},
	DomainSales: {Signal: "pending decisions past their due time", Shape: string(ShapeGeneric), Action: "sales.chase_overdue_decisions",
		Title: "Sales: %d decisions past their due time", Suggestion: "Chase the %d overdue decisions with the people who own them."},
	DomainDesign: {Signal: "processes discovered from the ledger and still awaiting confirmation", Shape: string(ShapeGeneric), Action: "design.review_discovered_processes",
		Title: "Design: %d discovered processes await confirmation", Suggestion: "Confirm or retire the %d processes discovery proposed."},
}

func init() {
	for d, s := range ControllerSpecs {
		s.Schema, s.Domain, s.Threshold, s.MaxRecords = controllerSpecSchema, d, 1, 500
		ControllerSpecs[d] = s
	}
}

// Digester returns "sha256:" + the hex SHA-256 of the RFC 8785 canonical JSON of v
// (canonical.DigestOf): the root says what is digested, its callers digest it.
type Digester func(v any) (string, error)

// DigestID is the id named prefix of what has the digest digest ("sha256:<hex>"):
// prefix:<hex>.
func DigestID(prefix, digest string) string {
	return prefix + ":" + strings.TrimPrefix(digest, "sha256:")
}

// Prefixes of the ids DigestID makes of a controller's digests.
const (
	// SpecRevisionPrefix: a controller's spec_revision, of its spec (ControllerSpec).
	SpecRevisionPrefix = "controller_spec_revision"
	// RunIDPrefix: a reconcile's run id, of its RunContent.
	RunIDPrefix = "controller_run"
	// SignalIDPrefix: a signal's id, of its SignalContent.
	SignalIDPrefix = "controller_signal"
)

// Reconcile is the body of POST /controllers/{domain}/reconcile.
type Reconcile struct {
	Domain             Domain  `json:"-"`
	IdempotencyKey     string  `json:"idempotency_key" minLength:"1" maxLength:"200"`
	Mode               string  `json:"mode" enum:"shadow"`
	ProtocolVersion    string  `json:"protocol_version" enum:"svc.controller.v1"`
	SpecRevision       *string `json:"spec_revision,omitzero" pattern:"^controller_spec_revision:[a-f0-9]{64}$"`
	InputCursor        *string `json:"input_cursor,omitzero" minLength:"1" maxLength:"512"`
	MaxInputAgeSeconds *int64  `json:"max_input_age_seconds,omitzero" minimum:"1" maximum:"604800"`
}

// Validate checks the body: the bounds, mode shadow and the protocol version.
func (c Reconcile) Validate() error {
	is := CheckFields(c)
	if c.Mode != ControllerModeShadow {
		is.Add("/mode", "must be %q (shadow mode only: controllers propose, people decide)", ControllerModeShadow)
	}
	if c.ProtocolVersion != ControllerProtocol {
		is.Add("/protocol_version", "must be %q", ControllerProtocol)
	}
	return is.Err()
}

// RunContent is what the run's id covers (RunIDPrefix:<hex sha256 of its canonical JSON>):
// {workspace, domain, idempotency_key}; the same request names the same run.
func (c Reconcile) RunContent(workspaceID string) map[string]string {
	return map[string]string{"workspace_id": workspaceID, "domain": string(c.Domain), "idempotency_key": c.IdempotencyKey}
}

// SourceHealth is how a controller's input looked.
type SourceHealth struct {
	State              SourceHealthState `json:"state"`
	ObservedAt         Time              `json:"observedAt"`
	FreshnessWatermark *Time             `json:"freshnessWatermark"`
	SourceCursor       *string           `json:"sourceCursor"`
	RecordCount        int               `json:"recordCount"`
	Limitations        []string          `json:"limitations"`
}

// ControllerResult is the specification's Controller reconcile result.
type ControllerResult struct {
	ControllerID     string           `json:"controller_id"`
	Domain           Domain           `json:"domain"`
	SpecRevision     string           `json:"spec_revision" pattern:"^controller_spec_revision:[a-f0-9]{64}$"`
	RunID            string           `json:"run_id" pattern:"^controller_run:[a-f0-9]{64}$"`
	LastRunID        string           `json:"last_run_id" pattern:"^controller_run:[a-f0-9]{64}$"`
	Status           ControllerStatus `json:"status"`
	Result           string           `json:"result"`
	LastResult       string           `json:"last_result"`
	LastSignalID     *string          `json:"last_signal_id"`
	LastSignalState  *string          `json:"last_signal_state"`
	LastErrorCode    *string          `json:"last_error_code"`
	EventIDs         []string         `json:"event_ids"`
	ProjectionCursor string           `json:"projection_cursor"`
	DecisionID       *string          `json:"decision_id"`
	DecisionEventID  *string          `json:"decision_event_id"`
	ReceiptID        *string          `json:"receipt_id"`
	LastReceiptID    *string          `json:"last_receipt_id"`
	Duplicate        bool             `json:"duplicate"`
	ProtocolVersion  string           `json:"protocol_version"`
	Mode             string           `json:"mode"`
	Proposal         *Object          `json:"proposal"`
	LearningProposal *Object          `json:"learning_proposal"`
	NoopReason       string           `json:"noop_reason"`
	SourceHealth     SourceHealth     `json:"source_health"`
	Limitations      []string         `json:"limitations"`
	Encoded          `json:"-"`
}

// ControllerState is GET /controllers/{domain}: the controller, its spec and its last run.
type ControllerState struct {
	ControllerID    string           `json:"controller_id"`
	Domain          Domain           `json:"domain"`
	Status          ControllerStatus `json:"status"`
	SpecRevision    string           `json:"spec_revision"`
	Spec            ControllerSpec   `json:"spec"`
	ProtocolVersion string           `json:"protocol_version"`
	Mode            string           `json:"mode"`
	LastRunID       *string          `json:"last_run_id"`
	LastResult      *string          `json:"last_result"`
	LastSignalID    *string          `json:"last_signal_id"`
	LastSignalState *string          `json:"last_signal_state"`
	LastErrorCode   *string          `json:"last_error_code"`
	LastReceiptID   *string          `json:"last_receipt_id"`
	LastRunAt       *Time            `json:"last_run_at"`
}

// ControllerID names a domain's controller.
func ControllerID(d Domain) string { return "domain." + string(d) }

// SignalRecord is one record a controller's signal found (a work item, a handoff, ...).
type SignalRecord struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Title     string `json:"title"`
	Reason    string `json:"reason"`
	UpdatedAt Time   `json:"updated_at"`
}

// SignalContent is what names a signal (SignalIDPrefix:<hex sha256 of its canonical
// JSON>): the records it found, so the same records make the same signal.
func SignalContent(d Domain, records []SignalRecord) map[string]any {
	ids := make([]string, len(records))
	for i, r := range records {
		ids[i] = r.Kind + ":" + r.ID
	}
	sort.Strings(ids)
	return map[string]any{"domain": d, "records": ids}
}

// CheckSpecRevision refuses a reconcile that names a spec_revision other than current, the
// controller's (version_conflict, with the current revision).
func (s ControllerSpec) CheckSpecRevision(current string, asked *string) error {
	if asked == nil || *asked == current {
		return nil
	}
	return Errorf(ECodeVersionConflict, "The %s controller's spec is at %s, not %s.", s.Domain, current, *asked).
		WithDetails(map[string]any{"current_spec_revision": current})
}

// SignalReading is what a reconcile read of its input inside its transaction.
type SignalReading struct {
	Now                Time
	MaxInputAgeSeconds *int64            // from the request; nil: any age will do
	Watermark          *Time             // when the newest ledger event was recorded; nil: an empty ledger
	SourceCursor       *string           // the request's input_cursor, reported back
	Records            []SignalRecord    // the signal's records, newest first, at most MaxRecords+1
	Last               *ControllerResult // the controller's previous run; nil: never run
}

// Signal states a controller reports for its signal.
const (
	SignalActive  = "active"
	SignalCleared = "cleared"
	SignalUnknown = "unknown" // the input could not be trusted (stale or truncated)
)

// ControllerVerdict is what a reconcile came to: a proposal (Noop empty, on the signal
// SignalID) or a no-op with its reason, and how the input looked.
type ControllerVerdict struct {
	Noop         NoopReason
	SignalID     *string // the signal the records make; nil without one, or when the input was not usable
	SignalState  string
	SourceHealth SourceHealth
	Status       ControllerStatus
}

// Proposes reports whether the reconcile admits a proposal.
func (v ControllerVerdict) Proposes() bool { return v.Noop == "" }

// PendingDecisionFinder reports whether a decision proposed on the signal signalID is
// still pending (read in the reconcile's transaction).
type PendingDecisionFinder func(signalID string) (bool, error)

// Assess decides a reconcile from what it read. In order: input older than
// max_input_age_seconds is stale, more records than MaxRecords are truncated, fewer than
// the Threshold propose nothing (the signal cleared, if the last run saw it active), and a
// signal a pending decision already answers is in cooldown (pending is asked only then);
// otherwise the signal is proposed on. digest names the signal (of its SignalContent).
func (s ControllerSpec) Assess(r SignalReading, digest Digester, pending PendingDecisionFinder) (ControllerVerdict, error) {
	health := SourceHealth{State: SourceHealthy, ObservedAt: r.Now, FreshnessWatermark: r.Watermark, SourceCursor: r.SourceCursor,
		RecordCount: len(r.Records), Limitations: []string{}}
	v := ControllerVerdict{Status: ControllerHealthy, SignalState: SignalCleared}
	switch {
	case r.MaxInputAgeSeconds != nil && r.Watermark != nil &&
		r.Now.Sub(r.Watermark.Time) > time.Duration(*r.MaxInputAgeSeconds)*time.Second:
		v.Noop, health.State = NoopStaleInput, SourceStale
		health.Limitations = append(health.Limitations, fmt.Sprintf("The newest ledger event is older than max_input_age_seconds (%d).", *r.MaxInputAgeSeconds))
	case len(r.Records) > s.MaxRecords:
		v.Noop, health.State = NoopTruncatedInput, SourceTruncated
		health.Limitations = append(health.Limitations, fmt.Sprintf("More than %d records match: too many to propose on at once.", s.MaxRecords))
	case len(r.Records) < s.Threshold:
		v.Noop = NoopBelowThreshold
		if r.Last != nil && r.Last.LastSignalState != nil && *r.Last.LastSignalState == SignalActive {
			v.Noop = NoopSignalCleared
		}
	default:
		d, err := digest(SignalContent(s.Domain, r.Records))
		if err != nil {
			return v, err
		}
		id := DigestID(SignalIDPrefix, d)
		v.SignalID, v.SignalState = &id, SignalActive
		answered, err := pending(id)
		if err != nil {
			return v, err
		}
		if answered {
			v.Noop = NoopCooldownActive
		}
	}
	if health.State != SourceHealthy {
		v.Status, v.SignalState = ControllerDegraded, SignalUnknown
	}
	v.SourceHealth = health
	return v, nil
}

// ControllerProposal is what a controller proposes on a signal: the proposal of its
// result and of its decision's context.
type ControllerProposal struct {
	Type            string         `json:"type"`
	Domain          Domain         `json:"domain"`
	Signal          string         `json:"signal"`
	SignalID        string         `json:"signal_id"`
	RecordCount     int            `json:"record_count"`
	Records         []SignalRecord `json:"records"` // the first maxProposedRecords
	SuggestedAction string         `json:"suggested_action"`
}

// maxProposedRecords bounds the records a proposal shows (its record_count counts all).
const maxProposedRecords = 20

// Propose phrases the proposal on the signal signalID its records make, with the title
// and the summary of the decision that admits it.
func (s ControllerSpec) Propose(signalID string, records []SignalRecord) (p ControllerProposal, title, summary string) {
	summary = fmt.Sprintf(s.Suggestion, len(records))
	p = ControllerProposal{Type: s.Action, Domain: s.Domain, Signal: s.Signal, SignalID: signalID, RecordCount: len(records),
		Records: records[:min(len(records), maxProposedRecords)], SuggestedAction: summary}
	return p, fmt.Sprintf(s.Title, len(records)), summary
}
