package accountable_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// Each branch of a reconcile's decision, in the order the rule takes them: stale input,
// truncated input, below threshold (or a cleared signal), cooldown, and a proposal.
func TestControllerAssess(t *testing.T) {
	spec := accountable.ControllerSpecs[accountable.DomainEngineering]
	now := accountable.TimeOf(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	at := func(ago time.Duration) *accountable.Time { w := accountable.TimeOf(now.Add(-ago)); return &w }
	records := func(n int) []accountable.SignalRecord {
		rs := make([]accountable.SignalRecord, n)
		for i := range rs {
			rs[i] = accountable.SignalRecord{ID: fmt.Sprintf("task-%d", i), Kind: "work_item", Title: "t", Reason: "blocked", UpdatedAt: now}
		}
		return rs
	}
	maxAge := int64(60)
	active, cleared := accountable.SignalActive, accountable.SignalCleared
	d, err := canonical.DigestOf(accountable.SignalContent(accountable.DomainEngineering, records(2)))
	if err != nil {
		t.Fatal(err)
	}
	signal := accountable.DigestID(accountable.SignalIDPrefix, d)
	if !strings.HasPrefix(signal, "controller_signal:") || len(signal) != len("controller_signal:")+64 {
		t.Fatalf("signal id %s", signal)
	}
	for _, c := range []struct {
		name    string
		reading accountable.SignalReading
		pending bool // a decision on the signal is pending
		noop    accountable.NoopReason
		health  accountable.SourceHealthState
		state   string
		signal  *string
		status  accountable.ControllerStatus
		asked   bool // whether the rule asked for a pending decision
	}{
		{name: "stale input", reading: accountable.SignalReading{MaxInputAgeSeconds: &maxAge, Watermark: at(61 * time.Second), Records: records(2)},
			noop: accountable.NoopStaleInput, health: accountable.SourceStale, state: accountable.SignalUnknown, status: accountable.ControllerDegraded},
		{name: "fresh enough at exactly the age", reading: accountable.SignalReading{MaxInputAgeSeconds: &maxAge, Watermark: at(60 * time.Second), Records: records(2)},
			health: accountable.SourceHealthy, state: active, signal: &signal, status: accountable.ControllerHealthy, asked: true},
		{name: "no age limit: any watermark", reading: accountable.SignalReading{Watermark: at(1000 * time.Hour), Records: records(2)},
			health: accountable.SourceHealthy, state: active, signal: &signal, status: accountable.ControllerHealthy, asked: true},
		{name: "an empty ledger is not stale", reading: accountable.SignalReading{MaxInputAgeSeconds: &maxAge},
			noop: accountable.NoopBelowThreshold, health: accountable.SourceHealthy, state: cleared, status: accountable.ControllerHealthy},
		{name: "truncated input", reading: accountable.SignalReading{Records: records(spec.MaxRecords + 1)},
			noop: accountable.NoopTruncatedInput, health: accountable.SourceTruncated, state: accountable.SignalUnknown, status: accountable.ControllerDegraded},
		{name: "below threshold", reading: accountable.SignalReading{},
			noop: accountable.NoopBelowThreshold, health: accountable.SourceHealthy, state: cleared, status: accountable.ControllerHealthy},
		{name: "below threshold after a cleared signal", reading: accountable.SignalReading{Last: &accountable.ControllerResult{LastSignalState: &cleared}},
			noop: accountable.NoopBelowThreshold, health: accountable.SourceHealthy, state: cleared, status: accountable.ControllerHealthy},
		{name: "signal cleared since the last run", reading: accountable.SignalReading{Last: &accountable.ControllerResult{LastSignalState: &active}},
			noop: accountable.NoopSignalCleared, health: accountable.SourceHealthy, state: cleared, status: accountable.ControllerHealthy},
		{name: "within cooldown", reading: accountable.SignalReading{Records: records(2)}, pending: true,
			noop: accountable.NoopCooldownActive, health: accountable.SourceHealthy, state: active, signal: &signal, status: accountable.ControllerHealthy, asked: true},
		{name: "acts", reading: accountable.SignalReading{Records: records(2), Last: &accountable.ControllerResult{LastSignalState: &active}},
			health: accountable.SourceHealthy, state: active, signal: &signal, status: accountable.ControllerHealthy, asked: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.reading.Now = now
			asked := false
			v, err := spec.Assess(c.reading, canonical.DigestOf, func(id string) (bool, error) {
				asked = true
				if id != signal {
					t.Errorf("asked about signal %s, want %s", id, signal)
				}
				return c.pending, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if v.Noop != c.noop || v.Proposes() != (c.noop == "") || v.SourceHealth.State != c.health || v.SignalState != c.state ||
				!reflect.DeepEqual(v.SignalID, c.signal) || v.Status != c.status || asked != c.asked {
				t.Errorf("got noop %q health %s state %s signal %v status %s asked %v", v.Noop, v.SourceHealth.State, v.SignalState,
					v.SignalID, v.Status, asked)
			}
			h := v.SourceHealth
			if h.ObservedAt != now || h.FreshnessWatermark != c.reading.Watermark || h.RecordCount != len(c.reading.Records) ||
				len(h.Limitations) != map[bool]int{true: 0, false: 1}[c.health == accountable.SourceHealthy] {
				t.Errorf("source health %+v", h)
			}
		})
	}

	fail := errors.New("the decisions could not be read")
	if _, err := spec.Assess(accountable.SignalReading{Now: now, Records: records(1)}, canonical.DigestOf, func(string) (bool, error) { return false, fail }); !errors.Is(err, fail) {
		t.Errorf("a failed cooldown read: %v, want it returned", err)
	}
}

func TestControllerSpecRevisionCheck(t *testing.T) {
	spec := accountable.ControllerSpecs[accountable.DomainSales]
	d, err := canonical.DigestOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	current, other := accountable.DigestID(accountable.SpecRevisionPrefix, d), "controller_spec_revision:"+fmt.Sprintf("%064d", 0)
	if err := spec.CheckSpecRevision(current, nil); err != nil {
		t.Errorf("no revision asked: %v", err)
	}
	if err := spec.CheckSpecRevision(current, &current); err != nil {
		t.Errorf("the current revision: %v", err)
	}
	err = spec.CheckSpecRevision(current, &other)
	var ae *accountable.Error
	if !errors.As(err, &ae) || ae.Code != accountable.ECodeVersionConflict || ae.Details["current_spec_revision"] != current {
		t.Errorf("another revision: %v", err)
	}
}

// A proposal counts every record, shows the first 20 and phrases its decision.
func TestControllerPropose(t *testing.T) {
	spec := accountable.ControllerSpecs[accountable.DomainOperations]
	for _, n := range []int{1, 20, 21} {
		records := make([]accountable.SignalRecord, n)
		for i := range records {
			records[i].ID = fmt.Sprint(i)
		}
		p, title, summary := spec.Propose("controller_signal:x", records)
		want := accountable.ControllerProposal{Type: "operations.reroute_handoffs", Domain: accountable.DomainOperations, Signal: spec.Signal,
			SignalID: "controller_signal:x", RecordCount: n, Records: records[:min(n, 20)],
			SuggestedAction: fmt.Sprintf("Reroute or reassign the %d breached or stalled handoffs.", n)}
		if !reflect.DeepEqual(p, want) || title != fmt.Sprintf("Operations: %d handoffs breached or stalled", n) || summary != want.SuggestedAction {
			t.Errorf("%d records: %+v %q %q", n, p, title, summary)
		}
	}
}
