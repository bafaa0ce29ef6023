package accountable_test

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
)

func ptr[T any](v T) *T { return &v }

func issuePaths(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	for _, is := range err.(*accountable.Error).Details["issues"].(accountable.Issues) {
		out = append(out, is.Path)
	}
	return out
}

func TestCreateWorkRules(t *testing.T) {
	id := "0190c0de-0000-7000-8000-000000000000"
	cases := []struct {
		name string
		cmd  accountable.CreateWork
		want []string
	}{
		{"minimal", accountable.CreateWork{Title: "x"}, nil},
		{"missing title", accountable.CreateWork{}, []string{"/title"}},
		{"title too long", accountable.CreateWork{Title: strings.Repeat("é", 501)}, []string{"/title"}},
		{"title at the bound", accountable.CreateWork{Title: strings.Repeat("é", 500)}, nil},
		{"unknown priority", accountable.CreateWork{Title: "x", Priority: ptr(accountable.Priority("soon"))}, []string{"/priority"}},
		{"negative cost", accountable.CreateWork{Title: "x", EstimatedCostCents: ptr(int64(-1))}, []string{"/estimated_cost_cents"}},
		{"partial ids", accountable.CreateWork{Title: "x", InitiativeID: &id}, []string{"/initiative_id"}},
		{"all ids", accountable.CreateWork{Title: "x", InitiativeID: &id, WorkstreamID: &id, MilestoneID: &id}, nil},
		{"bad uuid", accountable.CreateWork{Title: "x", InitiativeID: ptr("x"), WorkstreamID: &id, MilestoneID: &id}, []string{"/initiative_id"}},
		{"long causation", accountable.CreateWork{Title: "x", Causation: accountable.Causation{CorrelationID: ptr(strings.Repeat("c", 201))}}, []string{"/correlation_id"}},
		{"NUL in the title", accountable.CreateWork{Title: "a\x00b"}, []string{"/title"}},
	}
	for _, c := range cases {
		if got := issuePaths(c.cmd.Validate()); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: issues at %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCompleteWorkConcurrencyForms(t *testing.T) {
	v := accountable.TaskVersion{AggregateVersion: 3, UpdatedAt: time.Date(2026, 11, 22, 1, 2, 3, 4000, time.UTC)}
	token := v.Token()
	at := accountable.TimeOf(v.UpdatedAt)
	other := accountable.TimeOf(v.UpdatedAt.Add(time.Microsecond))
	cases := []struct {
		name string
		cmd  accountable.CompleteWork
		want []string
	}{
		{"token", accountable.CompleteWork{VersionToken: &token}, nil},
		{"pair", accountable.CompleteWork{ExpectedUpdatedAt: &at, ExpectedAggregateVersion: ptr(int64(3))}, nil},
		{"both agreeing", accountable.CompleteWork{VersionToken: &token, ExpectedUpdatedAt: &at, ExpectedAggregateVersion: ptr(int64(3))}, nil},
		{"both disagreeing", accountable.CompleteWork{VersionToken: &token, ExpectedUpdatedAt: &other, ExpectedAggregateVersion: ptr(int64(3))}, []string{"/version_token"}},
		{"neither", accountable.CompleteWork{}, []string{"/version_token"}},
		{"half a pair", accountable.CompleteWork{ExpectedUpdatedAt: &at}, []string{"/expected_aggregate_version"}},
		{"foreign token", accountable.CompleteWork{VersionToken: ptr("nope")}, nil},
		{"foreign token with a pair", accountable.CompleteWork{VersionToken: ptr("nope"), ExpectedUpdatedAt: &at, ExpectedAggregateVersion: ptr(int64(3))}, []string{"/version_token"}},
		{"empty token", accountable.CompleteWork{VersionToken: ptr("")}, []string{"/version_token"}},
		{"duration bound", accountable.CompleteWork{VersionToken: &token, MeasuredDurationHours: ptr(100000.5)}, []string{"/measured_duration_hours"}},
		{"zero duration", accountable.CompleteWork{VersionToken: &token, MeasuredDurationHours: ptr(0.0)}, nil},
		{"cost bound", accountable.CompleteWork{VersionToken: &token, CostCents: ptr(int64(100000001))}, []string{"/cost_cents"}},
		{"summary bound", accountable.CompleteWork{VersionToken: &token, Summary: ptr(strings.Repeat("s", 4001))}, []string{"/summary"}},
	}
	for _, c := range cases {
		if got := issuePaths(c.cmd.Validate()); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: issues at %v, want %v", c.name, got, c.want)
		}
	}
	got, err := accountable.CompleteWork{ExpectedUpdatedAt: &at, ExpectedAggregateVersion: ptr(int64(3))}.Expected()
	if err != nil || !got.Equal(v) {
		t.Fatalf("expected version %+v %v", got, err)
	}
}

// The bounds the code names are the bounds the tags (and so the API description) state.
func TestBoundConstantsMatchTags(t *testing.T) {
	tag := func(v any, field, key string) string {
		f, ok := reflect.TypeOf(v).FieldByName(field)
		if !ok {
			t.Fatalf("no field %s", field)
		}
		return f.Tag.Get(key)
	}
	checks := []struct {
		got  string
		want int
	}{
		{tag(accountable.CreateWork{}, "Title", "maxLength"), accountable.MaxTaskTitle},
		{tag(accountable.Task{}, "Title", "maxLength"), accountable.MaxTaskTitle},
		{tag(accountable.CompleteWork{}, "Summary", "maxLength"), accountable.MaxCompletionSummary},
		{tag(accountable.CompleteWork{}, "MeasuredDurationHours", "maximum"), accountable.MaxMeasuredDurationHours},
		{tag(accountable.CompleteWork{}, "CostCents", "maximum"), accountable.MaxCompletionCostCents},
	}
	for _, c := range checks {
		if c.got != strconv.Itoa(c.want) {
			t.Errorf("tag %q, constant %d", c.got, c.want)
		}
	}
}

func TestProposeInitiativeRules(t *testing.T) {
	cases := []struct {
		name string
		cmd  accountable.ProposeInitiative
		want []string
	}{
		{"minimal", accountable.ProposeInitiative{Title: "x"}, nil},
		{"NUL in a listed string", accountable.ProposeInitiative{Title: "x", Context: &accountable.ProposalContext{Constraints: []string{"a\x00"}}},
			[]string{"/context/constraints/0"}},
		{"empty goal id", accountable.ProposeInitiative{Title: "x", GoalIDs: []string{""}}, []string{"/goal_ids/0"}},
		{"self dependency", accountable.ProposeInitiative{Title: "x", Workstreams: []accountable.ExplicitWorkstream{{Name: "a", DependsOn: []string{"a"}}}},
			[]string{"/workstreams/0/depends_on/0"}},
		{"dependency on another", accountable.ProposeInitiative{Title: "x", Workstreams: []accountable.ExplicitWorkstream{{Name: "a"}, {Name: "b", DependsOn: []string{"a"}}}}, nil},
	}
	for _, c := range cases {
		if got := issuePaths(c.cmd.Validate()); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: issues at %v, want %v", c.name, got, c.want)
		}
	}
}
