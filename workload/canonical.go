package workload

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// The canonical JSON (RFC 8785) of a workload request, written by hand: the diagnosis id
// is its digest, and canonical.JSON's reflective pass over the request was a sixth of
// Diagnose. The members are in the order RFC 8785 sorts them (by UTF-16 code units; the
// names are ASCII, so byte order), integers by the canonical package's appender, the
// enumeration values from their forms made once (appendCanonicalText), the name and the
// outcome by accountable.AppendCanonicalString (canonical.AppendString's bytes, eight at a
// time), and a nil slice is null as canonical.JSON writes it.
// TestWorkloadCanonicalJSON checks the bytes against canonical.JSON.

// appendCanonicalRequest appends the canonical JSON of r.
func appendCanonicalRequest(buf []byte, r *WorkloadRequest) []byte {
	w := &r.Workload
	buf = append(buf, `{"schema_version":`...)
	buf = appendCanonicalText(buf, r.SchemaVersion)
	c := &w.Accountability
	buf = append(buf, `,"workload":{"accountability":{"acceptance":`...)
	buf = appendCanonicalText(buf, string(c.Acceptance))
	buf = append(buf, `,"consequence":`...)
	buf = appendCanonicalText(buf, string(c.Consequence))
	buf = append(buf, `,"evidence":`...)
	buf = appendCanonicalText(buf, string(c.Evidence))
	buf = append(buf, `,"retention":`...)
	buf = appendCanonicalText(buf, string(c.Retention))
	buf = append(buf, `},"agent_count":`...)
	buf = canonical.AppendInt(buf, w.AgentCount)
	buf = append(buf, `,"authority":{"actions":`...)
	if w.Authority.Actions == nil {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, '[')
		for i, a := range w.Authority.Actions {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendCanonicalText(buf, string(a))
		}
		buf = append(buf, ']')
	}
	buf = append(buf, `,"approval_policy":`...)
	buf = appendCanonicalText(buf, string(w.Authority.ApprovalPolicy))
	buf = append(buf, `,"budget_control":`...)
	buf = appendCanonicalText(buf, string(w.Authority.BudgetControl))
	buf = append(buf, `},"coordination":`...)
	buf = appendCanonicalText(buf, string(w.Coordination))
	buf = append(buf, `,"name":`...)
	buf = accountable.AppendCanonicalString(buf, w.Name)
	buf = append(buf, `,"outcome":`...)
	buf = accountable.AppendCanonicalString(buf, w.Outcome)
	buf = append(buf, `,"systems":`...)
	if w.Systems == nil {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, '[')
		for i := range w.Systems {
			s := &w.Systems[i]
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, `{"access":`...)
			buf = appendCanonicalText(buf, string(s.Access))
			buf = append(buf, `,"category":`...)
			buf = appendCanonicalText(buf, string(s.Category))
			buf = append(buf, `,"data_class":`...)
			buf = appendCanonicalText(buf, string(s.DataClass))
			buf = append(buf, `,"side_effect":`...)
			buf = appendCanonicalText(buf, string(s.SideEffect))
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
	}
	buf = append(buf, `,"time_horizon":`...)
	buf = appendCanonicalText(buf, string(w.TimeHorizon))
	return append(buf, "}}"...)
}

// WorkloadDiagnosisID returns the diagnosis id of r: "wdg_" and the first 24 hex digits of
// the SHA-256 of its canonical JSON.
func WorkloadDiagnosisID(r WorkloadRequest) string {
	id := workloadDiagnosisID(&r)
	return string(id[:])
}

// workloadDiagnosisID is the diagnosis id of r, as bytes for Diagnose to make the
// handoff URL with it.
func workloadDiagnosisID(r *WorkloadRequest) (id [len("wdg_") + 24]byte) {
	var stack [1024]byte // most requests' canonical JSON fits: no allocation for it
	sum := sha256.Sum256(appendCanonicalRequest(stack[:0], r))
	copy(id[:], "wdg_")
	hex.Encode(id[len("wdg_"):], sum[:12])
	return id
}
