package accountable_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/accountablework/accountable"
)

// wlBase is the request every rule row starts from: nothing crosses a boundary.
func wlBase() accountable.WorkloadRequest {
	return accountable.WorkloadRequest{
		SchemaVersion: accountable.WorkloadSchemaVersion,
		Workload: accountable.Workload{
			Name: "Weekly digest", Outcome: "A summary of the week's tickets", TimeHorizon: accountable.HorizonSingleTurn,
			AgentCount: 1, Coordination: accountable.CoordinationNone, Systems: []accountable.WorkloadSystem{},
			Authority: accountable.WorkloadAuthority{Actions: []accountable.WorkloadAction{},
				ApprovalPolicy: accountable.ApprovalNotApplicable, BudgetControl: accountable.BudgetNotApplicable},
			Accountability: accountable.WorkloadAccountability{Evidence: accountable.EvidenceVerifiedOutcome,
				Acceptance: accountable.AcceptanceHuman, Consequence: accountable.ConsequenceLow, Retention: accountable.RetentionLongTerm},
		},
	}
}

type wlMod func(*accountable.WorkloadRequest)

func horizon(h accountable.WorkloadTimeHorizon) wlMod {
	return func(r *accountable.WorkloadRequest) { r.Workload.TimeHorizon = h }
}

func agents(n int64, c accountable.WorkloadCoordination) wlMod {
	return func(r *accountable.WorkloadRequest) { r.Workload.AgentCount, r.Workload.Coordination = n, c }
}

func system(c accountable.WorkloadSystemCategory, a accountable.WorkloadAccess, s accountable.WorkloadSideEffect, d accountable.WorkloadDataClass) wlMod {
	return func(r *accountable.WorkloadRequest) {
		r.Workload.Systems = append(r.Workload.Systems, accountable.WorkloadSystem{Category: c, Access: a, SideEffect: s, DataClass: d})
	}
}

// readSystem is a system that adds 10 points and nothing else.
func readSystem(c accountable.WorkloadSystemCategory) wlMod {
	return system(c, accountable.AccessRead, accountable.SideEffectNone, accountable.DataPublic)
}

func actions(p accountable.WorkloadApprovalPolicy, b accountable.WorkloadBudgetControl, acts ...accountable.WorkloadAction) wlMod {
	return func(r *accountable.WorkloadRequest) {
		r.Workload.Authority = accountable.WorkloadAuthority{Actions: append([]accountable.WorkloadAction{}, acts...), ApprovalPolicy: p, BudgetControl: b}
	}
}

// act declares acts with per-action approvals and a fixed limit: the actions' own points.
func act(acts ...accountable.WorkloadAction) wlMod {
	return actions(accountable.ApprovalPerAction, accountable.BudgetFixedLimit, acts...)
}

func account(e accountable.WorkloadEvidence, a accountable.WorkloadAcceptance, c accountable.WorkloadConsequence, r accountable.WorkloadRetention) wlMod {
	return func(q *accountable.WorkloadRequest) {
		q.Workload.Accountability = accountable.WorkloadAccountability{Evidence: e, Acceptance: a, Consequence: c, Retention: r}
	}
}

func consequence(c accountable.WorkloadConsequence, r accountable.WorkloadRetention) wlMod {
	return account(accountable.EvidenceVerifiedOutcome, accountable.AcceptanceHuman, c, r)
}

type wlCheck func(t *testing.T, d accountable.WorkloadDiagnosis)

func boundaryOf(d accountable.WorkloadDiagnosis, name string) accountable.WorkloadBoundary {
	switch name {
	case "time":
		return d.Boundaries.Time
	case "agents":
		return d.Boundaries.Agents
	case "systems":
		return d.Boundaries.Systems
	case "authority":
		return d.Boundaries.Authority
	case "accountability":
		return d.Boundaries.Accountability
	}
	panic(name)
}

func score(boundary string, want int) wlCheck {
	return func(t *testing.T, d accountable.WorkloadDiagnosis) {
		t.Helper()
		if b := boundaryOf(d, boundary); b.Score != want {
			t.Errorf("%s score %d, want %d (%s)", boundary, b.Score, want, b.Reason)
		}
	}
}

func state(boundary string, want accountable.WorkloadBoundaryState) wlCheck {
	return func(t *testing.T, d accountable.WorkloadDiagnosis) {
		t.Helper()
		if b := boundaryOf(d, boundary); b.State != want {
			t.Errorf("%s state %s, want %s (%d points)", boundary, b.State, want, b.Score)
		}
	}
}

func verdict(v accountable.WorkloadVerdict, m accountable.WorkloadMode, rule string) wlCheck {
	return func(t *testing.T, d accountable.WorkloadDiagnosis) {
		t.Helper()
		r := d.Recommendation
		if r.Verdict != v || r.Mode != m || !strings.Contains(r.Rationale[0], rule) {
			t.Errorf("verdict %s/%s (%s), want %s/%s by %s", r.Verdict, r.Mode, r.Rationale[0], v, m, rule)
		}
	}
}

func capability(id string, want bool) wlCheck {
	return func(t *testing.T, d accountable.WorkloadDiagnosis) {
		t.Helper()
		got := slices.ContainsFunc(d.MissingCapabilities, func(c accountable.WorkloadMissingCapability) bool { return c.ID == id })
		if got != want {
			t.Errorf("missing capability %s: %v, want %v: %+v", id, got, want, d.MissingCapabilities)
		}
	}
}

func local(item string, want bool) wlCheck {
	return func(t *testing.T, d accountable.WorkloadDiagnosis) {
		t.Helper()
		got := slices.ContainsFunc(d.WhatRemainsLocal, func(l accountable.WorkloadLocalItem) bool { return l.Item == item })
		if got != want {
			t.Errorf("what remains local %s: %v, want %v: %+v", item, got, want, d.WhatRemainsLocal)
		}
	}
}

// risk checks the severity of a risk ("" when it must not be reported).
func risk(id string, want accountable.WorkloadSeverity) wlCheck {
	return func(t *testing.T, d accountable.WorkloadDiagnosis) {
		t.Helper()
		var got accountable.WorkloadSeverity
		for _, r := range d.Risks {
			if r.ID == id {
				got = r.Severity
			}
		}
		if got != want {
			t.Errorf("risk %s: severity %q, want %q: %+v", id, got, want, d.Risks)
		}
	}
}

// approval checks an approval's role and timing (role "" when it must not be asked).
func approval(id string, role accountable.WorkloadOwnerRole, timing accountable.WorkloadApprovalTiming, scope ...string) wlCheck {
	return func(t *testing.T, d accountable.WorkloadDiagnosis) {
		t.Helper()
		var got *accountable.WorkloadHumanApproval
		for i := range d.HumanApprovals {
			if d.HumanApprovals[i].ID == id {
				got = &d.HumanApprovals[i]
			}
		}
		switch {
		case role == "" && got != nil:
			t.Errorf("approval %s asked: %+v", id, *got)
		case role == "":
		case got == nil:
			t.Errorf("approval %s not asked: %+v", id, d.HumanApprovals)
		case got.OwnerRole != role || got.Timing != timing || scope != nil && !slices.Equal(got.Scope, scope):
			t.Errorf("approval %s: %+v, want %s %s %v", id, *got, role, timing, scope)
		}
		if !slices.Contains(d.ApprovalHandoff.ApprovalIDs, id) && got != nil {
			t.Errorf("approval %s not in the handoff %+v", id, d.ApprovalHandoff)
		}
	}
}

func resources(want ...string) wlCheck {
	return func(t *testing.T, d accountable.WorkloadDiagnosis) {
		t.Helper()
		var got []string
		for _, r := range d.ProposedResources {
			got = append(got, fmt.Sprintf("%s %s %v %v", r.Resource, r.RequestedAccess, r.ScopeIntents, r.CredentialInputRequired))
		}
		if !slices.Equal(got, want) {
			t.Errorf("resources\n got %q\nwant %q", got, want)
		}
	}
}

// wlRules are the scoring table, one row per rule (docs/workload.md, Scoring rules).
var wlRules = []struct {
	rule   string
	mods   []wlMod
	checks []wlCheck
}{
	{"T1", []wlMod{horizon(accountable.HorizonSingleTurn)}, []wlCheck{score("time", 0)}},
	{"T2", []wlMod{horizon(accountable.HorizonSingleSession)}, []wlCheck{score("time", 20), state("time", accountable.BoundaryAbsent)}},
	{"T3", []wlMod{horizon(accountable.HorizonMultiDay)}, []wlCheck{score("time", 50), state("time", accountable.BoundaryPresent)}},
	{"T4", []wlMod{horizon(accountable.HorizonRecurring)}, []wlCheck{score("time", 60)}},
	{"T5", []wlMod{horizon(accountable.HorizonContinuous)}, []wlCheck{score("time", 80), state("time", accountable.BoundaryCritical)}},

	{"A1", []wlMod{agents(1, accountable.CoordinationNone)}, []wlCheck{score("agents", 0)}},
	{"A2", []wlMod{agents(3, accountable.CoordinationNone)}, []wlCheck{score("agents", 30), state("agents", accountable.BoundaryAbsent)}},
	{"A3", []wlMod{agents(10, accountable.CoordinationNone)}, []wlCheck{score("agents", 45)}},
	{"A4", []wlMod{agents(11, accountable.CoordinationNone)}, []wlCheck{score("agents", 60)}},
	{"A5", []wlMod{agents(4, accountable.CoordinationNone)}, []wlCheck{score("agents", 45)}},
	{"A6", []wlMod{agents(1, accountable.CoordinationHandoff)}, []wlCheck{score("agents", 15)}},
	{"A7", []wlMod{agents(2, accountable.CoordinationParallel)}, []wlCheck{score("agents", 50)}},
	{"A8", []wlMod{agents(4, accountable.CoordinationHierarchical)}, []wlCheck{score("agents", 75), state("agents", accountable.BoundaryCritical)}},
	{"A9", []wlMod{agents(100, accountable.CoordinationHierarchical)}, []wlCheck{score("agents", 90)}},

	{"S1", nil, []wlCheck{score("systems", 0)}},
	{"S2", []wlMod{readSystem(accountable.CategoryOther)}, []wlCheck{score("systems", 10)}},
	{"S3", []wlMod{system(accountable.CategoryOther, accountable.AccessWrite, accountable.SideEffectNone, accountable.DataPublic)},
		[]wlCheck{score("systems", 35), state("systems", accountable.BoundaryPresent)}},
	{"S4", []wlMod{system(accountable.CategoryOther, accountable.AccessAdmin, accountable.SideEffectNone, accountable.DataPublic)}, []wlCheck{score("systems", 50)}},
	{"S5", []wlMod{system(accountable.CategoryOther, accountable.AccessRead, accountable.SideEffectNone, accountable.DataPublic)}, []wlCheck{score("systems", 10)}},
	{"S6", []wlMod{system(accountable.CategoryOther, accountable.AccessRead, accountable.SideEffectReversible, accountable.DataPublic)}, []wlCheck{score("systems", 20)}},
	{"S7", []wlMod{system(accountable.CategoryOther, accountable.AccessRead, accountable.SideEffectExternal, accountable.DataPublic)}, []wlCheck{score("systems", 35)}},
	{"S8", []wlMod{system(accountable.CategoryOther, accountable.AccessRead, accountable.SideEffectIrreversible, accountable.DataPublic)}, []wlCheck{score("systems", 50)}},
	{"S9", []wlMod{system(accountable.CategoryOther, accountable.AccessRead, accountable.SideEffectNone, accountable.DataPublic)}, []wlCheck{score("systems", 10)}},
	{"S10", []wlMod{system(accountable.CategoryOther, accountable.AccessRead, accountable.SideEffectNone, accountable.DataInternal)}, []wlCheck{score("systems", 15)}},
	{"S11", []wlMod{system(accountable.CategoryOther, accountable.AccessRead, accountable.SideEffectNone, accountable.DataConfidential)}, []wlCheck{score("systems", 25)}},
	{"S12", []wlMod{system(accountable.CategoryOther, accountable.AccessRead, accountable.SideEffectNone, accountable.DataRegulated)}, []wlCheck{score("systems", 40)}},
	{"S13", []wlMod{readSystem(accountable.CategoryBrowser), readSystem(accountable.CategoryCRM),
		system(accountable.CategoryOther, accountable.AccessRead, accountable.SideEffectNone, accountable.DataConfidential)},
		[]wlCheck{score("systems", 35)}}, // the highest (25) + 2 further systems
	{"S13", []wlMod{readSystem(accountable.CategoryBrowser), readSystem(accountable.CategoryCRM), readSystem(accountable.CategoryDatabase),
		readSystem(accountable.CategoryFinance), readSystem(accountable.CategoryIdentity), readSystem(accountable.CategoryMessaging), readSystem(accountable.CategoryOther)},
		[]wlCheck{score("systems", 30)}}, // breadth at most +20
	{"S13", []wlMod{system(accountable.CategoryOther, accountable.AccessAdmin, accountable.SideEffectIrreversible, accountable.DataRegulated)},
		[]wlCheck{score("systems", 100), state("systems", accountable.BoundaryCritical)}}, // 120 capped

	{"U1", []wlMod{act(accountable.ActionResearch)}, []wlCheck{score("authority", 0)}},
	{"U2", []wlMod{act(accountable.ActionDraft)}, []wlCheck{score("authority", 0)}},
	{"U3", []wlMod{act(accountable.ActionReadInternalData)}, []wlCheck{score("authority", 5)}},
	{"U4", []wlMod{act(accountable.ActionWriteInternalRecords)}, []wlCheck{score("authority", 20)}},
	{"U5", []wlMod{act(accountable.ActionModifyCode)}, []wlCheck{score("authority", 30)}},
	{"U6", []wlMod{act(accountable.ActionSendExternalMessage)}, []wlCheck{score("authority", 35)}},
	{"U7", []wlMod{act(accountable.ActionMergeOrDeploy)}, []wlCheck{score("authority", 40)}},
	{"U8", []wlMod{act(accountable.ActionCreateAccount)}, []wlCheck{score("authority", 40)}},
	{"U9", []wlMod{act(accountable.ActionDeleteData)}, []wlCheck{score("authority", 45)}},
	{"U10", []wlMod{act(accountable.ActionSpendFunds)}, []wlCheck{score("authority", 50)}},
	{"U11", []wlMod{act(accountable.ActionChangePermissions)}, []wlCheck{score("authority", 50)}},
	{"U12", []wlMod{act(accountable.ActionResearch, accountable.ActionWriteInternalRecords, accountable.ActionModifyCode, accountable.ActionDeleteData)},
		[]wlCheck{score("authority", 55)}}, // 45 + 2 further consequential actions (research is not one)
	{"U12", []wlMod{act(accountable.ActionWriteInternalRecords, accountable.ActionModifyCode, accountable.ActionDeleteData,
		accountable.ActionMergeOrDeploy, accountable.ActionSendExternalMessage)}, []wlCheck{score("authority", 60)}}, // at most +15
	{"U13", []wlMod{actions(accountable.ApprovalPerAction, accountable.BudgetNotApplicable, accountable.ActionModifyCode)}, []wlCheck{score("authority", 30)}},
	{"U13", []wlMod{actions(accountable.ApprovalUndefined, accountable.BudgetUndefined, accountable.ActionResearch, accountable.ActionReadInternalData)},
		[]wlCheck{score("authority", 5)}}, // no consequential action: the policy adds nothing
	{"U14", []wlMod{actions(accountable.ApprovalSensitiveActions, accountable.BudgetNotApplicable, accountable.ActionModifyCode)}, []wlCheck{score("authority", 35)}},
	{"U15", []wlMod{actions(accountable.ApprovalExceptionsOnly, accountable.BudgetNotApplicable, accountable.ActionModifyCode)}, []wlCheck{score("authority", 45)}},
	{"U16", []wlMod{actions(accountable.ApprovalUndefined, accountable.BudgetNotApplicable, accountable.ActionModifyCode)}, []wlCheck{score("authority", 55)}},
	{"U17", []wlMod{actions(accountable.ApprovalPerAction, accountable.BudgetFixedLimit, accountable.ActionSpendFunds)}, []wlCheck{score("authority", 50)}},
	{"U18", []wlMod{actions(accountable.ApprovalPerAction, accountable.BudgetDynamicLimit, accountable.ActionSpendFunds)}, []wlCheck{score("authority", 60)}},
	{"U19", []wlMod{actions(accountable.ApprovalPerAction, accountable.BudgetUndefined, accountable.ActionSpendFunds)},
		[]wlCheck{score("authority", 75), state("authority", accountable.BoundaryCritical)}},
	{"U20", []wlMod{actions(accountable.ApprovalPerAction, accountable.BudgetUnbounded, accountable.ActionSpendFunds)}, []wlCheck{score("authority", 85)}},
	{"U21", []wlMod{actions(accountable.ApprovalUndefined, accountable.BudgetUnbounded, accountable.ActionSpendFunds, accountable.ActionChangePermissions)},
		[]wlCheck{score("authority", 100)}}, // 50 + 5 + 25 + 35 = 115, capped
	{"U21", []wlMod{actions(accountable.ApprovalUndefined, accountable.BudgetUnbounded)}, []wlCheck{score("authority", 0)}}, // no action

	{"C1", []wlMod{consequence(accountable.ConsequenceLow, accountable.RetentionNone)}, []wlCheck{score("accountability", 0)}},
	{"C2", []wlMod{consequence(accountable.ConsequenceModerate, accountable.RetentionNone)}, []wlCheck{score("accountability", 25)}},
	{"C3", []wlMod{consequence(accountable.ConsequenceHigh, accountable.RetentionShortTerm)},
		[]wlCheck{score("accountability", 45), state("accountability", accountable.BoundaryPresent)}},
	{"C4", []wlMod{consequence(accountable.ConsequenceRegulated, accountable.RetentionRegulated)}, []wlCheck{score("accountability", 60)}},
	{"C5", []wlMod{account(accountable.EvidenceVerifiedOutcome, accountable.AcceptanceHuman, accountable.ConsequenceLow, accountable.RetentionNone)}, []wlCheck{score("accountability", 0)}},
	{"C6", []wlMod{account(accountable.EvidenceArtifact, accountable.AcceptanceHuman, accountable.ConsequenceLow, accountable.RetentionNone)}, []wlCheck{score("accountability", 5)}},
	{"C7", []wlMod{account(accountable.EvidenceActivityLog, accountable.AcceptanceHuman, accountable.ConsequenceLow, accountable.RetentionNone)}, []wlCheck{score("accountability", 10)}},
	{"C8", []wlMod{account(accountable.EvidenceNone, accountable.AcceptanceHuman, accountable.ConsequenceLow, accountable.RetentionNone)}, []wlCheck{score("accountability", 15)}},
	{"C9", []wlMod{account(accountable.EvidenceVerifiedOutcome, accountable.AcceptanceHuman, accountable.ConsequenceLow, accountable.RetentionNone)}, []wlCheck{score("accountability", 0)}},
	{"C10", []wlMod{account(accountable.EvidenceVerifiedOutcome, accountable.AcceptanceDownstreamSystem, accountable.ConsequenceLow, accountable.RetentionNone)}, []wlCheck{score("accountability", 5)}},
	{"C11", []wlMod{account(accountable.EvidenceVerifiedOutcome, accountable.AcceptanceAgent, accountable.ConsequenceLow, accountable.RetentionNone)}, []wlCheck{score("accountability", 10)}},
	{"C12", []wlMod{account(accountable.EvidenceVerifiedOutcome, accountable.AcceptanceNone, accountable.ConsequenceLow, accountable.RetentionNone)}, []wlCheck{score("accountability", 15)}},
	{"C13", []wlMod{consequence(accountable.ConsequenceHigh, accountable.RetentionNone)}, []wlCheck{score("accountability", 55)}},
	{"C14", []wlMod{consequence(accountable.ConsequenceRegulated, accountable.RetentionLongTerm)},
		[]wlCheck{score("accountability", 70), state("accountability", accountable.BoundaryCritical)}},
	{"C14", []wlMod{consequence(accountable.ConsequenceRegulated, accountable.RetentionNone)}, []wlCheck{score("accountability", 80)}}, // with C13
	{"C15", []wlMod{account(accountable.EvidenceNone, accountable.AcceptanceNone, accountable.ConsequenceRegulated, accountable.RetentionNone)},
		[]wlCheck{score("accountability", 100)}}, // 110 capped

	{"B1", []wlMod{agents(3, accountable.CoordinationNone)}, []wlCheck{state("agents", accountable.BoundaryAbsent)}}, // 30
	{"B2", []wlMod{readSystem(accountable.CategoryOther), horizon(accountable.HorizonMultiDay)}, []wlCheck{state("time", accountable.BoundaryPresent)}},
	{"B2", []wlMod{system(accountable.CategoryOther, accountable.AccessWrite, accountable.SideEffectNone, accountable.DataPublic)},
		[]wlCheck{state("systems", accountable.BoundaryPresent)}}, // 35 exactly
	{"B3", []wlMod{consequence(accountable.ConsequenceRegulated, accountable.RetentionLongTerm)}, []wlCheck{state("accountability", accountable.BoundaryCritical)}}, // 70 exactly

	{"V1", []wlMod{system(accountable.CategoryOther, accountable.AccessWrite, accountable.SideEffectNone, accountable.DataPublic)},
		[]wlCheck{verdict(accountable.VerdictNeeded, accountable.ModeGovernedWorkspace, "(V1)")}},
	{"V2", []wlMod{system(accountable.CategoryOther, accountable.AccessRead, accountable.SideEffectExternal, accountable.DataPublic)},
		[]wlCheck{verdict(accountable.VerdictNeeded, accountable.ModeGovernedWorkspace, "(V2)")}},
	{"V3", []wlMod{system(accountable.CategoryDatabase, accountable.AccessRead, accountable.SideEffectNone, accountable.DataRegulated)},
		[]wlCheck{verdict(accountable.VerdictNeeded, accountable.ModeGovernedWorkspace, "(V3)")}},
	{"V3", []wlMod{consequence(accountable.ConsequenceRegulated, accountable.RetentionRegulated)},
		[]wlCheck{verdict(accountable.VerdictNeeded, accountable.ModeGovernedWorkspace, "(V3)")}},
	{"V4", []wlMod{actions(accountable.ApprovalExceptionsOnly, accountable.BudgetNotApplicable, accountable.ActionModifyCode)},
		[]wlCheck{verdict(accountable.VerdictNeeded, accountable.ModeGovernedWorkspace, "(V4)")}},
	{"V4", []wlMod{act(accountable.ActionSpendFunds)}, []wlCheck{verdict(accountable.VerdictNeeded, accountable.ModeGovernedWorkspace, "(V4)")}},
	{"V4", []wlMod{act(accountable.ActionChangePermissions)}, []wlCheck{verdict(accountable.VerdictNeeded, accountable.ModeGovernedWorkspace, "(V4)")}},
	{"V5", []wlMod{account(accountable.EvidenceNone, accountable.AcceptanceNone, accountable.ConsequenceHigh, accountable.RetentionLongTerm)},
		[]wlCheck{verdict(accountable.VerdictNeeded, accountable.ModeGovernedWorkspace, "(V5)")}},
	{"V1", []wlMod{system(accountable.CategoryCRM, accountable.AccessWrite, accountable.SideEffectExternal, accountable.DataRegulated),
		actions(accountable.ApprovalUndefined, accountable.BudgetUndefined, accountable.ActionSpendFunds),
		account(accountable.EvidenceNone, accountable.AcceptanceNone, accountable.ConsequenceHigh, accountable.RetentionLongTerm)},
		[]wlCheck{verdict(accountable.VerdictNeeded, accountable.ModeGovernedWorkspace, "(V1, V2, V3, V4, V5)")}},
	{"V6", []wlMod{horizon(accountable.HorizonContinuous), agents(12, accountable.CoordinationHierarchical),
		readSystem(accountable.CategoryBrowser), act(accountable.ActionResearch, accountable.ActionModifyCode),
		account(accountable.EvidenceNone, accountable.AcceptanceNone, accountable.ConsequenceModerate, accountable.RetentionNone)},
		[]wlCheck{verdict(accountable.VerdictConditional, accountable.ModeReceiptOnly, "(V6)"), state("time", accountable.BoundaryCritical),
			state("agents", accountable.BoundaryCritical), state("accountability", accountable.BoundaryPresent), state("authority", accountable.BoundaryAbsent)}},
	{"V7", []wlMod{horizon(accountable.HorizonSingleSession), agents(3, accountable.CoordinationNone), readSystem(accountable.CategoryBrowser),
		act(accountable.ActionResearch, accountable.ActionDraft, accountable.ActionModifyCode)},
		[]wlCheck{verdict(accountable.VerdictNotNeeded, accountable.ModeNone, "(V7)"), resources(), approval("installation", "", "")}},

	{"P1", []wlMod{readSystem(accountable.CategoryCodeRepository), readSystem(accountable.CategoryDatabase),
		system(accountable.CategoryCodeRepository, accountable.AccessWrite, accountable.SideEffectReversible, accountable.DataInternal), act(accountable.ActionModifyCode)},
		[]wlCheck{resources("code_repository read [modify_code] false", "database read [] false", "code_repository#2 write [modify_code] true")}},
	{"P2", []wlMod{system(accountable.CategoryCodeRepository, accountable.AccessAdmin, accountable.SideEffectReversible, accountable.DataInternal), act(accountable.ActionResearch)},
		[]wlCheck{resources("code_repository read [research] true")}},
	{"P3", []wlMod{system(accountable.CategoryCodeRepository, accountable.AccessRead, accountable.SideEffectNone, accountable.DataInternal),
		system(accountable.CategoryIdentity, accountable.AccessWrite, accountable.SideEffectNone, accountable.DataInternal),
		act(accountable.ActionMergeOrDeploy, accountable.ActionChangePermissions)},
		[]wlCheck{resources("code_repository read [merge_or_deploy change_permissions] true", "identity write [change_permissions] true")}},
	{"P4", []wlMod{system(accountable.CategoryCodeRepository, accountable.AccessWrite, accountable.SideEffectReversible, accountable.DataInternal),
		act(accountable.ActionMergeOrDeploy, accountable.ActionResearch, accountable.ActionSpendFunds, accountable.ActionModifyCode)},
		[]wlCheck{resources("code_repository write [research modify_code merge_or_deploy] true")}},
	{"P5", []wlMod{system(accountable.CategoryLocalFiles, accountable.AccessWrite, accountable.SideEffectReversible, accountable.DataConfidential),
		readSystem(accountable.CategoryBrowser), system(accountable.CategoryBrowser, accountable.AccessRead, accountable.SideEffectNone, accountable.DataInternal),
		act(accountable.ActionDraft, accountable.ActionResearch)},
		[]wlCheck{resources("local_files write [research draft] false", "browser read [research] false", "browser#2 read [research] true")}},

	{"M1", []wlMod{horizon(accountable.HorizonMultiDay)}, []wlCheck{capability("durable_state", true), capability("run_schedule", false)}},
	{"M2", []wlMod{horizon(accountable.HorizonRecurring)}, []wlCheck{capability("run_schedule", true)}},
	{"M3", []wlMod{agents(4, accountable.CoordinationNone)}, []wlCheck{capability("agent_identity", true), capability("coordination_record", false)}},
	{"M3", []wlMod{agents(2, accountable.CoordinationNone)}, []wlCheck{capability("agent_identity", false)}}, // agents absent (30)
	{"M4", []wlMod{agents(2, accountable.CoordinationHandoff)}, []wlCheck{capability("coordination_record", true)}},
	{"M5", []wlMod{system(accountable.CategoryCRM, accountable.AccessWrite, accountable.SideEffectNone, accountable.DataPublic)}, []wlCheck{capability("scoped_credentials", true)}},
	{"M6", []wlMod{system(accountable.CategoryCRM, accountable.AccessRead, accountable.SideEffectNone, accountable.DataRegulated)},
		[]wlCheck{capability("data_handling", true), capability("scoped_credentials", false)}},
	{"M7", []wlMod{system(accountable.CategoryMessaging, accountable.AccessRead, accountable.SideEffectExternal, accountable.DataPublic)}, []wlCheck{capability("side_effect_guard", true)}},
	{"M8", []wlMod{readSystem(accountable.CategoryCodeRepository), act(accountable.ActionModifyCode)}, []wlCheck{capability("access_for_actions", true)}},
	{"M9", []wlMod{actions(accountable.ApprovalExceptionsOnly, accountable.BudgetNotApplicable, accountable.ActionModifyCode)},
		[]wlCheck{capability("approval_policy", true)}},
	{"M9", []wlMod{actions(accountable.ApprovalSensitiveActions, accountable.BudgetNotApplicable, accountable.ActionDeleteData)},
		[]wlCheck{capability("approval_policy", false)}},
	{"M10", []wlMod{actions(accountable.ApprovalPerAction, accountable.BudgetDynamicLimit, accountable.ActionSpendFunds)}, []wlCheck{capability("spend_limit", true)}},
	{"M10", []wlMod{act(accountable.ActionSpendFunds)}, []wlCheck{capability("spend_limit", false)}},
	{"M11", []wlMod{account(accountable.EvidenceActivityLog, accountable.AcceptanceAgent, accountable.ConsequenceModerate, accountable.RetentionNone)},
		[]wlCheck{capability("outcome_evidence", true), capability("outcome_acceptance", true)}},
	{"M11", []wlMod{account(accountable.EvidenceActivityLog, accountable.AcceptanceNone, accountable.ConsequenceLow, accountable.RetentionNone)},
		[]wlCheck{capability("outcome_evidence", false)}},
	{"M12", []wlMod{account(accountable.EvidenceArtifact, accountable.AcceptanceNone, accountable.ConsequenceHigh, accountable.RetentionLongTerm)},
		[]wlCheck{capability("outcome_acceptance", true), capability("outcome_evidence", false)}},
	{"M13", []wlMod{consequence(accountable.ConsequenceHigh, accountable.RetentionNone)}, []wlCheck{capability("retention_policy", true)}},

	{"L1", nil, []wlCheck{local("workload_description", true), local("everything", true)}},
	{"L2", []wlMod{system(accountable.CategoryCRM, accountable.AccessWrite, accountable.SideEffectNone, accountable.DataInternal)}, []wlCheck{local("credentials", true)}},
	{"L2", []wlMod{system(accountable.CategoryLocalFiles, accountable.AccessWrite, accountable.SideEffectNone, accountable.DataInternal)},
		[]wlCheck{local("credentials", false), local("local_files", true)}},
	{"L3", []wlMod{system(accountable.CategoryLocalFiles, accountable.AccessRead, accountable.SideEffectNone, accountable.DataPublic)}, []wlCheck{local("local_files", true)}},
	{"L4", []wlMod{act(accountable.ActionDraft)}, []wlCheck{local("drafts", true)}},
	{"L5", []wlMod{act(accountable.ActionResearch)}, []wlCheck{local("research_notes", true)}},
	{"L6", []wlMod{horizon(accountable.HorizonMultiDay)}, []wlCheck{local("agent_reasoning", true), local("everything", false)}},
	{"L7", []wlMod{consequence(accountable.ConsequenceRegulated, accountable.RetentionRegulated)}, []wlCheck{local("regulated_records", true)}},
	{"L8", []wlMod{horizon(accountable.HorizonSingleSession)}, []wlCheck{local("everything", true), local("agent_reasoning", false)}},

	{"K1", []wlMod{horizon(accountable.HorizonRecurring)}, []wlCheck{risk("unattended_duration", accountable.SeverityMedium)}},
	{"K1", []wlMod{horizon(accountable.HorizonContinuous)}, []wlCheck{risk("unattended_duration", accountable.SeverityHigh)}},
	{"K2", []wlMod{horizon(accountable.HorizonMultiDay)}, []wlCheck{risk("stale_context", accountable.SeverityLow)}},
	{"K3", []wlMod{agents(4, accountable.CoordinationNone)}, []wlCheck{risk("duplicated_work", accountable.SeverityMedium)}},
	{"K3", []wlMod{agents(2, accountable.CoordinationNone)}, []wlCheck{risk("duplicated_work", "")}}, // agents absent
	{"K4", []wlMod{agents(2, accountable.CoordinationHandoff)}, []wlCheck{risk("lost_handoff", accountable.SeverityMedium)}},
	{"K5", []wlMod{agents(2, accountable.CoordinationParallel), system(accountable.CategoryDatabase, accountable.AccessWrite, accountable.SideEffectReversible, accountable.DataInternal)},
		[]wlCheck{risk("conflicting_writes", accountable.SeverityHigh)}},
	{"K6", []wlMod{system(accountable.CategoryDatabase, accountable.AccessWrite, accountable.SideEffectReversible, accountable.DataInternal), act(accountable.ActionReadInternalData)},
		[]wlCheck{risk("excess_privilege", accountable.SeverityMedium)}},
	{"K6", []wlMod{system(accountable.CategoryDatabase, accountable.AccessAdmin, accountable.SideEffectReversible, accountable.DataInternal), act(accountable.ActionReadInternalData)},
		[]wlCheck{risk("excess_privilege", accountable.SeverityHigh)}},
	{"K7", []wlMod{system(accountable.CategoryDatabase, accountable.AccessWrite, accountable.SideEffectIrreversible, accountable.DataInternal)},
		[]wlCheck{risk("irreversible_change", accountable.SeverityHigh)}},
	{"K7", []wlMod{system(accountable.CategoryDatabase, accountable.AccessWrite, accountable.SideEffectIrreversible, accountable.DataConfidential)},
		[]wlCheck{risk("irreversible_change", accountable.SeverityCritical)}},
	{"K8", []wlMod{system(accountable.CategoryMessaging, accountable.AccessWrite, accountable.SideEffectExternal, accountable.DataInternal)},
		[]wlCheck{risk("external_exposure", accountable.SeverityMedium)}},
	{"K8", []wlMod{system(accountable.CategoryMessaging, accountable.AccessWrite, accountable.SideEffectExternal, accountable.DataRegulated)},
		[]wlCheck{risk("external_exposure", accountable.SeverityHigh)}},
	{"K9", []wlMod{system(accountable.CategoryCRM, accountable.AccessRead, accountable.SideEffectNone, accountable.DataConfidential), horizon(accountable.HorizonMultiDay)},
		[]wlCheck{risk("data_exposure", "")}}, // systems absent (25)
	{"K9", []wlMod{system(accountable.CategoryCRM, accountable.AccessWrite, accountable.SideEffectNone, accountable.DataConfidential)},
		[]wlCheck{risk("data_exposure", accountable.SeverityMedium)}},
	{"K9", []wlMod{system(accountable.CategoryCRM, accountable.AccessRead, accountable.SideEffectNone, accountable.DataRegulated)},
		[]wlCheck{risk("data_exposure", accountable.SeverityHigh)}},
	{"K10", []wlMod{actions(accountable.ApprovalExceptionsOnly, accountable.BudgetNotApplicable, accountable.ActionModifyCode)}, []wlCheck{risk("unapproved_action", accountable.SeverityHigh)}},
	{"K10", []wlMod{actions(accountable.ApprovalUndefined, accountable.BudgetNotApplicable, accountable.ActionModifyCode)}, []wlCheck{risk("unapproved_action", accountable.SeverityCritical)}},
	{"K11", []wlMod{actions(accountable.ApprovalPerAction, accountable.BudgetFixedLimit, accountable.ActionSpendFunds)}, []wlCheck{risk("uncontrolled_spend", accountable.SeverityLow)}},
	{"K11", []wlMod{actions(accountable.ApprovalPerAction, accountable.BudgetDynamicLimit, accountable.ActionSpendFunds)}, []wlCheck{risk("uncontrolled_spend", accountable.SeverityMedium)}},
	{"K11", []wlMod{actions(accountable.ApprovalPerAction, accountable.BudgetUndefined, accountable.ActionSpendFunds)}, []wlCheck{risk("uncontrolled_spend", accountable.SeverityHigh)}},
	{"K11", []wlMod{actions(accountable.ApprovalPerAction, accountable.BudgetUnbounded, accountable.ActionSpendFunds)}, []wlCheck{risk("uncontrolled_spend", accountable.SeverityCritical)}},
	{"K12", []wlMod{act(accountable.ActionCreateAccount)}, []wlCheck{risk("privilege_escalation", accountable.SeverityHigh)}},
	{"K12", []wlMod{actions(accountable.ApprovalUndefined, accountable.BudgetNotApplicable, accountable.ActionChangePermissions)},
		[]wlCheck{risk("privilege_escalation", accountable.SeverityCritical)}},
	{"K13", []wlMod{act(accountable.ActionDeleteData)}, []wlCheck{risk("data_loss", accountable.SeverityHigh)}},
	{"K13", []wlMod{act(accountable.ActionDeleteData), consequence(accountable.ConsequenceLow, accountable.RetentionRegulated)},
		[]wlCheck{risk("data_loss", accountable.SeverityCritical)}},
	{"K14", []wlMod{account(accountable.EvidenceActivityLog, accountable.AcceptanceAgent, accountable.ConsequenceModerate, accountable.RetentionLongTerm)},
		[]wlCheck{risk("unverifiable_outcome", accountable.SeverityMedium)}},
	{"K14", []wlMod{account(accountable.EvidenceNone, accountable.AcceptanceHuman, accountable.ConsequenceHigh, accountable.RetentionLongTerm)},
		[]wlCheck{risk("unverifiable_outcome", accountable.SeverityHigh)}},
	{"K14", []wlMod{account(accountable.EvidenceActivityLog, accountable.AcceptanceHuman, accountable.ConsequenceRegulated, accountable.RetentionRegulated)},
		[]wlCheck{risk("unverifiable_outcome", accountable.SeverityCritical)}},
	{"K15", []wlMod{consequence(accountable.ConsequenceHigh, accountable.RetentionNone)}, []wlCheck{risk("retention_gap", accountable.SeverityHigh)}},
	{"K15", []wlMod{consequence(accountable.ConsequenceRegulated, accountable.RetentionShortTerm)}, []wlCheck{risk("retention_gap", accountable.SeverityCritical)}},

	{"H1", []wlMod{system(accountable.CategoryCRM, accountable.AccessWrite, accountable.SideEffectNone, accountable.DataInternal), readSystem(accountable.CategoryBrowser)},
		[]wlCheck{approval("installation", accountable.OwnerWorkload, accountable.TimingBeforeInstallation, "crm", "browser")}},
	{"H1", []wlMod{horizon(accountable.HorizonMultiDay)}, []wlCheck{approval("installation", accountable.OwnerWorkload, accountable.TimingBeforeInstallation, "workload")}},
	{"H2", []wlMod{system(accountable.CategoryCRM, accountable.AccessWrite, accountable.SideEffectNone, accountable.DataInternal),
		readSystem(accountable.CategoryBrowser), act(accountable.ActionWriteInternalRecords)},
		[]wlCheck{approval("system_access", accountable.OwnerSystem, accountable.TimingBeforeFirstUse, "crm")}},
	{"H2", []wlMod{system(accountable.CategoryCRM, accountable.AccessWrite, accountable.SideEffectNone, accountable.DataInternal), act(accountable.ActionReadInternalData)},
		[]wlCheck{approval("system_access", "", "")}}, // write declared, read proposed
	{"H3", []wlMod{system(accountable.CategoryCodeRepository, accountable.AccessWrite, accountable.SideEffectReversible, accountable.DataInternal), act(accountable.ActionModifyCode)},
		[]wlCheck{approval("code_changes", accountable.OwnerCode, accountable.TimingBeforeFirstUse, "modify_code")}},
	{"H3", []wlMod{act(accountable.ActionModifyCode, accountable.ActionMergeOrDeploy)},
		[]wlCheck{approval("code_changes", accountable.OwnerCode, accountable.TimingPerAction, "modify_code", "merge_or_deploy")}},
	{"H4", []wlMod{act(accountable.ActionSendExternalMessage)}, []wlCheck{approval("external_messages", accountable.OwnerCommunications, accountable.TimingPerAction)}},
	{"H5", []wlMod{act(accountable.ActionSpendFunds)}, []wlCheck{approval("spending", accountable.OwnerBudget, accountable.TimingWhenThresholdExceeded)}},
	{"H5", []wlMod{actions(accountable.ApprovalPerAction, accountable.BudgetUnbounded, accountable.ActionSpendFunds)},
		[]wlCheck{approval("spending", accountable.OwnerBudget, accountable.TimingPerAction)}},
	{"H6", []wlMod{act(accountable.ActionCreateAccount, accountable.ActionChangePermissions)},
		[]wlCheck{approval("identity_changes", accountable.OwnerIdentityAdmin, accountable.TimingPerAction, "create_account", "change_permissions")}},
	{"H7", []wlMod{act(accountable.ActionDeleteData)}, []wlCheck{approval("data_deletion", accountable.OwnerData, accountable.TimingPerAction)}},
	{"H8", []wlMod{system(accountable.CategoryDatabase, accountable.AccessRead, accountable.SideEffectNone, accountable.DataRegulated), readSystem(accountable.CategoryBrowser)},
		[]wlCheck{approval("regulated_data", accountable.OwnerData, accountable.TimingBeforeFirstUse, "database")}},
	{"H8", []wlMod{consequence(accountable.ConsequenceRegulated, accountable.RetentionRegulated)},
		[]wlCheck{approval("regulated_data", accountable.OwnerData, accountable.TimingBeforeFirstUse, "workload")}},
}

func wlRequest(mods ...wlMod) accountable.WorkloadRequest {
	r := wlBase()
	for _, m := range mods {
		m(&r)
	}
	return r
}

func TestWorkloadScoringRules(t *testing.T) {
	for i, row := range wlRules {
		t.Run(fmt.Sprintf("%02d_%s", i, row.rule), func(t *testing.T) {
			r := wlRequest(row.mods...)
			if err := r.Validate(); err != nil {
				t.Fatalf("the row's request is invalid: %v %v", err, err.(*accountable.Error).Details)
			}
			d := accountable.Diagnose(r)
			for _, c := range row.checks {
				c(t, d)
			}
			if t.Failed() {
				raw, _ := json.MarshalIndent(d, "", "  ")
				t.Logf("diagnosis: %s", raw)
			}
		})
	}
}

// Every rule the service documents (and serves at GET /doctor/workload) has a row above.
func TestWorkloadEveryRuleHasARow(t *testing.T) {
	rows := map[string]bool{}
	for _, row := range wlRules {
		rows[row.rule] = true
	}
	seen := map[string]bool{}
	for _, rule := range accountable.WorkloadScoringRules() {
		if seen[rule.ID] && rule.ID != "U13" {
			t.Errorf("rule %s is listed twice", rule.ID)
		}
		seen[rule.ID] = true
		if !rows[rule.ID] {
			t.Errorf("rule %s (%s: %s) has no row in wlRules", rule.ID, rule.When, rule.Effect)
		}
		if rule.When == "" || rule.Effect == "" {
			t.Errorf("rule %s is not described: %+v", rule.ID, rule)
		}
	}
	for id := range rows {
		if !seen[id] {
			t.Errorf("row %s names no documented rule", id)
		}
	}
}

func TestWorkloadVerdictConsistency(t *testing.T) {
	base := accountable.Diagnose(wlBase())
	if base.Recommendation.Verdict != accountable.VerdictNotNeeded || base.Recommendation.ActiveBoundaryCount != 0 ||
		len(base.HumanApprovals) != 0 || base.ApprovalHandoff.Kind != accountable.HandoffNone || base.ApprovalHandoff.URL != "" ||
		len(base.CapabilitiesAfterInstallation) != 0 || len(base.Recommendation.Rationale) != 1 {
		t.Fatalf("base: %+v", base)
	}
	r := rand.New(rand.NewPCG(7, 7))
	for range 3000 {
		d := accountable.Diagnose(randomWorkload(r))
		rec := d.Recommendation
		active := 0
		for _, b := range []accountable.WorkloadBoundary{d.Boundaries.Time, d.Boundaries.Agents, d.Boundaries.Systems, d.Boundaries.Authority, d.Boundaries.Accountability} {
			want := accountable.BoundaryAbsent
			if b.Score >= 70 {
				want = accountable.BoundaryCritical
			} else if b.Score >= 35 {
				want = accountable.BoundaryPresent
			}
			if b.State != want {
				t.Fatalf("state %s for %d points", b.State, b.Score)
			}
			if b.State != accountable.BoundaryAbsent {
				active++
			}
		}
		modes := map[accountable.WorkloadVerdict]accountable.WorkloadMode{accountable.VerdictNeeded: accountable.ModeGovernedWorkspace,
			accountable.VerdictConditional: accountable.ModeReceiptOnly, accountable.VerdictNotNeeded: accountable.ModeNone}
		if rec.ActiveBoundaryCount != active || modes[rec.Verdict] != rec.Mode || len(rec.Rationale) != 1+active ||
			(active == 0) != (rec.Verdict == accountable.VerdictNotNeeded) {
			t.Fatalf("recommendation %+v with %d active boundaries", rec, active)
		}
		if (len(d.HumanApprovals) > 0) != (d.ApprovalHandoff.Kind == accountable.HandoffBrowserReview) ||
			len(d.HumanApprovals) != len(d.ApprovalHandoff.ApprovalIDs) || d.ApprovalHandoff.MutatesState || d.ApprovalHandoff.CarriesSensitiveData {
			t.Fatalf("handoff %+v for %d approvals", d.ApprovalHandoff, len(d.HumanApprovals))
		}
		if d.ApprovalHandoff.Kind == accountable.HandoffBrowserReview && d.ApprovalHandoff.URL != accountable.WorkloadReviewPath+"#"+d.DiagnosisID {
			t.Fatalf("handoff url %q", d.ApprovalHandoff.URL)
		}
		for _, risk := range d.Risks {
			if boundaryOf(d, risk.Boundary).State == accountable.BoundaryAbsent {
				t.Fatalf("risk %s of an absent boundary", risk.ID)
			}
		}
	}
}

// --- validation -----------------------------------------------------------------------

func wlIssues(err error) []accountable.WorkloadIssue {
	if err == nil {
		return nil
	}
	var ae *accountable.Error
	if !errors.As(err, &ae) || ae.Code != accountable.ECodeValidationFailed {
		panic(fmt.Sprintf("not a validation error: %v", err))
	}
	return ae.Details["issues"].([]accountable.WorkloadIssue)
}

func TestWorkloadValidation(t *testing.T) {
	long := func(n int) string { return strings.Repeat("é", n) }
	cases := []struct {
		name string
		mod  func(*accountable.WorkloadRequest)
		want []string // "path code"
	}{
		{"valid", func(*accountable.WorkloadRequest) {}, nil},
		{"at the bounds", func(r *accountable.WorkloadRequest) {
			r.Workload.Name, r.Workload.Outcome, r.Workload.AgentCount = long(200), long(2000), 100
		}, nil},
		{"missing everything", func(r *accountable.WorkloadRequest) { *r = accountable.WorkloadRequest{} }, []string{
			"/schema_version required", "/workload/accountability/acceptance required", "/workload/accountability/consequence required",
			"/workload/accountability/evidence required", "/workload/accountability/retention required",
			"/workload/agent_count out_of_range", "/workload/authority/actions required", "/workload/authority/approval_policy required",
			"/workload/authority/budget_control required", "/workload/coordination required", "/workload/name required",
			"/workload/outcome required", "/workload/systems required", "/workload/time_horizon required"}},
		{"wrong schema version", func(r *accountable.WorkloadRequest) { r.SchemaVersion = "workload-diagnosis/0.2" },
			[]string{"/schema_version unsupported_schema_version"}},
		{"name too long", func(r *accountable.WorkloadRequest) { r.Workload.Name = long(201) }, []string{"/workload/name too_long"}},
		{"outcome too long", func(r *accountable.WorkloadRequest) { r.Workload.Outcome = long(2001) }, []string{"/workload/outcome too_long"}},
		{"NUL in name", func(r *accountable.WorkloadRequest) { r.Workload.Name = "a\x00b" }, []string{"/workload/name invalid_text"}},
		{"no agent", func(r *accountable.WorkloadRequest) { r.Workload.AgentCount = 0 }, []string{"/workload/agent_count out_of_range"}},
		{"too many agents", func(r *accountable.WorkloadRequest) { r.Workload.AgentCount = 101 }, []string{"/workload/agent_count out_of_range"}},
		{"unknown enums", func(r *accountable.WorkloadRequest) {
			r.Workload.TimeHorizon, r.Workload.Coordination = "forever", "swarm"
			r.Workload.Accountability.Consequence = "huge"
		}, []string{"/workload/accountability/consequence invalid_enum", "/workload/coordination invalid_enum", "/workload/time_horizon invalid_enum"}},
		{"parallel alone", func(r *accountable.WorkloadRequest) { r.Workload.Coordination = accountable.CoordinationParallel },
			[]string{"/workload/coordination inconsistent"}},
		{"unknown system values", func(r *accountable.WorkloadRequest) {
			r.Workload.Systems = []accountable.WorkloadSystem{{Category: "mainframe", Access: "root", SideEffect: "", DataClass: "secret"}}
		}, []string{"/workload/systems/0/access invalid_enum", "/workload/systems/0/category invalid_enum",
			"/workload/systems/0/data_class invalid_enum", "/workload/systems/0/side_effect required"}},
		{"duplicate system", func(r *accountable.WorkloadRequest) {
			s := accountable.WorkloadSystem{Category: "crm", Access: "read", SideEffect: "none", DataClass: "internal"}
			r.Workload.Systems = []accountable.WorkloadSystem{s, {Category: "crm", Access: "write", SideEffect: "none", DataClass: "internal"}, s}
		}, []string{"/workload/systems/2 duplicate"}},
		{"too many systems", func(r *accountable.WorkloadRequest) {
			r.Workload.Systems = make([]accountable.WorkloadSystem, 16)
		}, []string{"/workload/systems too_many"}},
		{"actions repeated and unknown", func(r *accountable.WorkloadRequest) {
			r.Workload.Authority.Actions = []accountable.WorkloadAction{"research", "fly", "research"}
		}, []string{"/workload/authority/actions/1 invalid_enum", "/workload/authority/actions/2 duplicate"}},
		{"too many actions", func(r *accountable.WorkloadRequest) {
			r.Workload.Authority.Actions = make([]accountable.WorkloadAction, 12)
		}, []string{"/workload/authority/actions too_many"}},
		{"approval not applicable to a consequential action", func(r *accountable.WorkloadRequest) {
			r.Workload.Authority.Actions = []accountable.WorkloadAction{"write_internal_records"}
		}, []string{"/workload/authority/approval_policy inconsistent"}},
		{"budget not applicable to spending", func(r *accountable.WorkloadRequest) {
			r.Workload.Authority = accountable.WorkloadAuthority{Actions: []accountable.WorkloadAction{"spend_funds"}, ApprovalPolicy: "per_action", BudgetControl: "not_applicable"}
		}, []string{"/workload/authority/budget_control inconsistent"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := wlBase()
			c.mod(&r)
			var got []string
			for _, is := range wlIssues(r.Validate()) {
				got = append(got, is.Path+" "+is.Code)
				if is.Message == "" || !strings.HasPrefix(is.Path, "/") {
					t.Errorf("issue %+v", is)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("issues\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

// The struct tags (which the OpenAPI document is made from, and CheckFields applies) and
// Validate agree: a request Validate accepts breaks no tag, and every member a tag
// refuses, Validate refuses too.
func TestWorkloadTagsAgreeWithValidate(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		req := randomWorkload(r)
		if i%2 == 1 {
			mutateWorkload(r, &req)
		}
		issues := wlIssues(req.Validate())
		if issues == nil {
			if tags := accountable.CheckFields(req); len(tags) > 0 {
				t.Fatalf("valid by Validate, not by the tags: %v\n%+v", tags, req)
			}
			continue
		}
		for _, tag := range accountable.CheckFields(req) {
			if !slices.ContainsFunc(issues, func(is accountable.WorkloadIssue) bool {
				return is.Path == tag.Path || strings.HasPrefix(tag.Path, is.Path+"/")
			}) {
				t.Fatalf("the tags refuse %s (%s); Validate does not: %+v", tag.Path, tag.Message, issues)
			}
		}
	}
}

// --- generators -------------------------------------------------------------------------

func pickWL[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

var (
	wlHorizons     = []accountable.WorkloadTimeHorizon{"single_turn", "single_session", "multi_day", "recurring", "continuous"}
	wlCoordination = []accountable.WorkloadCoordination{"none", "handoff", "parallel", "hierarchical"}
	wlCategories   = []accountable.WorkloadSystemCategory{"code_repository", "issue_tracker", "document_store", "messaging", "crm",
		"database", "cloud_runtime", "finance", "browser", "local_files", "identity", "other"}
	wlAccesses    = []accountable.WorkloadAccess{"read", "write", "admin"}
	wlSideEffects = []accountable.WorkloadSideEffect{"none", "reversible", "external", "irreversible"}
	wlDataClasses = []accountable.WorkloadDataClass{"public", "internal", "confidential", "regulated"}
	wlActions     = []accountable.WorkloadAction{"research", "draft", "read_internal_data", "write_internal_records", "modify_code",
		"merge_or_deploy", "send_external_message", "spend_funds", "create_account", "change_permissions", "delete_data"}
	wlApprovals   = []accountable.WorkloadApprovalPolicy{"not_applicable", "per_action", "sensitive_actions", "exceptions_only", "undefined"}
	wlBudgets     = []accountable.WorkloadBudgetControl{"not_applicable", "fixed_limit", "dynamic_limit", "unbounded", "undefined"}
	wlEvidence    = []accountable.WorkloadEvidence{"none", "activity_log", "artifact", "verified_outcome"}
	wlAcceptance  = []accountable.WorkloadAcceptance{"none", "agent", "human", "downstream_system"}
	wlConsequence = []accountable.WorkloadConsequence{"low", "moderate", "high", "regulated"}
	wlRetention   = []accountable.WorkloadRetention{"none", "short_term", "long_term", "regulated"}
	wlTexts       = []string{"x", "Weekly digest", "é😀\u202e", "a\tb\nc", `"quoted" \ back`, "</script>"}
)

func randomText(r *rand.Rand, maxLen int) string {
	if r.IntN(4) == 0 {
		return strings.Repeat(pickWL(r, []string{"é", "a", "😀", " "}), 1+r.IntN(maxLen))
	}
	return pickWL(r, wlTexts)
}

// randomWorkload is a valid request.
func randomWorkload(r *rand.Rand) accountable.WorkloadRequest {
	w := accountable.Workload{
		Name: randomText(r, 200), Outcome: randomText(r, 2000), TimeHorizon: pickWL(r, wlHorizons),
		AgentCount: pickWL(r, []int64{1, 1, 2, 3, 4, 10, 11, 100, int64(1 + r.IntN(100))}), Coordination: pickWL(r, wlCoordination),
		Systems: []accountable.WorkloadSystem{},
		Accountability: accountable.WorkloadAccountability{Evidence: pickWL(r, wlEvidence), Acceptance: pickWL(r, wlAcceptance),
			Consequence: pickWL(r, wlConsequence), Retention: pickWL(r, wlRetention)},
	}
	if w.AgentCount == 1 && (w.Coordination == "parallel" || w.Coordination == "hierarchical") {
		w.AgentCount = 2
	}
	n := r.IntN(16)
	if r.IntN(3) == 0 {
		n = 15
	}
	for len(w.Systems) < n {
		s := accountable.WorkloadSystem{Category: pickWL(r, wlCategories), Access: pickWL(r, wlAccesses),
			SideEffect: pickWL(r, wlSideEffects), DataClass: pickWL(r, wlDataClasses)}
		if !slices.Contains(w.Systems, s) {
			w.Systems = append(w.Systems, s)
		}
	}
	acts := slices.Clone(wlActions)
	r.Shuffle(len(acts), func(i, j int) { acts[i], acts[j] = acts[j], acts[i] })
	w.Authority.Actions = acts[:r.IntN(len(acts)+1)]
	if r.IntN(3) == 0 {
		w.Authority.Actions = acts
	}
	consequential := slices.ContainsFunc(w.Authority.Actions, func(a accountable.WorkloadAction) bool {
		return !slices.Contains([]accountable.WorkloadAction{"research", "draft", "read_internal_data"}, a)
	})
	w.Authority.ApprovalPolicy = pickWL(r, wlApprovals)
	if consequential && w.Authority.ApprovalPolicy == "not_applicable" {
		w.Authority.ApprovalPolicy = "undefined"
	}
	w.Authority.BudgetControl = pickWL(r, wlBudgets)
	if slices.Contains(w.Authority.Actions, "spend_funds") && w.Authority.BudgetControl == "not_applicable" {
		w.Authority.BudgetControl = "unbounded"
	}
	return accountable.WorkloadRequest{SchemaVersion: accountable.WorkloadSchemaVersion, Workload: w}
}

// mutateWorkload breaks a request in one or more ways (or not at all).
func mutateWorkload(r *rand.Rand, q *accountable.WorkloadRequest) {
	w := &q.Workload
	for n := 1 + r.IntN(3); n > 0; n-- {
		switch r.IntN(12) {
		case 0:
			q.SchemaVersion = pickWL(r, []string{"", "workload-diagnosis/0.2", "x"})
		case 1:
			w.Name = pickWL(r, []string{"", strings.Repeat("n", 201), "a\x00"})
		case 2:
			w.Outcome = pickWL(r, []string{"", strings.Repeat("ö", 2001)})
		case 3:
			w.AgentCount = pickWL(r, []int64{-1, 0, 101, 1 << 40})
		case 4:
			w.TimeHorizon = pickWL(r, []accountable.WorkloadTimeHorizon{"", "forever", "SINGLE_TURN"})
		case 5:
			w.Systems = append(w.Systems, w.Systems...)
			w.Systems = append(w.Systems, accountable.WorkloadSystem{Category: "x", Access: "read"},
				accountable.WorkloadSystem{Access: "root", SideEffect: "boom", DataClass: "secret"})
		case 6:
			w.Systems = nil
		case 7:
			w.Authority.Actions = append(w.Authority.Actions, "research", "research", "teleport")
		case 8:
			w.Authority.ApprovalPolicy = pickWL(r, []accountable.WorkloadApprovalPolicy{"", "not_applicable", "always"})
		case 9:
			w.Authority.BudgetControl = pickWL(r, []accountable.WorkloadBudgetControl{"", "not_applicable", "infinite"})
		case 10:
			w.Accountability = accountable.WorkloadAccountability{Evidence: "photos", Retention: "forever"}
		default:
			w.Coordination = pickWL(r, []accountable.WorkloadCoordination{"parallel", "", "mesh"})
			w.AgentCount = 1
		}
	}
}

// --- properties -------------------------------------------------------------------------

// Least privilege: one resource per declared system, in order, of its category, never
// more access than it declares, scoped to declared actions that touch the category.
func TestWorkloadLeastPrivilege(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		req := randomWorkload(r)
		d := accountable.Diagnose(req)
		systems := req.Workload.Systems
		if d.Recommendation.Verdict == accountable.VerdictNotNeeded {
			if len(d.ProposedResources) != 0 {
				t.Fatalf("resources without an installation: %+v", d.ProposedResources)
			}
			continue
		}
		if len(d.ProposedResources) != len(systems) {
			t.Fatalf("%d resources for %d systems", len(d.ProposedResources), len(systems))
		}
		for i, res := range d.ProposedResources {
			s := systems[i]
			name, _, _ := strings.Cut(res.Resource, "#")
			if name != string(s.Category) {
				t.Fatalf("resource %d %q for a %s system", i, res.Resource, s.Category)
			}
			if res.RequestedAccess.Rank() == 0 || res.RequestedAccess.Rank() > s.Access.Rank() {
				t.Fatalf("resource %s requests %s of a system declared %s", res.Resource, res.RequestedAccess, s.Access)
			}
			needed := accountable.WorkloadAccess("")
			for _, intent := range res.ScopeIntents {
				a := accountable.WorkloadAction(intent)
				acc, touches := accountable.WorkloadActionReach(a, s.Category)
				if !slices.Contains(req.Workload.Authority.Actions, a) || !touches {
					t.Fatalf("resource %s: scope intent %s is not a declared action touching %s", res.Resource, intent, s.Category)
				}
				if acc.Rank() > needed.Rank() {
					needed = acc
				}
			}
			if needed == "" {
				needed = accountable.AccessRead
			}
			if want := min(needed.Rank(), s.Access.Rank()); res.RequestedAccess.Rank() != want {
				t.Fatalf("resource %s requests %s; its actions need %s of a system declared %s", res.Resource, res.RequestedAccess, needed, s.Access)
			}
		}
	}
}

// reencode writes the JSON value v with its object members in a random order and random
// whitespace.
func reencode(r *rand.Rand, v any, b *bytes.Buffer) {
	ws := func() { b.WriteString(pickWL(r, []string{"", " ", "\n  ", "\t"})) }
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			kb, _ := json.Marshal(k)
			b.Write(kb)
			ws()
			b.WriteByte(':')
			ws()
			reencode(r, x[k], b)
		}
		ws()
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			reencode(r, e, b)
		}
		b.WriteByte(']')
	default:
		raw, _ := json.Marshal(x)
		b.Write(raw)
	}
}

// The same request always gives the same bytes, whatever the member order and whitespace
// it was sent with; the id is the SHA-256 of its canonical JSON.
func TestWorkloadDeterminism(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	idPattern := regexp.MustCompile(`^wdg_[a-f0-9]{24}$`)
	ids := map[string]string{}
	for range 1000 {
		req := randomWorkload(r)
		first, err := json.Marshal(accountable.Diagnose(req))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(req)
		var generic any
		if err := json.Unmarshal(raw, &generic); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		reencode(r, generic, &b)
		var again accountable.WorkloadRequest
		if err := json.Unmarshal(b.Bytes(), &again); err != nil {
			t.Fatalf("%v: %s", err, b.Bytes())
		}
		second, _ := json.Marshal(accountable.Diagnose(again))
		if !bytes.Equal(first, second) {
			t.Fatalf("the same request sent as\n%s\ngave\n%s\nand\n%s", b.Bytes(), first, second)
		}
		d := accountable.Diagnose(req)
		canonical, err := accountable.CanonicalizeJSON(b.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if want := "wdg_" + strings.TrimPrefix(accountable.Digest(canonical), "sha256:")[:24]; d.DiagnosisID != want || !idPattern.MatchString(d.DiagnosisID) {
			t.Fatalf("diagnosis_id %s, want %s", d.DiagnosisID, want)
		}
		if prev, ok := ids[d.DiagnosisID]; ok && prev != string(canonical) {
			t.Fatalf("two requests share the id %s", d.DiagnosisID)
		}
		ids[d.DiagnosisID] = string(canonical)
	}
	// Another request, another id.
	a, b := wlBase(), wlBase()
	b.Workload.Name += "!"
	if accountable.Diagnose(a).DiagnosisID == accountable.Diagnose(b).DiagnosisID {
		t.Fatal("the name does not change the id")
	}
}

// wlBounds checks every array and string of v against the tags of its field (maxItems,
// minItems, maxLength, minLength), that no array is null and every enumerated value is
// one of its values.
func wlBounds(v reflect.Value, path string) []string {
	var out []string
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			fv := v.Field(i)
			p := path + "/" + name
			tag := func(k string) (int, bool) {
				s, ok := f.Tag.Lookup(k)
				n, _ := strconv.Atoi(s)
				return n, ok
			}
			switch fv.Kind() {
			case reflect.Slice:
				if fv.IsNil() {
					out = append(out, p+": null")
				}
				if n, ok := tag("maxItems"); ok && fv.Len() > n {
					out = append(out, fmt.Sprintf("%s: %d items > %d", p, fv.Len(), n))
				}
				if n, ok := tag("minItems"); ok && fv.Len() < n {
					out = append(out, fmt.Sprintf("%s: %d items < %d", p, fv.Len(), n))
				}
			case reflect.String:
				n := utf8.RuneCountInString(fv.String())
				if m, ok := tag("maxLength"); ok && n > m {
					out = append(out, fmt.Sprintf("%s: %d characters > %d", p, n, m))
				}
				if m, ok := tag("minLength"); ok && n < m {
					out = append(out, fmt.Sprintf("%s: %d characters < %d", p, n, m))
				}
				if values, ok := f.Tag.Lookup("enum"); ok && !slices.Contains(strings.Split(values, ","), fv.String()) {
					out = append(out, fmt.Sprintf("%s: %q not in %s", p, fv.String(), values))
				}
			case reflect.Int:
				lo, _ := tag("minimum")
				hi, ok := tag("maximum")
				if !ok || fv.Int() < int64(lo) || fv.Int() > int64(hi) {
					out = append(out, fmt.Sprintf("%s: %d outside %d..%d", p, fv.Int(), lo, hi))
				}
			}
			if e, ok := fv.Interface().(accountable.Enumerated); ok && fv.Kind() == reflect.String &&
				!slices.Contains(e.Enum(), any(fv.String())) {
				out = append(out, fmt.Sprintf("%s: %q is not one of %v", p, fv.String(), e.Enum()))
			}
			out = append(out, wlBounds(fv, p)...)
		}
	case reflect.Slice:
		for i := range v.Len() {
			e := v.Index(i)
			if e.Kind() == reflect.String {
				if n := utf8.RuneCountInString(e.String()); n < 1 || n > accountable.WorkloadTextMaxLength {
					out = append(out, fmt.Sprintf("%s/%d: %d characters", path, i, n))
				}
			}
			out = append(out, wlBounds(e, path+"/"+strconv.Itoa(i))...)
		}
	}
	return out
}

func checkWorkloadResult(t *testing.T, d accountable.WorkloadDiagnosis) {
	t.Helper()
	if problems := wlBounds(reflect.ValueOf(d), ""); len(problems) > 0 {
		t.Fatalf("the result breaks its bounds: %v", problems)
	}
	if !regexp.MustCompile(`^wdg_[a-f0-9]{24}$`).MatchString(d.DiagnosisID) || d.SchemaVersion != accountable.WorkloadSchemaVersion {
		t.Fatalf("id %q, schema %q", d.DiagnosisID, d.SchemaVersion)
	}
	if d.ApprovalHandoff.Kind == accountable.HandoffNone && d.ApprovalHandoff.URL != "" {
		t.Fatalf("handoff %+v", d.ApprovalHandoff)
	}
}

// No request, valid or not, makes a result beyond the bounds: the largest valid requests
// and requests that break every rule (Diagnose is given them as they are).
func TestWorkloadResultBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	biggest := wlBase()
	biggest.Workload.AgentCount, biggest.Workload.Coordination, biggest.Workload.TimeHorizon = 100, "parallel", "continuous"
	biggest.Workload.Name, biggest.Workload.Outcome = strings.Repeat("😀", 200), strings.Repeat("😀", 2000)
	biggest.Workload.Authority = accountable.WorkloadAuthority{Actions: wlActions, ApprovalPolicy: "undefined", BudgetControl: "unbounded"}
	biggest.Workload.Accountability = accountable.WorkloadAccountability{Evidence: "none", Acceptance: "none", Consequence: "regulated", Retention: "none"}
	for _, c := range wlCategories {
		for _, a := range []accountable.WorkloadAccess{"admin", "read"} {
			if len(biggest.Workload.Systems) < 15 {
				biggest.Workload.Systems = append(biggest.Workload.Systems, accountable.WorkloadSystem{Category: c, Access: a, SideEffect: "irreversible", DataClass: "regulated"})
			}
		}
	}
	if err := biggest.Validate(); err != nil {
		t.Fatal(err)
	}
	d := accountable.Diagnose(biggest)
	checkWorkloadResult(t, d)
	if len(d.ProposedResources) != 15 || len(d.Risks) < 10 || len(d.MissingCapabilities) != 13 || len(d.HumanApprovals) != 8 ||
		len(d.CapabilitiesAfterInstallation) != 3+1+3+15+8 || len(d.Recommendation.Rationale) != 6 {
		t.Fatalf("the largest diagnosis: %d resources, %d risks, %d capabilities missing, %d approvals, %d capabilities, %d rationale",
			len(d.ProposedResources), len(d.Risks), len(d.MissingCapabilities), len(d.HumanApprovals), len(d.CapabilitiesAfterInstallation), len(d.Recommendation.Rationale))
	}
	for range 3000 {
		req := randomWorkload(r)
		checkWorkloadResult(t, accountable.Diagnose(req))
		mutateWorkload(r, &req)
		if r.IntN(4) == 0 { // far beyond the bounds
			for range 100 {
				req.Workload.Systems = append(req.Workload.Systems, accountable.WorkloadSystem{Category: pickWL(r, wlCategories),
					Access: pickWL(r, wlAccesses), SideEffect: "irreversible", DataClass: "regulated"})
			}
			for range 50 {
				req.Workload.Authority.Actions = append(req.Workload.Authority.Actions, pickWL(r, wlActions))
			}
		}
		checkWorkloadResult(t, accountable.Diagnose(req))
	}
}

func TestWorkloadInfo(t *testing.T) {
	info := accountable.WorkloadInfo()
	if info.SchemaVersion != accountable.WorkloadSchemaVersion || len(info.Enumerations.Actions) != 11 ||
		len(info.Enumerations.Category) != 12 || len(info.Enumerations.OwnerRole) != 7 || info.Bounds.SystemsMax != 15 ||
		info.Scoring.PresentAt != 35 || info.Scoring.CriticalAt != 70 || len(info.Scoring.Rules) < 100 {
		t.Fatalf("info: %+v", info)
	}
	if accountable.WorkloadSystemsMax != accountable.WorkloadProposedResourcesMax {
		t.Fatal("one resource per system: the bounds must agree")
	}
}

// FuzzDiagnoseWorkload: whatever the body, decoding, validating and diagnosing never
// panic; refusals are validation_failed with bounded, coded issues; every diagnosis
// (of a valid request or not) keeps the result's bounds; a valid request's diagnosis is
// the same twice. The seed corpus (testdata/fuzz/FuzzDiagnoseWorkload) runs with the
// tests; `go test -fuzz FuzzDiagnoseWorkload .` explores further.
func FuzzDiagnoseWorkload(f *testing.F) {
	rich := []wlMod{horizon(accountable.HorizonRecurring), agents(3, accountable.CoordinationParallel),
		system(accountable.CategoryFinance, accountable.AccessWrite, accountable.SideEffectIrreversible, accountable.DataRegulated),
		readSystem(accountable.CategoryBrowser), actions(accountable.ApprovalExceptionsOnly, accountable.BudgetDynamicLimit,
			accountable.ActionResearch, accountable.ActionSpendFunds, accountable.ActionSendExternalMessage),
		account(accountable.EvidenceActivityLog, accountable.AcceptanceAgent, accountable.ConsequenceHigh, accountable.RetentionNone)}
	for _, mods := range [][]wlMod{nil, rich, {horizon(accountable.HorizonMultiDay)}} {
		raw, _ := json.Marshal(wlRequest(mods...))
		f.Add(raw)
	}
	big, _ := json.Marshal(randomWorkload(rand.New(rand.NewPCG(1, 1))))
	f.Add(big)
	for _, s := range []string{`{}`, `null`, `[]`, `{"schema_version":"workload-diagnosis/0.1","workload":{"systems":null}}`,
		`{"schema_version":"workload-diagnosis/0.1","workload":{"agent_count":-5,"systems":[{},{}],"authority":{"actions":["x","x"]}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req accountable.WorkloadRequest
		if json.Unmarshal(body, &req) != nil {
			return
		}
		err := req.Validate()
		if err != nil {
			issues := wlIssues(err)
			if len(issues) == 0 || len(issues) > accountable.WorkloadIssuesMax {
				t.Fatalf("%d issues", len(issues))
			}
			for _, is := range issues {
				if is.Code == "" || is.Message == "" || !strings.HasPrefix(is.Path, "/") || utf8.RuneCountInString(is.Message) > 300 {
					t.Fatalf("issue %+v", is)
				}
			}
		}
		d := accountable.Diagnose(req)
		checkWorkloadResult(t, d)
		if err == nil {
			a, _ := json.Marshal(d)
			b, _ := json.Marshal(accountable.Diagnose(req))
			if !bytes.Equal(a, b) {
				t.Fatalf("two diagnoses of one request:\n%s\n%s", a, b)
			}
		}
	})
}
