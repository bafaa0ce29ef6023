package accountable_test

import (
	"testing"

	"github.com/accountablework/accountable"
)

// Every (state, action) pair of an operating process against CONTRACT.md's table: the
// allowed ones move to their state, every other one is 409 invalid_state_transition.
func TestProcessTransitionTable(t *testing.T) {
	allowed := map[accountable.ProcessAction]map[accountable.ProcessState]accountable.ProcessState{
		accountable.ProcessPropose:   {accountable.ProcessDiscovered: accountable.ProcessProposed},
		accountable.ProcessConfirm:   {accountable.ProcessProposed: accountable.ProcessConfirmed, accountable.ProcessDiscovered: accountable.ProcessConfirmed},
		accountable.ProcessShadow:    {accountable.ProcessConfirmed: accountable.ProcessShadowing},
		accountable.ProcessActivate:  {accountable.ProcessConfirmed: accountable.ProcessActive, accountable.ProcessShadowing: accountable.ProcessActive, accountable.ProcessChanging: accountable.ProcessActive},
		accountable.ProcessChange:    {accountable.ProcessActive: accountable.ProcessChanging},
		accountable.ProcessDeprecate: {accountable.ProcessActive: accountable.ProcessDeprecated, accountable.ProcessChanging: accountable.ProcessDeprecated},
		accountable.ProcessRetire:    {accountable.ProcessDeprecated: accountable.ProcessRetired},
	}
	for _, a := range accountable.ProcessActions {
		for _, s := range accountable.ProcessState("").Enum() {
			from := accountable.ProcessState(s.(string))
			to, err := a.Apply(from)
			want, ok := allowed[a][from]
			switch {
			case ok && (err != nil || to != want):
				t.Errorf("%s from %s: %s %v, want %s", a, from, to, err, want)
			case !ok && accountable.ErrorCode(err) != accountable.ECodeInvalidStateTransition:
				t.Errorf("%s from %s: %s %v, want invalid_state_transition", a, from, to, err)
			}
		}
	}
}

// Every (status, action) pair of a handoff: claim from proposed, returned or escalated;
// fulfil and return from claimed; escalate from proposed, claimed or returned; cancel from
// anything not ended; nothing from fulfilled or cancelled.
func TestHandoffTransitionTable(t *testing.T) {
	H := func(s ...accountable.HandoffStatus) []accountable.HandoffStatus { return s }
	allowed := map[accountable.HandoffAction]struct {
		from []accountable.HandoffStatus
		to   accountable.HandoffStatus
	}{
		accountable.HandoffClaim:    {H(accountable.HandoffProposed, accountable.HandoffReturned, accountable.HandoffEscalated), accountable.HandoffClaimed},
		accountable.HandoffFulfill:  {H(accountable.HandoffClaimed), accountable.HandoffFulfilled},
		accountable.HandoffReturn:   {H(accountable.HandoffClaimed), accountable.HandoffReturned},
		accountable.HandoffEscalate: {H(accountable.HandoffProposed, accountable.HandoffClaimed, accountable.HandoffReturned), accountable.HandoffEscalated},
		accountable.HandoffCancel:   {H(accountable.HandoffProposed, accountable.HandoffClaimed, accountable.HandoffReturned, accountable.HandoffEscalated), accountable.HandoffCancelled},
	}
	for _, a := range accountable.HandoffActions {
		for _, s := range accountable.HandoffStatus("").Enum() {
			from := accountable.HandoffStatus(s.(string))
			to, err := a.Apply(from)
			ok := false
			for _, f := range allowed[a].from {
				ok = ok || f == from
			}
			switch {
			case ok && (err != nil || to != allowed[a].to):
				t.Errorf("%s from %s: %s %v", a, from, to, err)
			case !ok && accountable.ErrorCode(err) != accountable.ECodeInvalidStateTransition:
				t.Errorf("%s from %s: %s %v, want invalid_state_transition", a, from, to, err)
			}
		}
	}
}
