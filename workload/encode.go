package workload

import (
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// The answer of POST /doctor/workload, encoded by hand: encoding/json's reflective
// encoding of the 7 KB diagnosis was a sixth of the request's CPU. AppendJSON writes
// exactly the bytes json.Marshal writes for a WorkloadDiagnosis (members in field order,
// no omitempty, a nil slice as null, strings escaped as encoding/json escapes them with
// HTML escaping on), so the API may send either; TestWorkloadDiagnosisAppendJSON checks
// it against json.Marshal on the golden corpus and on random diagnoses. A new field of
// the result must be added here too (the test fails until it is).

// AppendJSON appends d as json.Marshal encodes it.
func (d WorkloadDiagnosis) AppendJSON(buf []byte) []byte {
	buf = append(buf, `{"schema_version":`...)
	buf = appendJSONString(buf, d.SchemaVersion)
	buf = append(buf, `,"diagnosis_id":`...)
	buf = appendJSONString(buf, d.DiagnosisID)

	rec := &d.Recommendation
	buf = append(buf, `,"recommendation":{"verdict":`...)
	buf = appendJSONString(buf, string(rec.Verdict))
	buf = append(buf, `,"mode":`...)
	buf = appendJSONString(buf, string(rec.Mode))
	buf = append(buf, `,"summary":`...)
	buf = appendJSONString(buf, rec.Summary)
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
	buf = appendJSONArray(buf, d.MissingCapabilities, func(buf []byte, m *WorkloadMissingCapability) []byte {
		buf = append(buf, `{"id":`...)
		buf = appendJSONString(buf, m.ID)
		buf = append(buf, `,"boundary":`...)
		buf = appendJSONString(buf, m.Boundary)
		buf = append(buf, `,"reason":`...)
		buf = appendJSONString(buf, m.Reason)
		return append(buf, '}')
	})
	buf = append(buf, `,"proposed_resources":`...)
	buf = appendJSONArray(buf, d.ProposedResources, func(buf []byte, p *WorkloadProposedResource) []byte {
		buf = append(buf, `{"resource":`...)
		buf = appendJSONString(buf, p.Resource)
		buf = append(buf, `,"requested_access":`...)
		buf = appendJSONString(buf, string(p.RequestedAccess))
		buf = append(buf, `,"scope_intents":`...)
		buf = appendJSONStrings(buf, p.ScopeIntents)
		buf = append(buf, `,"purpose":`...)
		buf = appendJSONString(buf, p.Purpose)
		buf = append(buf, `,"credential_input_required":`...)
		buf = strconv.AppendBool(buf, p.CredentialInputRequired)
		return append(buf, '}')
	})
	buf = append(buf, `,"what_remains_local":`...)
	buf = appendJSONArray(buf, d.WhatRemainsLocal, func(buf []byte, l *WorkloadLocalItem) []byte {
		buf = append(buf, `{"item":`...)
		buf = appendJSONString(buf, l.Item)
		buf = append(buf, `,"reason":`...)
		buf = appendJSONString(buf, l.Reason)
		return append(buf, '}')
	})
	buf = append(buf, `,"risks":`...)
	buf = appendJSONArray(buf, d.Risks, func(buf []byte, r *WorkloadRisk) []byte {
		buf = append(buf, `{"id":`...)
		buf = appendJSONString(buf, r.ID)
		buf = append(buf, `,"severity":`...)
		buf = appendJSONString(buf, string(r.Severity))
		buf = append(buf, `,"boundary":`...)
		buf = appendJSONString(buf, r.Boundary)
		buf = append(buf, `,"description":`...)
		buf = appendJSONString(buf, r.Description)
		buf = append(buf, `,"mitigation":`...)
		buf = appendJSONString(buf, r.Mitigation)
		return append(buf, '}')
	})
	buf = append(buf, `,"capabilities_after_installation":`...)
	buf = appendJSONStrings(buf, d.CapabilitiesAfterInstallation)
	buf = append(buf, `,"human_approvals":`...)
	buf = appendJSONArray(buf, d.HumanApprovals, func(buf []byte, h *WorkloadHumanApproval) []byte {
		buf = append(buf, `{"id":`...)
		buf = appendJSONString(buf, h.ID)
		buf = append(buf, `,"owner_role":`...)
		buf = appendJSONString(buf, string(h.OwnerRole))
		buf = append(buf, `,"timing":`...)
		buf = appendJSONString(buf, string(h.Timing))
		buf = append(buf, `,"decision":`...)
		buf = appendJSONString(buf, h.Decision)
		buf = append(buf, `,"scope":`...)
		buf = appendJSONStrings(buf, h.Scope)
		return append(buf, '}')
	})

	h := &d.ApprovalHandoff
	buf = append(buf, `,"approval_handoff":{"kind":`...)
	buf = appendJSONString(buf, string(h.Kind))
	buf = append(buf, `,"url":`...)
	buf = appendJSONString(buf, h.URL)
	buf = append(buf, `,"mutates_state":`...)
	buf = strconv.AppendBool(buf, h.MutatesState)
	buf = append(buf, `,"carries_sensitive_data":`...)
	buf = strconv.AppendBool(buf, h.CarriesSensitiveData)
	buf = append(buf, `,"approval_ids":`...)
	buf = appendJSONStrings(buf, h.ApprovalIDs)
	return append(buf, "}}"...)
}

// appendJSON appends one scored boundary.
func (b *WorkloadBoundary) appendJSON(buf []byte) []byte {
	buf = append(buf, `{"state":`...)
	buf = appendJSONString(buf, string(b.State))
	buf = append(buf, `,"score":`...)
	buf = strconv.AppendInt(buf, int64(b.Score), 10)
	buf = append(buf, `,"reason":`...)
	buf = appendJSONString(buf, b.Reason)
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
		buf = appendJSONString(buf, s)
	}
	return append(buf, ']')
}

// jsonPlainByte marks the bytes encoding/json writes as they are whatever follows them
// (its htmlSafeSet, ASCII only): all but control characters, " \\ < > & and the bytes
// of non-ASCII characters, which appendJSONString looks at rune by rune.
var jsonPlainByte = func() (plain [256]bool) {
	for b := range utf8.RuneSelf {
		plain[b] = b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return plain
}()

// jsonPlainPrefix returns the length of the longest prefix of s made of jsonPlainByte
// bytes. It reads eight bytes at a time (most of the answer is plain ASCII), with the
// bit tricks that find a zero byte or a byte below n in a word: each flags the lowest
// such byte exactly (a borrow only runs upwards, past a byte already flagged), so the
// lowest flag of them all is the first byte to escape. < and > differ in one bit, and
// so do " and &: one comparison finds either of a pair.
func jsonPlainPrefix(s string) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8]
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		angle := (x | ones*0x02) ^ ones*'>' // zero at < and >
		quote := (x | ones*0x04) ^ ones*'&' // zero at " and &
		slash := x ^ ones*'\\'
		special := (x | // non-ASCII
			(x-ones*0x20)&^x | // a control character
			(angle-ones)&^angle | (quote-ones)&^quote | (slash-ones)&^slash) & highs
		if special != 0 {
			return i + bits.TrailingZeros64(special)/8
		}
	}
	for i < len(s) && jsonPlainByte[s[i]] {
		i++
	}
	return i
}

// appendJSONString appends s quoted as encoding/json quotes it with HTML escaping (the
// default of json.Marshal): \" \\ \b \f \n \r \t, other control characters and < > & as
// \u00xx, U+2028 and U+2029 as \u2028 and \u2029, invalid UTF-8 as \ufffd, everything
// else literally. Runs of plain bytes are copied in one append each.
func appendJSONString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for {
		n := jsonPlainPrefix(s)
		buf = append(buf, s[:n]...)
		s = s[n:]
		if s == "" {
			return append(buf, '"')
		}
		if b := s[0]; b < utf8.RuneSelf {
			switch b {
			case '\\', '"':
				buf = append(buf, '\\', b)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			s = s[1:]
			continue
		}
		c, size := utf8.DecodeRuneInString(s)
		switch {
		case c == utf8.RuneError && size == 1:
			buf = append(buf, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			buf = append(buf, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			buf = append(buf, s[:size]...)
		}
		s = s[size:]
	}
}
