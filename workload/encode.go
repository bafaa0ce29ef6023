package workload

import (
	"strconv"

	"github.com/accountablework/accountable"
)

// The answer of POST /doctor/workload, encoded by hand: encoding/json's reflective
// encoding of the 7 KB diagnosis was a sixth of the request's CPU. AppendJSON writes
// exactly the bytes json.Marshal writes for a WorkloadDiagnosis (members in field order,
// no omitempty, a nil slice as null, strings escaped as encoding/json escapes them with
// HTML escaping on), so the API may send either; TestWorkloadDiagnosisAppendJSON checks
// it against json.Marshal on the golden corpus and on random diagnoses. A new field of
// the result must be added here too (the test fails until it is). Strings that may be
// texts of the fixed tables are written by appendJSONText (their JSON made once); the
// sentences Diagnose composes, the id and the URL never are, and are escaped as they come.

// AppendJSON appends d as json.Marshal encodes it.
func (d WorkloadDiagnosis) AppendJSON(buf []byte) []byte {
	buf = append(buf, `{"schema_version":`...)
	buf = appendJSONText(buf, d.SchemaVersion)
	buf = append(buf, `,"diagnosis_id":`...)
	buf = accountable.AppendJSONString(buf, d.DiagnosisID)

	rec := &d.Recommendation
	buf = append(buf, `,"recommendation":{"verdict":`...)
	buf = appendJSONText(buf, string(rec.Verdict))
	buf = append(buf, `,"mode":`...)
	buf = appendJSONText(buf, string(rec.Mode))
	buf = append(buf, `,"summary":`...)
	buf = accountable.AppendJSONString(buf, rec.Summary)
	buf = append(buf, `,"rationale":`...)
	buf = appendJSONStrings(buf, rec.Rationale)
	buf = append(buf, `,"active_boundary_count":`...)
	buf = strconv.AppendInt(buf, int64(rec.ActiveBoundaryCount), 10)

	buf = append(buf, `},"boundaries":{"time":`...)
	buf = d.Boundaries.Time.appendJSON(buf)
	buf = append(buf, `,"agents":`...)
	buf = d.Boundaries.Agents.appendJSON(buf)
	buf = append(buf, `,"systems":`...)
	buf = d.Boundaries.Systems.appendJSON(buf)
	buf = append(buf, `,"authority":`...)
	buf = d.Boundaries.Authority.appendJSON(buf)
	buf = append(buf, `,"accountability":`...)
	buf = d.Boundaries.Accountability.appendJSON(buf)

	buf = append(buf, `},"missing_capabilities":`...)
	from := 0 // knownIndex's, for each list of catalogue entries
	buf = appendJSONArray(buf, d.MissingCapabilities, func(buf []byte, m *WorkloadMissingCapability) []byte {
		if j := knownIndex(workloadMissingJSON, &from, m); j >= 0 {
			return append(buf, workloadMissingJSON[j].json...)
		}
		return m.appendJSON(buf)
	})
	buf = append(buf, `,"proposed_resources":`...)
	buf = appendJSONArray(buf, d.ProposedResources, func(buf []byte, p *WorkloadProposedResource) []byte {
		buf = append(buf, `{"resource":`...)
		buf = appendJSONText(buf, p.Resource)
		buf = append(buf, `,"requested_access":`...)
		buf = appendJSONText(buf, string(p.RequestedAccess))
		buf = append(buf, `,"scope_intents":`...)
		buf = appendJSONStrings(buf, p.ScopeIntents)
		buf = append(buf, `,"purpose":`...)
		buf = accountable.AppendJSONString(buf, p.Purpose)
		buf = append(buf, `,"credential_input_required":`...)
		buf = strconv.AppendBool(buf, p.CredentialInputRequired)
		return append(buf, '}')
	})
	buf = append(buf, `,"what_remains_local":`...)
	from = 0
	buf = appendJSONArray(buf, d.WhatRemainsLocal, func(buf []byte, l *WorkloadLocalItem) []byte {
		if j := knownIndex(workloadLocalJSON, &from, l); j >= 0 {
			return append(buf, workloadLocalJSON[j].json...)
		}
		return l.appendJSON(buf)
	})
	buf = append(buf, `,"risks":`...)
	from = 0
	buf = appendJSONArray(buf, d.Risks, func(buf []byte, r *WorkloadRisk) []byte {
		if j := knownIndex(workloadRiskJSON, &from, r); j >= 0 {
			return append(buf, workloadRiskJSON[j].json...)
		}
		return r.appendJSON(buf)
	})
	buf = append(buf, `,"capabilities_after_installation":`...)
	buf = appendJSONStrings(buf, d.CapabilitiesAfterInstallation)
	buf = append(buf, `,"human_approvals":`...)
	buf = appendJSONArray(buf, d.HumanApprovals, func(buf []byte, h *WorkloadHumanApproval) []byte {
		buf = append(buf, `{"id":`...)
		buf = appendJSONText(buf, h.ID)
		buf = append(buf, `,"owner_role":`...)
		buf = appendJSONText(buf, string(h.OwnerRole))
		buf = append(buf, `,"timing":`...)
		buf = appendJSONText(buf, string(h.Timing))
		buf = append(buf, `,"decision":`...)
		buf = appendJSONText(buf, h.Decision)
		buf = append(buf, `,"scope":`...)
		buf = appendJSONStrings(buf, h.Scope)
		return append(buf, '}')
	})

	h := &d.ApprovalHandoff
	buf = append(buf, `,"approval_handoff":{"kind":`...)
	buf = appendJSONText(buf, string(h.Kind))
	buf = append(buf, `,"url":`...)
	buf = accountable.AppendJSONString(buf, h.URL)
	buf = append(buf, `,"mutates_state":`...)
	buf = strconv.AppendBool(buf, h.MutatesState)
	buf = append(buf, `,"carries_sensitive_data":`...)
	buf = strconv.AppendBool(buf, h.CarriesSensitiveData)
	buf = append(buf, `,"approval_ids":`...)
	buf = appendJSONStrings(buf, h.ApprovalIDs)
	return append(buf, "}}"...)
}

// appendJSON appends m.
func (m *WorkloadMissingCapability) appendJSON(buf []byte) []byte {
	buf = append(buf, `{"id":`...)
	buf = appendJSONText(buf, m.ID)
	buf = append(buf, `,"boundary":`...)
	buf = appendJSONText(buf, m.Boundary)
	buf = append(buf, `,"reason":`...)
	buf = appendJSONText(buf, m.Reason)
	return append(buf, '}')
}

// appendJSON appends l.
func (l *WorkloadLocalItem) appendJSON(buf []byte) []byte {
	buf = append(buf, `{"item":`...)
	buf = appendJSONText(buf, l.Item)
	buf = append(buf, `,"reason":`...)
	buf = appendJSONText(buf, l.Reason)
	return append(buf, '}')
}

// appendJSON appends r.
func (r *WorkloadRisk) appendJSON(buf []byte) []byte {
	buf = append(buf, `{"id":`...)
	buf = appendJSONText(buf, r.ID)
	buf = append(buf, `,"severity":`...)
	buf = appendJSONText(buf, string(r.Severity))
	buf = append(buf, `,"boundary":`...)
	buf = appendJSONText(buf, r.Boundary)
	buf = append(buf, `,"description":`...)
	buf = appendJSONText(buf, r.Description)
	buf = append(buf, `,"mitigation":`...)
	buf = appendJSONText(buf, r.Mitigation)
	return append(buf, '}')
}

// knownValue is an element a list of the result may hold, with its JSON made once.
type knownValue[T comparable] struct {
	value T
	json  string
}

// knownValues are values with their JSON, as element appends them.
func knownValues[T comparable](element func(*T, []byte) []byte, values ...T) []knownValue[T] {
	out := make([]knownValue[T], len(values))
	for i, v := range values {
		out[i] = knownValue[T]{v, string(element(&v, nil))}
	}
	return out
}

// knownIndex is the index in known of the value equal to x, from *from on, or -1; a value
// found moves *from past it. The lists Diagnose makes from a catalogue hold its entries in
// the catalogue's order, so each is looked for from the last one found on, and compared
// with it (==) by its strings' pointers when it is made of the catalogue's constants; an
// element out of that order, or unlike any, is written field by field.
func knownIndex[T comparable](known []knownValue[T], from *int, x *T) int {
	for j := *from; j < len(known); j++ {
		if known[j].value == *x {
			*from = j + 1
			return j
		}
	}
	return -1
}

// appendJSON appends one scored boundary.
func (b *WorkloadBoundary) appendJSON(buf []byte) []byte {
	buf = append(buf, `{"state":`...)
	buf = appendJSONText(buf, string(b.State))
	buf = append(buf, `,"score":`...)
	buf = strconv.AppendInt(buf, int64(b.Score), 10)
	buf = append(buf, `,"reason":`...)
	buf = accountable.AppendJSONString(buf, b.Reason)
	return append(buf, '}')
}

// appendJSONArray appends xs as a JSON array of its elements (null when nil, as
// encoding/json writes a nil slice).
func appendJSONArray[T any](buf []byte, xs []T, element func([]byte, *T) []byte) []byte {
	if xs == nil {
		return append(buf, "null"...)
	}
	buf = append(buf, '[')
	for i := range xs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = element(buf, &xs[i])
	}
	return append(buf, ']')
}

// appendJSONStrings appends a []string as encoding/json does.
func appendJSONStrings(buf []byte, xs []string) []byte {
	if xs == nil {
		return append(buf, "null"...)
	}
	buf = append(buf, '[')
	for i, s := range xs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONText(buf, s)
	}
	return append(buf, ']')
}
