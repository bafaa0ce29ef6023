package workload_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/accountablework/accountable/workload"
)

// validators are the requests of this package whose Validate holds the rules REST and
// the MCP tools share, each as a new empty value (the root's FuzzCommandValidation
// covers the root's commands).
var validators = []func() interface{ Validate() error }{
	func() interface{ Validate() error } { return new(workload.StudioEstimateRequest) },
	func() interface{ Validate() error } { return new(workload.WorkloadRequest) },
}

// Every request's Validate, over whatever a JSON body decodes to: it never panics, it
// answers the same twice (a rule that reads a clock or a map's order would not), and a
// request it accepts is accepted again after a JSON round trip.
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
			t.Fatalf("%T: a valid request does not encode: %v", cmd, err)
		}
		again := newCmd()
		if err := json.Unmarshal(raw, again); err != nil {
			t.Fatalf("%T: a valid request's JSON does not decode: %v\n%s", cmd, err, raw)
		}
		if err := again.Validate(); err != nil {
			t.Fatalf("%T: valid, but not after a JSON round trip: %v\n%s", cmd, err, raw)
		}
	})
}
