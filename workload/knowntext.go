package workload

import (
	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// The texts a diagnosis takes from fixed tables (the enumerations' values, the boundary
// names, the catalogues' ids and sentences, the capabilities), each with its JSON and its
// canonical JSON made once. The answer's encoder appends a known text's JSON as it is,
// without scanning it for bytes to escape (that scan was two thirds of encoding the 7 KB
// answer, most of it these texts), and the canonical request's encoder does the same for
// the enumeration values. A text is known by its content (==), so whatever string equals
// one is written as it would be anyway; a string that is the constant it was made from
// (as Diagnose's and the plain decoder's are) compares equal by its pointer, without
// reading its bytes.

// knownText is a text with its JSON (as accountable.AppendJSONString writes it) and its
// canonical JSON (as canonical.AppendString writes it).
type knownText struct{ text, json, canonical string }

// knownTextBits sizes the table: 2^9 slots, kept at most half full (newKnownTexts), so that
// a text not in it, as most sentences of the answer, meets an empty slot within a slot or two.
const knownTextBits = 9

// knownTexts is an open-addressed table of texts (linear probing): each slot is the index
// of its text in texts plus one, 0 for an empty slot. The slots are small so that the
// table takes few cache lines, and hold no pointers for the collector to scan.
type knownTexts struct {
	slots [1 << knownTextBits]uint16
	texts []knownText
}

// knownTextSlot is the first slot of s: a hash of its length and three of its bytes (the
// texts of the table differ in them enough, and hashing all of a sentence would cost
// about what the scan it saves does).
func knownTextSlot(s string) uint {
	n := len(s)
	if n == 0 {
		return 0
	}
	h := uint64(n) | uint64(s[0])<<16 | uint64(s[n/2])<<24 | uint64(s[n-1])<<32
	return uint((h * 0x9e3779b97f4a7c15) >> (64 - knownTextBits))
}

// find is s's entry, nil when s is not known; slot is where the search ended.
func (t *knownTexts) find(s string) (k *knownText, slot uint) {
	for i := knownTextSlot(s); ; i = (i + 1) % uint(len(t.slots)) {
		j := t.slots[i]
		if j == 0 {
			return nil, i
		}
		if k := &t.texts[j-1]; k.text == s {
			return k, i
		}
	}
}

// newKnownTexts is the table of texts ("" and repeats are left out).
func newKnownTexts(texts ...string) *knownTexts {
	t := new(knownTexts)
	for _, s := range texts {
		if k, slot := t.find(s); s != "" && k == nil {
			if 2*(len(t.texts)+1) > len(t.slots) {
				panic("workload: too many known texts for the table")
			}
			t.texts = append(t.texts, knownText{s, string(accountable.AppendJSONString(nil, s)), string(canonical.AppendString(nil, s))})
			t.slots[slot] = uint16(len(t.texts))
		}
	}
	return t
}

// workloadKnownTexts are the texts of the fixed tables.
var workloadKnownTexts = func() *knownTexts {
	var texts []string
	enum := func(values []string) { texts = append(texts, values...) }
	enum(workloadEnumStrings(workloadTimeHorizons))
	enum(workloadEnumStrings(workloadCoordinations))
	enum(workloadEnumStrings(workloadCategories))
	enum(workloadEnumStrings(workloadAccesses))
	enum(workloadEnumStrings(workloadSideEffects))
	enum(workloadEnumStrings(workloadDataClasses))
	enum(workloadEnumStrings(workloadActions))
	enum(workloadEnumStrings(workloadApprovalPolicies))
	enum(workloadEnumStrings(workloadBudgetControls))
	enum(workloadEnumStrings(workloadEvidences))
	enum(workloadEnumStrings(workloadAcceptances))
	enum(workloadEnumStrings(workloadConsequences))
	enum(workloadEnumStrings(workloadRetentions))
	enum(workloadEnumStrings(workloadBoundaryStates))
	enum(workloadEnumStrings(workloadVerdicts))
	enum(workloadEnumStrings(workloadModes))
	enum(workloadEnumStrings(workloadSeverities))
	enum(workloadEnumStrings(workloadOwnerRoles))
	enum(workloadEnumStrings(workloadApprovalTimings))
	enum(workloadEnumStrings(workloadHandoffKinds))
	texts = append(texts, WorkloadSchemaVersion, workloadWholeScope, workloadInstallationNeeded)
	texts = append(texts, workloadBoundaryNames[:]...)
	for _, m := range workloadMissingTexts {
		texts = append(texts, m.id, m.reason)
	}
	for _, l := range workloadLocalTexts {
		texts = append(texts, l.Item, l.Reason)
	}
	for _, k := range workloadRiskTexts {
		texts = append(texts, k.id, k.description, k.mitigation)
	}
	for _, h := range workloadApprovalTexts {
		texts = append(texts, h.id, h.decision)
	}
	texts = append(texts, capabilityWorkReceipts, capabilityEvidenceRecords, capabilityLedgerVerification,
		capabilityCoordinationRecord, capabilityHumanApprovals, capabilityScopedCredentials, capabilitySpendLimits)
	for _, c := range workloadCategories {
		texts = append(texts, workloadResourceCapabilities[string(c)])
	}
	for _, h := range workloadApprovalTexts {
		texts = append(texts, workloadApprovalCapabilities[h.id])
	}
	return newKnownTexts(texts...)
}()

// appendJSONText appends s as accountable.AppendJSONString does: a known text's JSON as
// it is, any other string escaped.
func appendJSONText(buf []byte, s string) []byte {
	if k, _ := workloadKnownTexts.find(s); k != nil {
		return append(buf, k.json...)
	}
	return accountable.AppendJSONString(buf, s)
}

// appendCanonicalText appends s as canonical.AppendString does: a known text's canonical
// JSON as it is, any other string escaped.
func appendCanonicalText(buf []byte, s string) []byte {
	if k, _ := workloadKnownTexts.find(s); k != nil {
		return append(buf, k.canonical...)
	}
	return canonical.AppendString(buf, s)
}

// The catalogues' entries as the lists of the answer hold them (a risk with each
// severity), in the catalogues' order, with their JSON made once (appendKnownArray).
var (
	workloadMissingJSON = func() []knownValue[WorkloadMissingCapability] {
		values := make([]WorkloadMissingCapability, len(workloadMissingTexts))
		for i, m := range workloadMissingTexts {
			values[i] = WorkloadMissingCapability{ID: m.id, Boundary: workloadBoundaryNames[m.b], Reason: m.reason}
		}
		return knownValues((*WorkloadMissingCapability).appendJSON, values...)
	}()
	workloadLocalJSON = knownValues((*WorkloadLocalItem).appendJSON, workloadLocalTexts[:]...)
	workloadRiskJSON  = func() []knownValue[WorkloadRisk] {
		var values []WorkloadRisk
		for _, k := range workloadRiskTexts {
			for _, sev := range workloadSeverities {
				values = append(values, WorkloadRisk{ID: k.id, Severity: sev, Boundary: workloadBoundaryNames[k.b],
					Description: k.description, Mitigation: k.mitigation})
			}
		}
		return knownValues((*WorkloadRisk).appendJSON, values...)
	}()
)
