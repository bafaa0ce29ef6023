package api

import (
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// The body decoders either produce a command within the specification's bounds or refuse
// the body with a 400; they never panic and never answer 500. `make test` runs the seed
// corpus; `go test -fuzz FuzzCompleteWorkBody ./api` explores further.

func checkRefusal(t *testing.T, body []byte, err error) {
	t.Helper()
	var ae *accountable.Error
	if !errors.As(err, &ae) {
		t.Fatalf("body %q: non-domain error %v", body, err)
	}
	if st := accountable.ErrorStatus(ae.Code); st != 400 {
		t.Fatalf("body %q: status %d (%s)", body, st, ae.Code)
	}
}

// decodeCommand decodes and validates a body as the operation with input In would.
func decodeCommand[In any](body []byte) (*In, error) {
	in := new(In)
	if _, err := decodeJSONBody(body, scopedBody(reflect.TypeFor[In]()), in, false); err != nil {
		return nil, err
	}
	if v, ok := any(in).(validator); ok {
		return in, v.Validate()
	}
	return in, accountable.CheckFields(in).Err()
}

func FuzzCompleteWorkBody(f *testing.F) {
	token := accountable.TaskVersion{AggregateVersion: 3, UpdatedAt: accountable.Now()}.Token()
	for _, seed := range []string{
		``, `{}`, `null`, `[]`, `"x"`, `{"version_token":"` + token + `"}`,
		`{"version_token":"` + token + `","summary":"ok","measured_duration_hours":0,"cost_cents":0,"evidence":{}}`,
		`{"expected_updated_at":"2026-11-22T06:41:50.953363Z","expected_aggregate_version":1}`,
		`{"expected_updated_at":"2026-11-22T06:41:50.953363Z","expected_aggregate_version":1,"version_token":"` + token + `"}`,
		`{"version_token":"` + token + `","measured_duration_hours":1e5}`,
		`{"version_token":"` + token + `","measured_duration_hours":100000.0000001}`,
		`{"version_token":"` + token + `","cost_cents":1e8}`, `{"version_token":"` + token + `","cost_cents":1.0}`,
		`{"version_token":"` + token + `","cost_cents":99999999999999999999999}`,
		`{"version_token":"` + token + `","summary":null,"evidence":null}`,
		`{"version_token":1}`, `{"version_token":"` + token + `"`, `{"version_token":"` + token + `"}}`,
		`{"expected_aggregate_version":9223372036854775808,"expected_updated_at":"2026-11-22T06:41:50Z"}`,
		`{"workspace_id":"not-a-uuid","version_token":"x"}`, "{\"summary\":\"\xff\"}",
		`{"version_token":"` + token + `","evidence":[]}`, `{"version_token":"` + token + `","VERSION_TOKEN":"x"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := decodeCommand[completeWorkRequest](body)
		if err != nil {
			checkRefusal(t, body, err)
			return
		}
		cmd := in.CompleteWork
		if s := cmd.Summary; s != nil && utf8.RuneCountInString(*s) > accountable.MaxCompletionSummary {
			t.Fatalf("summary of %d characters accepted", utf8.RuneCountInString(*s))
		}
		if d := cmd.MeasuredDurationHours; d != nil && (*d < 0 || *d > accountable.MaxMeasuredDurationHours) {
			t.Fatalf("duration %v accepted", *d)
		}
		if c := cmd.CostCents; c != nil && (*c < 0 || *c > accountable.MaxCompletionCostCents) {
			t.Fatalf("cost %v accepted", *c)
		}
		// A usable version, or the version no task has (a version_token this service did
		// not make: stale).
		v, err := cmd.Expected()
		foreign := v == accountable.NoTaskVersion && cmd.VersionToken != nil
		if err != nil || (!foreign && (v.AggregateVersion < 0 || v.UpdatedAt.IsZero())) {
			t.Fatalf("accepted without a usable version: %+v %v", v, err)
		}
		if len(cmd.Evidence) > 0 && cmd.Evidence[0] != '{' {
			t.Fatalf("evidence %s accepted", cmd.Evidence)
		}
	})
}

func FuzzCreateWorkBody(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `{"title":"x"}`, `{"title":""}`, `{"title":null}`, `{"title":"x","priority":"urgent","due_date":"2026-12-01"}`,
		`{"title":"x","due_date":"2026-12-01T10:00:00+02:00"}`, `{"title":"x","due_date":"2026-13-01"}`,
		`{"title":"x","initiative_id":"0190c0de-0000-7000-8000-000000000000"}`,
		`{"title":"x","initiative_id":"0190c0de-0000-7000-8000-000000000000","workstream_id":"0190c0de-0000-7000-8000-000000000001","milestone_id":"0190c0de-0000-7000-8000-000000000002"}`,
		`{"title":"x","metadata":{"a":[1,2,{"b":null}]},"estimated_cost_cents":0}`, `{"title":"x","metadata":[]}`,
		`{"title":"x","estimated_cost_cents":-1}`, `{"title":"x","extra":true}`, `{"title":"x","title":"y"}`,
		`{"title":"x","metadata":{"a":1,"a":2}}`, `{"title":"x","metadata":{"n":1e400}}`, `{"title":"x","metadata":{"s":"\ud800"}}`,
		`{"title":"x","priority":null,"description":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		cmd, err := decodeCommand[accountable.CreateWork](body)
		if err != nil {
			checkRefusal(t, body, err)
			return
		}
		if n := utf8.RuneCountInString(cmd.Title); n < 1 || n > accountable.MaxTaskTitle {
			t.Fatalf("title of %d characters accepted", n)
		}
		if p := cmd.Priority; p != nil {
			switch *p {
			case accountable.PriorityLow, accountable.PriorityMedium, accountable.PriorityHigh, accountable.PriorityUrgent:
			default:
				t.Fatalf("priority %q accepted", *p)
			}
		}
		if (cmd.InitiativeID == nil) != (cmd.MilestoneID == nil) || (cmd.InitiativeID == nil) != (cmd.WorkstreamID == nil) {
			t.Fatal("partial initiative/workstream/milestone accepted")
		}
		if _, err := canonical.JSON(cmd); err != nil {
			t.Fatalf("accepted a body with no canonical form: %v", err)
		}
	})
}

// A closed body refuses members it does not know, at their JSON Pointer; an open one
// skips them after the same checks of their text.
func TestClosedAndOpenBodies(t *testing.T) {
	scoped := scopedBody(reflect.TypeFor[accountable.CreateWork]())
	body := []byte(`{"title":"x","user_id":"someone","extra":{"deep":[1,2,{"a":null}]}}`)
	var open accountable.CreateWork
	if _, err := decodeJSONBody(body, scoped, &open, false); err != nil || open.Title != "x" {
		t.Fatalf("open body: %+v %v", open, err)
	}
	var closed accountable.CreateWork
	_, err := decodeJSONBody(body, scoped, &closed, true)
	var ae *accountable.Error
	if !errors.As(err, &ae) || ae.Code != accountable.ECodeValidationFailed ||
		ae.Details["issues"].(accountable.Issues)[0].Path != "/user_id" {
		t.Fatalf("closed body: %v", err)
	}
	// Unknown members are still JSON the ledger could hash: duplicate names are refused.
	var in accountable.CreateWork
	_, err = decodeJSONBody([]byte(`{"title":"x","extra":{"a":1,"a":2}}`), scoped, &in, false)
	if !errors.As(err, &ae) || ae.Code != accountable.ECodeInvalidJSON {
		t.Fatalf("duplicate names in an unknown member: %v", err)
	}
}
