// Package receipt validates and imports Agent Work Receipts (agent-work-receipt/v0.1, an
// open format: testdata/agent-work-receipt at the module root), portable records an agent
// runtime writes about one piece of work: intent, authority, actions, evidence, outcome,
// verification, cost, lineage, human intervention. The service validates them
// account-free and imports them into a workspace as producer-reported claims: it checks
// that a receipt is well-formed and coherent, and reports what its integrity block
// proves, but never that what it says happened.
//
// Validation runs four stages, each only when the one before found nothing:
//
//  1. input (json.go): one bounded streaming walk over the JSON text;
//  2. schema: the format's JSON Schema (draft 2020-12, package receipt/schema), issues
//     "schema.<keyword>";
//  3. semantic (below): the rules the schema cannot say, issues "semantic.<rule>";
//  4. integrity (integrity.go): the content hash and Ed25519 signatures, reported
//     as states beside a valid receipt (they never make it invalid: content equality,
//     cryptographic proof and signer trust are separate claims).
//
// Issues are sorted by path, code and message, and at most MaxReceiptIssues are listed
// (issue_count says how many there were).
package receipt

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// The format this service validates.
const (
	ReceiptSchemaVersion = "agent-work-receipt/v0.1"
	ReceiptSchemaURL     = "https://useorgx.com/schemas/agent-work-receipt/v0.1/schema.json"
)

// Validation bounds.
const (
	MaxReceiptDepth  = 64     // nested objects and arrays
	MaxReceiptNodes  = 50_000 // values (objects, arrays, strings, numbers, literals)
	MaxReceiptIssues = 100    // issues listed (issue_count counts them all)
	MaxReceiptSteps  = accountable.MaxStagesPerTrace
)

// ReceiptIssue is one problem of a receipt: where (a JSON Pointer into the document),
// which rule (input.*, schema.<keyword>, semantic.<rule>) and what is wrong.
type ReceiptIssue struct {
	Path    string `json:"path"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ReceiptSchema checks a decoded document (encoding/json with UseNumber) against the
// format's JSON Schema. The implementation (a JSON Schema library) is receipt/schema's,
// which imports this package for its issues.
type ReceiptSchema interface {
	CheckReceipt(doc any) []ReceiptIssue
}

// ReceiptValidator validates receipt documents.
type ReceiptValidator struct {
	Schema   ReceiptSchema // nil: the schema stage is skipped (tests of the other stages)
	MaxBytes int           // the largest document accepted (0: no bound)
	Keys     ReceiptSignerKeys
}

// ReceiptValidation is what validation found. A valid receipt has no issues and carries
// the decoded document, its canonical JSON and digest, and its integrity report.
type ReceiptValidation struct {
	Issues     []ReceiptIssue // sorted; at most MaxReceiptIssues
	IssueCount int            // all the issues found
	Receipt    *AgentWorkReceipt
	Document   map[string]any
	Canonical  []byte // RFC 8785 canonical JSON of the whole document
	Digest     string // sha256:<hex> of Canonical
	Integrity  ReceiptIntegrity
}

// Valid reports whether the receipt has no issues.
func (v ReceiptValidation) Valid() bool { return v.IssueCount == 0 && v.Receipt != nil }

// Truncated reports whether more issues were found than are listed.
func (v ReceiptValidation) Truncated() bool { return v.IssueCount > len(v.Issues) }

// Validate runs the stages over the JSON text raw.
func (v ReceiptValidator) Validate(raw []byte) ReceiptValidation {
	doc, issue := DecodeReceiptJSON(raw, v.MaxBytes)
	if issue != nil {
		return invalidReceipt([]ReceiptIssue{*issue})
	}
	if v.Schema != nil {
		if issues := v.Schema.CheckReceipt(doc); len(issues) > 0 {
			return invalidReceipt(issues)
		}
	}
	obj, ok := doc.(map[string]any)
	var r AgentWorkReceipt
	if !ok || receiptFromDocument(obj, &r) != nil { // only without the schema stage (document.go)
		return invalidReceipt([]ReceiptIssue{{Path: "", Code: "schema.type", Message: "The document does not have the shape of a receipt."}})
	}
	if issues := r.SemanticIssues(); len(issues) > 0 {
		return invalidReceipt(issues)
	}
	content, canon, err := canonicalReceipt(obj, len(raw))
	if err != nil { // the input stage refused what has no canonical form: cannot happen
		return invalidReceipt([]ReceiptIssue{{Path: "", Code: ReceiptInputNumber, Message: "The document has no RFC 8785 canonical form."}})
	}
	integrity, err := verifyReceiptIntegrity(obj, content, v.Keys)
	if err != nil {
		return invalidReceipt([]ReceiptIssue{{Path: "/integrity", Code: ReceiptInputNumber, Message: "The integrity block has no RFC 8785 canonical form."}})
	}
	return ReceiptValidation{Receipt: &r, Document: obj, Canonical: canon, Digest: canonical.Digest(canon), Integrity: integrity}
}

// invalidReceipt sorts and deduplicates issues and keeps the first MaxReceiptIssues.
func invalidReceipt(issues []ReceiptIssue) ReceiptValidation {
	issues = SortReceiptIssues(issues)
	out := ReceiptValidation{IssueCount: len(issues), Issues: issues}
	if len(issues) > MaxReceiptIssues {
		out.Issues = issues[:MaxReceiptIssues:MaxReceiptIssues]
	}
	return out
}

// SortReceiptIssues sorts issues by path, code and message, without repeats.
func SortReceiptIssues(issues []ReceiptIssue) []ReceiptIssue {
	slices.SortFunc(issues, func(a, b ReceiptIssue) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		if c := strings.Compare(a.Code, b.Code); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(issues)
}

// AgentWorkReceipt is the part of a receipt document the service reads: what the semantic
// rules, the summary, the ledger event and discovery need. (The stored document keeps
// everything.) It is decoded only from a document the schema accepted.
type AgentWorkReceipt struct {
	SchemaVersion      string                     `json:"schema_version"`
	ReceiptID          string                     `json:"receipt_id"`
	Intent             ReceiptIntent              `json:"intent"`
	Actor              ReceiptActor               `json:"actor"`
	Authority          ReceiptAuthority           `json:"authority"`
	Actions            []ReceiptAction            `json:"actions"`
	Artifacts          []ReceiptArtifact          `json:"artifacts"`
	Evidence           []ReceiptEvidence          `json:"evidence"`
	Outcome            ReceiptOutcome             `json:"outcome"`
	Verification       ReceiptVerification        `json:"verification"`
	Cost               ReceiptCost                `json:"cost"`
	Lineage            ReceiptLineage             `json:"lineage"`
	HumanInterventions []ReceiptHumanIntervention `json:"human_interventions"`
	Timestamps         ReceiptTimestamps          `json:"timestamps"`
}

// ReceiptRef is an external reference: an object of another system.
type ReceiptRef struct {
	System string `json:"system"`
	Type   string `json:"type"`
	ID     string `json:"id"`
}

// key names the reference in one string.
func (r ReceiptRef) key() string { return r.System + "/" + r.Type + "/" + r.ID }

// ReceiptIntent is what the work was for.
type ReceiptIntent struct {
	Summary    string      `json:"summary"`
	RequestRef *ReceiptRef `json:"request_ref"`
}

// ReceiptActor is who did (or approved, verified) something.
type ReceiptActor struct {
	Type        string          `json:"type"`
	ID          string          `json:"id"`
	DisplayName *string         `json:"display_name"`
	Runtime     *ReceiptRuntime `json:"runtime"`
	Model       *ReceiptModel   `json:"model"`
}

// ReceiptRuntime is the agent runtime an actor ran in.
type ReceiptRuntime struct {
	Name    string  `json:"name"`
	Version *string `json:"version"`
}

// ReceiptModel is the model an actor used.
type ReceiptModel struct {
	Provider string  `json:"provider"`
	Name     string  `json:"name"`
	Version  *string `json:"version"`
}

// ReceiptAuthority is what the actor was allowed to do.
type ReceiptAuthority struct {
	Mode       string  `json:"mode"`
	Status     string  `json:"status"`
	ValidFrom  *string `json:"valid_from"`
	ValidUntil *string `json:"valid_until"`
}

// ReceiptAction is one step the actor took.
type ReceiptAction struct {
	ID          string  `json:"id"`
	Type        string  `json:"type"`
	Status      string  `json:"status"`
	StartedAt   *string `json:"started_at"`
	CompletedAt *string `json:"completed_at"`
}

// ReceiptArtifact is something the work produced or used.
type ReceiptArtifact struct {
	ID        string  `json:"id"`
	CreatedAt *string `json:"created_at"`
}

// ReceiptEvidence is one piece of evidence.
type ReceiptEvidence struct {
	ID         string `json:"id"`
	ObservedAt string `json:"observed_at"`
}

// ReceiptOutcome is what the producer says came of the work.
type ReceiptOutcome struct {
	Status  string `json:"status"`
	Metrics []struct {
		EvidenceIDs []string `json:"evidence_ids"`
	} `json:"metrics"`
	Acceptance *ReceiptAcceptance `json:"acceptance"`
}

// ReceiptAcceptance is whether someone accepted the outcome.
type ReceiptAcceptance struct {
	Status      string   `json:"status"`
	OccurredAt  *string  `json:"occurred_at"`
	EvidenceIDs []string `json:"evidence_ids"`
}

// ReceiptVerification is how the producer says the outcome was verified.
type ReceiptVerification struct {
	Status      string                     `json:"status"`
	Verifier    *ReceiptActor              `json:"verifier"`
	Checks      []ReceiptVerificationCheck `json:"checks"`
	EvidenceIDs []string                   `json:"evidence_ids"`
	VerifiedAt  *string                    `json:"verified_at"`
}

// ReceiptVerificationCheck is one check of a verification.
type ReceiptVerificationCheck struct {
	ID          string   `json:"id"`
	Status      string   `json:"status"`
	EvidenceIDs []string `json:"evidence_ids"`
}

// ReceiptCost is what the work cost, as reported.
type ReceiptCost struct {
	Currency     string                 `json:"currency"`
	Total        float64                `json:"total"`
	Components   []ReceiptCostComponent `json:"components"`
	Usage        []ReceiptUsage         `json:"usage"`
	HumanMinutes *float64               `json:"human_minutes"`
	Estimated    *bool                  `json:"estimated"`
}

// ReceiptCostComponent is a part of the cost.
type ReceiptCostComponent struct {
	Category string  `json:"category"`
	Amount   float64 `json:"amount"`
}

// ReceiptUsage is a metered quantity (tokens, minutes, calls).
type ReceiptUsage struct {
	Name     string   `json:"name"`
	Quantity float64  `json:"quantity"`
	Unit     string   `json:"unit"`
	Cost     *float64 `json:"cost,omitempty"`
}

// ReceiptLineage ties the receipt to runs and traces.
type ReceiptLineage struct {
	RunRef  *ReceiptRef `json:"run_ref"`
	TraceID *string     `json:"trace_id"`
}

// ReceiptHumanIntervention is a person stepping in.
type ReceiptHumanIntervention struct {
	ID              string   `json:"id"`
	Kind            string   `json:"kind"`
	OccurredAt      string   `json:"occurred_at"`
	DurationMinutes *float64 `json:"duration_minutes"`
	EvidenceIDs     []string `json:"evidence_ids"`
}

// ReceiptTimestamps are the receipt's own instants.
type ReceiptTimestamps struct {
	StartedAt   string  `json:"started_at"`
	CompletedAt string  `json:"completed_at"`
	IssuedAt    string  `json:"issued_at"`
	ObservedAt  *string `json:"observed_at"`
	DurationMS  *int64  `json:"duration_ms"`
}

// Semantic issue codes: the rules the schema cannot say.
const (
	ReceiptDuplicateID              = "semantic.duplicate_id"
	ReceiptUnknownEvidenceID        = "semantic.unknown_evidence_id"
	ReceiptTimeOrder                = "semantic.time_order"
	ReceiptAfterIssue               = "semantic.after_issue"
	ReceiptDurationExceedsWindow    = "semantic.duration_exceeds_window"
	ReceiptTerminalActionTimestamp  = "semantic.terminal_action_timestamp"
	ReceiptVerifiedWithoutVerifier  = "semantic.verified_without_verifier"
	ReceiptVerifiedWithoutTimestamp = "semantic.verified_without_timestamp"
	ReceiptVerifiedWithoutChecks    = "semantic.verified_without_checks"
	ReceiptInconsistentVerification = "semantic.inconsistent_verification_status"
	ReceiptInconsistentAuthority    = "semantic.inconsistent_authority"
)

// ReceiptSemanticRules describes each semantic rule (GET /agent-work-receipts/validate).
var ReceiptSemanticRules = map[string]string{
	ReceiptDuplicateID: "The ids of actions, artifacts, evidence, human interventions and verification checks are unique within their list.",
	ReceiptUnknownEvidenceID: "Every evidence id that verification, its checks, outcome metrics, the acceptance and human interventions cite " +
		"is the id of an item of /evidence.",
	ReceiptTimeOrder: "started_at <= completed_at <= issued_at (the receipt), valid_from <= valid_until (the authority), " +
		"started_at <= completed_at (each action).",
	ReceiptAfterIssue: "Nothing the receipt reports happens after it was issued: action completions, evidence observations, " +
		"artifacts, human interventions, verification and acceptance are at or before timestamps.issued_at.",
	ReceiptDurationExceedsWindow:    "timestamps.duration_ms is at most the time from started_at to completed_at.",
	ReceiptTerminalActionTimestamp:  "An action that has ended (completed, failed, skipped, blocked) records completed_at.",
	ReceiptVerifiedWithoutVerifier:  "A verification verdict (any status but unverified) names its verifier.",
	ReceiptVerifiedWithoutTimestamp: "A verification verdict records verified_at.",
	ReceiptVerifiedWithoutChecks:    "A verification verdict has at least one check.",
	ReceiptInconsistentVerification: "Verification passed only if every check passed; failed only if a check failed.",
	ReceiptInconsistentAuthority:    "Authority of mode none is not granted.",
}

// terminalActionStatuses are the statuses of an action that has ended.
var terminalActionStatuses = []string{"completed", "failed", "skipped", "blocked"}

// SemanticIssues checks the rules the schema cannot say (ReceiptSemanticRules).
func (r AgentWorkReceipt) SemanticIssues() []ReceiptIssue {
	var is []ReceiptIssue
	add := func(path, code, format string, args ...any) {
		is = append(is, ReceiptIssue{Path: path, Code: code, Message: fmt.Sprintf(format, args...)})
	}
	uniqueIDs := func(list string, ids []string) {
		first := make(map[string]int, len(ids))
		for i, id := range ids {
			if j, seen := first[id]; seen {
				add(fmt.Sprintf("%s/%d/id", list, i), ReceiptDuplicateID, "The id repeats %s/%d/id.", list, j)
				continue
			}
			first[id] = i
		}
	}
	uniqueIDs("/actions", mapSlice(r.Actions, func(a ReceiptAction) string { return a.ID }))
	uniqueIDs("/artifacts", mapSlice(r.Artifacts, func(a ReceiptArtifact) string { return a.ID }))
	uniqueIDs("/evidence", mapSlice(r.Evidence, func(e ReceiptEvidence) string { return e.ID }))
	uniqueIDs("/human_interventions", mapSlice(r.HumanInterventions, func(h ReceiptHumanIntervention) string { return h.ID }))
	uniqueIDs("/verification/checks", mapSlice(r.Verification.Checks, func(c ReceiptVerificationCheck) string { return c.ID }))

	evidence := make(map[string]bool, len(r.Evidence))
	for _, e := range r.Evidence {
		evidence[e.ID] = true
	}
	cited := func(list string, ids []string) {
		for i, id := range ids {
			if !evidence[id] {
				add(fmt.Sprintf("%s/%d", list, i), ReceiptUnknownEvidenceID, "The evidence id is not the id of an item of /evidence.")
			}
		}
	}
	cited("/verification/evidence_ids", r.Verification.EvidenceIDs)
	for i, c := range r.Verification.Checks {
		cited(fmt.Sprintf("/verification/checks/%d/evidence_ids", i), c.EvidenceIDs)
	}
	for i, m := range r.Outcome.Metrics {
		cited(fmt.Sprintf("/outcome/metrics/%d/evidence_ids", i), m.EvidenceIDs)
	}
	if a := r.Outcome.Acceptance; a != nil {
		cited("/outcome/acceptance/evidence_ids", a.EvidenceIDs)
	}
	for i, h := range r.HumanInterventions {
		cited(fmt.Sprintf("/human_interventions/%d/evidence_ids", i), h.EvidenceIDs)
	}

	ts := r.Timestamps
	inOrder := func(earlier, later *string, laterPath, what string) {
		if earlier == nil || later == nil {
			return
		}
		a, okA := ParseReceiptTime(*earlier)
		b, okB := ParseReceiptTime(*later)
		if okA && okB && b.Before(a) {
			add(laterPath, ReceiptTimeOrder, "%s", what)
		}
	}
	inOrder(&ts.StartedAt, &ts.CompletedAt, "/timestamps/completed_at", "The receipt's completion precedes its start.")
	inOrder(&ts.CompletedAt, &ts.IssuedAt, "/timestamps/issued_at", "The receipt was issued before the work completed.")
	inOrder(r.Authority.ValidFrom, r.Authority.ValidUntil, "/authority/valid_until", "The authority expires before it begins.")
	issued := &ts.IssuedAt
	notAfterIssue := func(at *string, path, what string) {
		if at == nil {
			return
		}
		a, okA := ParseReceiptTime(*at)
		b, okB := ParseReceiptTime(*issued)
		if okA && okB && a.After(b) {
			add(path, ReceiptAfterIssue, "%s is after the receipt was issued (timestamps.issued_at).", what)
		}
	}
	for i, a := range r.Actions {
		path := fmt.Sprintf("/actions/%d/completed_at", i)
		inOrder(a.StartedAt, a.CompletedAt, path, "The action's completion precedes its start.")
		notAfterIssue(a.CompletedAt, path, "The action's completion")
		if a.CompletedAt == nil && slices.Contains(terminalActionStatuses, a.Status) {
			add(path, ReceiptTerminalActionTimestamp, "An action that is %s records completed_at.", a.Status)
		}
	}
	for i, a := range r.Artifacts {
		notAfterIssue(a.CreatedAt, fmt.Sprintf("/artifacts/%d/created_at", i), "The artifact's creation")
	}
	for i, e := range r.Evidence {
		notAfterIssue(&e.ObservedAt, fmt.Sprintf("/evidence/%d/observed_at", i), "The evidence's observation")
	}
	for i, h := range r.HumanInterventions {
		notAfterIssue(&h.OccurredAt, fmt.Sprintf("/human_interventions/%d/occurred_at", i), "The intervention")
	}
	notAfterIssue(r.Verification.VerifiedAt, "/verification/verified_at", "The verification")
	if a := r.Outcome.Acceptance; a != nil {
		notAfterIssue(a.OccurredAt, "/outcome/acceptance/occurred_at", "The acceptance")
	}
	if ts.DurationMS != nil {
		start, okA := ParseReceiptTime(ts.StartedAt)
		end, okB := ParseReceiptTime(ts.CompletedAt)
		// The window in whole milliseconds, rounded up: a duration measured in ms never
		// exceeds it.
		window := (end.Sub(start) + time.Millisecond - 1) / time.Millisecond
		if okA && okB && !end.Before(start) && *ts.DurationMS > int64(window) {
			add("/timestamps/duration_ms", ReceiptDurationExceedsWindow,
				"The duration (%d ms) is longer than the time from started_at to completed_at (%d ms).", *ts.DurationMS, int64(window))
		}
	}

	v := r.Verification
	if v.Status != "unverified" {
		if v.Verifier == nil {
			add("/verification/verifier", ReceiptVerifiedWithoutVerifier, "A %s verification names its verifier.", v.Status)
		}
		if v.VerifiedAt == nil {
			add("/verification/verified_at", ReceiptVerifiedWithoutTimestamp, "A %s verification records verified_at.", v.Status)
		}
		if len(v.Checks) == 0 {
			add("/verification/checks", ReceiptVerifiedWithoutChecks, "A %s verification has at least one check.", v.Status)
		}
	}
	switch {
	case v.Status == "passed" && slices.ContainsFunc(v.Checks, func(c ReceiptVerificationCheck) bool { return c.Status != "passed" }):
		add("/verification/status", ReceiptInconsistentVerification, "A passed verification has a check that did not pass.")
	case v.Status == "failed" && len(v.Checks) > 0 && !slices.ContainsFunc(v.Checks, func(c ReceiptVerificationCheck) bool { return c.Status == "failed" }):
		add("/verification/status", ReceiptInconsistentVerification, "A failed verification has no failed check.")
	}
	if r.Authority.Mode == "none" && r.Authority.Status == "granted" {
		add("/authority/status", ReceiptInconsistentAuthority, "Authority of mode none cannot be granted.")
	}
	return is
}

func mapSlice[T, U any](in []T, f func(T) U) []U {
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// ParseReceiptTime parses an RFC 3339 date-time as the receipt schema's format admits it:
// a lower-case t or z, any fraction, and a leap second (23:59:60 is taken as the instant
// after 23:59:59, so it orders after it).
func ParseReceiptTime(s string) (time.Time, bool) {
	if len(s) < 20 {
		return time.Time{}, false
	}
	b := []byte(s)
	if b[10] == 't' {
		b[10] = 'T'
	}
	if last := len(b) - 1; b[last] == 'z' {
		b[last] = 'Z'
	}
	leap := string(b[17:19]) == "60"
	if leap {
		b[17], b[18] = '5', '9'
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return time.Time{}, false
	}
	if leap {
		t = t.Add(time.Second)
	}
	return t.UTC(), true
}

// receiptTime is ParseReceiptTime of a time the schema accepted, as a Time.
func receiptTime(s string) accountable.Time {
	t, _ := ParseReceiptTime(s)
	return accountable.TimeOf(t)
}

// ReceiptSummary is what a valid receipt says about itself, in brief (the validation's
// receipt object). The statuses are the producer's claims, named so.
type ReceiptSummary struct {
	ReceiptID                          string  `json:"receipt_id"`
	ActorID                            string  `json:"actor_id"`
	Runtime                            *string `json:"runtime" description:"The actor's runtime (actor.runtime.name), null when the receipt names none."`
	ProducerReportedOutcomeStatus      string  `json:"producer_reported_outcome_status" enum:"succeeded,partially_succeeded,failed,blocked,cancelled,unknown"`
	ProducerReportedVerificationStatus string  `json:"producer_reported_verification_status" enum:"unverified,passed,failed,partial,inconclusive"`
	EvidenceCount                      int     `json:"evidence_count" minimum:"1"`
	HumanInterventionCount             int     `json:"human_intervention_count" minimum:"0"`
}

// Summary summarises the receipt.
func (r AgentWorkReceipt) Summary() ReceiptSummary {
	s := ReceiptSummary{ReceiptID: r.ReceiptID, ActorID: r.Actor.ID, ProducerReportedOutcomeStatus: r.Outcome.Status,
		ProducerReportedVerificationStatus: r.Verification.Status, EvidenceCount: len(r.Evidence),
		HumanInterventionCount: len(r.HumanInterventions)}
	if r.Actor.Runtime != nil {
		name := r.Actor.Runtime.Name
		s.Runtime = &name
	}
	return s
}

// CaseID is the case of discovery a receipt belongs to: the request it served
// (intent.request_ref: the task, session or ticket), else its run (lineage.run_ref), else
// its trace (lineage.trace_id), else the receipt alone. Receipts of one request are one
// case, whose stages follow each other across receipts.
func (r AgentWorkReceipt) CaseID() string {
	switch {
	case r.Intent.RequestRef != nil:
		return "receipt:" + r.Intent.RequestRef.key()
	case r.Lineage.RunRef != nil:
		return "receipt:" + r.Lineage.RunRef.key()
	case r.Lineage.TraceID != nil:
		return "receipt:trace/" + *r.Lineage.TraceID
	}
	return "receipt:" + r.ReceiptID
}

// ReceiptStep is one stage a receipt shows its work passing through, for discovery: an
// action performed (stage: its type, at its start), a person stepping in (stage
// human.<kind>, when they did), and a verification verdict (stage verification, when it
// was given).
type ReceiptStep struct {
	Key    string           `json:"key"`
	Kind   string           `json:"kind" enum:"action,human_intervention,verification"`
	At     accountable.Time `json:"at"`
	Status string           `json:"status"`
}

// Steps lists the receipt's steps in time order (at most MaxReceiptSteps; the bool says
// whether there were more). Actions planned or skipped were not performed and are not
// steps; an action without times is taken at the receipt's start.
func (r AgentWorkReceipt) Steps() ([]ReceiptStep, bool) {
	var steps []ReceiptStep
	start := r.Timestamps.StartedAt
	for _, a := range r.Actions {
		if a.Status == "planned" || a.Status == "skipped" {
			continue
		}
		at := start
		if a.StartedAt != nil {
			at = *a.StartedAt
		} else if a.CompletedAt != nil {
			at = *a.CompletedAt
		}
		steps = append(steps, ReceiptStep{Key: a.Type, Kind: "action", At: receiptTime(at), Status: a.Status})
	}
	for _, h := range r.HumanInterventions {
		steps = append(steps, ReceiptStep{Key: "human." + h.Kind, Kind: "human_intervention", At: receiptTime(h.OccurredAt), Status: h.Kind})
	}
	if v := r.Verification; v.Status != "unverified" {
		at := r.Timestamps.CompletedAt
		if v.VerifiedAt != nil {
			at = *v.VerifiedAt
		}
		steps = append(steps, ReceiptStep{Key: "verification", Kind: "verification", At: receiptTime(at), Status: v.Status})
	}
	slices.SortStableFunc(steps, func(a, b ReceiptStep) int { return a.At.Compare(b.At.Time) })
	if len(steps) > MaxReceiptSteps {
		return steps[:MaxReceiptSteps], true
	}
	if steps == nil {
		steps = []ReceiptStep{}
	}
	return steps, false
}

// ImportReceipt is the command that imports a valid receipt into the caller's workspace
// (POST /agent-work-receipts).
type ImportReceipt struct {
	Receipt   AgentWorkReceipt
	Document  json.RawMessage // the canonical JSON of the whole document
	Digest    string          // sha256:<hex> of Document
	Integrity ReceiptIntegrity
}

// ImportCommand makes the import of a valid receipt.
func (v ReceiptValidation) ImportCommand() ImportReceipt {
	return ImportReceipt{Receipt: *v.Receipt, Document: v.Canonical, Digest: v.Digest, Integrity: v.Integrity}
}

// ReceiptImportKey is the Idempotency-Key an import without one takes: the document's
// digest, so that importing the same document again replays the first import.
func (in ImportReceipt) ReceiptImportKey() string {
	return "receipt:" + strings.TrimPrefix(in.Digest, "sha256:")
}

// ReceiptImport is the answer of an import (data of POST /agent-work-receipts).
type ReceiptImport struct {
	OK                bool             `json:"ok"`
	ReceiptID         string           `json:"receipt_id" format:"uuid" description:"The imported receipt's id in this service."`
	ExternalReceiptID string           `json:"external_receipt_id" description:"The document's own receipt_id."`
	SchemaVersion     string           `json:"schema_version"`
	Idempotent        bool             `json:"idempotent" description:"True when the document was imported before: the answer is that import's."`
	ImportedAt        accountable.Time `json:"imported_at" description:"When the receipt was imported into the workspace: on a replay (idempotent true), the first import's instant."`
}

// ImportedReceipt is an imported receipt as GET /agent-work-receipts/{receiptId} answers
// it: the import, the document as imported, the receipt.imported event that recorded it
// (its id and hash, and its payload, whose canonical JSON's digest is the event's
// payloadDigest and whose document_digest is the document's), and, once a signed
// checkpoint of the workspace's log holds the event, the proof of it.
type ImportedReceipt struct {
	ReceiptID         string                            `json:"receipt_id" format:"uuid"`
	ExternalReceiptID string                            `json:"external_receipt_id"`
	SchemaVersion     string                            `json:"schema_version"`
	ImportedAt        accountable.Time                  `json:"imported_at"`
	Document          accountable.Object                `json:"document" description:"The receipt document as imported (its RFC 8785 canonical JSON has the payload's document_digest)."`
	EventID           string                            `json:"event_id" format:"uuid"`
	EventHash         string                            `json:"event_hash" pattern:"^sha256:[a-f0-9]{64}$"`
	Payload           accountable.Object                `json:"payload" description:"The receipt.imported event's payload, as the ledger holds it."`
	LedgerProof       *accountable.LedgerInclusionProof `json:"ledger_proof" description:"The event's inclusion proof in the newest signed checkpoint of the workspace's log; null until a checkpoint holds the event."`
}

// ReceiptImported is the payload of a receipt.imported event: self-contained, so that
// projections and discovery read the ledger alone. Every claim in it is the producer's.
type ReceiptImported struct {
	ReceiptID          string                  `json:"receipt_id"`
	ExternalReceiptID  string                  `json:"external_receipt_id"`
	SchemaVersion      string                  `json:"schema_version"`
	DocumentDigest     string                  `json:"document_digest"` // sha256:<hex> of the canonical document
	Integrity          ReceiptIntegritySummary `json:"integrity"`
	CaseID             string                  `json:"case_id"`
	Actor              ReceiptImportedActor    `json:"actor"`
	IntentSummary      string                  `json:"intent_summary"`
	AuthorityMode      string                  `json:"authority_mode"`
	AuthorityStatus    string                  `json:"authority_status"`
	OutcomeStatus      string                  `json:"producer_reported_outcome_status"`
	VerificationStatus string                  `json:"producer_reported_verification_status"`
	AcceptanceStatus   *string                 `json:"acceptance_status"`
	Counts             ReceiptCounts           `json:"counts"`
	Cost               ReceiptImportedCost     `json:"cost"`
	// TokensTotal sums the usage quantities whose unit is token(s); null when none is.
	TokensTotal *float64 `json:"tokens_total"`
	// HumanInterventionMinutes sums the interventions' duration_minutes.
	HumanInterventionMinutes float64                   `json:"human_intervention_minutes"`
	Timestamps               ReceiptImportedTimestamps `json:"timestamps"`
	Steps                    []ReceiptStep             `json:"steps"`
	StepsTruncated           bool                      `json:"steps_truncated"`
}

// ReceiptIntegritySummary is the integrity report in brief.
type ReceiptIntegritySummary struct {
	ContentHash ContentHashState `json:"content_hash"`
	// ComputedContentHash is sha256:<hex> of the document without its integrity block.
	ComputedContentHash string                   `json:"computed_content_hash"`
	Signatures          []ReceiptSignatureReport `json:"signatures"`
}

// ReceiptImportedActor is the receipt's actor.
type ReceiptImportedActor struct {
	Type           string  `json:"type"`
	ID             string  `json:"id"`
	DisplayName    *string `json:"display_name"`
	Runtime        *string `json:"runtime"`
	RuntimeVersion *string `json:"runtime_version"`
	ModelProvider  *string `json:"model_provider"`
	Model          *string `json:"model"`
}

// ReceiptCounts counts the receipt's lists.
type ReceiptCounts struct {
	Actions            int `json:"actions"`
	Artifacts          int `json:"artifacts"`
	Evidence           int `json:"evidence"`
	HumanInterventions int `json:"human_interventions"`
	VerificationChecks int `json:"verification_checks"`
}

// ReceiptImportedCost is the reported cost.
type ReceiptImportedCost struct {
	Currency     string                 `json:"currency"`
	Total        float64                `json:"total"`
	Estimated    *bool                  `json:"estimated"`
	HumanMinutes *float64               `json:"human_minutes"`
	Components   []ReceiptCostComponent `json:"components"`
	Usage        []ReceiptUsage         `json:"usage"`
}

// ReceiptImportedTimestamps are the receipt's instants, in UTC (a leap second is taken as
// the instant after 23:59:59).
type ReceiptImportedTimestamps struct {
	StartedAt   accountable.Time  `json:"started_at"`
	CompletedAt accountable.Time  `json:"completed_at"`
	IssuedAt    accountable.Time  `json:"issued_at"`
	ObservedAt  *accountable.Time `json:"observed_at"`
	// DurationMS is the producer's; ElapsedMS is completed_at - started_at.
	DurationMS *int64 `json:"duration_ms"`
	ElapsedMS  int64  `json:"elapsed_ms"`
}

// Imported makes the receipt.imported payload of the receipt imported as id.
func (in ImportReceipt) Imported(id string) ReceiptImported {
	r := in.Receipt
	p := ReceiptImported{ReceiptID: id, ExternalReceiptID: r.ReceiptID, SchemaVersion: r.SchemaVersion, DocumentDigest: in.Digest,
		Integrity: ReceiptIntegritySummary{ContentHash: in.Integrity.ContentHash.State, ComputedContentHash: in.Integrity.ContentHash.Computed.sha256(),
			Signatures: in.Integrity.Signatures},
		CaseID: r.CaseID(), IntentSummary: r.Intent.Summary, AuthorityMode: r.Authority.Mode, AuthorityStatus: r.Authority.Status,
		OutcomeStatus: r.Outcome.Status, VerificationStatus: r.Verification.Status,
		Actor: ReceiptImportedActor{Type: r.Actor.Type, ID: r.Actor.ID, DisplayName: r.Actor.DisplayName},
		Counts: ReceiptCounts{Actions: len(r.Actions), Artifacts: len(r.Artifacts), Evidence: len(r.Evidence),
			HumanInterventions: len(r.HumanInterventions), VerificationChecks: len(r.Verification.Checks)},
		Cost: ReceiptImportedCost{Currency: r.Cost.Currency, Total: r.Cost.Total, Estimated: r.Cost.Estimated, HumanMinutes: r.Cost.HumanMinutes,
			Components: r.Cost.Components, Usage: r.Cost.Usage},
	}
	if p.Integrity.Signatures == nil {
		p.Integrity.Signatures = []ReceiptSignatureReport{}
	}
	if p.Cost.Components == nil {
		p.Cost.Components = []ReceiptCostComponent{}
	}
	if p.Cost.Usage == nil {
		p.Cost.Usage = []ReceiptUsage{}
	}
	if rt := r.Actor.Runtime; rt != nil {
		p.Actor.Runtime, p.Actor.RuntimeVersion = &rt.Name, rt.Version
	}
	if m := r.Actor.Model; m != nil {
		p.Actor.ModelProvider, p.Actor.Model = &m.Provider, &m.Name
	}
	if a := r.Outcome.Acceptance; a != nil {
		p.AcceptanceStatus = &a.Status
	}
	for _, u := range r.Cost.Usage {
		if unit := strings.ToLower(u.Unit); unit == "token" || unit == "tokens" {
			total := u.Quantity
			if p.TokensTotal != nil {
				total += *p.TokensTotal
			}
			p.TokensTotal = &total
		}
	}
	for _, h := range r.HumanInterventions {
		if h.DurationMinutes != nil {
			p.HumanInterventionMinutes += *h.DurationMinutes
		}
	}
	ts := r.Timestamps
	p.Timestamps = ReceiptImportedTimestamps{StartedAt: receiptTime(ts.StartedAt), CompletedAt: receiptTime(ts.CompletedAt),
		IssuedAt: receiptTime(ts.IssuedAt), DurationMS: ts.DurationMS}
	p.Timestamps.ElapsedMS = p.Timestamps.CompletedAt.Sub(p.Timestamps.StartedAt.Time).Milliseconds()
	if ts.ObservedAt != nil {
		at := receiptTime(*ts.ObservedAt)
		p.Timestamps.ObservedAt = &at
	}
	p.Steps, p.StepsTruncated = r.Steps()
	return p
}

// receiptSeqStride spaces the positions of receipt events so that their steps keep their
// order within a case (Seq is the tie-break of steps at one instant).
const receiptSeqStride = MaxReceiptSteps + 1

// Trace makes the mining events of an imported receipt (discovery): its steps, in its case.
// pos is the event's position in the stream.
func (p ReceiptImported) Trace(eventID string, pos int64) []accountable.TraceEvent {
	out := make([]accountable.TraceEvent, 0, len(p.Steps))
	for i, s := range p.Steps {
		out = append(out, accountable.TraceEvent{CaseID: p.CaseID, Stage: s.Key, At: s.At.Time, Seq: pos*receiptSeqStride + int64(i),
			Citation: accountable.Citation{Kind: "ledger_event", EventID: eventID, CaseID: p.CaseID},
			Basis:    accountable.CaseBasis{Rule: accountable.GroupReceiptRequest, Label: strings.TrimPrefix(p.CaseID, "receipt:")}})
	}
	return out
}
