package planner_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/planner"
)

// fakeModel is a local OpenAI-compatible server that replays recorded chat completions
// (testdata/completion-*.json) and keeps the requests it was sent.
type fakeModel struct {
	mu       sync.Mutex
	requests []map[string]any
	answer   func(w http.ResponseWriter, r *http.Request)
}

func newFakeModel(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) (*fakeModel, *planner.Model) {
	t.Helper()
	f := &fakeModel{answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		_ = json.Unmarshal(body, &req)
		f.mu.Lock()
		f.requests = append(f.requests, req)
		f.mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, "unexpected request "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		f.answer(w, r)
	}))
	t.Cleanup(srv.Close)
	return f, planner.NewModel(planner.ModelConfig{APIKey: "sk-test", BaseURL: srv.URL + "/v1/", Model: "gpt-4o-mini"})
}

func (f *fakeModel) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func recorded(t *testing.T, name string) func(w http.ResponseWriter, r *http.Request) {
	t.Helper()
	body, err := os.ReadFile("testdata/completion-" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}
}

var statusPage = accountable.ProposeInitiative{Title: "Public status page", Prompt: ptr("An API of component health and a page that shows it.")}

func TestModelPlansFromStructuredOutput(t *testing.T) {
	f, m := newFakeModel(t, recorded(t, "good"))
	res, err := m.Plan(context.Background(), statusPage)
	if err != nil {
		t.Fatal(err)
	}
	if res.Source != accountable.AssignmentModel || len(res.Plan.Workstreams) != 2 || res.Plan.Workstreams[1].DependsOn[0] != "Status API" ||
		*res.Plan.Workstreams[0].AgentName != "Engineering agent" || res.Plan.Workstreams[0].Source != accountable.WorkstreamGenerated ||
		res.Plan.Initiative.Title != statusPage.Title || res.Plan.Initiative.Summary == "" {
		t.Fatalf("plan %+v", res.Plan)
	}
	// The receipt: the model the server named, its token counts, and the table's price
	// (gpt-4o-mini: 0.15 and 0.60 USD per million tokens in and out).
	r := res.Receipt
	if r.Provider != "openai" || r.Model != "gpt-4o-mini-2024-07-18" || r.TokensIn != 812 || r.TokensOut != 431 || r.CostUSD != 0.000380 {
		t.Fatalf("receipt %+v", r)
	}
	// The request asked for strict structured output under the plan's schema.
	req := f.requests[0]
	format := req["response_format"].(map[string]any)
	schema := format["json_schema"].(map[string]any)
	if format["type"] != "json_schema" || schema["strict"] != true || req["model"] != "gpt-4o-mini" {
		t.Fatalf("request %v", req)
	}
	props := schema["schema"].(map[string]any)
	if props["additionalProperties"] != false || len(props["required"].([]any)) != 2 {
		t.Fatalf("schema %v", props)
	}
	ws := props["properties"].(map[string]any)["workstreams"].(map[string]any)["items"].(map[string]any)
	if ws["additionalProperties"] != false || len(ws["required"].([]any)) != len(ws["properties"].(map[string]any)) {
		t.Fatalf("workstream schema: every property required, no others: %v", ws)
	}
}

// Malformed output, output off the schema and refusals are errors and make no plan.
func TestModelRejectsBadOutput(t *testing.T) {
	for _, c := range []struct {
		name string
		want error
	}{
		{"malformed", planner.ErrModelOutput},
		{"offschema", planner.ErrModelOutput},
		{"refusal", planner.ErrModelRefused},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, m := newFakeModel(t, recorded(t, c.name))
			res, err := m.Plan(context.Background(), statusPage)
			if !errors.Is(err, c.want) || len(res.Plan.Workstreams) != 0 {
				t.Fatalf("got %v (plan %v), want %v", err, res.Plan, c.want)
			}
		})
	}
	// An explicit workstream the model left out is off the request.
	_, m := newFakeModel(t, recorded(t, "good"))
	in := statusPage
	in.Workstreams = []accountable.ExplicitWorkstream{{Name: "Runbook"}}
	if _, err := m.Plan(context.Background(), in); !errors.Is(err, planner.ErrModelOutput) {
		t.Fatalf("missing explicit workstream: %v", err)
	}
}

// A slow model ends at the caller's deadline; openai-go does not retry (Temporal does).
func TestModelHonoursDeadlinesAndDoesNotRetry(t *testing.T) {
	release := make(chan struct{})
	f, m := newFakeModel(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := m.Plan(ctx, statusPage); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow model: %v", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("waited %v past a 300ms deadline", waited)
	}

	f2, m2 := newFakeModel(t, func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":{"message":"overloaded","type":"server_error"}}`, http.StatusInternalServerError)
	})
	if _, err := m2.Plan(context.Background(), statusPage); err == nil {
		t.Fatal("a 500 made a plan")
	}
	if n := f2.count(); n != 1 {
		t.Fatalf("%d requests for one plan: openai-go retried", n)
	}
	_ = f
}

func TestGenerationCostUsesTheLongestPrefix(t *testing.T) {
	if got := planner.GenerationCostUSD("gpt-4o-2024-08-06", 1_000_000, 1_000_000); got != 12.5 {
		t.Fatalf("gpt-4o: %v", got)
	}
	if got := planner.GenerationCostUSD("gpt-4o-mini", 1_000_000, 0); got != 0.15 {
		t.Fatalf("gpt-4o-mini: %v", got)
	}
	if got := planner.GenerationCostUSD("llama3.1:8b", 1_000_000, 1_000_000); got != 0 {
		t.Fatalf("a local model: %v", got)
	}
}
