package accountable_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/accountablework/accountable"
)

// validators are the commands whose Validate holds the business rules REST, the
// activities and the MCP tools share, each as a new empty value.
var validators = []func() interface{ Validate() error }{
	func() interface{ Validate() error } { return new(accountable.CreateWork) },
	func() interface{ Validate() error } { return new(accountable.CompleteWork) },
	func() interface{ Validate() error } { return new(accountable.ActOnHandoff) },
	func() interface{ Validate() error } { return new(accountable.CreateHandoff) },
	func() interface{ Validate() error } { return new(accountable.ApplyLifecycle) },
	func() interface{ Validate() error } { return new(accountable.ClaimDedup) },
	func() interface{ Validate() error } { return new(accountable.ClientRegistration) },
	func() interface{ Validate() error } { return new(accountable.CommitInitiative) },
	func() interface{ Validate() error } { return new(accountable.ProposeInitiative) },
	func() interface{ Validate() error } { return new(accountable.CreateArtifact) },
	func() interface{ Validate() error } { return new(accountable.CreateDecision) },
	func() interface{ Validate() error } { return new(accountable.DecideDecision) },
	func() interface{ Validate() error } { return new(accountable.DeclareProcess) },
	func() interface{ Validate() error } { return new(accountable.ReviseProcess) },
	func() interface{ Validate() error } { return new(accountable.TransitionProcess) },
	func() interface{ Validate() error } { return new(accountable.FinalizeRun) },
	func() interface{ Validate() error } { return new(accountable.LaunchInitiative) },
	func() interface{ Validate() error } { return new(accountable.RunActionRequest) },
	func() interface{ Validate() error } { return new(accountable.ProjectionPeriod) },
	func() interface{ Validate() error } { return new(accountable.ProposeDiscoveredProcess) },
	func() interface{ Validate() error } { return new(accountable.StartDiscoveryRun) },
	func() interface{ Validate() error } { return new(accountable.Reconcile) },
	func() interface{ Validate() error } { return new(accountable.RecordEpisode) },
	func() interface{ Validate() error } { return new(accountable.RegisterWebhook) },
	func() interface{ Validate() error } { return new(accountable.RevisionInput) },
	func() interface{ Validate() error } { return new(accountable.StartLedgerVerification) },
}

// Every command's Validate, over whatever a JSON body decodes to: it never panics, it
// answers the same twice (a rule that reads a clock or a map's order would not), and a
// command it accepts is accepted again after a JSON round trip (what an activity or a
// replay decodes from what was stored).
func FuzzCommandValidation(f *testing.F) {
	for i := range validators {
		for _, body := range []string{`{}`, `{"title":"t","priority":"high","metadata":{}}`,
			`{"version_token":"v","summary":"s","evidence":{"links":["https://example.com"]}}`,
			`{"name":"n","stages":[{"key":"a","name":"A"}],"expected_aggregate_version":1}`,
			`{"status":"succeeded","cost_cents":-1,"reason":"\u0000"}`, `{"title":"` + fmt.Sprint(i) + `","urgency":"urgent"}`} {
			f.Add(uint8(i), []byte(body))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		newCmd := validators[int(which)%len(validators)]
		cmd := newCmd()
		if json.Unmarshal(body, cmd) != nil {
			return
		}
		first, second := cmd.Validate(), cmd.Validate()
		if fmt.Sprint(first) != fmt.Sprint(second) {
			t.Fatalf("%T: Validate answered %v, then %v", cmd, first, second)
		}
		if first != nil {
			return
		}
		raw, err := json.Marshal(cmd)
		if err != nil {
			t.Fatalf("%T: a valid command does not encode: %v", cmd, err)
		}
		again := newCmd()
		if err := json.Unmarshal(raw, again); err != nil {
			t.Fatalf("%T: a valid command's JSON does not decode: %v\n%s", cmd, err, raw)
		}
		if err := again.Validate(); err != nil {
			t.Fatalf("%T: valid, but not after a JSON round trip: %v\n%s", cmd, err, raw)
		}
	})
}
