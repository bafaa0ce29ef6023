package api

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/accountablework/accountable"
)

// The decoders either produce a command within the specification's bounds or refuse the
// body with a 4xx error; they never panic and never answer 500. `make test` runs the seed
// corpus; `go test -fuzz FuzzCompleteWorkBody ./api` explores further.

func mustSchemas(f *testing.F) *Schemas {
	s, err := NewSchemas()
	if err != nil {
		f.Fatal(err)
	}
	return s
}

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

func FuzzCompleteWorkBody(f *testing.F) {
	sch := mustSchemas(f).Component("CompleteWorkRequest")
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
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req completeWorkRequest
		_, _, err := decodeJSON(sch, body, &req)
		var cmd accountable.CompleteWork
		if err == nil {
			cmd, err = req.command("0190c0de-0000-7000-8000-000000000000")
		}
		if err != nil {
			checkRefusal(t, body, err)
			return
		}
		if utf8.RuneCountInString(cmd.Summary) > accountable.MaxCompletionSummary {
			t.Fatalf("summary of %d characters accepted", utf8.RuneCountInString(cmd.Summary))
		}
		if d := cmd.MeasuredDurationHours; d != nil && (*d < 0 || *d > accountable.MaxMeasuredDurationHours) {
			t.Fatalf("duration %v accepted", *d)
		}
		if c := cmd.CostCents; c != nil && (*c < 0 || *c > accountable.MaxCompletionCostCents) {
			t.Fatalf("cost %v accepted", *c)
		}
		if cmd.Expected.AggregateVersion < 0 || cmd.Expected.UpdatedAt.IsZero() {
			t.Fatalf("accepted without a usable version: %+v", cmd.Expected)
		}
	})
}

func FuzzCreateWorkBody(f *testing.F) {
	sch := mustSchemas(f).Component("CreateWorkRequest")
	for _, seed := range []string{
		``, `{}`, `{"title":"x"}`, `{"title":""}`, `{"title":null}`, `{"title":"x","priority":"urgent","due_date":"2026-12-01"}`,
		`{"title":"x","due_date":"2026-12-01T10:00:00+02:00"}`, `{"title":"x","due_date":"2026-13-01"}`,
		`{"title":"x","initiative_id":"0190c0de-0000-7000-8000-000000000000"}`,
		`{"title":"x","initiative_id":"0190c0de-0000-7000-8000-000000000000","workstream_id":"0190c0de-0000-7000-8000-000000000001","milestone_id":"0190c0de-0000-7000-8000-000000000002"}`,
		`{"title":"x","metadata":{"a":[1,2,{"b":null}]},"estimated_cost_cents":0}`, `{"title":"x","metadata":[]}`,
		`{"title":"x","estimated_cost_cents":-1}`, `{"title":"x","extra":true}`, `{"title":"x","title":"y"}`,
		`{"title":"x","metadata":{"a":1,"a":2}}`, `{"title":"x","metadata":{"n":1e400}}`, `{"title":"x","metadata":{"s":"\ud800"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req createWorkRequest
		_, _, err := decodeJSON(sch, body, &req)
		var cmd accountable.CreateWork
		if err == nil {
			cmd, err = req.command()
		}
		if err != nil {
			checkRefusal(t, body, err)
			return
		}
		if n := utf8.RuneCountInString(cmd.Title); n < 1 || n > accountable.MaxTaskTitle {
			t.Fatalf("title of %d characters accepted", n)
		}
		switch cmd.Priority {
		case accountable.PriorityLow, accountable.PriorityMedium, accountable.PriorityHigh, accountable.PriorityUrgent:
		default:
			t.Fatalf("priority %q accepted", cmd.Priority)
		}
		if (cmd.InitiativeID == nil) != (cmd.MilestoneID == nil) || (cmd.InitiativeID == nil) != (cmd.WorkstreamID == nil) {
			t.Fatal("partial initiative/workstream/milestone accepted")
		}
	})
}
