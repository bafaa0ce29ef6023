// Package workload holds the account-free engines that size a piece of work before it is
// run: the workload diagnosis and its scoring rules (workload.go, POST /doctor/workload)
// and Content Studio's credit estimate and showcase (studio.go, /studio/*). Both are pure
// functions of their request over fixed tables; they use the root package's validation,
// canonical JSON and error vocabulary and store nothing.
package workload

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/accountablework/accountable"
)

// Workload diagnosis (GET|POST /doctor/workload, account-free): a workload described in
// the public schema workload-diagnosis/0.1 is scored across five boundaries (time, agents,
// systems, authority, accountability), and the scores decide whether the workload needs a
// governed workspace, only receipts, or nothing. Diagnose is a pure function of the
// request: the same request always gives the same diagnosis, byte for byte, and
// diagnosis_id is "wdg_" + the first 24 hex digits of the SHA-256 of the request's
// canonical JSON (RFC 8785, CanonicalJSON).
//
// The scoring rules are data (the point tables below) with one id per rule; the same
// tables score a request and are served by GET /doctor/workload (WorkloadScoringRules),
// and the tests hold one row per rule. In short:
//
//   - every boundary gets integer points 0..100: absent below 35, present from 35,
//     critical from 70;
//   - the verdict is needed (mode governed_workspace) when a system writes or administers,
//     has external or irreversible side effects, or holds regulated data, when the
//     consequence is regulated, when authority is active, or when accountability is
//     critical (V1-V5); otherwise conditional (receipt_only) when any boundary is active
//     (V6); otherwise not_needed (none, V7);
//   - proposed resources are least privilege: one per declared system, never more access
//     than the system declares, scoped to the declared actions that touch its category;
//   - missing capabilities, risks and human approvals come from fixed catalogues (M1-M13,
//     K1-K15, H1-H8), each entry at most once, so no input can exceed the result's bounds.
//
// The result never repeats the request's free text (name, outcome): only its digest.

// WorkloadSchemaVersion is the public schema of the workload diagnosis.
const WorkloadSchemaVersion = "workload-diagnosis/0.1"

// Bounds of the request.
const (
	WorkloadNameMaxLength    = 200
	WorkloadOutcomeMaxLength = 2000
	WorkloadAgentCountMin    = 1
	WorkloadAgentCountMax    = 100
	WorkloadSystemsMax       = 15 // one proposed resource per system: the result's bound
	WorkloadActionsMax       = 11 // every action once
	WorkloadIssuesMax        = 100
)

// Bounds of the result (the specification's array bounds, and its string length 1..300
// for every sentence of the result).
const (
	WorkloadTextMaxLength             = 300
	WorkloadRationaleMin              = 1
	WorkloadRationaleMax              = 6
	WorkloadMissingCapabilitiesMax    = 13
	WorkloadProposedResourcesMax      = 15
	WorkloadRisksMax                  = 15
	WorkloadHumanApprovalsMax         = 10
	WorkloadCapabilitiesMax           = 32
	WorkloadLocalItemsMax             = 8
	WorkloadScopeIntentsMax           = 11
	WorkloadApprovalScopeMax          = 15
	WorkloadPresentAt                 = 35 // points from which a boundary is present
	WorkloadCriticalAt                = 70 // points from which a boundary is critical
	WorkloadMaxPoints                 = 100
	workloadConsequentialActionPoints = 20 // actions of at least these points are consequential
)

// --- request ---------------------------------------------------------------------------

// WorkloadTimeHorizon is how long the workload runs.
type WorkloadTimeHorizon string

// Time horizons.
const (
	HorizonSingleTurn    WorkloadTimeHorizon = "single_turn"
	HorizonSingleSession WorkloadTimeHorizon = "single_session"
	HorizonMultiDay      WorkloadTimeHorizon = "multi_day"
	HorizonRecurring     WorkloadTimeHorizon = "recurring"
	HorizonContinuous    WorkloadTimeHorizon = "continuous"
)

var workloadTimeHorizons = []WorkloadTimeHorizon{HorizonSingleTurn, HorizonSingleSession, HorizonMultiDay, HorizonRecurring, HorizonContinuous}

// Enum lists the time horizons.
func (WorkloadTimeHorizon) Enum() []any { return accountable.EnumStrings(workloadTimeHorizons...) }

// WorkloadCoordination is how the workload's agents work together.
type WorkloadCoordination string

// Coordinations.
const (
	CoordinationNone         WorkloadCoordination = "none"
	CoordinationHandoff      WorkloadCoordination = "handoff"
	CoordinationParallel     WorkloadCoordination = "parallel"
	CoordinationHierarchical WorkloadCoordination = "hierarchical"
)

var workloadCoordinations = []WorkloadCoordination{CoordinationNone, CoordinationHandoff, CoordinationParallel, CoordinationHierarchical}

// Enum lists the coordinations.
func (WorkloadCoordination) Enum() []any { return accountable.EnumStrings(workloadCoordinations...) }

// WorkloadSystemCategory is the kind of a system the workload uses.
type WorkloadSystemCategory string

// System categories.
const (
	CategoryCodeRepository WorkloadSystemCategory = "code_repository"
	CategoryIssueTracker   WorkloadSystemCategory = "issue_tracker"
	CategoryDocumentStore  WorkloadSystemCategory = "document_store"
	CategoryMessaging      WorkloadSystemCategory = "messaging"
	CategoryCRM            WorkloadSystemCategory = "crm"
	CategoryDatabase       WorkloadSystemCategory = "database"
	CategoryCloudRuntime   WorkloadSystemCategory = "cloud_runtime"
	CategoryFinance        WorkloadSystemCategory = "finance"
	CategoryBrowser        WorkloadSystemCategory = "browser"
	CategoryLocalFiles     WorkloadSystemCategory = "local_files"
	CategoryIdentity       WorkloadSystemCategory = "identity"
	CategoryOther          WorkloadSystemCategory = "other"
)

var workloadCategories = []WorkloadSystemCategory{CategoryCodeRepository, CategoryIssueTracker, CategoryDocumentStore,
	CategoryMessaging, CategoryCRM, CategoryDatabase, CategoryCloudRuntime, CategoryFinance, CategoryBrowser,
	CategoryLocalFiles, CategoryIdentity, CategoryOther}

// Enum lists the categories.
func (WorkloadSystemCategory) Enum() []any { return accountable.EnumStrings(workloadCategories...) }

// WorkloadAccess is a level of access to a system, ordered read < write < admin.
type WorkloadAccess string

// Access levels.
const (
	AccessRead  WorkloadAccess = "read"
	AccessWrite WorkloadAccess = "write"
	AccessAdmin WorkloadAccess = "admin"
)

var workloadAccesses = []WorkloadAccess{AccessRead, AccessWrite, AccessAdmin}

// Enum lists the access levels.
func (WorkloadAccess) Enum() []any { return accountable.EnumStrings(workloadAccesses...) }

// Rank orders access levels: read 1, write 2, admin 3 (0 for anything else).
func (a WorkloadAccess) Rank() int { return slices.Index(workloadAccesses, a) + 1 }

// WorkloadSideEffect is what the workload's use of a system does outside it.
type WorkloadSideEffect string

// Side effects.
const (
	SideEffectNone         WorkloadSideEffect = "none"
	SideEffectReversible   WorkloadSideEffect = "reversible"
	SideEffectExternal     WorkloadSideEffect = "external"
	SideEffectIrreversible WorkloadSideEffect = "irreversible"
)

var workloadSideEffects = []WorkloadSideEffect{SideEffectNone, SideEffectReversible, SideEffectExternal, SideEffectIrreversible}

// Enum lists the side effects.
func (WorkloadSideEffect) Enum() []any { return accountable.EnumStrings(workloadSideEffects...) }

// WorkloadDataClass is the most sensitive data a system holds for the workload.
type WorkloadDataClass string

// Data classes.
const (
	DataPublic       WorkloadDataClass = "public"
	DataInternal     WorkloadDataClass = "internal"
	DataConfidential WorkloadDataClass = "confidential"
	DataRegulated    WorkloadDataClass = "regulated"
)

var workloadDataClasses = []WorkloadDataClass{DataPublic, DataInternal, DataConfidential, DataRegulated}

// Enum lists the data classes.
func (WorkloadDataClass) Enum() []any { return accountable.EnumStrings(workloadDataClasses...) }

// WorkloadAction is something the workload's agents are allowed to do.
type WorkloadAction string

// Actions.
const (
	ActionResearch             WorkloadAction = "research"
	ActionDraft                WorkloadAction = "draft"
	ActionReadInternalData     WorkloadAction = "read_internal_data"
	ActionWriteInternalRecords WorkloadAction = "write_internal_records"
	ActionModifyCode           WorkloadAction = "modify_code"
	ActionMergeOrDeploy        WorkloadAction = "merge_or_deploy"
	ActionSendExternalMessage  WorkloadAction = "send_external_message"
	ActionSpendFunds           WorkloadAction = "spend_funds"
	ActionCreateAccount        WorkloadAction = "create_account"
	ActionChangePermissions    WorkloadAction = "change_permissions"
	ActionDeleteData           WorkloadAction = "delete_data"
)

var workloadActions = []WorkloadAction{ActionResearch, ActionDraft, ActionReadInternalData, ActionWriteInternalRecords,
	ActionModifyCode, ActionMergeOrDeploy, ActionSendExternalMessage, ActionSpendFunds, ActionCreateAccount,
	ActionChangePermissions, ActionDeleteData}

// Enum lists the actions.
func (WorkloadAction) Enum() []any { return accountable.EnumStrings(workloadActions...) }

// WorkloadApprovalPolicy is when people approve the workload's actions today.
type WorkloadApprovalPolicy string

// Approval policies.
const (
	ApprovalNotApplicable    WorkloadApprovalPolicy = "not_applicable"
	ApprovalPerAction        WorkloadApprovalPolicy = "per_action"
	ApprovalSensitiveActions WorkloadApprovalPolicy = "sensitive_actions"
	ApprovalExceptionsOnly   WorkloadApprovalPolicy = "exceptions_only"
	ApprovalUndefined        WorkloadApprovalPolicy = "undefined"
)

var workloadApprovalPolicies = []WorkloadApprovalPolicy{ApprovalNotApplicable, ApprovalPerAction, ApprovalSensitiveActions,
	ApprovalExceptionsOnly, ApprovalUndefined}

// Enum lists the approval policies.
func (WorkloadApprovalPolicy) Enum() []any {
	return accountable.EnumStrings(workloadApprovalPolicies...)
}

// WorkloadBudgetControl is how the workload's spending is limited.
type WorkloadBudgetControl string

// Budget controls.
const (
	BudgetNotApplicable WorkloadBudgetControl = "not_applicable"
	BudgetFixedLimit    WorkloadBudgetControl = "fixed_limit"
	BudgetDynamicLimit  WorkloadBudgetControl = "dynamic_limit"
	BudgetUnbounded     WorkloadBudgetControl = "unbounded"
	BudgetUndefined     WorkloadBudgetControl = "undefined"
)

var workloadBudgetControls = []WorkloadBudgetControl{BudgetNotApplicable, BudgetFixedLimit, BudgetDynamicLimit, BudgetUnbounded, BudgetUndefined}

// Enum lists the budget controls.
func (WorkloadBudgetControl) Enum() []any { return accountable.EnumStrings(workloadBudgetControls...) }

// WorkloadEvidence is what evidence the workload leaves of its outcome.
type WorkloadEvidence string

// Evidence levels.
const (
	EvidenceNone            WorkloadEvidence = "none"
	EvidenceActivityLog     WorkloadEvidence = "activity_log"
	EvidenceArtifact        WorkloadEvidence = "artifact"
	EvidenceVerifiedOutcome WorkloadEvidence = "verified_outcome"
)

var workloadEvidences = []WorkloadEvidence{EvidenceNone, EvidenceActivityLog, EvidenceArtifact, EvidenceVerifiedOutcome}

// Enum lists the evidence levels.
func (WorkloadEvidence) Enum() []any { return accountable.EnumStrings(workloadEvidences...) }

// WorkloadAcceptance is who accepts the workload's outcome.
type WorkloadAcceptance string

// Acceptances.
const (
	AcceptanceNone             WorkloadAcceptance = "none"
	AcceptanceAgent            WorkloadAcceptance = "agent"
	AcceptanceHuman            WorkloadAcceptance = "human"
	AcceptanceDownstreamSystem WorkloadAcceptance = "downstream_system"
)

var workloadAcceptances = []WorkloadAcceptance{AcceptanceNone, AcceptanceAgent, AcceptanceHuman, AcceptanceDownstreamSystem}

// Enum lists the acceptances.
func (WorkloadAcceptance) Enum() []any { return accountable.EnumStrings(workloadAcceptances...) }

// WorkloadConsequence is what is at stake when the outcome is wrong.
type WorkloadConsequence string

// Consequences.
const (
	ConsequenceLow       WorkloadConsequence = "low"
	ConsequenceModerate  WorkloadConsequence = "moderate"
	ConsequenceHigh      WorkloadConsequence = "high"
	ConsequenceRegulated WorkloadConsequence = "regulated"
)

var workloadConsequences = []WorkloadConsequence{ConsequenceLow, ConsequenceModerate, ConsequenceHigh, ConsequenceRegulated}

// Enum lists the consequences.
func (WorkloadConsequence) Enum() []any { return accountable.EnumStrings(workloadConsequences...) }

// WorkloadRetention is how long the workload's records are kept.
type WorkloadRetention string

// Retentions.
const (
	RetentionNone      WorkloadRetention = "none"
	RetentionShortTerm WorkloadRetention = "short_term"
	RetentionLongTerm  WorkloadRetention = "long_term"
	RetentionRegulated WorkloadRetention = "regulated"
)

var workloadRetentions = []WorkloadRetention{RetentionNone, RetentionShortTerm, RetentionLongTerm, RetentionRegulated}

// Enum lists the retentions.
func (WorkloadRetention) Enum() []any { return accountable.EnumStrings(workloadRetentions...) }

// WorkloadRequest is the body of POST /doctor/workload. Every member is required.
type WorkloadRequest struct {
	SchemaVersion string   `json:"schema_version" const:"workload-diagnosis/0.1" description:"The public schema of the request: workload-diagnosis/0.1."`
	Workload      Workload `json:"workload"`
}

// Workload describes the work to diagnose.
type Workload struct {
	Name           string                 `json:"name" minLength:"1" maxLength:"200" description:"Never stored nor repeated in the result."`
	Outcome        string                 `json:"outcome" minLength:"1" maxLength:"2000" description:"Never stored nor repeated in the result."`
	TimeHorizon    WorkloadTimeHorizon    `json:"time_horizon"`
	AgentCount     int64                  `json:"agent_count" minimum:"1" maximum:"100"`
	Coordination   WorkloadCoordination   `json:"coordination" description:"parallel and hierarchical need agent_count of at least 2."`
	Systems        []WorkloadSystem       `json:"systems" maxItems:"15" description:"The systems the workload uses, each once; may be empty." nullable:"false"`
	Authority      WorkloadAuthority      `json:"authority"`
	Accountability WorkloadAccountability `json:"accountability"`
}

// WorkloadSystem is one system the workload uses.
type WorkloadSystem struct {
	Category   WorkloadSystemCategory `json:"category"`
	Access     WorkloadAccess         `json:"access"`
	SideEffect WorkloadSideEffect     `json:"side_effect"`
	DataClass  WorkloadDataClass      `json:"data_class"`
}

// WorkloadAuthority is what the workload may do and how it is held to it.
type WorkloadAuthority struct {
	Actions        []WorkloadAction       `json:"actions" maxItems:"11" uniqueItems:"true" nullable:"false"`
	ApprovalPolicy WorkloadApprovalPolicy `json:"approval_policy" description:"not_applicable only without consequential actions (write_internal_records and above)."`
	BudgetControl  WorkloadBudgetControl  `json:"budget_control" description:"not_applicable only without spend_funds."`
}

// WorkloadAccountability is how the workload's outcome is evidenced and accepted.
type WorkloadAccountability struct {
	Evidence    WorkloadEvidence    `json:"evidence"`
	Acceptance  WorkloadAcceptance  `json:"acceptance"`
	Consequence WorkloadConsequence `json:"consequence"`
	Retention   WorkloadRetention   `json:"retention"`
}

// --- validation ------------------------------------------------------------------------

// WorkloadIssue is one problem of a workload diagnosis request: the JSON Pointer of the
// member, a stable code and a message.
type WorkloadIssue struct {
	Path    string `json:"path" description:"A JSON Pointer; empty for the whole body."`
	Code    string `json:"code" minLength:"1"`
	Message string `json:"message" minLength:"1"`
}

// Issue codes of a workload diagnosis request. The API adds invalid_json, invalid_type
// and unknown_member for bodies that do not decode.
const (
	WorkloadIssueRequired           = "required"
	WorkloadIssueUnsupportedVersion = "unsupported_schema_version"
	WorkloadIssueInvalidEnum        = "invalid_enum"
	WorkloadIssueTooShort           = "too_short"
	WorkloadIssueTooLong            = "too_long"
	WorkloadIssueInvalidText        = "invalid_text"
	WorkloadIssueOutOfRange         = "out_of_range"
	WorkloadIssueTooMany            = "too_many"
	WorkloadIssueDuplicate          = "duplicate"
	WorkloadIssueInconsistent       = "inconsistent"
	WorkloadIssueInvalidJSON        = "invalid_json"
	WorkloadIssueInvalidType        = "invalid_type"
	WorkloadIssueUnknownMember      = "unknown_member"
	WorkloadIssueInvalid            = "invalid"
)

type workloadIssues []WorkloadIssue

func (is *workloadIssues) add(path, code, format string, args ...any) {
	*is = append(*is, WorkloadIssue{Path: path, Code: code, Message: fmt.Sprintf(format, args...)})
}

// WorkloadValidationError returns the validation_failed error of issues: sorted by path
// (then code), at most WorkloadIssuesMax, in details.issues.
func WorkloadValidationError(issues []WorkloadIssue) *accountable.Error {
	issues = slices.Clone(issues)
	sort.SliceStable(issues, func(i, j int) bool {
		if issues[i].Path != issues[j].Path {
			return issues[i].Path < issues[j].Path
		}
		return issues[i].Code < issues[j].Code
	})
	if len(issues) > WorkloadIssuesMax {
		issues = issues[:WorkloadIssuesMax]
	}
	msg := fmt.Sprintf("The workload diagnosis request is invalid: %d issues.", len(issues))
	if len(issues) == 1 {
		msg = "The workload diagnosis request is invalid: " + issues[0].Path + ": " + issues[0].Message
	}
	return &accountable.Error{Code: accountable.ECodeValidationFailed, Message: workloadClip(msg), Details: map[string]any{"issues": issues}}
}

// Validate checks the request against the schema and its rules; the error is a
// validation_failed *Error whose details.issues are WorkloadIssues (JSON Pointers, codes).
func (r WorkloadRequest) Validate() error {
	var is workloadIssues
	switch r.SchemaVersion {
	case WorkloadSchemaVersion:
	case "":
		is.add("/schema_version", WorkloadIssueRequired, "is required (%s)", WorkloadSchemaVersion)
	default:
		is.add("/schema_version", WorkloadIssueUnsupportedVersion, "must be %s", WorkloadSchemaVersion)
	}
	w := r.Workload
	workloadText(&is, "/workload/name", w.Name, WorkloadNameMaxLength)
	workloadText(&is, "/workload/outcome", w.Outcome, WorkloadOutcomeMaxLength)
	workloadEnum(&is, "/workload/time_horizon", w.TimeHorizon, workloadTimeHorizons)
	if w.AgentCount < WorkloadAgentCountMin || w.AgentCount > WorkloadAgentCountMax {
		is.add("/workload/agent_count", WorkloadIssueOutOfRange, "must be an integer from %d to %d", WorkloadAgentCountMin, WorkloadAgentCountMax)
	}
	if workloadEnum(&is, "/workload/coordination", w.Coordination, workloadCoordinations) &&
		(w.Coordination == CoordinationParallel || w.Coordination == CoordinationHierarchical) && w.AgentCount == 1 {
		is.add("/workload/coordination", WorkloadIssueInconsistent, "%s coordination needs agent_count of at least 2", w.Coordination)
	}
	switch {
	case w.Systems == nil:
		is.add("/workload/systems", WorkloadIssueRequired, "is required (an empty array when the workload uses no system)")
	case len(w.Systems) > WorkloadSystemsMax:
		is.add("/workload/systems", WorkloadIssueTooMany, "must have at most %d items", WorkloadSystemsMax)
	default:
		// A member's path is made only for an issue, and a repeat is the first equal
		// system before it (at most 15: a scan, not a map): a valid request allocates nothing.
		for i, s := range w.Systems {
			ok := slices.Contains(workloadCategories, s.Category) && slices.Contains(workloadAccesses, s.Access) &&
				slices.Contains(workloadSideEffects, s.SideEffect) && slices.Contains(workloadDataClasses, s.DataClass)
			if !ok {
				p := "/workload/systems/" + strconv.Itoa(i)
				workloadEnum(&is, p+"/category", s.Category, workloadCategories)
				workloadEnum(&is, p+"/access", s.Access, workloadAccesses)
				workloadEnum(&is, p+"/side_effect", s.SideEffect, workloadSideEffects)
				workloadEnum(&is, p+"/data_class", s.DataClass, workloadDataClasses)
			}
			if j := slices.Index(w.Systems[:i], s); j >= 0 && ok {
				is.add("/workload/systems/"+strconv.Itoa(i), WorkloadIssueDuplicate, "repeats /workload/systems/%d", j)
			}
		}
	}
	a := w.Authority
	consequential, spends := false, false
	switch {
	case a.Actions == nil:
		is.add("/workload/authority/actions", WorkloadIssueRequired, "is required (an empty array when the workload takes no action)")
	case len(a.Actions) > WorkloadActionsMax:
		is.add("/workload/authority/actions", WorkloadIssueTooMany, "must have at most %d items", WorkloadActionsMax)
	default:
		for i, act := range a.Actions { // paths and repeats as for the systems
			if workloadActionIndex(act) < 0 {
				workloadEnum(&is, "/workload/authority/actions/"+strconv.Itoa(i), act, workloadActions)
				continue
			}
			if j := slices.Index(a.Actions[:i], act); j >= 0 {
				is.add("/workload/authority/actions/"+strconv.Itoa(i), WorkloadIssueDuplicate, "repeats /workload/authority/actions/%d", j)
				continue
			}
			consequential = consequential || workloadActionPoints[act].points >= workloadConsequentialActionPoints
			spends = spends || act == ActionSpendFunds
		}
	}
	if workloadEnum(&is, "/workload/authority/approval_policy", a.ApprovalPolicy, workloadApprovalPolicies) &&
		a.ApprovalPolicy == ApprovalNotApplicable && consequential {
		is.add("/workload/authority/approval_policy", WorkloadIssueInconsistent,
			"not_applicable is only for workloads without consequential actions (write_internal_records and above)")
	}
	if workloadEnum(&is, "/workload/authority/budget_control", a.BudgetControl, workloadBudgetControls) &&
		a.BudgetControl == BudgetNotApplicable && spends {
		is.add("/workload/authority/budget_control", WorkloadIssueInconsistent, "not_applicable cannot control spend_funds")
	}
	c := w.Accountability
	workloadEnum(&is, "/workload/accountability/evidence", c.Evidence, workloadEvidences)
	workloadEnum(&is, "/workload/accountability/acceptance", c.Acceptance, workloadAcceptances)
	workloadEnum(&is, "/workload/accountability/consequence", c.Consequence, workloadConsequences)
	workloadEnum(&is, "/workload/accountability/retention", c.Retention, workloadRetentions)
	if len(is) == 0 {
		return nil
	}
	return WorkloadValidationError(is)
}

// text checks a required free-text member of 1..maxLen characters.
func workloadText(is *workloadIssues, path, s string, maxLen int) {
	n := utf8.RuneCountInString(s)
	switch {
	case s == "":
		is.add(path, WorkloadIssueRequired, "is required")
	case strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s):
		is.add(path, WorkloadIssueInvalidText, "must be valid UTF-8 text without NUL characters")
	case n > maxLen:
		is.add(path, WorkloadIssueTooLong, "must be at most %d characters long", maxLen)
	}
}

// enum checks a required enumerated member; it reports whether the value is allowed.
func workloadEnum[T ~string](is *workloadIssues, path string, v T, allowed []T) bool {
	if v == "" {
		is.add(path, WorkloadIssueRequired, "is required")
		return false
	}
	if !slices.Contains(allowed, v) {
		is.add(path, WorkloadIssueInvalidEnum, "must be one of %s", workloadJoin(allowed))
		return false
	}
	return true
}

func workloadJoin[T ~string](values []T) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = string(v)
	}
	return strings.Join(parts, ", ")
}

// --- result ----------------------------------------------------------------------------

// WorkloadBoundaryState is how far a boundary is crossed.
type WorkloadBoundaryState string

// Boundary states.
const (
	BoundaryAbsent   WorkloadBoundaryState = "absent"
	BoundaryPresent  WorkloadBoundaryState = "present"
	BoundaryCritical WorkloadBoundaryState = "critical"
)

var workloadBoundaryStates = []WorkloadBoundaryState{BoundaryAbsent, BoundaryPresent, BoundaryCritical}

// Enum lists the boundary states.
func (WorkloadBoundaryState) Enum() []any { return accountable.EnumStrings(workloadBoundaryStates...) }

// WorkloadVerdict says whether the workload needs the service.
type WorkloadVerdict string

// Verdicts.
const (
	VerdictNeeded      WorkloadVerdict = "needed"
	VerdictConditional WorkloadVerdict = "conditional"
	VerdictNotNeeded   WorkloadVerdict = "not_needed"
)

var workloadVerdicts = []WorkloadVerdict{VerdictNeeded, VerdictConditional, VerdictNotNeeded}

// Enum lists the verdicts.
func (WorkloadVerdict) Enum() []any { return accountable.EnumStrings(workloadVerdicts...) }

// WorkloadMode is what to install for the workload.
type WorkloadMode string

// Modes.
const (
	ModeNone              WorkloadMode = "none"
	ModeReceiptOnly       WorkloadMode = "receipt_only"
	ModeGovernedWorkspace WorkloadMode = "governed_workspace"
)

var workloadModes = []WorkloadMode{ModeNone, ModeReceiptOnly, ModeGovernedWorkspace}

// Enum lists the modes.
func (WorkloadMode) Enum() []any { return accountable.EnumStrings(workloadModes...) }

// WorkloadSeverity is how bad a risk is.
type WorkloadSeverity string

// Severities.
const (
	SeverityLow      WorkloadSeverity = "low"
	SeverityMedium   WorkloadSeverity = "medium"
	SeverityHigh     WorkloadSeverity = "high"
	SeverityCritical WorkloadSeverity = "critical"
)

var workloadSeverities = []WorkloadSeverity{SeverityLow, SeverityMedium, SeverityHigh, SeverityCritical}

// Enum lists the severities.
func (WorkloadSeverity) Enum() []any { return accountable.EnumStrings(workloadSeverities...) }

// WorkloadOwnerRole is who makes a human approval.
type WorkloadOwnerRole string

// Owner roles.
const (
	OwnerWorkload       WorkloadOwnerRole = "workload_owner"
	OwnerSystem         WorkloadOwnerRole = "system_owner"
	OwnerCode           WorkloadOwnerRole = "code_owner"
	OwnerCommunications WorkloadOwnerRole = "communications_owner"
	OwnerBudget         WorkloadOwnerRole = "budget_owner"
	OwnerIdentityAdmin  WorkloadOwnerRole = "identity_admin"
	OwnerData           WorkloadOwnerRole = "data_owner"
)

var workloadOwnerRoles = []WorkloadOwnerRole{OwnerWorkload, OwnerSystem, OwnerCode, OwnerCommunications, OwnerBudget, OwnerIdentityAdmin, OwnerData}

// Enum lists the owner roles.
func (WorkloadOwnerRole) Enum() []any { return accountable.EnumStrings(workloadOwnerRoles...) }

// WorkloadApprovalTiming is when a human approval is made.
type WorkloadApprovalTiming string

// Approval timings.
const (
	TimingBeforeInstallation    WorkloadApprovalTiming = "before_installation"
	TimingBeforeFirstUse        WorkloadApprovalTiming = "before_first_use"
	TimingPerAction             WorkloadApprovalTiming = "per_action"
	TimingWhenThresholdExceeded WorkloadApprovalTiming = "when_threshold_exceeded"
)

var workloadApprovalTimings = []WorkloadApprovalTiming{TimingBeforeInstallation, TimingBeforeFirstUse, TimingPerAction, TimingWhenThresholdExceeded}

// Enum lists the approval timings.
func (WorkloadApprovalTiming) Enum() []any {
	return accountable.EnumStrings(workloadApprovalTimings...)
}

// WorkloadHandoffKind is how the approvals reach their owners.
type WorkloadHandoffKind string

// Handoff kinds.
const (
	HandoffNone          WorkloadHandoffKind = "none"
	HandoffBrowserReview WorkloadHandoffKind = "browser_review"
)

var workloadHandoffKinds = []WorkloadHandoffKind{HandoffNone, HandoffBrowserReview}

// Enum lists the handoff kinds.
func (WorkloadHandoffKind) Enum() []any { return accountable.EnumStrings(workloadHandoffKinds...) }

// WorkloadDiagnosis is the result of POST /doctor/workload (answered without envelope).
type WorkloadDiagnosis struct {
	SchemaVersion                 string                      `json:"schema_version" const:"workload-diagnosis/0.1"`
	DiagnosisID                   string                      `json:"diagnosis_id" pattern:"^wdg_[a-f0-9]{24}$"`
	Recommendation                WorkloadRecommendation      `json:"recommendation"`
	Boundaries                    WorkloadBoundaries          `json:"boundaries"`
	MissingCapabilities           []WorkloadMissingCapability `json:"missing_capabilities" maxItems:"13" nullable:"false"`
	ProposedResources             []WorkloadProposedResource  `json:"proposed_resources" maxItems:"15" nullable:"false"`
	WhatRemainsLocal              []WorkloadLocalItem         `json:"what_remains_local" minItems:"1" maxItems:"8" nullable:"false"`
	Risks                         []WorkloadRisk              `json:"risks" maxItems:"15" nullable:"false"`
	CapabilitiesAfterInstallation []string                    `json:"capabilities_after_installation" maxItems:"32" nullable:"false"`
	HumanApprovals                []WorkloadHumanApproval     `json:"human_approvals" maxItems:"10" nullable:"false"`
	ApprovalHandoff               WorkloadApprovalHandoff     `json:"approval_handoff"`
}

// WorkloadRecommendation is the verdict and what to install.
type WorkloadRecommendation struct {
	Verdict             WorkloadVerdict `json:"verdict"`
	Mode                WorkloadMode    `json:"mode"`
	Summary             string          `json:"summary" minLength:"1" maxLength:"300"`
	Rationale           []string        `json:"rationale" minItems:"1" maxItems:"6" nullable:"false"`
	ActiveBoundaryCount int             `json:"active_boundary_count" minimum:"0" maximum:"5"`
}

// WorkloadBoundaries are the five scored boundaries.
type WorkloadBoundaries struct {
	Time           WorkloadBoundary `json:"time"`
	Agents         WorkloadBoundary `json:"agents"`
	Systems        WorkloadBoundary `json:"systems"`
	Authority      WorkloadBoundary `json:"authority"`
	Accountability WorkloadBoundary `json:"accountability"`
}

// WorkloadBoundary is one scored boundary.
type WorkloadBoundary struct {
	State  WorkloadBoundaryState `json:"state"`
	Score  int                   `json:"score" minimum:"0" maximum:"100" description:"Integer points 0..100: absent below 35, present from 35, critical from 70."`
	Reason string                `json:"reason" minLength:"1" maxLength:"300"`
}

// WorkloadMissingCapability is a capability the workload needs and does not declare.
type WorkloadMissingCapability struct {
	ID       string `json:"id" minLength:"1" maxLength:"64"`
	Boundary string `json:"boundary" enum:"time,agents,systems,authority,accountability"`
	Reason   string `json:"reason" minLength:"1" maxLength:"300"`
}

// WorkloadProposedResource is the least-privilege access proposed for one declared system.
type WorkloadProposedResource struct {
	Resource                string         `json:"resource" minLength:"1" maxLength:"64"`
	RequestedAccess         WorkloadAccess `json:"requested_access"`
	ScopeIntents            []string       `json:"scope_intents" maxItems:"11" nullable:"false"`
	Purpose                 string         `json:"purpose" minLength:"1" maxLength:"300"`
	CredentialInputRequired bool           `json:"credential_input_required"`
}

// WorkloadLocalItem is something that stays with the caller.
type WorkloadLocalItem struct {
	Item   string `json:"item" minLength:"1" maxLength:"64"`
	Reason string `json:"reason" minLength:"1" maxLength:"300"`
}

// WorkloadRisk is one risk of the workload with its mitigation.
type WorkloadRisk struct {
	ID          string           `json:"id" minLength:"1" maxLength:"64"`
	Severity    WorkloadSeverity `json:"severity"`
	Boundary    string           `json:"boundary" enum:"time,agents,systems,authority,accountability"`
	Description string           `json:"description" minLength:"1" maxLength:"300"`
	Mitigation  string           `json:"mitigation" minLength:"1" maxLength:"300"`
}

// WorkloadHumanApproval is a decision a person makes for the workload.
type WorkloadHumanApproval struct {
	ID        string                 `json:"id" minLength:"1" maxLength:"64"`
	OwnerRole WorkloadOwnerRole      `json:"owner_role"`
	Timing    WorkloadApprovalTiming `json:"timing"`
	Decision  string                 `json:"decision" minLength:"1" maxLength:"300"`
	Scope     []string               `json:"scope" minItems:"1" maxItems:"15" nullable:"false"`
}

// WorkloadApprovalHandoff says how the approvals reach their owners: a browser review of
// the diagnosis when there are approvals. Following url reads; it changes nothing and
// carries only the diagnosis id. url is empty when kind is none.
type WorkloadApprovalHandoff struct {
	Kind                 WorkloadHandoffKind `json:"kind"`
	URL                  string              `json:"url" description:"Empty when kind is none."`
	MutatesState         bool                `json:"mutates_state"`
	CarriesSensitiveData bool                `json:"carries_sensitive_data"`
	ApprovalIDs          []string            `json:"approval_ids" maxItems:"10" nullable:"false"`
}

// WorkloadReviewPath is the path, under the service's site URL, of the browser review
// of a diagnosis: the account-free, read-only GET /doctor/workload, with the diagnosis id
// as the fragment (never sent to the server).
const WorkloadReviewPath = "/api/v1/doctor/workload"

// --- scoring tables ----------------------------------------------------------------------

// workloadPoints is one row of a point table: the rule's id and its points.
type workloadPoints struct {
	id     string
	points int
}

var workloadTimePoints = map[WorkloadTimeHorizon]workloadPoints{
	HorizonSingleTurn: {"T1", 0}, HorizonSingleSession: {"T2", 20}, HorizonMultiDay: {"T3", 50},
	HorizonRecurring: {"T4", 60}, HorizonContinuous: {"T5", 80},
}

// workloadAgentCountPoints are the points of agent_count from a lower bound on (in order).
var workloadAgentCountPoints = []struct {
	from int64
	workloadPoints
}{{1, workloadPoints{"A1", 0}}, {2, workloadPoints{"A2", 30}}, {4, workloadPoints{"A3", 45}}, {11, workloadPoints{"A4", 60}}}

var workloadCoordinationPoints = map[WorkloadCoordination]workloadPoints{
	CoordinationNone: {"A5", 0}, CoordinationHandoff: {"A6", 15}, CoordinationParallel: {"A7", 20}, CoordinationHierarchical: {"A8", 30},
}

var workloadAccessPoints = map[WorkloadAccess]workloadPoints{AccessRead: {"S2", 10}, AccessWrite: {"S3", 35}, AccessAdmin: {"S4", 50}}

var workloadSideEffectPoints = map[WorkloadSideEffect]workloadPoints{
	SideEffectNone: {"S5", 0}, SideEffectReversible: {"S6", 10}, SideEffectExternal: {"S7", 25}, SideEffectIrreversible: {"S8", 40},
}

var workloadDataClassPoints = map[WorkloadDataClass]workloadPoints{
	DataPublic: {"S9", 0}, DataInternal: {"S10", 5}, DataConfidential: {"S11", 15}, DataRegulated: {"S12", 30},
}

const (
	workloadSystemBreadthPoints = 5  // S13: per further system
	workloadSystemBreadthMax    = 20 // S13: at most
	workloadActionBreadthPoints = 5  // U12: per further consequential action
	workloadActionBreadthMax    = 15 // U12: at most
)

var workloadActionPoints = map[WorkloadAction]workloadPoints{
	ActionResearch: {"U1", 0}, ActionDraft: {"U2", 0}, ActionReadInternalData: {"U3", 5}, ActionWriteInternalRecords: {"U4", 20},
	ActionModifyCode: {"U5", 30}, ActionSendExternalMessage: {"U6", 35}, ActionMergeOrDeploy: {"U7", 40},
	ActionCreateAccount: {"U8", 40}, ActionDeleteData: {"U9", 45}, ActionSpendFunds: {"U10", 50}, ActionChangePermissions: {"U11", 50},
}

// workloadActionPointsByIndex is workloadActionPoints by the action's index in
// workloadActions (workloadActionIndex): Diagnose reads a row per declared action, and
// an array is cheaper than the map.
var workloadActionPointsByIndex = func() (out [workloadActionCount]workloadPoints) {
	for i, a := range workloadActions {
		out[i] = workloadActionPoints[a]
	}
	return out
}()

// workloadApprovalPoints apply when a consequential action is declared.
var workloadApprovalPoints = map[WorkloadApprovalPolicy]workloadPoints{
	ApprovalNotApplicable: {"U13", 0}, ApprovalPerAction: {"U13", 0}, ApprovalSensitiveActions: {"U14", 5},
	ApprovalExceptionsOnly: {"U15", 15}, ApprovalUndefined: {"U16", 25},
}

// workloadBudgetPoints apply when spend_funds is declared.
var workloadBudgetPoints = map[WorkloadBudgetControl]workloadPoints{
	BudgetFixedLimit: {"U17", 0}, BudgetDynamicLimit: {"U18", 10}, BudgetUndefined: {"U19", 25}, BudgetUnbounded: {"U20", 35},
}

var workloadConsequencePoints = map[WorkloadConsequence]workloadPoints{
	ConsequenceLow: {"C1", 0}, ConsequenceModerate: {"C2", 25}, ConsequenceHigh: {"C3", 45}, ConsequenceRegulated: {"C4", 60},
}

var workloadEvidencePoints = map[WorkloadEvidence]workloadPoints{
	EvidenceVerifiedOutcome: {"C5", 0}, EvidenceArtifact: {"C6", 5}, EvidenceActivityLog: {"C7", 10}, EvidenceNone: {"C8", 15},
}

var workloadAcceptancePoints = map[WorkloadAcceptance]workloadPoints{
	AcceptanceHuman: {"C9", 0}, AcceptanceDownstreamSystem: {"C10", 5}, AcceptanceAgent: {"C11", 10}, AcceptanceNone: {"C12", 15},
}

const workloadRetentionGapPoints = 10 // C13 and C14 each

// workloadReach is the access an action needs on a system of each category it touches.
var workloadReach = map[WorkloadAction]map[WorkloadSystemCategory]WorkloadAccess{
	ActionResearch: {CategoryBrowser: AccessRead, CategoryDocumentStore: AccessRead, CategoryCodeRepository: AccessRead,
		CategoryIssueTracker: AccessRead, CategoryLocalFiles: AccessRead, CategoryOther: AccessRead},
	ActionDraft: {CategoryDocumentStore: AccessWrite, CategoryLocalFiles: AccessWrite},
	ActionReadInternalData: {CategoryCodeRepository: AccessRead, CategoryIssueTracker: AccessRead, CategoryDocumentStore: AccessRead,
		CategoryMessaging: AccessRead, CategoryCRM: AccessRead, CategoryDatabase: AccessRead, CategoryCloudRuntime: AccessRead,
		CategoryFinance: AccessRead, CategoryLocalFiles: AccessRead, CategoryIdentity: AccessRead, CategoryOther: AccessRead},
	ActionWriteInternalRecords: {CategoryIssueTracker: AccessWrite, CategoryDocumentStore: AccessWrite, CategoryCRM: AccessWrite,
		CategoryDatabase: AccessWrite, CategoryOther: AccessWrite},
	ActionModifyCode:          {CategoryCodeRepository: AccessWrite, CategoryLocalFiles: AccessWrite},
	ActionMergeOrDeploy:       {CategoryCodeRepository: AccessWrite, CategoryCloudRuntime: AccessWrite},
	ActionSendExternalMessage: {CategoryMessaging: AccessWrite, CategoryCRM: AccessWrite},
	ActionSpendFunds:          {CategoryFinance: AccessWrite, CategoryCloudRuntime: AccessWrite},
	ActionCreateAccount:       {CategoryIdentity: AccessAdmin},
	ActionChangePermissions: {CategoryIdentity: AccessAdmin, CategoryCodeRepository: AccessAdmin, CategoryDocumentStore: AccessAdmin,
		CategoryCloudRuntime: AccessAdmin, CategoryDatabase: AccessAdmin},
	ActionDeleteData: {CategoryDocumentStore: AccessWrite, CategoryDatabase: AccessWrite, CategoryCRM: AccessWrite,
		CategoryIssueTracker: AccessWrite, CategoryMessaging: AccessWrite, CategoryLocalFiles: AccessWrite, CategoryOther: AccessWrite},
}

// workloadReachByCategory is workloadReach turned around: for each category, the access
// each action (by its index in workloadActions) needs on it, "" where it does not touch
// it. propose looks a system's row up once, not once per action.
var workloadReachByCategory = func() map[WorkloadSystemCategory]*[workloadActionCount]WorkloadAccess {
	out := map[WorkloadSystemCategory]*[workloadActionCount]WorkloadAccess{}
	for action, categories := range workloadReach {
		for category, access := range categories {
			if out[category] == nil {
				out[category] = new([workloadActionCount]WorkloadAccess)
			}
			out[category][workloadActionIndex(action)] = access
		}
	}
	return out
}()

// WorkloadActionReach returns the access action needs on a system of category, and
// whether it touches that category at all.
func WorkloadActionReach(action WorkloadAction, category WorkloadSystemCategory) (WorkloadAccess, bool) {
	a, ok := workloadReach[action][category]
	return a, ok
}

// --- diagnosis ---------------------------------------------------------------------------

// workloadActionSet is the set of declared actions, by their index in workloadActions:
// the rules ask it often, and a map was a tenth of Diagnose.
type workloadActionSet [workloadActionCount]bool

// workloadActionCount is len(workloadActions).
const workloadActionCount = 11

// has reports whether a is declared.
func (s *workloadActionSet) has(a WorkloadAction) bool {
	i := workloadActionIndex(a)
	return i >= 0 && s[i]
}

// workloadActionIndex is the index of a in workloadActions, -1 for an unknown action (a
// switch: the compiler searches the constants by length and value).
func workloadActionIndex(a WorkloadAction) int {
	switch a {
	case ActionResearch:
		return 0
	case ActionDraft:
		return 1
	case ActionReadInternalData:
		return 2
	case ActionWriteInternalRecords:
		return 3
	case ActionModifyCode:
		return 4
	case ActionMergeOrDeploy:
		return 5
	case ActionSendExternalMessage:
		return 6
	case ActionSpendFunds:
		return 7
	case ActionCreateAccount:
		return 8
	case ActionChangePermissions:
		return 9
	case ActionDeleteData:
		return 10
	}
	return -1
}

// workloadFacts are what the rules read of a valid request, computed once.
type workloadFacts struct {
	r             WorkloadRequest
	actions       workloadActionSet
	declared      int // distinct known actions declared
	consequential int // declared actions of at least the consequential points
	writes        bool
	admin         bool
	sideEffects   bool // a system with an external or irreversible side effect
	regulatedData bool // a system with regulated data
	sensitiveData bool // a system with confidential or regulated data
	scores        [5]int
	states        [5]WorkloadBoundaryState
	reasons       [5]workloadSpan // unclipped: the rationale quotes them whole
	// entries are the rationale's entry of each active boundary: its reason with its name,
	// state and points in front, written just before it (so the reason is written once).
	entries [5]workloadSpan
	// text holds the sentences the rules write (reasons, summary, rationale, purposes)
	// until Diagnose makes them strings, all with one allocation (concatenating each
	// was a third of Diagnose's time); the spans above and below are in it.
	text    []byte
	summary workloadSpan
	// rationale (rationales of them: the verdict's and one per active boundary), and a
	// purpose and the declared system of each resource, which the result does not keep,
	// are arrays in f, on Diagnose's stack: not allocated.
	rationale      [WorkloadRationaleMax]workloadSpan
	rationales     int
	purposes       [WorkloadProposedResourcesMax]workloadSpan
	resources      []WorkloadProposedResource
	resourceSystem [WorkloadProposedResourcesMax]WorkloadSystem
	accessGap      bool // an action needs more than a system declares (M8)
	excess         bool // a system declares more than its actions need (K6)
	excessAdmin    bool
}

// Boundary indexes, in the order of the result.
const (
	wbTime = iota
	wbAgents
	wbSystems
	wbAuthority
	wbAccountability
)

var workloadBoundaryNames = [5]string{"time", "agents", "systems", "authority", "accountability"}

// workloadTextPool holds the buffers of workloadFacts.text: a diagnosis writes a few
// KB of sentences, then copies them into one string.
var workloadTextPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// workloadSpan is a sentence in workloadFacts.text: its start and end.
type workloadSpan struct{ start, end int }

// write appends parts to the text.
func (f *workloadFacts) write(parts ...string) {
	for _, p := range parts {
		f.text = append(f.text, p...)
	}
}

// since is the span of what was written from start on.
func (f *workloadFacts) since(start int) workloadSpan { return workloadSpan{start, len(f.text)} }

// sentence is the span of parts written as one sentence.
func (f *workloadFacts) sentence(parts ...string) workloadSpan {
	start := len(f.text)
	f.write(parts...)
	return f.since(start)
}

// Diagnose scores a valid request (Validate returned nil); the result is a pure function
// of it. Diagnose does not validate: a request that breaks the rules gives an unspecified
// diagnosis, but never a panic nor a result beyond the bounds.
func Diagnose(r WorkloadRequest) WorkloadDiagnosis { return DiagnoseUnder(r, "") }

// DiagnoseUnder is Diagnose with the approval handoff's URL under siteURL (the service's
// site URL); "" leaves it a path. The URL and the diagnosis id are one string.
func DiagnoseUnder(r WorkloadRequest, siteURL string) WorkloadDiagnosis {
	id := workloadDiagnosisID(&r)
	r.Workload.Systems = workloadKnownSystems(r.Workload.Systems)
	sentences := workloadTextPool.Get().(*[]byte)
	f := &workloadFacts{r: r, text: (*sentences)[:0]}
	w := r.Workload
	for _, a := range w.Authority.Actions {
		if i := workloadActionIndex(a); i >= 0 && !f.actions[i] {
			f.actions[i] = true
			f.declared++
			if workloadActionPointsByIndex[i].points >= workloadConsequentialActionPoints {
				f.consequential++
			}
		}
	}
	for _, s := range w.Systems {
		f.writes = f.writes || s.Access == AccessWrite || s.Access == AccessAdmin
		f.admin = f.admin || s.Access == AccessAdmin
		f.sideEffects = f.sideEffects || s.SideEffect == SideEffectExternal || s.SideEffect == SideEffectIrreversible
		f.regulatedData = f.regulatedData || s.DataClass == DataRegulated
		f.sensitiveData = f.sensitiveData || s.DataClass == DataConfidential || s.DataClass == DataRegulated
	}
	f.scoreTime()
	f.scoreAgents()
	f.scoreSystems()
	f.scoreAuthority()
	f.scoreAccountability()

	d := WorkloadDiagnosis{SchemaVersion: WorkloadSchemaVersion}
	verdict, mode, triggers := f.verdict()
	d.Recommendation = f.recommendation(verdict, mode, triggers)
	f.propose()

	// The sentences, one string; each clipped to the bound.
	text := string(f.text)
	*sentences = f.text
	workloadTextPool.Put(sentences)
	say := func(s workloadSpan) string { return workloadClip(text[s.start:s.end]) }
	for i, b := range []*WorkloadBoundary{&d.Boundaries.Time, &d.Boundaries.Agents, &d.Boundaries.Systems,
		&d.Boundaries.Authority, &d.Boundaries.Accountability} {
		*b = WorkloadBoundary{State: f.states[i], Score: f.scores[i], Reason: say(f.reasons[i])}
	}
	d.Recommendation.Summary = say(f.summary)
	for i, s := range f.rationale[:f.rationales] {
		d.Recommendation.Rationale[i] = say(s)
	}
	for i := range f.resources {
		f.resources[i].Purpose = say(f.purposes[i])
	}
	if verdict == VerdictNotNeeded { // nothing to install: no resource is proposed
		f.resources = []WorkloadProposedResource{}
	}
	d.ProposedResources = f.resources
	d.MissingCapabilities = f.missingCapabilities()
	d.WhatRemainsLocal = f.remainsLocal(verdict)
	d.Risks = f.risks()
	d.HumanApprovals = f.approvals(verdict, triggers)
	d.CapabilitiesAfterInstallation = f.capabilities(mode, d.HumanApprovals)
	d.ApprovalHandoff = WorkloadApprovalHandoff{Kind: HandoffNone, ApprovalIDs: []string{}}
	if len(d.HumanApprovals) == 0 {
		d.DiagnosisID = string(id[:])
	} else {
		var stack [256]byte
		url := string(append(append(append(stack[:0], siteURL...), WorkloadReviewPath+"#"...), id[:]...))
		d.DiagnosisID = url[len(url)-len(id):]
		d.ApprovalHandoff.Kind = HandoffBrowserReview
		d.ApprovalHandoff.URL = url
		d.ApprovalHandoff.ApprovalIDs = make([]string, 0, len(d.HumanApprovals))
		for _, a := range d.HumanApprovals {
			d.ApprovalHandoff.ApprovalIDs = append(d.ApprovalHandoff.ApprovalIDs, a.ID)
		}
	}
	return d
}

// workloadKnownSystems returns systems with every value outside its enumeration replaced
// by the enumeration's first (least) value: only a request Validate refused has one, and
// its diagnosis, unspecified, still names only known values and keeps its bounds.
func workloadKnownSystems(systems []WorkloadSystem) []WorkloadSystem {
	known := func(s WorkloadSystem) bool {
		return slices.Contains(workloadCategories, s.Category) && slices.Contains(workloadAccesses, s.Access) &&
			slices.Contains(workloadSideEffects, s.SideEffect) && slices.Contains(workloadDataClasses, s.DataClass)
	}
	if !slices.ContainsFunc(systems, func(s WorkloadSystem) bool { return !known(s) }) {
		return systems // a valid request's: read, never written, so not copied
	}
	out := make([]WorkloadSystem, len(systems))
	for i, s := range systems {
		out[i] = WorkloadSystem{
			Category:   workloadKnown(s.Category, workloadCategories),
			Access:     workloadKnown(s.Access, workloadAccesses),
			SideEffect: workloadKnown(s.SideEffect, workloadSideEffects),
			DataClass:  workloadKnown(s.DataClass, workloadDataClasses),
		}
	}
	return out
}

// workloadKnown is v when values holds it, else the first (least) of values.
func workloadKnown[T ~string](v T, values []T) T {
	if slices.Contains(values, v) {
		return v
	}
	return values[0]
}

// workloadState is B1-B3: absent below WorkloadPresentAt, critical from WorkloadCriticalAt.
func workloadState(score int) WorkloadBoundaryState {
	switch {
	case score >= WorkloadCriticalAt:
		return BoundaryCritical
	case score >= WorkloadPresentAt:
		return BoundaryPresent
	}
	return BoundaryAbsent
}

func (f *workloadFacts) active(b int) bool { return f.states[b] != BoundaryAbsent }

// openReason starts boundary b's reason once its raw points are known: its score (capped)
// and state are set, and an active boundary's rationale entry begins with its name, state
// and points (the reason follows, closeReason ends both).
func (f *workloadFacts) openReason(b, raw int) {
	f.scores[b] = min(max(raw, 0), WorkloadMaxPoints)
	f.states[b] = workloadState(f.scores[b])
	f.entries[b].start = len(f.text)
	if f.active(b) {
		f.write(workloadBoundaryNames[b], " ", string(f.states[b]), " (", strconv.Itoa(f.scores[b]), " points): ")
	}
	f.reasons[b].start = len(f.text)
}

// closeReason ends boundary b's reason and rationale entry.
func (f *workloadFacts) closeReason(b int) {
	f.reasons[b].end = len(f.text)
	f.entries[b].end = len(f.text)
}

// scoreTime is T1-T5.
func (f *workloadFacts) scoreTime() {
	th := f.r.Workload.TimeHorizon
	p := workloadTimePoints[th]
	f.openReason(wbTime, p.points)
	f.write("time_horizon ", string(th), ": ", strconv.Itoa(p.points), " points (", p.id, ").")
	f.closeReason(wbTime)
}

// scoreAgents is A1-A9.
func (f *workloadFacts) scoreAgents() {
	w := &f.r.Workload
	count := workloadAgentCountPoints[0].workloadPoints
	for _, row := range workloadAgentCountPoints {
		if w.AgentCount >= row.from {
			count = row.workloadPoints
		}
	}
	co := workloadCoordinationPoints[w.Coordination]
	raw := count.points + co.points
	f.openReason(wbAgents, raw)
	f.write("agent_count ", strconv.FormatInt(w.AgentCount, 10), ": ", strconv.Itoa(count.points), " points (", count.id,
		"); coordination ", string(w.Coordination), ": +", strconv.Itoa(co.points), " (", co.id, "); total ",
		strconv.Itoa(raw), " (A9).")
	f.closeReason(wbAgents)
}

// workloadSystemPoints is S2-S12 of one system.
func workloadSystemPoints(s WorkloadSystem) int {
	return workloadAccessPoints[s.Access].points + workloadSideEffectPoints[s.SideEffect].points + workloadDataClassPoints[s.DataClass].points
}

// scoreSystems is S1-S13.
func (f *workloadFacts) scoreSystems() {
	systems := f.r.Workload.Systems
	if len(systems) == 0 {
		f.openReason(wbSystems, 0)
		f.write("No system declared: 0 points (S1).")
		f.closeReason(wbSystems)
		return
	}
	top, topPoints := 0, workloadSystemPoints(systems[0]) // the first of the highest
	for i := 1; i < len(systems); i++ {
		if p := workloadSystemPoints(systems[i]); p > topPoints {
			top, topPoints = i, p
		}
	}
	s := systems[top]
	breadth := min(workloadSystemBreadthPoints*(len(systems)-1), workloadSystemBreadthMax)
	raw := topPoints + breadth
	access, effect, data := workloadAccessPoints[s.Access], workloadSideEffectPoints[s.SideEffect], workloadDataClassPoints[s.DataClass]
	f.openReason(wbSystems, raw)
	f.write("Highest system /workload/systems/", strconv.Itoa(top), " (", string(s.Category), "): access ", string(s.Access),
		" ", strconv.Itoa(access.points), " (", access.id, "), side_effect ", string(s.SideEffect), " +", strconv.Itoa(effect.points),
		" (", effect.id, "), data_class ", string(s.DataClass), " +", strconv.Itoa(data.points), " (", data.id, ")")
	if len(systems) > 1 {
		f.write("; ", strconv.Itoa(len(systems)-1), " further ", workloadPlural(len(systems)-1, "system"), " +", strconv.Itoa(breadth), " (S13)")
	}
	f.writeCapped(raw)
	f.write(".")
	f.closeReason(wbSystems)
}

func workloadPlural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// writeCapped writes that raw points are capped, when they are.
func (f *workloadFacts) writeCapped(raw int) {
	if raw > WorkloadMaxPoints {
		f.write("; ", strconv.Itoa(raw), " capped at ", strconv.Itoa(WorkloadMaxPoints))
	}
}

// scoreAuthority is U1-U21.
func (f *workloadFacts) scoreAuthority() {
	a := &f.r.Workload.Authority
	top := -1
	for i := range workloadActions { // enumeration order: the first of the highest points
		if f.actions[i] && (top < 0 || workloadActionPointsByIndex[i].points > workloadActionPointsByIndex[top].points) {
			top = i
		}
	}
	if top < 0 {
		f.openReason(wbAuthority, 0)
		f.write("No action declared: 0 points.")
		f.closeReason(wbAuthority)
		return
	}
	topPoints := workloadActionPointsByIndex[top]
	further := f.consequential
	if topPoints.points >= workloadConsequentialActionPoints {
		further--
	}
	breadth := min(workloadActionBreadthPoints*max(further, 0), workloadActionBreadthMax)
	approval, budget := workloadApprovalPoints[a.ApprovalPolicy], workloadBudgetPoints[a.BudgetControl]
	spends := f.actions.has(ActionSpendFunds)
	raw := topPoints.points + breadth
	if f.consequential > 0 {
		raw += approval.points
	}
	if spends {
		raw += budget.points
	}
	f.openReason(wbAuthority, raw)
	f.write("Highest action ", string(workloadActions[top]), ": ", strconv.Itoa(topPoints.points), " points (", topPoints.id, ")")
	if further > 0 {
		f.write("; ", strconv.Itoa(further), " further consequential ", workloadPlural(further, "action"), " +", strconv.Itoa(breadth), " (U12)")
	}
	if f.consequential > 0 {
		f.write("; approval_policy ", string(a.ApprovalPolicy), " +", strconv.Itoa(approval.points), " (", approval.id, ")")
	}
	if spends {
		f.write("; budget_control ", string(a.BudgetControl), " +", strconv.Itoa(budget.points), " (", budget.id, ")")
	}
	f.writeCapped(raw)
	f.write(" (U21).")
	f.closeReason(wbAuthority)
}

// workloadRetentionGaps is C13 and C14: the points and the rules that apply ("C13",
// "C14", "C13, C14" or "").
func workloadRetentionGaps(c *WorkloadAccountability) (int, string) {
	c13 := c.Retention == RetentionNone && (c.Consequence == ConsequenceHigh || c.Consequence == ConsequenceRegulated)
	c14 := c.Consequence == ConsequenceRegulated && c.Retention != RetentionRegulated
	switch {
	case c13 && c14:
		return 2 * workloadRetentionGapPoints, "C13, C14"
	case c13:
		return workloadRetentionGapPoints, "C13"
	case c14:
		return workloadRetentionGapPoints, "C14"
	}
	return 0, ""
}

// scoreAccountability is C1-C15.
func (f *workloadFacts) scoreAccountability() {
	c := &f.r.Workload.Accountability
	co, ev, ac := workloadConsequencePoints[c.Consequence], workloadEvidencePoints[c.Evidence], workloadAcceptancePoints[c.Acceptance]
	gap, ids := workloadRetentionGaps(c)
	raw := co.points + ev.points + ac.points + gap
	f.openReason(wbAccountability, raw)
	f.write("consequence ", string(c.Consequence), ": ", strconv.Itoa(co.points), " points (", co.id, "); evidence ",
		string(c.Evidence), " +", strconv.Itoa(ev.points), " (", ev.id, "); acceptance ", string(c.Acceptance), " +",
		strconv.Itoa(ac.points), " (", ac.id, "); retention ", string(c.Retention), " +", strconv.Itoa(gap))
	if ids != "" {
		f.write(" (", ids, ")")
	}
	f.writeCapped(raw)
	f.write(" (C15).")
	f.closeReason(wbAccountability)
}

// workloadTriggers are the rules V1-V5 (needed), in order, with their phrases.
var workloadTriggers = []struct{ id, phrase string }{
	{"V1", "a declared system has write or admin access"},
	{"V2", "a declared system has an external or irreversible side effect"},
	{"V3", "regulated data (a regulated system or a regulated consequence)"},
	{"V4", "the authority boundary is active"},
	{"V5", "the accountability boundary is critical"},
}

// verdict is V1-V7; triggers are whether each of V1-V5 holds.
func (f *workloadFacts) verdict() (v WorkloadVerdict, m WorkloadMode, triggers [5]bool) {
	holds := [5]bool{
		f.writes,
		f.sideEffects,
		f.regulatedData || f.r.Workload.Accountability.Consequence == ConsequenceRegulated,
		f.active(wbAuthority),
		f.states[wbAccountability] == BoundaryCritical,
	}
	switch {
	case holds != [5]bool{}:
		return VerdictNeeded, ModeGovernedWorkspace, holds
	case f.activeCount() > 0:
		return VerdictConditional, ModeReceiptOnly, holds
	}
	return VerdictNotNeeded, ModeNone, holds
}

func (f *workloadFacts) activeCount() int {
	n := 0
	for b := range f.states {
		if f.active(b) {
			n++
		}
	}
	return n
}

// writeActiveNames writes the active boundaries with their states, comma-separated.
func (f *workloadFacts) writeActiveNames() {
	sep := ""
	for b, name := range workloadBoundaryNames {
		if f.active(b) {
			f.write(sep, name, " ", string(f.states[b]))
			sep = ", "
		}
	}
}

// recommendation is the verdict and mode; its summary and rationale are written to the
// text (f.summary, f.rationale), and Rationale is made to hold them.
func (f *workloadFacts) recommendation(v WorkloadVerdict, m WorkloadMode, triggers [5]bool) WorkloadRecommendation {
	rec := WorkloadRecommendation{Verdict: v, Mode: m, ActiveBoundaryCount: f.activeCount()}
	f.rationales = 1
	start := len(f.text)
	switch v {
	case VerdictNeeded:
		f.write("A governed workspace is needed: ", strconv.Itoa(rec.ActiveBoundaryCount), " of 5 boundaries active (")
		f.writeActiveNames()
		f.write(").")
		f.summary = f.since(start)
		start = len(f.text)
		sep := "Needed ("
		for t, holds := range triggers {
			if holds {
				f.write(sep, workloadTriggers[t].id)
				sep = ", "
			}
		}
		sep = "): "
		for t, holds := range triggers {
			if holds {
				f.write(sep, workloadTriggers[t].phrase)
				sep = "; "
			}
		}
		f.write(".")
		f.rationale[0] = f.since(start)
	case VerdictConditional:
		f.write("Receipts are enough: ", strconv.Itoa(rec.ActiveBoundaryCount), " of 5 boundaries active (")
		f.writeActiveNames()
		f.write("), none calling for a governed workspace.")
		f.summary = f.since(start)
		f.rationale[0] = f.sentence("Conditional (V6): boundaries are active, but no system writes, no side effect leaves a system, no data is regulated, authority is absent and accountability is not critical.")
	default:
		f.summary = f.sentence("No installation is needed: no boundary is active.")
		f.rationale[0] = f.sentence("Not needed (V7): every boundary scores below 35 points.")
	}
	for b := range workloadBoundaryNames {
		if f.active(b) {
			f.rationale[f.rationales] = f.entries[b]
			f.rationales++
		}
	}
	rec.Rationale = make([]string, f.rationales)
	return rec
}

// propose is P1-P5: one resource per declared system, in declared order.
func (f *workloadFacts) propose() {
	systems := f.r.Workload.Systems
	f.resources = make([]WorkloadProposedResource, 0, min(len(systems), WorkloadProposedResourcesMax))
	// Each resource's scope intents are a piece of one array, capped at f.declared.
	intentsOfAll := make([]string, cap(f.resources)*f.declared)
	for i, s := range systems {
		if i == WorkloadProposedResourcesMax {
			break
		}
		name := string(s.Category)
		n := 1 // the how-manieth of its category (at most 15 systems: counting beats a map)
		for _, earlier := range systems[:i] {
			if earlier.Category == s.Category {
				n++
			}
		}
		if n > 1 {
			name += "#" + strconv.Itoa(n)
		}
		needed := WorkloadAccess("")
		intents := intentsOfAll[i*f.declared : i*f.declared : (i+1)*f.declared]
		reach := workloadReachByCategory[s.Category] // nil: no action touches it
		for i, act := range workloadActions {
			if !f.actions[i] || reach == nil {
				continue
			}
			if acc := reach[i]; acc != "" {
				intents = append(intents, string(act))
				if acc.Rank() > needed.Rank() {
					needed = acc
				}
			}
		}
		requested := needed
		if needed == "" {
			requested = AccessRead
		}
		if requested.Rank() > s.Access.Rank() {
			requested = s.Access
			f.accessGap = true
		}
		if s.Access.Rank() > requested.Rank() {
			f.excess = true
			f.excessAdmin = f.excessAdmin || s.Access == AccessAdmin
		}
		var purpose workloadSpan // Purpose is set from it with the other sentences
		switch {
		case len(intents) == 0:
			purpose = f.sentence("Context from the declared ", string(s.Category), " (/workload/systems/", strconv.Itoa(i), "): no declared action uses it, so read access only.")
		case requested != needed:
			purpose = f.sentence("The declared actions need ", string(needed), " on the ", string(s.Category), " (/workload/systems/", strconv.Itoa(i),
				"); capped at its declared ", string(s.Access), " access.")
		default:
			purpose = f.sentence(string(requested), " access to the ", string(s.Category), " (/workload/systems/", strconv.Itoa(i), ") for the declared actions that touch it, and no more.")
		}
		f.purposes[len(f.resources)] = purpose
		f.resourceSystem[len(f.resources)] = s
		f.resources = append(f.resources, WorkloadProposedResource{
			Resource: name, RequestedAccess: requested, ScopeIntents: intents,
			CredentialInputRequired: !(s.Category == CategoryLocalFiles || requested == AccessRead && s.DataClass == DataPublic),
		})
	}
}

// workloadMissingTexts is M1-M13, in catalogue order: each capability's boundary, id and
// reason. The texts are data (as the scoring tables are) so that the answer's encoder
// knows them in advance (workloadKnownTexts).
var workloadMissingTexts = [WorkloadMissingCapabilitiesMax]struct {
	b          int
	id, reason string
}{
	{wbTime, "durable_state", "The work outlives one session: its state and progress must survive restarts and be resumable (M1)."},
	{wbTime, "run_schedule", "Recurring or continuous runs need a schedule and a record of every run (M2)."},
	{wbAgents, "agent_identity", "Several agents act: each needs its own identity so that every action is attributable (M3)."},
	{wbAgents, "coordination_record", "Handoffs and shared work need one record of who did what and who holds what (M4)."},
	{wbSystems, "scoped_credentials", "Write or admin access needs credentials scoped to the workload, not a person's full account (M5)."},
	{wbSystems, "data_handling", "Confidential or regulated data needs handling rules: what may be read, copied and shown (M6)."},
	{wbSystems, "side_effect_guard", "External or irreversible side effects need a check before they happen (M7)."},
	{wbSystems, "access_for_actions", "A declared action needs more access than its system declares; the proposal is capped at the declared access (M8)."},
	{wbAuthority, "approval_policy", "Consequential actions run without a defined approval before them (M9)."},
	{wbAuthority, "spend_limit", "Spending needs a fixed limit enforced before each payment (M10)."},
	{wbAccountability, "outcome_evidence", "The outcome matters but leaves no artifact or verified result to check it by (M11)."},
	{wbAccountability, "outcome_acceptance", "The outcome matters but no person or downstream system accepts it (M12)."},
	{wbAccountability, "retention_policy", "The records are not kept as long as the consequence requires (M13)."},
}

// workloadM8 is the index of M8 (access_for_actions) in workloadMissingTexts: reported
// whether its boundary is active or not.
const workloadM8 = 7

// missingCapabilities is M1-M13, in catalogue order; each is reported when its condition
// holds and its boundary is active (M8 whenever it holds).
func (f *workloadFacts) missingCapabilities() []WorkloadMissingCapability {
	w := &f.r.Workload
	c := &w.Accountability
	gapOutcome := c.Consequence != ConsequenceLow
	_, retention := workloadRetentionGaps(c)
	holds := [len(workloadMissingTexts)]bool{
		w.TimeHorizon == HorizonMultiDay || w.TimeHorizon == HorizonRecurring || w.TimeHorizon == HorizonContinuous, // M1
		w.TimeHorizon == HorizonRecurring || w.TimeHorizon == HorizonContinuous,                                     // M2
		w.AgentCount >= 2,                  // M3
		w.Coordination != CoordinationNone, // M4
		f.writes,                           // M5
		f.sensitiveData,                    // M6
		f.sideEffects,                      // M7
		f.accessGap,                        // M8
		f.consequential > 0 && (w.Authority.ApprovalPolicy == ApprovalExceptionsOnly || w.Authority.ApprovalPolicy == ApprovalUndefined), // M9
		f.actions.has(ActionSpendFunds) && w.Authority.BudgetControl != BudgetFixedLimit,                                                 // M10
		gapOutcome && (c.Evidence == EvidenceNone || c.Evidence == EvidenceActivityLog),                                                  // M11
		gapOutcome && (c.Acceptance == AcceptanceNone || c.Acceptance == AcceptanceAgent),                                                // M12
		len(retention) > 0, // M13
	}
	for i, m := range workloadMissingTexts {
		holds[i] = holds[i] && (f.active(m.b) || i == workloadM8)
	}
	out := make([]WorkloadMissingCapability, 0, workloadCount(holds[:]))
	for i, m := range workloadMissingTexts {
		if holds[i] {
			out = append(out, WorkloadMissingCapability{ID: m.id, Boundary: workloadBoundaryNames[m.b], Reason: m.reason})
		}
	}
	return out
}

// workloadCount is how many of holds are true: the lists are made at the length they come to.
func workloadCount(holds []bool) int {
	n := 0
	for _, h := range holds {
		if h {
			n++
		}
	}
	return n
}

// workloadLocalTexts is L1-L8, in catalogue order (data, as workloadMissingTexts).
var workloadLocalTexts = [WorkloadLocalItemsMax]WorkloadLocalItem{
	{"workload_description", "This diagnosis stores nothing: the name and outcome stay with the caller; the result carries only their digest, in diagnosis_id (L1)."},
	{"credentials", "Credentials are entered by their owners at installation; the diagnosis names scopes and never takes a secret (L2)."},
	{"local_files", "Files stay on the machine they are on; receipts record digests of them, not their content (L3)."},
	{"drafts", "Drafts stay with the agent until a declared action publishes them (L4)."},
	{"research_notes", "Research notes and browsing stay with the agent; receipts cite outcomes, not notes (L5)."},
	{"agent_reasoning", "Prompts and reasoning stay in the agent's runtime; receipts and approvals record actions and evidence (L6)."},
	{"regulated_records", "Regulated records stay in their systems; receipts refer to them by id and never copy them (L7)."},
	{"everything", "No installation is needed: the workload runs as it is and this service records nothing of it (L8)."},
}

// remainsLocal is L1-L8.
func (f *workloadFacts) remainsLocal(v WorkloadVerdict) []WorkloadLocalItem {
	credentials := false
	for _, r := range f.resources {
		credentials = credentials || r.CredentialInputRequired
	}
	holds := [len(workloadLocalTexts)]bool{
		true,        // L1
		credentials, // L2
		slices.ContainsFunc(f.r.Workload.Systems, func(s WorkloadSystem) bool { return s.Category == CategoryLocalFiles }), // L3
		f.actions.has(ActionDraft),    // L4
		f.actions.has(ActionResearch), // L5
		v != VerdictNotNeeded,         // L6
		f.regulatedData || f.r.Workload.Accountability.Consequence == ConsequenceRegulated, // L7
		v == VerdictNotNeeded, // L8
	}
	out := make([]WorkloadLocalItem, 0, workloadCount(holds[:]))
	for i, l := range workloadLocalTexts {
		if holds[i] {
			out = append(out, l)
		}
	}
	return out
}

// workloadRiskTexts is K1-K15, in catalogue order: each risk's boundary, id, description
// and mitigation (data, as workloadMissingTexts).
var workloadRiskTexts = [WorkloadRisksMax]struct {
	b                           int
	id, description, mitigation string
}{
	{wbTime, "unattended_duration", "The workload keeps running without a person watching each run (K1).",
		"Record every run as a receipt and stop the workload when a run fails its checks."},
	{wbTime, "stale_context", "Work spread over days acts on context that may have changed since it started (K2).",
		"Re-read the inputs when the work resumes and record what it was based on."},
	{wbAgents, "duplicated_work", "Several agents without coordination may do the same work twice or undo each other (K3).",
		"Give each agent its own identity and claim work before doing it."},
	{wbAgents, "lost_handoff", "Work handed between agents can be dropped or repeated at the handoff (K4).",
		"Record each handoff with its owner and a deadline, and escalate when it lapses."},
	{wbAgents, "conflicting_writes", "Agents working in parallel write to the same systems (K5).",
		"Serialize writes per record, or give each agent its own scope."},
	{wbSystems, "excess_privilege", "A system is declared with more access than the declared actions need (K6).",
		"Install only the proposed resources: their access is capped to what the actions need."},
	{wbSystems, "irreversible_change", "A write can change a system in a way that cannot be undone (K7).",
		"Require an approval before the irreversible step and keep evidence of the state before it."},
	{wbSystems, "external_exposure", "A write reaches people or systems outside the organisation (K8).",
		"Review outbound content before it leaves and record what was sent."},
	{wbSystems, "data_exposure", "The workload reads confidential or regulated data (K9).",
		"Limit access to the proposed scopes and keep the data in its systems; receipts refer to it by id."},
	{wbAuthority, "unapproved_action", "Consequential actions can run without anyone approving them (K10).",
		"Adopt the proposed human approvals before the first use."},
	{wbAuthority, "uncontrolled_spend", "The workload spends funds (K11).",
		"Set a fixed limit, reserve spend before it happens and have the budget owner approve what exceeds it."},
	{wbAuthority, "privilege_escalation", "The workload can create accounts or change permissions, and so widen its own reach (K12).",
		"Have an identity admin approve each change and review the resulting access."},
	{wbAuthority, "data_loss", "The workload can delete data (K13).",
		"Have the data owner approve each deletion and keep a recoverable copy for the retention period."},
	{wbAccountability, "unverifiable_outcome", "Nobody can check the outcome afterwards: there is no artifact or verified result (K14).",
		"Attach evidence to every completion and have the outcome accepted by a person."},
	{wbAccountability, "retention_gap", "Records are not kept as long as the consequence requires (K15).",
		"Keep receipts and evidence for the required period in an append-only ledger."},
}

// risks is K1-K15, in catalogue order; each is reported when its condition holds and its
// boundary is active.
func (f *workloadFacts) risks() []WorkloadRisk {
	w := &f.r.Workload
	a, c := &w.Authority, &w.Accountability
	type when struct {
		holds    bool
		severity WorkloadSeverity
	}
	pick := func(whens ...when) WorkloadSeverity { // the last that holds
		var sev WorkloadSeverity
		for _, w := range whens {
			if w.holds {
				sev = w.severity
			}
		}
		return sev
	}
	writesWith := func(effect WorkloadSideEffect, sensitive bool) bool {
		return slices.ContainsFunc(w.Systems, func(s WorkloadSystem) bool {
			return (s.Access == AccessWrite || s.Access == AccessAdmin) && s.SideEffect == effect &&
				(!sensitive || s.DataClass == DataConfidential || s.DataClass == DataRegulated)
		})
	}
	undefinedApproval := a.ApprovalPolicy == ApprovalExceptionsOnly || a.ApprovalPolicy == ApprovalUndefined
	regulated := f.regulatedData || c.Consequence == ConsequenceRegulated
	_, retention := workloadRetentionGaps(c)
	escalates := f.actions.has(ActionChangePermissions) || f.actions.has(ActionCreateAccount)
	weakEvidence := c.Evidence == EvidenceNone || c.Evidence == EvidenceActivityLog
	severities := [len(workloadRiskTexts)]WorkloadSeverity{ // "": the risk does not apply
		pick(when{w.TimeHorizon == HorizonRecurring, SeverityMedium}, when{w.TimeHorizon == HorizonContinuous, SeverityHigh}), // K1
		pick(when{w.TimeHorizon == HorizonMultiDay, SeverityLow}),                                                             // K2
		pick(when{w.AgentCount >= 2 && w.Coordination == CoordinationNone, SeverityMedium}),                                   // K3
		pick(when{w.Coordination == CoordinationHandoff || w.Coordination == CoordinationHierarchical, SeverityMedium}),       // K4
		pick(when{w.Coordination == CoordinationParallel && f.writes, SeverityHigh}),                                          // K5
		pick(when{f.excess, SeverityMedium}, when{f.excessAdmin, SeverityHigh}),                                               // K6
		pick(when{writesWith(SideEffectIrreversible, false), SeverityHigh},
			when{writesWith(SideEffectIrreversible, true), SeverityCritical}), // K7
		pick(when{writesWith(SideEffectExternal, false), SeverityMedium}, when{writesWith(SideEffectExternal, true), SeverityHigh}), // K8
		pick(when{f.sensitiveData, SeverityMedium}, when{f.regulatedData, SeverityHigh}),                                            // K9
		pick(when{f.consequential > 0 && a.ApprovalPolicy == ApprovalExceptionsOnly, SeverityHigh},
			when{f.consequential > 0 && a.ApprovalPolicy == ApprovalUndefined, SeverityCritical}), // K10
		pick(when{f.actions.has(ActionSpendFunds), SeverityLow},
			when{f.actions.has(ActionSpendFunds) && a.BudgetControl == BudgetDynamicLimit, SeverityMedium},
			when{f.actions.has(ActionSpendFunds) && a.BudgetControl == BudgetUndefined, SeverityHigh},
			when{f.actions.has(ActionSpendFunds) && a.BudgetControl == BudgetUnbounded, SeverityCritical}), // K11
		pick(when{escalates, SeverityHigh}, when{escalates && undefinedApproval, SeverityCritical}), // K12
		pick(when{f.actions.has(ActionDeleteData), SeverityHigh},
			when{f.actions.has(ActionDeleteData) && (regulated || c.Retention == RetentionRegulated), SeverityCritical}), // K13
		pick(when{weakEvidence && c.Consequence == ConsequenceModerate, SeverityMedium},
			when{weakEvidence && c.Consequence == ConsequenceHigh, SeverityHigh},
			when{weakEvidence && c.Consequence == ConsequenceRegulated, SeverityCritical}), // K14
		pick(when{len(retention) > 0, SeverityHigh}, when{len(retention) > 0 && c.Consequence == ConsequenceRegulated, SeverityCritical}), // K15
	}
	n := 0
	for i, k := range workloadRiskTexts {
		if !f.active(k.b) {
			severities[i] = ""
		}
		if severities[i] != "" {
			n++
		}
	}
	out := make([]WorkloadRisk, 0, n)
	for i, k := range workloadRiskTexts {
		if severities[i] != "" {
			out = append(out, WorkloadRisk{ID: k.id, Severity: severities[i], Boundary: workloadBoundaryNames[k.b],
				Description: k.description, Mitigation: k.mitigation})
		}
	}
	return out
}

// workloadApprovalTexts is H1-H8, in catalogue order: each approval's id and decision
// (data, as workloadMissingTexts). H1's is for receipts only; workloadInstallationNeeded
// is H1's when a governed workspace is needed.
var workloadApprovalTexts = [...]struct{ id, decision string }{
	{"installation", "Approve installing receipts for this workload with the proposed resources (H1)."},
	{"system_access", "Grant the proposed write or admin access to these systems (H2)."},
	{"code_changes", "Approve code changes: once before first use; each merge or deployment per action (H3)."},
	{"external_messages", "Approve each message before it leaves the organisation (H4)."},
	{"spending", "Approve spending: each payment, or what exceeds the fixed limit when one is set (H5)."},
	{"identity_changes", "Approve each account creation and permission change (H6)."},
	{"data_deletion", "Approve each deletion of data (H7)."},
	{"regulated_data", "Approve the workload's use of regulated data and the handling rules for it (H8)."},
}

// workloadWholeScope is the scope of an approval that names no resource nor action.
const workloadWholeScope = "workload"

// workloadInstallationNeeded is H1's decision when the verdict is needed.
const workloadInstallationNeeded = "Approve installing a governed workspace for this workload with the proposed resources (H1)."

// approvals is H1-H8, only when something is to be installed.
func (f *workloadFacts) approvals(v WorkloadVerdict, triggers [5]bool) []WorkloadHumanApproval {
	if v == VerdictNotNeeded {
		return []WorkloadHumanApproval{}
	}
	w := &f.r.Workload
	// The approvals and their scopes are made on the stack, then copied to the heap each
	// with one allocation of the size they came to (making them at their bounds was a
	// sixth of the diagnosis's bytes). Every scope is a piece of one array (the resources
	// at most three times, the actions and the "workload" of an empty scope at most once
	// each), cut from the heap's copy at the end; each is capped at its end so that no
	// scope grows into the next.
	var approvalsOnStack [len(workloadApprovalTexts)]WorkloadHumanApproval
	var scopeSpans [len(workloadApprovalTexts)]workloadSpan
	var scopesOnStack [3*WorkloadProposedResourcesMax + workloadActionCount + len(workloadApprovalTexts)]string
	out, scopes := approvalsOnStack[:0], scopesOnStack[:0]
	since := func(start int) workloadSpan { return workloadSpan{start, len(scopes)} }
	resources := func(keep func(i int, r *WorkloadProposedResource) bool) workloadSpan {
		start := len(scopes)
		for i := range f.resources {
			if keep(i, &f.resources[i]) {
				scopes = append(scopes, f.resources[i].Resource)
			}
		}
		return since(start)
	}
	all := resources(func(int, *WorkloadProposedResource) bool { return true })
	writing := resources(func(_ int, r *WorkloadProposedResource) bool {
		return r.RequestedAccess == AccessWrite || r.RequestedAccess == AccessAdmin
	})
	regulated := resources(func(i int, _ *WorkloadProposedResource) bool { return f.resourceSystem[i].DataClass == DataRegulated })
	declared := func(acts ...WorkloadAction) workloadSpan {
		start := len(scopes)
		for _, a := range acts {
			if f.actions.has(a) {
				scopes = append(scopes, string(a))
			}
		}
		return since(start)
	}
	add := func(cond bool, h struct{ id, decision string }, role WorkloadOwnerRole, timing WorkloadApprovalTiming, scope workloadSpan) {
		if !cond {
			return
		}
		if scope.end == scope.start { // empty or not, an empty scope is "workload"
			start := len(scopes)
			scopes = append(scopes, workloadWholeScope)
			scope = since(start)
		}
		scope.end = min(scope.end, scope.start+WorkloadApprovalScopeMax)
		scopeSpans[len(out)] = scope
		out = append(out, WorkloadHumanApproval{ID: h.id, OwnerRole: role, Timing: timing, Decision: h.decision})
	}
	installation := workloadApprovalTexts[0]
	if v == VerdictNeeded {
		installation.decision = workloadInstallationNeeded
	}
	add(true, installation, OwnerWorkload, TimingBeforeInstallation, all)                                  // H1
	add(writing.end > writing.start, workloadApprovalTexts[1], OwnerSystem, TimingBeforeFirstUse, writing) // H2
	code := declared(ActionModifyCode, ActionMergeOrDeploy)
	codeTiming := TimingBeforeFirstUse
	if f.actions.has(ActionMergeOrDeploy) {
		codeTiming = TimingPerAction
	}
	add(code.end > code.start, workloadApprovalTexts[2], OwnerCode, codeTiming, code)                                                                  // H3
	add(f.actions.has(ActionSendExternalMessage), workloadApprovalTexts[3], OwnerCommunications, TimingPerAction, declared(ActionSendExternalMessage)) // H4
	spendTiming := TimingPerAction
	if w.Authority.BudgetControl == BudgetFixedLimit {
		spendTiming = TimingWhenThresholdExceeded
	}
	add(f.actions.has(ActionSpendFunds), workloadApprovalTexts[4], OwnerBudget, spendTiming, declared(ActionSpendFunds))                                                                                     // H5
	add(f.actions.has(ActionCreateAccount) || f.actions.has(ActionChangePermissions), workloadApprovalTexts[5], OwnerIdentityAdmin, TimingPerAction, declared(ActionCreateAccount, ActionChangePermissions)) // H6
	add(f.actions.has(ActionDeleteData), workloadApprovalTexts[6], OwnerData, TimingPerAction, declared(ActionDeleteData))                                                                                   // H7
	add(triggers[2], workloadApprovalTexts[7], OwnerData, TimingBeforeFirstUse, regulated)                                                                                                                   // H8
	heapScopes := slices.Clone(scopes)
	for i := range out {
		out[i].Scope = heapScopes[scopeSpans[i].start:scopeSpans[i].end:scopeSpans[i].end]
	}
	return slices.Clone(out)
}

// The fixed capabilities of an installation: receipts' (always), a coordination record's
// and a governed workspace's.
const (
	capabilityWorkReceipts       = "work_receipts"
	capabilityEvidenceRecords    = "evidence_records"
	capabilityLedgerVerification = "ledger_verification"
	capabilityCoordinationRecord = "coordination_record"
	capabilityHumanApprovals     = "human_approvals"
	capabilityScopedCredentials  = "scoped_credentials"
	capabilitySpendLimits        = "spend_limits"
)

// capabilities is what the installation gives the workload (K: fixed capabilities, one
// per proposed resource and one per approval), at most 7 + 15 + 10.
func (f *workloadFacts) capabilities(m WorkloadMode, approvals []WorkloadHumanApproval) []string {
	if m == ModeNone {
		return []string{}
	}
	fixed := [7]string{capabilityWorkReceipts, capabilityEvidenceRecords, capabilityLedgerVerification}
	n := 3
	if f.r.Workload.Coordination != CoordinationNone && f.active(wbAgents) {
		fixed[n] = capabilityCoordinationRecord
		n++
	}
	if m == ModeGovernedWorkspace {
		fixed[n], fixed[n+1] = capabilityHumanApprovals, capabilityScopedCredentials
		n += 2
		if f.actions.has(ActionSpendFunds) {
			fixed[n] = capabilitySpendLimits
			n++
		}
	}
	out := make([]string, 0, min(n+len(f.resources)+len(approvals), WorkloadCapabilitiesMax))
	out = append(out, fixed[:n]...)
	for _, r := range f.resources {
		out = append(out, workloadCapability(workloadResourceCapabilities, "resource:", r.Resource))
	}
	for _, a := range approvals {
		out = append(out, workloadCapability(workloadApprovalCapabilities, "approval:", a.ID))
	}
	return out[:min(len(out), WorkloadCapabilitiesMax)]
}

// workloadResourceCapabilities and workloadApprovalCapabilities are the capabilities of
// the resources named after a category and of the approvals, by that name and the
// approval's id, made once: a diagnosis names several, and each concatenation was an
// allocation.
var (
	workloadResourceCapabilities = func() map[string]string {
		m := map[string]string{}
		for _, c := range workloadCategories {
			m[string(c)] = "resource:" + string(c)
		}
		return m
	}()
	workloadApprovalCapabilities = func() map[string]string {
		m := map[string]string{}
		for _, h := range workloadApprovalTexts {
			m[h.id] = "approval:" + h.id
		}
		return m
	}()
)

// workloadCapability is kind+name, from made when it is there.
func workloadCapability(made map[string]string, kind, name string) string {
	if c, ok := made[name]; ok {
		return c
	}
	return kind + name
}

// workloadClip bounds a sentence of the result to WorkloadTextMaxLength characters (the rules
// write shorter ones; this only guards the bound).
func workloadClip(s string) string {
	// A string of no more bytes than the bound has no more runes: most skip the count.
	if len(s) <= WorkloadTextMaxLength || utf8.RuneCountInString(s) <= WorkloadTextMaxLength {
		return s
	}
	r := []rune(s)
	return string(r[:WorkloadTextMaxLength-1]) + "…"
}

// --- metadata (GET /doctor/workload) -----------------------------------------------------

// WorkloadDiagnosisInfo is what GET /doctor/workload serves: the schema version, the
// enumerations and bounds of the request and the result, and the scoring rules.
type WorkloadDiagnosisInfo struct {
	SchemaVersion string               `json:"schema_version" const:"workload-diagnosis/0.1"`
	Description   string               `json:"description"`
	Diagnose      string               `json:"diagnose" description:"The operation that diagnoses a workload."`
	Enumerations  WorkloadEnumerations `json:"enumerations"`
	Bounds        WorkloadBounds       `json:"bounds"`
	Scoring       WorkloadScoring      `json:"scoring"`
}

// WorkloadEnumerations are the allowed values of every enumerated member.
type WorkloadEnumerations struct {
	TimeHorizon         []string `json:"time_horizon" nullable:"false"`
	Coordination        []string `json:"coordination" nullable:"false"`
	Category            []string `json:"category" nullable:"false"`
	Access              []string `json:"access" nullable:"false"`
	SideEffect          []string `json:"side_effect" nullable:"false"`
	DataClass           []string `json:"data_class" nullable:"false"`
	Actions             []string `json:"actions" nullable:"false"`
	ApprovalPolicy      []string `json:"approval_policy" nullable:"false"`
	BudgetControl       []string `json:"budget_control" nullable:"false"`
	Evidence            []string `json:"evidence" nullable:"false"`
	Acceptance          []string `json:"acceptance" nullable:"false"`
	Consequence         []string `json:"consequence" nullable:"false"`
	Retention           []string `json:"retention" nullable:"false"`
	BoundaryState       []string `json:"boundary_state" nullable:"false"`
	Verdict             []string `json:"verdict" nullable:"false"`
	Mode                []string `json:"mode" nullable:"false"`
	Severity            []string `json:"severity" nullable:"false"`
	OwnerRole           []string `json:"owner_role" nullable:"false"`
	Timing              []string `json:"timing" nullable:"false"`
	ApprovalHandoffKind []string `json:"approval_handoff_kind" nullable:"false"`
}

// WorkloadBounds are the bounds of the request and of the result.
type WorkloadBounds struct {
	NameMaxLength          int `json:"name_max_length"`
	OutcomeMaxLength       int `json:"outcome_max_length"`
	AgentCountMin          int `json:"agent_count_min"`
	AgentCountMax          int `json:"agent_count_max"`
	SystemsMax             int `json:"systems_max"`
	ActionsMax             int `json:"actions_max"`
	IssuesMax              int `json:"issues_max"`
	TextMaxLength          int `json:"text_max_length"`
	RationaleMin           int `json:"rationale_min"`
	RationaleMax           int `json:"rationale_max"`
	MissingCapabilitiesMax int `json:"missing_capabilities_max"`
	ProposedResourcesMax   int `json:"proposed_resources_max"`
	WhatRemainsLocalMax    int `json:"what_remains_local_max"`
	RisksMax               int `json:"risks_max"`
	HumanApprovalsMax      int `json:"human_approvals_max"`
	CapabilitiesMax        int `json:"capabilities_after_installation_max"`
	ScopeIntentsMax        int `json:"scope_intents_max"`
	ApprovalScopeMax       int `json:"approval_scope_max"`
}

// WorkloadScoring is the scoring table.
type WorkloadScoring struct {
	Scale      string         `json:"scale"`
	PresentAt  int            `json:"present_at"`
	CriticalAt int            `json:"critical_at"`
	Rules      []WorkloadRule `json:"rules" nullable:"false"`
}

// WorkloadRule is one rule of the scoring table.
type WorkloadRule struct {
	ID     string `json:"id"`
	Group  string `json:"group" description:"time, agents, systems, authority, accountability, state, verdict, resources, missing_capabilities, what_remains_local, risks, human_approvals"`
	When   string `json:"when"`
	Effect string `json:"effect"`
}

func workloadEnumStrings[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// WorkloadInfo returns the metadata of the workload diagnosis.
func WorkloadInfo() WorkloadDiagnosisInfo {
	return WorkloadDiagnosisInfo{
		SchemaVersion: WorkloadSchemaVersion,
		Description: "Scores a workload across time, agents, systems, authority and accountability and recommends none, " +
			"receipt_only or governed_workspace. Account-free and deterministic; nothing is stored.",
		Diagnose: "POST /doctor/workload",
		Enumerations: WorkloadEnumerations{
			TimeHorizon: workloadEnumStrings(workloadTimeHorizons), Coordination: workloadEnumStrings(workloadCoordinations),
			Category: workloadEnumStrings(workloadCategories), Access: workloadEnumStrings(workloadAccesses),
			SideEffect: workloadEnumStrings(workloadSideEffects), DataClass: workloadEnumStrings(workloadDataClasses),
			Actions: workloadEnumStrings(workloadActions), ApprovalPolicy: workloadEnumStrings(workloadApprovalPolicies),
			BudgetControl: workloadEnumStrings(workloadBudgetControls), Evidence: workloadEnumStrings(workloadEvidences),
			Acceptance: workloadEnumStrings(workloadAcceptances), Consequence: workloadEnumStrings(workloadConsequences),
			Retention: workloadEnumStrings(workloadRetentions), BoundaryState: workloadEnumStrings(workloadBoundaryStates),
			Verdict: workloadEnumStrings(workloadVerdicts), Mode: workloadEnumStrings(workloadModes), Severity: workloadEnumStrings(workloadSeverities),
			OwnerRole: workloadEnumStrings(workloadOwnerRoles), Timing: workloadEnumStrings(workloadApprovalTimings),
			ApprovalHandoffKind: workloadEnumStrings(workloadHandoffKinds),
		},
		Bounds: WorkloadBounds{
			NameMaxLength: WorkloadNameMaxLength, OutcomeMaxLength: WorkloadOutcomeMaxLength,
			AgentCountMin: WorkloadAgentCountMin, AgentCountMax: WorkloadAgentCountMax, SystemsMax: WorkloadSystemsMax,
			ActionsMax: WorkloadActionsMax, IssuesMax: WorkloadIssuesMax, TextMaxLength: WorkloadTextMaxLength,
			RationaleMin: WorkloadRationaleMin, RationaleMax: WorkloadRationaleMax,
			MissingCapabilitiesMax: WorkloadMissingCapabilitiesMax, ProposedResourcesMax: WorkloadProposedResourcesMax,
			WhatRemainsLocalMax: WorkloadLocalItemsMax, RisksMax: WorkloadRisksMax, HumanApprovalsMax: WorkloadHumanApprovalsMax,
			CapabilitiesMax: WorkloadCapabilitiesMax, ScopeIntentsMax: WorkloadScopeIntentsMax, ApprovalScopeMax: WorkloadApprovalScopeMax,
		},
		Scoring: WorkloadScoring{Scale: "integer points 0..100 per boundary", PresentAt: WorkloadPresentAt,
			CriticalAt: WorkloadCriticalAt, Rules: WorkloadScoringRules()},
	}
}

// WorkloadScoringRules returns every rule of the diagnosis, by id, made from the same
// tables Diagnose scores with.
func WorkloadScoringRules() []WorkloadRule {
	var out []WorkloadRule
	add := func(id, group, when, effect string) {
		out = append(out, WorkloadRule{ID: id, Group: group, When: when, Effect: effect})
	}
	points := func(p int) string { return fmt.Sprintf("%d points", p) }
	plus := func(p int) string { return fmt.Sprintf("+%d", p) }
	for _, v := range workloadTimeHorizons {
		add(workloadTimePoints[v].id, "time", "time_horizon "+string(v), points(workloadTimePoints[v].points))
	}
	for i, row := range workloadAgentCountPoints {
		when := fmt.Sprintf("agent_count %d", row.from)
		if i+1 < len(workloadAgentCountPoints) && workloadAgentCountPoints[i+1].from-1 > row.from {
			when = fmt.Sprintf("agent_count %d-%d", row.from, workloadAgentCountPoints[i+1].from-1)
		} else if i+1 == len(workloadAgentCountPoints) {
			when = fmt.Sprintf("agent_count %d-%d", row.from, WorkloadAgentCountMax)
		}
		add(row.id, "agents", when, points(row.points))
	}
	for _, v := range workloadCoordinations {
		add(workloadCoordinationPoints[v].id, "agents", "coordination "+string(v), plus(workloadCoordinationPoints[v].points))
	}
	add("A9", "agents", "always", "agents = agent_count points + coordination points (at most 90)")
	add("S1", "systems", "no system declared", points(0))
	for _, v := range workloadAccesses {
		add(workloadAccessPoints[v].id, "systems", "a system's access "+string(v), points(workloadAccessPoints[v].points))
	}
	for _, v := range workloadSideEffects {
		add(workloadSideEffectPoints[v].id, "systems", "a system's side_effect "+string(v), plus(workloadSideEffectPoints[v].points))
	}
	for _, v := range workloadDataClasses {
		add(workloadDataClassPoints[v].id, "systems", "a system's data_class "+string(v), plus(workloadDataClassPoints[v].points))
	}
	add("S13", "systems", "one or more systems", fmt.Sprintf("systems = the highest system's points + %d per further system (at most +%d), capped at %d",
		workloadSystemBreadthPoints, workloadSystemBreadthMax, WorkloadMaxPoints))
	for _, v := range workloadActions {
		add(workloadActionPoints[v].id, "authority", "action "+string(v)+" declared", points(workloadActionPoints[v].points))
	}
	add("U12", "authority", fmt.Sprintf("further consequential actions (%d points or more)", workloadConsequentialActionPoints),
		fmt.Sprintf("+%d each, at most +%d", workloadActionBreadthPoints, workloadActionBreadthMax))
	add("U13", "authority", "a consequential action and approval_policy per_action (not_applicable: only without one)", plus(0))
	for _, v := range []WorkloadApprovalPolicy{ApprovalSensitiveActions, ApprovalExceptionsOnly, ApprovalUndefined} {
		add(workloadApprovalPoints[v].id, "authority", "a consequential action and approval_policy "+string(v), plus(workloadApprovalPoints[v].points))
	}
	for _, v := range []WorkloadBudgetControl{BudgetFixedLimit, BudgetDynamicLimit, BudgetUndefined, BudgetUnbounded} {
		add(workloadBudgetPoints[v].id, "authority", "spend_funds and budget_control "+string(v), plus(workloadBudgetPoints[v].points))
	}
	add("U21", "authority", "always", fmt.Sprintf("authority = the highest action's points + U12 + U13-U16 + U17-U20, capped at %d; 0 without actions", WorkloadMaxPoints))
	for _, v := range workloadConsequences {
		add(workloadConsequencePoints[v].id, "accountability", "consequence "+string(v), points(workloadConsequencePoints[v].points))
	}
	for _, v := range []WorkloadEvidence{EvidenceVerifiedOutcome, EvidenceArtifact, EvidenceActivityLog, EvidenceNone} {
		add(workloadEvidencePoints[v].id, "accountability", "evidence "+string(v), plus(workloadEvidencePoints[v].points))
	}
	for _, v := range []WorkloadAcceptance{AcceptanceHuman, AcceptanceDownstreamSystem, AcceptanceAgent, AcceptanceNone} {
		add(workloadAcceptancePoints[v].id, "accountability", "acceptance "+string(v), plus(workloadAcceptancePoints[v].points))
	}
	add("C13", "accountability", "retention none with consequence high or regulated", plus(workloadRetentionGapPoints))
	add("C14", "accountability", "retention other than regulated with consequence regulated", plus(workloadRetentionGapPoints))
	add("C15", "accountability", "always", fmt.Sprintf("accountability = C1-C4 + C5-C8 + C9-C12 + C13 + C14, capped at %d", WorkloadMaxPoints))
	add("B1", "state", fmt.Sprintf("score below %d", WorkloadPresentAt), "absent")
	add("B2", "state", fmt.Sprintf("score %d-%d", WorkloadPresentAt, WorkloadCriticalAt-1), "present")
	add("B3", "state", fmt.Sprintf("score %d or more", WorkloadCriticalAt), "critical")
	for _, t := range workloadTriggers {
		add(t.id, "verdict", t.phrase, "needed, governed_workspace")
	}
	add("V6", "verdict", "none of V1-V5, at least one boundary active", "conditional, receipt_only")
	add("V7", "verdict", "no boundary active", "not_needed, none")
	add("P1", "resources", "verdict needed or conditional", "one resource per declared system, in declared order, named after its category (#2, #3 for repeats); none otherwise")
	add("P2", "resources", "always", "needed access: the highest access the declared actions touching the category need (read when none touches it)")
	add("P3", "resources", "always", "requested_access = the lower of the needed and the declared access")
	add("P4", "resources", "always", "scope_intents: the declared actions that touch the category, in enumeration order")
	add("P5", "resources", "always", "credential_input_required, except for local_files and for read access to public data")
	for _, m := range []struct{ id, when string }{
		{"M1 durable_state", "time_horizon multi_day, recurring or continuous"},
		{"M2 run_schedule", "time_horizon recurring or continuous"},
		{"M3 agent_identity", "agent_count 2 or more"},
		{"M4 coordination_record", "coordination other than none"},
		{"M5 scoped_credentials", "a system with write or admin access"},
		{"M6 data_handling", "a system with confidential or regulated data"},
		{"M7 side_effect_guard", "a system with an external or irreversible side effect"},
		{"M8 access_for_actions", "a declared action needs more access than its system declares (reported even when systems is absent)"},
		{"M9 approval_policy", "a consequential action with approval_policy exceptions_only or undefined"},
		{"M10 spend_limit", "spend_funds with budget_control other than fixed_limit"},
		{"M11 outcome_evidence", "consequence above low with evidence none or activity_log"},
		{"M12 outcome_acceptance", "consequence above low with acceptance none or agent"},
		{"M13 retention_policy", "C13 or C14 applies"},
	} {
		id, name, _ := strings.Cut(m.id, " ")
		add(id, "missing_capabilities", m.when+", and its boundary active", name)
	}
	for _, l := range []struct{ id, when string }{
		{"L1 workload_description", "always"}, {"L2 credentials", "a proposed resource requires credential input"},
		{"L3 local_files", "a local_files system"}, {"L4 drafts", "draft declared"}, {"L5 research_notes", "research declared"},
		{"L6 agent_reasoning", "verdict needed or conditional"}, {"L7 regulated_records", "V3 holds"}, {"L8 everything", "verdict not_needed"},
	} {
		id, name, _ := strings.Cut(l.id, " ")
		add(id, "what_remains_local", l.when, name)
	}
	for _, k := range []struct{ id, when, effect string }{
		{"K1 unattended_duration", "time_horizon recurring / continuous", "medium / high"},
		{"K2 stale_context", "time_horizon multi_day", "low"},
		{"K3 duplicated_work", "agent_count 2 or more with coordination none", "medium"},
		{"K4 lost_handoff", "coordination handoff or hierarchical", "medium"},
		{"K5 conflicting_writes", "coordination parallel and a system with write or admin access", "high"},
		{"K6 excess_privilege", "a system declares more access than proposed / that system declares admin", "medium / high"},
		{"K7 irreversible_change", "a write or admin system with an irreversible side effect / with confidential or regulated data", "high / critical"},
		{"K8 external_exposure", "a write or admin system with an external side effect / with confidential or regulated data", "medium / high"},
		{"K9 data_exposure", "a system with confidential / regulated data", "medium / high"},
		{"K10 unapproved_action", "a consequential action with approval_policy exceptions_only / undefined", "high / critical"},
		{"K11 uncontrolled_spend", "spend_funds with budget_control fixed_limit / dynamic_limit / undefined / unbounded", "low / medium / high / critical"},
		{"K12 privilege_escalation", "create_account or change_permissions / with approval_policy exceptions_only or undefined", "high / critical"},
		{"K13 data_loss", "delete_data / with regulated data, consequence or retention", "high / critical"},
		{"K14 unverifiable_outcome", "evidence none or activity_log with consequence moderate / high / regulated", "medium / high / critical"},
		{"K15 retention_gap", "C13 or C14 / with consequence regulated", "high / critical"},
	} {
		id, name, _ := strings.Cut(k.id, " ")
		add(id, "risks", k.when+", and its boundary active", name+": "+k.effect)
	}
	for _, h := range []struct{ id, when, effect string }{
		{"H1 installation", "verdict needed or conditional", "workload_owner, before_installation, scope: the proposed resources"},
		{"H2 system_access", "a proposed resource with write or admin access", "system_owner, before_first_use, scope: those resources"},
		{"H3 code_changes", "modify_code or merge_or_deploy", "code_owner, per_action with merge_or_deploy, else before_first_use"},
		{"H4 external_messages", "send_external_message", "communications_owner, per_action"},
		{"H5 spending", "spend_funds", "budget_owner, when_threshold_exceeded with fixed_limit, else per_action"},
		{"H6 identity_changes", "create_account or change_permissions", "identity_admin, per_action"},
		{"H7 data_deletion", "delete_data", "data_owner, per_action"},
		{"H8 regulated_data", "V3 holds", "data_owner, before_first_use, scope: the regulated systems' resources"},
	} {
		id, name, _ := strings.Cut(h.id, " ")
		add(id, "human_approvals", h.when+" (never when not_needed)", name+": "+h.effect)
	}
	return out
}
