package payload

import "github.com/accountablework/accountable"

// The payload types of these events (Types).
func init() {
	describes[HandoffProposed](accountable.EventHandoffProposed)
	describes[HandoffSLABreached](accountable.EventHandoffSLABreached)
	for _, a := range accountable.HandoffActions {
		describes[HandoffChanged](a.Event())
	}
}

// HandoffProposed is the payload of handoff.proposed: the handoff as proposed.
type HandoffProposed = accountable.Handoff

// HandoffChanged is the payload of a handoff's transitions (handoff.claimed, .fulfilled,
// .returned, .escalated, .cancelled: accountable.HandoffAction.Event).
type HandoffChanged struct {
	HandoffID     string                    `json:"handoff_id"`
	Action        accountable.HandoffAction `json:"action"`
	From          accountable.HandoffStatus `json:"from"`
	To            accountable.HandoffStatus `json:"to"`
	CurrentActor  accountable.Actor         `json:"current_actor"`
	Reason        *string                   `json:"reason"`
	Result        accountable.Object        `json:"result,omitzero"`
	MissingProofs []accountable.ProofKind   `json:"missing_proofs,omitzero"`
	CommandID     *string                   `json:"command_id"`
}

// HandoffSLABreached is the payload of handoff.sla_breached.
type HandoffSLABreached struct {
	HandoffID  string                    `json:"handoff_id"`
	DueAt      accountable.Time          `json:"due_at"`
	DecisionID string                    `json:"decision_id"`
	Status     accountable.HandoffStatus `json:"status"`
}

// AppendCanonicalJSON appends p's canonical JSON (canonical.Appender: every transition of
// a handoff digests it), as the canonical encoder writes it by reflection: result and
// missing_proofs only when not nil (omitzero).
func (p HandoffChanged) AppendCanonicalJSON(buf []byte, depth int, freeForm accountable.CanonicalFreeForm) ([]byte, error) {
	buf = append(buf, `{"action":`...)
	buf = accountable.AppendCanonicalString(buf, string(p.Action))
	buf = append(buf, `,"command_id":`...)
	buf = accountable.AppendCanonicalStringPtr(buf, p.CommandID)
	buf = append(buf, `,"current_actor":{"id":`...)
	buf = accountable.AppendCanonicalString(buf, p.CurrentActor.ID)
	buf = append(buf, `,"type":`...)
	buf = accountable.AppendCanonicalString(buf, string(p.CurrentActor.Type))
	buf = append(buf, `},"from":`...)
	buf = accountable.AppendCanonicalString(buf, string(p.From))
	buf = append(buf, `,"handoff_id":`...)
	buf = accountable.AppendCanonicalString(buf, p.HandoffID)
	if p.MissingProofs != nil {
		buf = append(buf, `,"missing_proofs":[`...)
		for i, k := range p.MissingProofs {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = accountable.AppendCanonicalString(buf, string(k))
		}
		buf = append(buf, ']')
	}
	buf = append(buf, `,"reason":`...)
	buf = accountable.AppendCanonicalStringPtr(buf, p.Reason)
	if p.Result != nil {
		buf = append(buf, `,"result":`...)
		var err error
		if buf, err = p.Result.AppendCanonicalJSON(buf, depth+1, freeForm); err != nil {
			return buf, err
		}
	}
	buf = append(buf, `,"to":`...)
	buf = accountable.AppendCanonicalString(buf, string(p.To))
	return append(buf, '}'), nil
}
