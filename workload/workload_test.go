package workload_test

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
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/workload"
)

// wlBase is the request every rule row starts from: nothing crosses a boundary.
func wlBase() workload.WorkloadRequest {
	return workload.WorkloadRequest{
		SchemaVersion: workload.WorkloadSchemaVersion,
		Workload: workload.Workload{
			Name: "Weekly digest", Outcome: "A summary of the week's tickets", TimeHorizon: workload.HorizonSingleTurn,
			AgentCount: 1, Coordination: workload.CoordinationNone, Systems: []workload.WorkloadSystem{},
			Authority: workload.WorkloadAuthority{Actions: []workload.WorkloadAction{},
				ApprovalPolicy: workload.ApprovalNotApplicable, BudgetControl: workload.BudgetNotApplicable},
			Accountability: workload.WorkloadAccountability{Evidence: workload.EvidenceVerifiedOutcome,
				Acceptance: workload.AcceptanceHuman, Consequence: workload.ConsequenceLow, Retention: workload.RetentionLongTerm},
		},
	}
}

type wlMod func(*workload.WorkloadRequest)

func horizon(h workload.WorkloadTimeHorizon) wlMod {
	return func(r *workload.WorkloadRequest) { r.Workload.TimeHorizon = h }
}

func agents(n int64, c workload.WorkloadCoordination) wlMod {
	return func(r *workload.WorkloadRequest) { r.Workload.AgentCount, r.Workload.Coordination = n, c }
}

func system(c workload.WorkloadSystemCategory, a workload.WorkloadAccess, s workload.WorkloadSideEffect, d workload.WorkloadDataClass) wlMod {
	return func(r *workload.WorkloadRequest) {
		r.Workload.Systems = append(r.Workload.Systems, workload.WorkloadSystem{Category: c, Access: a, SideEffect: s, DataClass: d})
	}
}

// readSystem is a system that adds 10 points and nothing else.
func readSystem(c workload.WorkloadSystemCategory) wlMod {
	return system(c, workload.AccessRead, workload.SideEffectNone, workload.DataPublic)
}

func actions(p workload.WorkloadApprovalPolicy, b workload.WorkloadBudgetControl, acts ...workload.WorkloadAction) wlMod {
	return func(r *workload.WorkloadRequest) {
		r.Workload.Authority = workload.WorkloadAuthority{Actions: append([]workload.WorkloadAction{}, acts...), ApprovalPolicy: p, BudgetControl: b}
	}
}

// act declares acts with per-action approvals and a fixed limit: the actions' own points.
func act(acts ...workload.WorkloadAction) wlMod {
	return actions(workload.ApprovalPerAction, workload.BudgetFixedLimit, acts...)
}

func account(e workload.WorkloadEvidence, a workload.WorkloadAcceptance, c workload.WorkloadConsequence, r workload.WorkloadRetention) wlMod {
	return func(q *workload.WorkloadRequest) {
		q.Workload.Accountability = workload.WorkloadAccountability{Evidence: e, Acceptance: a, Consequence: c, Retention: r}
	}
}

func consequence(c workload.WorkloadConsequence, r workload.WorkloadRetention) wlMod {
	return account(workload.EvidenceVerifiedOutcome, workload.AcceptanceHuman, c, r)
}

type wlCheck func(t *testing.T, d workload.WorkloadDiagnosis)

func boundaryOf(d workload.WorkloadDiagnosis, name string) workload.WorkloadBoundary {
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
	return func(t *testing.T, d workload.WorkloadDiagnosis) {
		t.Helper()
		if b := boundaryOf(d, boundary); b.Score != want {
			t.Errorf("%s score %d, want %d (%s)", boundary, b.Score, want, b.Reason)
		}
	}
}

func state(boundary string, want workload.WorkloadBoundaryState) wlCheck {
	return func(t *testing.T, d workload.WorkloadDiagnosis) {
		t.Helper()
		if b := boundaryOf(d, boundary); b.State != want {
			t.Errorf("%s state %s, want %s (%d points)", boundary, b.State, want, b.Score)
		}
	}
}

func verdict(v workload.WorkloadVerdict, m workload.WorkloadMode, rule string) wlCheck {
	return func(t *testing.T, d workload.WorkloadDiagnosis) {
		t.Helper()
		r := d.Recommendation
		if r.Verdict != v || r.Mode != m || !strings.Contains(r.Rationale[0], rule) {
			t.Errorf("verdict %s/%s (%s), want %s/%s by %s", r.Verdict, r.Mode, r.Rationale[0], v, m, rule)
		}
	}
}

func capability(id string, want bool) wlCheck {
	return func(t *testing.T, d workload.WorkloadDiagnosis) {
		t.Helper()
		got := slices.ContainsFunc(d.MissingCapabilities, func(c workload.WorkloadMissingCapability) bool { return c.ID == id })
		if got != want {
			t.Errorf("missing capability %s: %v, want %v: %+v", id, got, want, d.MissingCapabilities)
		}
	}
}

func local(item string, want bool) wlCheck {
	return func(t *testing.T, d workload.WorkloadDiagnosis) {
		t.Helper()
		got := slices.ContainsFunc(d.WhatRemainsLocal, func(l workload.WorkloadLocalItem) bool { return l.Item == item })
		if got != want {
			t.Errorf("what remains local %s: %v, want %v: %+v", item, got, want, d.WhatRemainsLocal)
		}
	}
}

// risk checks the severity of a risk ("" when it must not be reported).
func risk(id string, want workload.WorkloadSeverity) wlCheck {
	return func(t *testing.T, d workload.WorkloadDiagnosis) {
		t.Helper()
		var got workload.WorkloadSeverity
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
func approval(id string, role workload.WorkloadOwnerRole, timing workload.WorkloadApprovalTiming, scope ...string) wlCheck {
	return func(t *testing.T, d workload.WorkloadDiagnosis) {
		t.Helper()
		var got *workload.WorkloadHumanApproval
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
	return func(t *testing.T, d workload.WorkloadDiagnosis) {
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
	{"T1", []wlMod{horizon(workload.HorizonSingleTurn)}, []wlCheck{score("time", 0)}},
	{"T2", []wlMod{horizon(workload.HorizonSingleSession)}, []wlCheck{score("time", 20), state("time", workload.BoundaryAbsent)}},
	{"T3", []wlMod{horizon(workload.HorizonMultiDay)}, []wlCheck{score("time", 50), state("time", workload.BoundaryPresent)}},
	{"T4", []wlMod{horizon(workload.HorizonRecurring)}, []wlCheck{score("time", 60)}},
	{"T5", []wlMod{horizon(workload.HorizonContinuous)}, []wlCheck{score("time", 80), state("time", workload.BoundaryCritical)}},

	{"A1", []wlMod{agents(1, workload.CoordinationNone)}, []wlCheck{score("agents", 0)}},
	{"A2", []wlMod{agents(3, workload.CoordinationNone)}, []wlCheck{score("agents", 30), state("agents", workload.BoundaryAbsent)}},
	{"A3", []wlMod{agents(10, workload.CoordinationNone)}, []wlCheck{score("agents", 45)}},
	{"A4", []wlMod{agents(11, workload.CoordinationNone)}, []wlCheck{score("agents", 60)}},
	{"A5", []wlMod{agents(4, workload.CoordinationNone)}, []wlCheck{score("agents", 45)}},
	{"A6", []wlMod{agents(1, workload.CoordinationHandoff)}, []wlCheck{score("agents", 15)}},
	{"A7", []wlMod{agents(2, workload.CoordinationParallel)}, []wlCheck{score("agents", 50)}},
	{"A8", []wlMod{agents(4, workload.CoordinationHierarchical)}, []wlCheck{score("agents", 75), state("agents", workload.BoundaryCritical)}},
	{"A9", []wlMod{agents(100, workload.CoordinationHierarchical)}, []wlCheck{score("agents", 90)}},

	{"S1", nil, []wlCheck{score("systems", 0)}},
	{"S2", []wlMod{readSystem(workload.CategoryOther)}, []wlCheck{score("systems", 10)}},
	{"S3", []wlMod{system(workload.CategoryOther, workload.AccessWrite, workload.SideEffectNone, workload.DataPublic)},
		[]wlCheck{score("systems", 35), state("systems", workload.BoundaryPresent)}},
	{"S4", []wlMod{system(workload.CategoryOther, workload.AccessAdmin, workload.SideEffectNone, workload.DataPublic)}, []wlCheck{score("systems", 50)}},
	{"S5", []wlMod{system(workload.CategoryOther, workload.AccessRead, workload.SideEffectNone, workload.DataPublic)}, []wlCheck{score("systems", 10)}},
	{"S6", []wlMod{system(workload.CategoryOther, workload.AccessRead, workload.SideEffectReversible, workload.DataPublic)}, []wlCheck{score("systems", 20)}},
	{"S7", []wlMod{system(workload.CategoryOther, workload.AccessRead, workload.SideEffectExternal, workload.DataPublic)}, []wlCheck{score("systems", 35)}},
	{"S8", []wlMod{system(workload.CategoryOther, workload.AccessRead, workload.SideEffectIrreversible, workload.DataPublic)}, []wlCheck{score("systems", 50)}},
	{"S9", []wlMod{system(workload.CategoryOther, workload.AccessRead, workload.SideEffectNone, workload.DataPublic)}, []wlCheck{score("systems", 10)}},
	{"S10", []wlMod{system(workload.CategoryOther, workload.AccessRead, workload.SideEffectNone, workload.DataInternal)}, []wlCheck{score("systems", 15)}},
	{"S11", []wlMod{system(workload.CategoryOther, workload.AccessRead, workload.SideEffectNone, workload.DataConfidential)}, []wlCheck{score("systems", 25)}},
	{"S12", []wlMod{system(workload.CategoryOther, workload.AccessRead, workload.SideEffectNone, workload.DataRegulated)}, []wlCheck{score("systems", 40)}},
	{"S13", []wlMod{readSystem(workload.CategoryBrowser), readSystem(workload.CategoryCRM),
		system(workload.CategoryOther, workload.AccessRead, workload.SideEffectNone, workload.DataConfidential)},
		[]wlCheck{score("systems", 35)}}, // the highest (25) + 2 further systems
	{"S13", []wlMod{readSystem(workload.CategoryBrowser), readSystem(workload.CategoryCRM), readSystem(workload.CategoryDatabase),
		readSystem(workload.CategoryFinance), readSystem(workload.CategoryIdentity), readSystem(workload.CategoryMessaging), readSystem(workload.CategoryOther)},
		[]wlCheck{score("systems", 30)}}, // breadth at most +20
	{"S13", []wlMod{system(workload.CategoryOther, workload.AccessAdmin, workload.SideEffectIrreversible, workload.DataRegulated)},
		[]wlCheck{score("systems", 100), state("systems", workload.BoundaryCritical)}}, // 120 capped

	{"U1", []wlMod{act(workload.ActionResearch)}, []wlCheck{score("authority", 0)}},
	{"U2", []wlMod{act(workload.ActionDraft)}, []wlCheck{score("authority", 0)}},
	{"U3", []wlMod{act(workload.ActionReadInternalData)}, []wlCheck{score("authority", 5)}},
	{"U4", []wlMod{act(workload.ActionWriteInternalRecords)}, []wlCheck{score("authority", 20)}},
	{"U5", []wlMod{act(workload.ActionModifyCode)}, []wlCheck{score("authority", 30)}},
	{"U6", []wlMod{act(workload.ActionSendExternalMessage)}, []wlCheck{score("authority", 35)}},
	{"U7", []wlMod{act(workload.ActionMergeOrDeploy)}, []wlCheck{score("authority", 40)}},
	{"U8", []wlMod{act(workload.ActionCreateAccount)}, []wlCheck{score("authority", 40)}},
	{"U9", []wlMod{act(workload.ActionDeleteData)}, []wlCheck{score("authority", 45)}},
	{"U10", []wlMod{act(workload.ActionSpendFunds)}, []wlCheck{score("authority", 50)}},
	{"U11", []wlMod{act(workload.ActionChangePermissions)}, []wlCheck{score("authority", 50)}},
	{"U12", []wlMod{act(workload.ActionResearch, workload.ActionWriteInternalRecords, workload.ActionModifyCode, workload.ActionDeleteData)},
		[]wlCheck{score("authority", 55)}}, // 45 + 2 further consequential actions (research is not one)
	{"U12", []wlMod{act(workload.ActionWriteInternalRecords, workload.ActionModifyCode, workload.ActionDeleteData,
		workload.ActionMergeOrDeploy, workload.ActionSendExternalMessage)}, []wlCheck{score("authority", 60)}}, // at most +15
	{"U13", []wlMod{actions(workload.ApprovalPerAction, workload.BudgetNotApplicable, workload.ActionModifyCode)}, []wlCheck{score("authority", 30)}},
	{"U13", []wlMod{actions(workload.ApprovalUndefined, workload.BudgetUndefined, workload.ActionResearch, workload.ActionReadInternalData)},
		[]wlCheck{score("authority", 5)}}, // no consequential action: the policy adds nothing
	{"U14", []wlMod{actions(workload.ApprovalSensitiveActions, workload.BudgetNotApplicable, workload.ActionModifyCode)}, []wlCheck{score("authority", 35)}},
	{"U15", []wlMod{actions(workload.ApprovalExceptionsOnly, workload.BudgetNotApplicable, workload.ActionModifyCode)}, []wlCheck{score("authority", 45)}},
	{"U16", []wlMod{actions(workload.ApprovalUndefined, workload.BudgetNotApplicable, workload.ActionModifyCode)}, []wlCheck{score("authority", 55)}},
	{"U17", []wlMod{actions(workload.ApprovalPerAction, workload.BudgetFixedLimit, workload.ActionSpendFunds)}, []wlCheck{score("authority", 50)}},
	{"U18", []wlMod{actions(workload.ApprovalPerAction, workload.BudgetDynamicLimit, workload.ActionSpendFunds)}, []wlCheck{score("authority", 60)}},
	{"U19", []wlMod{actions(workload.ApprovalPerAction, workload.BudgetUndefined, workload.ActionSpendFunds)},
		[]wlCheck{score("authority", 75), state("authority", workload.BoundaryCritical)}},
	{"U20", []wlMod{actions(workload.ApprovalPerAction, workload.BudgetUnbounded, workload.ActionSpendFunds)}, []wlCheck{score("authority", 85)}},
	{"U21", []wlMod{actions(workload.ApprovalUndefined, workload.BudgetUnbounded, workload.ActionSpendFunds, workload.ActionChangePermissions)},
		[]wlCheck{score("authority", 100)}}, // 50 + 5 + 25 + 35 = 115, capped
	{"U21", []wlMod{actions(workload.ApprovalUndefined, workload.BudgetUnbounded)}, []wlCheck{score("authority", 0)}}, // no action

	{"C1", []wlMod{consequence(workload.ConsequenceLow, workload.RetentionNone)}, []wlCheck{score("accountability", 0)}},
	{"C2", []wlMod{consequence(workload.ConsequenceModerate, workload.RetentionNone)}, []wlCheck{score("accountability", 25)}},
	{"C3", []wlMod{consequence(workload.ConsequenceHigh, workload.RetentionShortTerm)},
		[]wlCheck{score("accountability", 45), state("accountability", workload.BoundaryPresent)}},
	{"C4", []wlMod{consequence(workload.ConsequenceRegulated, workload.RetentionRegulated)}, []wlCheck{score("accountability", 60)}},
	{"C5", []wlMod{account(workload.EvidenceVerifiedOutcome, workload.AcceptanceHuman, workload.ConsequenceLow, workload.RetentionNone)}, []wlCheck{score("accountability", 0)}},
	{"C6", []wlMod{account(workload.EvidenceArtifact, workload.AcceptanceHuman, workload.ConsequenceLow, workload.RetentionNone)}, []wlCheck{score("accountability", 5)}},
	{"C7", []wlMod{account(workload.EvidenceActivityLog, workload.AcceptanceHuman, workload.ConsequenceLow, workload.RetentionNone)}, []wlCheck{score("accountability", 10)}},
	{"C8", []wlMod{account(workload.EvidenceNone, workload.AcceptanceHuman, workload.ConsequenceLow, workload.RetentionNone)}, []wlCheck{score("accountability", 15)}},
	{"C9", []wlMod{account(workload.EvidenceVerifiedOutcome, workload.AcceptanceHuman, workload.ConsequenceLow, workload.RetentionNone)}, []wlCheck{score("accountability", 0)}},
	{"C10", []wlMod{account(workload.EvidenceVerifiedOutcome, workload.AcceptanceDownstreamSystem, workload.ConsequenceLow, workload.RetentionNone)}, []wlCheck{score("accountability", 5)}},
	{"C11", []wlMod{account(workload.EvidenceVerifiedOutcome, workload.AcceptanceAgent, workload.ConsequenceLow, workload.RetentionNone)}, []wlCheck{score("accountability", 10)}},
	{"C12", []wlMod{account(workload.EvidenceVerifiedOutcome, workload.AcceptanceNone, workload.ConsequenceLow, workload.RetentionNone)}, []wlCheck{score("accountability", 15)}},
	{"C13", []wlMod{consequence(workload.ConsequenceHigh, workload.RetentionNone)}, []wlCheck{score("accountability", 55)}},
	{"C14", []wlMod{consequence(workload.ConsequenceRegulated, workload.RetentionLongTerm)},
		[]wlCheck{score("accountability", 70), state("accountability", workload.BoundaryCritical)}},
	{"C14", []wlMod{consequence(workload.ConsequenceRegulated, workload.RetentionNone)}, []wlCheck{score("accountability", 80)}}, // with C13
	{"C15", []wlMod{account(workload.EvidenceNone, workload.AcceptanceNone, workload.ConsequenceRegulated, workload.RetentionNone)},
		[]wlCheck{score("accountability", 100)}}, // 110 capped

	{"B1", []wlMod{agents(3, workload.CoordinationNone)}, []wlCheck{state("agents", workload.BoundaryAbsent)}}, // 30
	{"B2", []wlMod{readSystem(workload.CategoryOther), horizon(workload.HorizonMultiDay)}, []wlCheck{state("time", workload.BoundaryPresent)}},
	{"B2", []wlMod{system(workload.CategoryOther, workload.AccessWrite, workload.SideEffectNone, workload.DataPublic)},
		[]wlCheck{state("systems", workload.BoundaryPresent)}}, // 35 exactly
	{"B3", []wlMod{consequence(workload.ConsequenceRegulated, workload.RetentionLongTerm)}, []wlCheck{state("accountability", workload.BoundaryCritical)}}, // 70 exactly

	{"V1", []wlMod{system(workload.CategoryOther, workload.AccessWrite, workload.SideEffectNone, workload.DataPublic)},
		[]wlCheck{verdict(workload.VerdictNeeded, workload.ModeGovernedWorkspace, "(V1)")}},
	{"V2", []wlMod{system(workload.CategoryOther, workload.AccessRead, workload.SideEffectExternal, workload.DataPublic)},
		[]wlCheck{verdict(workload.VerdictNeeded, workload.ModeGovernedWorkspace, "(V2)")}},
	{"V3", []wlMod{system(workload.CategoryDatabase, workload.AccessRead, workload.SideEffectNone, workload.DataRegulated)},
		[]wlCheck{verdict(workload.VerdictNeeded, workload.ModeGovernedWorkspace, "(V3)")}},
	{"V3", []wlMod{consequence(workload.ConsequenceRegulated, workload.RetentionRegulated)},
		[]wlCheck{verdict(workload.VerdictNeeded, workload.ModeGovernedWorkspace, "(V3)")}},
	{"V4", []wlMod{actions(workload.ApprovalExceptionsOnly, workload.BudgetNotApplicable, workload.ActionModifyCode)},
		[]wlCheck{verdict(workload.VerdictNeeded, workload.ModeGovernedWorkspace, "(V4)")}},
	{"V4", []wlMod{act(workload.ActionSpendFunds)}, []wlCheck{verdict(workload.VerdictNeeded, workload.ModeGovernedWorkspace, "(V4)")}},
	{"V4", []wlMod{act(workload.ActionChangePermissions)}, []wlCheck{verdict(workload.VerdictNeeded, workload.ModeGovernedWorkspace, "(V4)")}},
	{"V5", []wlMod{account(workload.EvidenceNone, workload.AcceptanceNone, workload.ConsequenceHigh, workload.RetentionLongTerm)},
		[]wlCheck{verdict(workload.VerdictNeeded, workload.ModeGovernedWorkspace, "(V5)")}},
	{"V1", []wlMod{system(workload.CategoryCRM, workload.AccessWrite, workload.SideEffectExternal, workload.DataRegulated),
		actions(workload.ApprovalUndefined, workload.BudgetUndefined, workload.ActionSpendFunds),
		account(workload.EvidenceNone, workload.AcceptanceNone, workload.ConsequenceHigh, workload.RetentionLongTerm)},
		[]wlCheck{verdict(workload.VerdictNeeded, workload.ModeGovernedWorkspace, "(V1, V2, V3, V4, V5)")}},
	{"V6", []wlMod{horizon(workload.HorizonContinuous), agents(12, workload.CoordinationHierarchical),
		readSystem(workload.CategoryBrowser), act(workload.ActionResearch, workload.ActionModifyCode),
		account(workload.EvidenceNone, workload.AcceptanceNone, workload.ConsequenceModerate, workload.RetentionNone)},
		[]wlCheck{verdict(workload.VerdictConditional, workload.ModeReceiptOnly, "(V6)"), state("time", workload.BoundaryCritical),
			state("agents", workload.BoundaryCritical), state("accountability", workload.BoundaryPresent), state("authority", workload.BoundaryAbsent)}},
	{"V7", []wlMod{horizon(workload.HorizonSingleSession), agents(3, workload.CoordinationNone), readSystem(workload.CategoryBrowser),
		act(workload.ActionResearch, workload.ActionDraft, workload.ActionModifyCode)},
		[]wlCheck{verdict(workload.VerdictNotNeeded, workload.ModeNone, "(V7)"), resources(), approval("installation", "", "")}},

	{"P1", []wlMod{readSystem(workload.CategoryCodeRepository), readSystem(workload.CategoryDatabase),
		system(workload.CategoryCodeRepository, workload.AccessWrite, workload.SideEffectReversible, workload.DataInternal), act(workload.ActionModifyCode)},
		[]wlCheck{resources("code_repository read [modify_code] false", "database read [] false", "code_repository#2 write [modify_code] true")}},
	{"P2", []wlMod{system(workload.CategoryCodeRepository, workload.AccessAdmin, workload.SideEffectReversible, workload.DataInternal), act(workload.ActionResearch)},
		[]wlCheck{resources("code_repository read [research] true")}},
	{"P3", []wlMod{system(workload.CategoryCodeRepository, workload.AccessRead, workload.SideEffectNone, workload.DataInternal),
		system(workload.CategoryIdentity, workload.AccessWrite, workload.SideEffectNone, workload.DataInternal),
		act(workload.ActionMergeOrDeploy, workload.ActionChangePermissions)},
		[]wlCheck{resources("code_repository read [merge_or_deploy change_permissions] true", "identity write [change_permissions] true")}},
	{"P4", []wlMod{system(workload.CategoryCodeRepository, workload.AccessWrite, workload.SideEffectReversible, workload.DataInternal),
		act(workload.ActionMergeOrDeploy, workload.ActionResearch, workload.ActionSpendFunds, workload.ActionModifyCode)},
		[]wlCheck{resources("code_repository write [research modify_code merge_or_deploy] true")}},
	{"P5", []wlMod{system(workload.CategoryLocalFiles, workload.AccessWrite, workload.SideEffectReversible, workload.DataConfidential),
		readSystem(workload.CategoryBrowser), system(workload.CategoryBrowser, workload.AccessRead, workload.SideEffectNone, workload.DataInternal),
		act(workload.ActionDraft, workload.ActionResearch)},
		[]wlCheck{resources("local_files write [research draft] false", "browser read [research] false", "browser#2 read [research] true")}},

	{"M1", []wlMod{horizon(workload.HorizonMultiDay)}, []wlCheck{capability("durable_state", true), capability("run_schedule", false)}},
	{"M2", []wlMod{horizon(workload.HorizonRecurring)}, []wlCheck{capability("run_schedule", true)}},
	{"M3", []wlMod{agents(4, workload.CoordinationNone)}, []wlCheck{capability("agent_identity", true), capability("coordination_record", false)}},
	{"M3", []wlMod{agents(2, workload.CoordinationNone)}, []wlCheck{capability("agent_identity", false)}}, // agents absent (30)
	{"M4", []wlMod{agents(2, workload.CoordinationHandoff)}, []wlCheck{capability("coordination_record", true)}},
	{"M5", []wlMod{system(workload.CategoryCRM, workload.AccessWrite, workload.SideEffectNone, workload.DataPublic)}, []wlCheck{capability("scoped_credentials", true)}},
	{"M6", []wlMod{system(workload.CategoryCRM, workload.AccessRead, workload.SideEffectNone, workload.DataRegulated)},
		[]wlCheck{capability("data_handling", true), capability("scoped_credentials", false)}},
	{"M7", []wlMod{system(workload.CategoryMessaging, workload.AccessRead, workload.SideEffectExternal, workload.DataPublic)}, []wlCheck{capability("side_effect_guard", true)}},
	{"M8", []wlMod{readSystem(workload.CategoryCodeRepository), act(workload.ActionModifyCode)}, []wlCheck{capability("access_for_actions", true)}},
	{"M9", []wlMod{actions(workload.ApprovalExceptionsOnly, workload.BudgetNotApplicable, workload.ActionModifyCode)},
		[]wlCheck{capability("approval_policy", true)}},
	{"M9", []wlMod{actions(workload.ApprovalSensitiveActions, workload.BudgetNotApplicable, workload.ActionDeleteData)},
		[]wlCheck{capability("approval_policy", false)}},
	{"M10", []wlMod{actions(workload.ApprovalPerAction, workload.BudgetDynamicLimit, workload.ActionSpendFunds)}, []wlCheck{capability("spend_limit", true)}},
	{"M10", []wlMod{act(workload.ActionSpendFunds)}, []wlCheck{capability("spend_limit", false)}},
	{"M11", []wlMod{account(workload.EvidenceActivityLog, workload.AcceptanceAgent, workload.ConsequenceModerate, workload.RetentionNone)},
		[]wlCheck{capability("outcome_evidence", true), capability("outcome_acceptance", true)}},
	{"M11", []wlMod{account(workload.EvidenceActivityLog, workload.AcceptanceNone, workload.ConsequenceLow, workload.RetentionNone)},
		[]wlCheck{capability("outcome_evidence", false)}},
	{"M12", []wlMod{account(workload.EvidenceArtifact, workload.AcceptanceNone, workload.ConsequenceHigh, workload.RetentionLongTerm)},
		[]wlCheck{capability("outcome_acceptance", true), capability("outcome_evidence", false)}},
	{"M13", []wlMod{consequence(workload.ConsequenceHigh, workload.RetentionNone)}, []wlCheck{capability("retention_policy", true)}},

	{"L1", nil, []wlCheck{local("workload_description", true), local("everything", true)}},
	{"L2", []wlMod{system(workload.CategoryCRM, workload.AccessWrite, workload.SideEffectNone, workload.DataInternal)}, []wlCheck{local("credentials", true)}},
	{"L2", []wlMod{system(workload.CategoryLocalFiles, workload.AccessWrite, workload.SideEffectNone, workload.DataInternal)},
		[]wlCheck{local("credentials", false), local("local_files", true)}},
	{"L3", []wlMod{system(workload.CategoryLocalFiles, workload.AccessRead, workload.SideEffectNone, workload.DataPublic)}, []wlCheck{local("local_files", true)}},
	{"L4", []wlMod{act(workload.ActionDraft)}, []wlCheck{local("drafts", true)}},
	{"L5", []wlMod{act(workload.ActionResearch)}, []wlCheck{local("research_notes", true)}},
	{"L6", []wlMod{horizon(workload.HorizonMultiDay)}, []wlCheck{local("agent_reasoning", true), local("everything", false)}},
	{"L7", []wlMod{consequence(workload.ConsequenceRegulated, workload.RetentionRegulated)}, []wlCheck{local("regulated_records", true)}},
	{"L8", []wlMod{horizon(workload.HorizonSingleSession)}, []wlCheck{local("everything", true), local("agent_reasoning", false)}},

	{"K1", []wlMod{horizon(workload.HorizonRecurring)}, []wlCheck{risk("unattended_duration", workload.SeverityMedium)}},
	{"K1", []wlMod{horizon(workload.HorizonContinuous)}, []wlCheck{risk("unattended_duration", workload.SeverityHigh)}},
	{"K2", []wlMod{horizon(workload.HorizonMultiDay)}, []wlCheck{risk("stale_context", workload.SeverityLow)}},
	{"K3", []wlMod{agents(4, workload.CoordinationNone)}, []wlCheck{risk("duplicated_work", workload.SeverityMedium)}},
	{"K3", []wlMod{agents(2, workload.CoordinationNone)}, []wlCheck{risk("duplicated_work", "")}}, // agents absent
	{"K4", []wlMod{agents(2, workload.CoordinationHandoff)}, []wlCheck{risk("lost_handoff", workload.SeverityMedium)}},
	{"K5", []wlMod{agents(2, workload.CoordinationParallel), system(workload.CategoryDatabase, workload.AccessWrite, workload.SideEffectReversible, workload.DataInternal)},
		[]wlCheck{risk("conflicting_writes", workload.SeverityHigh)}},
	{"K6", []wlMod{system(workload.CategoryDatabase, workload.AccessWrite, workload.SideEffectReversible, workload.DataInternal), act(workload.ActionReadInternalData)},
		[]wlCheck{risk("excess_privilege", workload.SeverityMedium)}},
	{"K6", []wlMod{system(workload.CategoryDatabase, workload.AccessAdmin, workload.SideEffectReversible, workload.DataInternal), act(workload.ActionReadInternalData)},
		[]wlCheck{risk("excess_privilege", workload.SeverityHigh)}},
	{"K7", []wlMod{system(workload.CategoryDatabase, workload.AccessWrite, workload.SideEffectIrreversible, workload.DataInternal)},
		[]wlCheck{risk("irreversible_change", workload.SeverityHigh)}},
	{"K7", []wlMod{system(workload.CategoryDatabase, workload.AccessWrite, workload.SideEffectIrreversible, workload.DataConfidential)},
		[]wlCheck{risk("irreversible_change", workload.SeverityCritical)}},
	{"K8", []wlMod{system(workload.CategoryMessaging, workload.AccessWrite, workload.SideEffectExternal, workload.DataInternal)},
		[]wlCheck{risk("external_exposure", workload.SeverityMedium)}},
	{"K8", []wlMod{system(workload.CategoryMessaging, workload.AccessWrite, workload.SideEffectExternal, workload.DataRegulated)},
		[]wlCheck{risk("external_exposure", workload.SeverityHigh)}},
	{"K9", []wlMod{system(workload.CategoryCRM, workload.AccessRead, workload.SideEffectNone, workload.DataConfidential), horizon(workload.HorizonMultiDay)},
		[]wlCheck{risk("data_exposure", "")}}, // systems absent (25)
	{"K9", []wlMod{system(workload.CategoryCRM, workload.AccessWrite, workload.SideEffectNone, workload.DataConfidential)},
		[]wlCheck{risk("data_exposure", workload.SeverityMedium)}},
	{"K9", []wlMod{system(workload.CategoryCRM, workload.AccessRead, workload.SideEffectNone, workload.DataRegulated)},
		[]wlCheck{risk("data_exposure", workload.SeverityHigh)}},
	{"K10", []wlMod{actions(workload.ApprovalExceptionsOnly, workload.BudgetNotApplicable, workload.ActionModifyCode)}, []wlCheck{risk("unapproved_action", workload.SeverityHigh)}},
	{"K10", []wlMod{actions(workload.ApprovalUndefined, workload.BudgetNotApplicable, workload.ActionModifyCode)}, []wlCheck{risk("unapproved_action", workload.SeverityCritical)}},
	{"K11", []wlMod{actions(workload.ApprovalPerAction, workload.BudgetFixedLimit, workload.ActionSpendFunds)}, []wlCheck{risk("uncontrolled_spend", workload.SeverityLow)}},
	{"K11", []wlMod{actions(workload.ApprovalPerAction, workload.BudgetDynamicLimit, workload.ActionSpendFunds)}, []wlCheck{risk("uncontrolled_spend", workload.SeverityMedium)}},
	{"K11", []wlMod{actions(workload.ApprovalPerAction, workload.BudgetUndefined, workload.ActionSpendFunds)}, []wlCheck{risk("uncontrolled_spend", workload.SeverityHigh)}},
	{"K11", []wlMod{actions(workload.ApprovalPerAction, workload.BudgetUnbounded, workload.ActionSpendFunds)}, []wlCheck{risk("uncontrolled_spend", workload.SeverityCritical)}},
	{"K12", []wlMod{act(workload.ActionCreateAccount)}, []wlCheck{risk("privilege_escalation", workload.SeverityHigh)}},
	{"K12", []wlMod{actions(workload.ApprovalUndefined, workload.BudgetNotApplicable, workload.ActionChangePermissions)},
		[]wlCheck{risk("privilege_escalation", workload.SeverityCritical)}},
	{"K13", []wlMod{act(workload.ActionDeleteData)}, []wlCheck{risk("data_loss", workload.SeverityHigh)}},
	{"K13", []wlMod{act(workload.ActionDeleteData), consequence(workload.ConsequenceLow, workload.RetentionRegulated)},
		[]wlCheck{risk("data_loss", workload.SeverityCritical)}},
	{"K14", []wlMod{account(workload.EvidenceActivityLog, workload.AcceptanceAgent, workload.ConsequenceModerate, workload.RetentionLongTerm)},
		[]wlCheck{risk("unverifiable_outcome", workload.SeverityMedium)}},
	{"K14", []wlMod{account(workload.EvidenceNone, workload.AcceptanceHuman, workload.ConsequenceHigh, workload.RetentionLongTerm)},
		[]wlCheck{risk("unverifiable_outcome", workload.SeverityHigh)}},
	{"K14", []wlMod{account(workload.EvidenceActivityLog, workload.AcceptanceHuman, workload.ConsequenceRegulated, workload.RetentionRegulated)},
		[]wlCheck{risk("unverifiable_outcome", workload.SeverityCritical)}},
	{"K15", []wlMod{consequence(workload.ConsequenceHigh, workload.RetentionNone)}, []wlCheck{risk("retention_gap", workload.SeverityHigh)}},
	{"K15", []wlMod{consequence(workload.ConsequenceRegulated, workload.RetentionShortTerm)}, []wlCheck{risk("retention_gap", workload.SeverityCritical)}},

	{"H1", []wlMod{system(workload.CategoryCRM, workload.AccessWrite, workload.SideEffectNone, workload.DataInternal), readSystem(workload.CategoryBrowser)},
		[]wlCheck{approval("installation", workload.OwnerWorkload, workload.TimingBeforeInstallation, "crm", "browser")}},
	{"H1", []wlMod{horizon(workload.HorizonMultiDay)}, []wlCheck{approval("installation", workload.OwnerWorkload, workload.TimingBeforeInstallation, "workload")}},
	{"H2", []wlMod{system(workload.CategoryCRM, workload.AccessWrite, workload.SideEffectNone, workload.DataInternal),
		readSystem(workload.CategoryBrowser), act(workload.ActionWriteInternalRecords)},
		[]wlCheck{approval("system_access", workload.OwnerSystem, workload.TimingBeforeFirstUse, "crm")}},
	{"H2", []wlMod{system(workload.CategoryCRM, workload.AccessWrite, workload.SideEffectNone, workload.DataInternal), act(workload.ActionReadInternalData)},
		[]wlCheck{approval("system_access", "", "")}}, // write declared, read proposed
	{"H3", []wlMod{system(workload.CategoryCodeRepository, workload.AccessWrite, workload.SideEffectReversible, workload.DataInternal), act(workload.ActionModifyCode)},
		[]wlCheck{approval("code_changes", workload.OwnerCode, workload.TimingBeforeFirstUse, "modify_code")}},
	{"H3", []wlMod{act(workload.ActionModifyCode, workload.ActionMergeOrDeploy)},
		[]wlCheck{approval("code_changes", workload.OwnerCode, workload.TimingPerAction, "modify_code", "merge_or_deploy")}},
	{"H4", []wlMod{act(workload.ActionSendExternalMessage)}, []wlCheck{approval("external_messages", workload.OwnerCommunications, workload.TimingPerAction)}},
	{"H5", []wlMod{act(workload.ActionSpendFunds)}, []wlCheck{approval("spending", workload.OwnerBudget, workload.TimingWhenThresholdExceeded)}},
	{"H5", []wlMod{actions(workload.ApprovalPerAction, workload.BudgetUnbounded, workload.ActionSpendFunds)},
		[]wlCheck{approval("spending", workload.OwnerBudget, workload.TimingPerAction)}},
	{"H6", []wlMod{act(workload.ActionCreateAccount, workload.ActionChangePermissions)},
		[]wlCheck{approval("identity_changes", workload.OwnerIdentityAdmin, workload.TimingPerAction, "create_account", "change_permissions")}},
	{"H7", []wlMod{act(workload.ActionDeleteData)}, []wlCheck{approval("data_deletion", workload.OwnerData, workload.TimingPerAction)}},
	{"H8", []wlMod{system(workload.CategoryDatabase, workload.AccessRead, workload.SideEffectNone, workload.DataRegulated), readSystem(workload.CategoryBrowser)},
		[]wlCheck{approval("regulated_data", workload.OwnerData, workload.TimingBeforeFirstUse, "database")}},
	{"H8", []wlMod{consequence(workload.ConsequenceRegulated, workload.RetentionRegulated)},
		[]wlCheck{approval("regulated_data", workload.OwnerData, workload.TimingBeforeFirstUse, "workload")}},
}

func wlRequest(mods ...wlMod) workload.WorkloadRequest {
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
			d := workload.Diagnose(r)
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
	for _, rule := range workload.WorkloadScoringRules() {
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
	base := workload.Diagnose(wlBase())
	if base.Recommendation.Verdict != workload.VerdictNotNeeded || base.Recommendation.ActiveBoundaryCount != 0 ||
		len(base.HumanApprovals) != 0 || base.ApprovalHandoff.Kind != workload.HandoffNone || base.ApprovalHandoff.URL != "" ||
		len(base.CapabilitiesAfterInstallation) != 0 || len(base.Recommendation.Rationale) != 1 {
		t.Fatalf("base: %+v", base)
	}
	r := rand.New(rand.NewPCG(7, 7))
	for range 3000 {
		d := workload.Diagnose(randomWorkload(r))
		rec := d.Recommendation
		active := 0
		for _, b := range []workload.WorkloadBoundary{d.Boundaries.Time, d.Boundaries.Agents, d.Boundaries.Systems, d.Boundaries.Authority, d.Boundaries.Accountability} {
			want := workload.BoundaryAbsent
			if b.Score >= 70 {
				want = workload.BoundaryCritical
			} else if b.Score >= 35 {
				want = workload.BoundaryPresent
			}
			if b.State != want {
				t.Fatalf("state %s for %d points", b.State, b.Score)
			}
			if b.State != workload.BoundaryAbsent {
				active++
			}
		}
		modes := map[workload.WorkloadVerdict]workload.WorkloadMode{workload.VerdictNeeded: workload.ModeGovernedWorkspace,
			workload.VerdictConditional: workload.ModeReceiptOnly, workload.VerdictNotNeeded: workload.ModeNone}
		if rec.ActiveBoundaryCount != active || modes[rec.Verdict] != rec.Mode || len(rec.Rationale) != 1+active ||
			(active == 0) != (rec.Verdict == workload.VerdictNotNeeded) {
			t.Fatalf("recommendation %+v with %d active boundaries", rec, active)
		}
		if (len(d.HumanApprovals) > 0) != (d.ApprovalHandoff.Kind == workload.HandoffBrowserReview) ||
			len(d.HumanApprovals) != len(d.ApprovalHandoff.ApprovalIDs) || d.ApprovalHandoff.MutatesState || d.ApprovalHandoff.CarriesSensitiveData {
			t.Fatalf("handoff %+v for %d approvals", d.ApprovalHandoff, len(d.HumanApprovals))
		}
		if d.ApprovalHandoff.Kind == workload.HandoffBrowserReview && d.ApprovalHandoff.URL != workload.WorkloadReviewPath+"#"+d.DiagnosisID {
			t.Fatalf("handoff url %q", d.ApprovalHandoff.URL)
		}
		for _, risk := range d.Risks {
			if boundaryOf(d, risk.Boundary).State == workload.BoundaryAbsent {
				t.Fatalf("risk %s of an absent boundary", risk.ID)
			}
		}
	}
}

// --- validation -----------------------------------------------------------------------

func wlIssues(err error) []workload.WorkloadIssue {
	if err == nil {
		return nil
	}
	var ae *accountable.Error
	if !errors.As(err, &ae) || ae.Code != accountable.ECodeValidationFailed {
		panic(fmt.Sprintf("not a validation error: %v", err))
	}
	return ae.Details["issues"].([]workload.WorkloadIssue)
}

func TestWorkloadValidation(t *testing.T) {
	long := func(n int) string { return strings.Repeat("é", n) }
	cases := []struct {
		name string
		mod  func(*workload.WorkloadRequest)
		want []string // "path code"
	}{
		{"valid", func(*workload.WorkloadRequest) {}, nil},
		{"at the bounds", func(r *workload.WorkloadRequest) {
			r.Workload.Name, r.Workload.Outcome, r.Workload.AgentCount = long(200), long(2000), 100
		}, nil},
		{"missing everything", func(r *workload.WorkloadRequest) { *r = workload.WorkloadRequest{} }, []string{
			"/schema_version required", "/workload/accountability/acceptance required", "/workload/accountability/consequence required",
			"/workload/accountability/evidence required", "/workload/accountability/retention required",
			"/workload/agent_count out_of_range", "/workload/authority/actions required", "/workload/authority/approval_policy required",
			"/workload/authority/budget_control required", "/workload/coordination required", "/workload/name required",
			"/workload/outcome required", "/workload/systems required", "/workload/time_horizon required"}},
		{"wrong schema version", func(r *workload.WorkloadRequest) { r.SchemaVersion = "workload-diagnosis/0.2" },
			[]string{"/schema_version unsupported_schema_version"}},
		{"name too long", func(r *workload.WorkloadRequest) { r.Workload.Name = long(201) }, []string{"/workload/name too_long"}},
		{"outcome too long", func(r *workload.WorkloadRequest) { r.Workload.Outcome = long(2001) }, []string{"/workload/outcome too_long"}},
		{"NUL in name", func(r *workload.WorkloadRequest) { r.Workload.Name = "a\x00b" }, []string{"/workload/name invalid_text"}},
		{"no agent", func(r *workload.WorkloadRequest) { r.Workload.AgentCount = 0 }, []string{"/workload/agent_count out_of_range"}},
		{"too many agents", func(r *workload.WorkloadRequest) { r.Workload.AgentCount = 101 }, []string{"/workload/agent_count out_of_range"}},
		{"unknown enums", func(r *workload.WorkloadRequest) {
			r.Workload.TimeHorizon, r.Workload.Coordination = "forever", "swarm"
			r.Workload.Accountability.Consequence = "huge"
		}, []string{"/workload/accountability/consequence invalid_enum", "/workload/coordination invalid_enum", "/workload/time_horizon invalid_enum"}},
		{"parallel alone", func(r *workload.WorkloadRequest) { r.Workload.Coordination = workload.CoordinationParallel },
			[]string{"/workload/coordination inconsistent"}},
		{"unknown system values", func(r *workload.WorkloadRequest) {
			r.Workload.Systems = []workload.WorkloadSystem{{Category: "mainframe", Access: "root", SideEffect: "", DataClass: "secret"}}
		}, []string{"/workload/systems/0/access invalid_enum", "/workload/systems/0/category invalid_enum",
			"/workload/systems/0/data_class invalid_enum", "/workload/systems/0/side_effect required"}},
		{"duplicate system", func(r *workload.WorkloadRequest) {
			s := workload.WorkloadSystem{Category: "crm", Access: "read", SideEffect: "none", DataClass: "internal"}
			r.Workload.Systems = []workload.WorkloadSystem{s, {Category: "crm", Access: "write", SideEffect: "none", DataClass: "internal"}, s}
		}, []string{"/workload/systems/2 duplicate"}},
		{"too many systems", func(r *workload.WorkloadRequest) {
			r.Workload.Systems = make([]workload.WorkloadSystem, 16)
		}, []string{"/workload/systems too_many"}},
		{"actions repeated and unknown", func(r *workload.WorkloadRequest) {
			r.Workload.Authority.Actions = []workload.WorkloadAction{"research", "fly", "research"}
		}, []string{"/workload/authority/actions/1 invalid_enum", "/workload/authority/actions/2 duplicate"}},
		{"too many actions", func(r *workload.WorkloadRequest) {
			r.Workload.Authority.Actions = make([]workload.WorkloadAction, 12)
		}, []string{"/workload/authority/actions too_many"}},
		{"approval not applicable to a consequential action", func(r *workload.WorkloadRequest) {
			r.Workload.Authority.Actions = []workload.WorkloadAction{"write_internal_records"}
		}, []string{"/workload/authority/approval_policy inconsistent"}},
		{"budget not applicable to spending", func(r *workload.WorkloadRequest) {
			r.Workload.Authority = workload.WorkloadAuthority{Actions: []workload.WorkloadAction{"spend_funds"}, ApprovalPolicy: "per_action", BudgetControl: "not_applicable"}
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
			if !slices.ContainsFunc(issues, func(is workload.WorkloadIssue) bool {
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
	wlHorizons     = []workload.WorkloadTimeHorizon{"single_turn", "single_session", "multi_day", "recurring", "continuous"}
	wlCoordination = []workload.WorkloadCoordination{"none", "handoff", "parallel", "hierarchical"}
	wlCategories   = []workload.WorkloadSystemCategory{"code_repository", "issue_tracker", "document_store", "messaging", "crm",
		"database", "cloud_runtime", "finance", "browser", "local_files", "identity", "other"}
	wlAccesses    = []workload.WorkloadAccess{"read", "write", "admin"}
	wlSideEffects = []workload.WorkloadSideEffect{"none", "reversible", "external", "irreversible"}
	wlDataClasses = []workload.WorkloadDataClass{"public", "internal", "confidential", "regulated"}
	wlActions     = []workload.WorkloadAction{"research", "draft", "read_internal_data", "write_internal_records", "modify_code",
		"merge_or_deploy", "send_external_message", "spend_funds", "create_account", "change_permissions", "delete_data"}
	wlApprovals   = []workload.WorkloadApprovalPolicy{"not_applicable", "per_action", "sensitive_actions", "exceptions_only", "undefined"}
	wlBudgets     = []workload.WorkloadBudgetControl{"not_applicable", "fixed_limit", "dynamic_limit", "unbounded", "undefined"}
	wlEvidence    = []workload.WorkloadEvidence{"none", "activity_log", "artifact", "verified_outcome"}
	wlAcceptance  = []workload.WorkloadAcceptance{"none", "agent", "human", "downstream_system"}
	wlConsequence = []workload.WorkloadConsequence{"low", "moderate", "high", "regulated"}
	wlRetention   = []workload.WorkloadRetention{"none", "short_term", "long_term", "regulated"}
	wlTexts       = []string{"x", "Weekly digest", "é😀\u202e", "a\tb\nc", `"quoted" \ back`, "</script>"}
)

func randomText(r *rand.Rand, maxLen int) string {
	if r.IntN(4) == 0 {
		return strings.Repeat(pickWL(r, []string{"é", "a", "😀", " "}), 1+r.IntN(maxLen))
	}
	return pickWL(r, wlTexts)
}

// randomWorkload is a valid request.
func randomWorkload(r *rand.Rand) workload.WorkloadRequest {
	w := workload.Workload{
		Name: randomText(r, 200), Outcome: randomText(r, 2000), TimeHorizon: pickWL(r, wlHorizons),
		AgentCount: pickWL(r, []int64{1, 1, 2, 3, 4, 10, 11, 100, int64(1 + r.IntN(100))}), Coordination: pickWL(r, wlCoordination),
		Systems: []workload.WorkloadSystem{},
		Accountability: workload.WorkloadAccountability{Evidence: pickWL(r, wlEvidence), Acceptance: pickWL(r, wlAcceptance),
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
		s := workload.WorkloadSystem{Category: pickWL(r, wlCategories), Access: pickWL(r, wlAccesses),
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
	consequential := slices.ContainsFunc(w.Authority.Actions, func(a workload.WorkloadAction) bool {
		return !slices.Contains([]workload.WorkloadAction{"research", "draft", "read_internal_data"}, a)
	})
	w.Authority.ApprovalPolicy = pickWL(r, wlApprovals)
	if consequential && w.Authority.ApprovalPolicy == "not_applicable" {
		w.Authority.ApprovalPolicy = "undefined"
	}
	w.Authority.BudgetControl = pickWL(r, wlBudgets)
	if slices.Contains(w.Authority.Actions, "spend_funds") && w.Authority.BudgetControl == "not_applicable" {
		w.Authority.BudgetControl = "unbounded"
	}
	return workload.WorkloadRequest{SchemaVersion: workload.WorkloadSchemaVersion, Workload: w}
}

// mutateWorkload breaks a request in one or more ways (or not at all).
func mutateWorkload(r *rand.Rand, q *workload.WorkloadRequest) {
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
			w.TimeHorizon = pickWL(r, []workload.WorkloadTimeHorizon{"", "forever", "SINGLE_TURN"})
		case 5:
			w.Systems = append(w.Systems, w.Systems...)
			w.Systems = append(w.Systems, workload.WorkloadSystem{Category: "x", Access: "read"},
				workload.WorkloadSystem{Access: "root", SideEffect: "boom", DataClass: "secret"})
		case 6:
			w.Systems = nil
		case 7:
			w.Authority.Actions = append(w.Authority.Actions, "research", "research", "teleport")
		case 8:
			w.Authority.ApprovalPolicy = pickWL(r, []workload.WorkloadApprovalPolicy{"", "not_applicable", "always"})
		case 9:
			w.Authority.BudgetControl = pickWL(r, []workload.WorkloadBudgetControl{"", "not_applicable", "infinite"})
		case 10:
			w.Accountability = workload.WorkloadAccountability{Evidence: "photos", Retention: "forever"}
		default:
			w.Coordination = pickWL(r, []workload.WorkloadCoordination{"parallel", "", "mesh"})
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
		d := workload.Diagnose(req)
		systems := req.Workload.Systems
		if d.Recommendation.Verdict == workload.VerdictNotNeeded {
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
			needed := workload.WorkloadAccess("")
			for _, intent := range res.ScopeIntents {
				a := workload.WorkloadAction(intent)
				acc, touches := workload.WorkloadActionReach(a, s.Category)
				if !slices.Contains(req.Workload.Authority.Actions, a) || !touches {
					t.Fatalf("resource %s: scope intent %s is not a declared action touching %s", res.Resource, intent, s.Category)
				}
				if acc.Rank() > needed.Rank() {
					needed = acc
				}
			}
			if needed == "" {
				needed = workload.AccessRead
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
		first, err := json.Marshal(workload.Diagnose(req))
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
		var again workload.WorkloadRequest
		if err := json.Unmarshal(b.Bytes(), &again); err != nil {
			t.Fatalf("%v: %s", err, b.Bytes())
		}
		second, _ := json.Marshal(workload.Diagnose(again))
		if !bytes.Equal(first, second) {
			t.Fatalf("the same request sent as\n%s\ngave\n%s\nand\n%s", b.Bytes(), first, second)
		}
		d := workload.Diagnose(req)
		canon, err := canonical.Transform(b.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if want := "wdg_" + strings.TrimPrefix(canonical.Digest(canon), "sha256:")[:24]; d.DiagnosisID != want || !idPattern.MatchString(d.DiagnosisID) {
			t.Fatalf("diagnosis_id %s, want %s", d.DiagnosisID, want)
		}
		if prev, ok := ids[d.DiagnosisID]; ok && prev != string(canon) {
			t.Fatalf("two requests share the id %s", d.DiagnosisID)
		}
		ids[d.DiagnosisID] = string(canon)
	}
	// Another request, another id.
	a, b := wlBase(), wlBase()
	b.Workload.Name += "!"
	if workload.Diagnose(a).DiagnosisID == workload.Diagnose(b).DiagnosisID {
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
				if n := utf8.RuneCountInString(e.String()); n < 1 || n > workload.WorkloadTextMaxLength {
					out = append(out, fmt.Sprintf("%s/%d: %d characters", path, i, n))
				}
			}
			out = append(out, wlBounds(e, path+"/"+strconv.Itoa(i))...)
		}
	}
	return out
}

func checkWorkloadResult(t *testing.T, d workload.WorkloadDiagnosis) {
	t.Helper()
	if problems := wlBounds(reflect.ValueOf(d), ""); len(problems) > 0 {
		t.Fatalf("the result breaks its bounds: %v", problems)
	}
	if !regexp.MustCompile(`^wdg_[a-f0-9]{24}$`).MatchString(d.DiagnosisID) || d.SchemaVersion != workload.WorkloadSchemaVersion {
		t.Fatalf("id %q, schema %q", d.DiagnosisID, d.SchemaVersion)
	}
	if d.ApprovalHandoff.Kind == workload.HandoffNone && d.ApprovalHandoff.URL != "" {
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
	biggest.Workload.Authority = workload.WorkloadAuthority{Actions: wlActions, ApprovalPolicy: "undefined", BudgetControl: "unbounded"}
	biggest.Workload.Accountability = workload.WorkloadAccountability{Evidence: "none", Acceptance: "none", Consequence: "regulated", Retention: "none"}
	for _, c := range wlCategories {
		for _, a := range []workload.WorkloadAccess{"admin", "read"} {
			if len(biggest.Workload.Systems) < 15 {
				biggest.Workload.Systems = append(biggest.Workload.Systems, workload.WorkloadSystem{Category: c, Access: a, SideEffect: "irreversible", DataClass: "regulated"})
			}
		}
	}
	if err := biggest.Validate(); err != nil {
		t.Fatal(err)
	}
	d := workload.Diagnose(biggest)
	checkWorkloadResult(t, d)
	if len(d.ProposedResources) != 15 || len(d.Risks) < 10 || len(d.MissingCapabilities) != 13 || len(d.HumanApprovals) != 8 ||
		len(d.CapabilitiesAfterInstallation) != 3+1+3+15+8 || len(d.Recommendation.Rationale) != 6 {
		t.Fatalf("the largest diagnosis: %d resources, %d risks, %d capabilities missing, %d approvals, %d capabilities, %d rationale",
			len(d.ProposedResources), len(d.Risks), len(d.MissingCapabilities), len(d.HumanApprovals), len(d.CapabilitiesAfterInstallation), len(d.Recommendation.Rationale))
	}
	for range 3000 {
		req := randomWorkload(r)
		checkWorkloadResult(t, workload.Diagnose(req))
		mutateWorkload(r, &req)
		if r.IntN(4) == 0 { // far beyond the bounds
			for range 100 {
				req.Workload.Systems = append(req.Workload.Systems, workload.WorkloadSystem{Category: pickWL(r, wlCategories),
					Access: pickWL(r, wlAccesses), SideEffect: "irreversible", DataClass: "regulated"})
			}
			for range 50 {
				req.Workload.Authority.Actions = append(req.Workload.Authority.Actions, pickWL(r, wlActions))
			}
		}
		checkWorkloadResult(t, workload.Diagnose(req))
	}
}

func TestWorkloadInfo(t *testing.T) {
	info := workload.WorkloadInfo()
	if info.SchemaVersion != workload.WorkloadSchemaVersion || len(info.Enumerations.Actions) != 11 ||
		len(info.Enumerations.Category) != 12 || len(info.Enumerations.OwnerRole) != 7 || info.Bounds.SystemsMax != 15 ||
		info.Scoring.PresentAt != 35 || info.Scoring.CriticalAt != 70 || len(info.Scoring.Rules) < 100 {
		t.Fatalf("info: %+v", info)
	}
	if workload.WorkloadSystemsMax != workload.WorkloadProposedResourcesMax {
		t.Fatal("one resource per system: the bounds must agree")
	}
}

// FuzzDiagnoseWorkload: whatever the body, decoding, validating and diagnosing never
// panic; refusals are validation_failed with bounded, coded issues; every diagnosis
// (of a valid request or not) keeps the result's bounds; a valid request's diagnosis is
// the same twice. The seed corpus (testdata/fuzz/FuzzDiagnoseWorkload) runs with the
// tests; `go test -fuzz FuzzDiagnoseWorkload .` explores further.
func FuzzDiagnoseWorkload(f *testing.F) {
	rich := []wlMod{horizon(workload.HorizonRecurring), agents(3, workload.CoordinationParallel),
		system(workload.CategoryFinance, workload.AccessWrite, workload.SideEffectIrreversible, workload.DataRegulated),
		readSystem(workload.CategoryBrowser), actions(workload.ApprovalExceptionsOnly, workload.BudgetDynamicLimit,
			workload.ActionResearch, workload.ActionSpendFunds, workload.ActionSendExternalMessage),
		account(workload.EvidenceActivityLog, workload.AcceptanceAgent, workload.ConsequenceHigh, workload.RetentionNone)}
	for _, mods := range [][]wlMod{nil, rich, {horizon(workload.HorizonMultiDay)}} {
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
		var req workload.WorkloadRequest
		if json.Unmarshal(body, &req) != nil {
			return
		}
		err := req.Validate()
		if err != nil {
			issues := wlIssues(err)
			if len(issues) == 0 || len(issues) > workload.WorkloadIssuesMax {
				t.Fatalf("%d issues", len(issues))
			}
			for _, is := range issues {
				if is.Code == "" || is.Message == "" || !strings.HasPrefix(is.Path, "/") || utf8.RuneCountInString(is.Message) > 300 {
					t.Fatalf("issue %+v", is)
				}
			}
		}
		d := workload.Diagnose(req)
		checkWorkloadResult(t, d)
		if err == nil {
			a, _ := json.Marshal(d)
			b, _ := json.Marshal(workload.Diagnose(req))
			if !bytes.Equal(a, b) {
				t.Fatalf("two diagnoses of one request:\n%s\n%s", a, b)
			}
		}
	})
}
