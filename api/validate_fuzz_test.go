package api

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"testing"

	"github.com/accountablework/accountable/oauth"
)

// commandValidators are, each once in the operations' order, the inputs of the served
// operations that have a Validate, as new empty values, and then the commands that come
// in through no operation of the table (the OAuth client registration). A new area's
// commands are fuzzed without a line here.
func commandValidators(tb testing.TB) []func() validator {
	tb.Helper()
	srv, err := NewServer(Config{SiteURL: "http://fuzz.test"}, Deps{}, slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatal(err)
	}
	validates := reflect.TypeFor[validator]()
	seen := map[reflect.Type]bool{}
	var out []func() validator
	for _, o := range srv.ops {
		if t := o.in; !seen[t] && reflect.PointerTo(t).Implements(validates) {
			seen[t] = true
			out = append(out, func() validator { return reflect.New(t).Interface().(validator) })
		}
	}
	return append(out, func() validator { return new(oauth.ClientRegistration) })
}

// Every command's Validate, over whatever a JSON body decodes to: it never panics, it
// answers the same twice (a rule that reads a clock or a map's order would not), and a
// command it accepts is accepted again after a JSON round trip (what an activity or a
// replay decodes from what was stored).
func FuzzCommandValidation(f *testing.F) {
	validators := commandValidators(f)
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

// The fuzzed commands include every command the root's and the engines' tests named
// before the list was derived from the operations (so deriving it lost none).
func TestCommandValidatorsCoverTheCommands(t *testing.T) {
	validators := commandValidators(t)
	var got []string
	for _, v := range validators {
		got = append(got, reflect.TypeOf(v()).Elem().String())
	}
	covered := func(name string) bool {
		if slices.Contains(got, name) {
			return true
		}
		// A request type of this package embeds the command (its Validate is the command's).
		for _, v := range validators {
			rt := reflect.TypeOf(v()).Elem()
			for i := range rt.NumField() {
				if f := rt.Field(i); f.Anonymous && f.Type.String() == name {
					return true
				}
			}
		}
		return false
	}
	for _, name := range []string{"accountable.CreateWork", "accountable.CompleteWork", "accountable.ActOnHandoff",
		"accountable.CreateHandoff", "accountable.ApplyLifecycle", "accountable.ClaimDedup", "oauth.ClientRegistration",
		"accountable.CommitInitiative", "accountable.ProposeInitiative", "accountable.CreateArtifact", "accountable.CreateDecision",
		"accountable.DecideDecision", "accountable.DeclareProcess", "accountable.ReviseProcess", "accountable.TransitionProcess",
		"accountable.FinalizeRun", "accountable.LaunchInitiative", "accountable.RunActionRequest",
		"accountable.ProposeDiscoveredProcess", "accountable.StartDiscoveryRun", "accountable.Reconcile", "accountable.RecordEpisode",
		"accountable.RegisterWebhook", "accountable.StartLedgerVerification", "workload.StudioEstimateRequest", "workload.WorkloadRequest"} {
		if !covered(name) {
			t.Errorf("%s is not fuzzed by FuzzCommandValidation", name)
		}
	}
}
