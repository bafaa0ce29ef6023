package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	temporallog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/workflows"
)

// recordHistoriesDir is where the replay test (worker/replay_test.go) reads the histories.
const recordHistoriesDir = "../../workflows/testdata"

// TestRecordReplayHistories records, from the Temporal dev server, the replay histories of
// HandoffSLA (a handoff fulfilled in time, one that breaches its SLA) and DiscoveryRun (a
// bounded_sync run that succeeds), each made by the real API and worker (the `dev` app).
// It always runs, so that the dev app is seen to make each case's history; it rewrites the
// files in workflows/testdata only when asked (otherwise it writes them to a temporary
// directory):
//
//	RECORD_HISTORIES=1 scripts/stack.sh go test -count=1 -run TestRecordReplayHistories ./cmd/accountable
//
// The SLA that breaches is due in 2 s and the discovery run reads a few events, so the
// histories stay small (a dozen events each).
func TestRecordReplayHistories(t *testing.T) {
	temporalAddr := requireTemporal(t)
	tc, err := client.Dial(client.Options{HostPort: temporalAddr, Logger: temporallog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	cfg := startDev(t, temporalAddr)
	db := storetest.Open(t)
	tenant := storetest.NewTenant(t, db)
	ws := tenant.Principal.WorkspaceID
	c := apiClient{t: t, base: cfg.SiteURL, key: tenant.Key}
	handoff := func(key string, due time.Time) string {
		status, body := c.call("POST", "/handoffs", "", map[string]any{"handoff_key": key, "from_stage_key": "build",
			"to_stage_key": "review", "title": "Review " + key, "due_at": due.UTC().Format(time.RFC3339Nano)})
		if status != http.StatusCreated {
			t.Fatalf("create handoff %s: %d %v", key, status, body)
		}
		return body["data"].(map[string]any)["id"].(string)
	}
	act := func(id, action string) {
		if status, body := c.call("POST", "/handoffs/"+id+"/"+action, "", map[string]any{}); status != http.StatusOK {
			t.Fatalf("%s %s: %d %v", action, id, status, body)
		}
	}

	// Fulfilled in time: the handoff-closed signal ends the SLA timer before it fires. The
	// handoff is fulfilled once the timer runs, so the history is the common case (a signal
	// in a later workflow task), not the race of a signal that beats the first task.
	onTime := handoff("on-time", time.Now().Add(time.Minute))
	storetest.WaitFor(t, 30*time.Second, "the on-time handoff's SLA timer started", func() bool {
		return slices.ContainsFunc(historyOf(t, tc, workflows.HandoffSLAID(ws, onTime)), isEvent(enums.EVENT_TYPE_TIMER_STARTED))
	})
	act(onTime, "claim")
	act(onTime, "fulfill")
	recordHistory(t, tc, workflows.HandoffSLAID(ws, onTime), "handoff_sla_fulfilled", `"fulfilled"`,
		enums.EVENT_TYPE_TIMER_STARTED, enums.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, enums.EVENT_TYPE_TIMER_CANCELED)

	// Breached: the timer fires and the activity escalates the handoff.
	late := handoff("late", time.Now().Add(2*time.Second))
	recordHistory(t, tc, workflows.HandoffSLAID(ws, late), "handoff_sla_breached", `"escalated"`,
		enums.EVENT_TYPE_TIMER_FIRED, enums.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)

	// A bounded_sync discovery run over a few handoffs between stages, answered finished.
	for i := range 3 {
		for _, st := range [][2]string{{"intake", "triage"}, {"triage", "fix"}} {
			if status, body := c.call("POST", "/handoffs", "", map[string]any{"handoff_key": fmt.Sprintf("case-%d", i),
				"from_stage_key": st[0], "to_stage_key": st[1], "title": "seed"}); status != http.StatusCreated {
				t.Fatalf("seed: %d %v", status, body)
			}
		}
	}
	status, body := c.call("POST", "/discovery-runs", "", map[string]any{"mode": "bounded_sync"})
	if status != http.StatusCreated {
		t.Fatalf("discovery run: %d %v", status, body)
	}
	run := body["data"].(map[string]any)["run"].(map[string]any)
	if run["status"] != "succeeded" {
		t.Fatalf("discovery run: %v", run)
	}
	recordHistory(t, tc, workflows.DiscoveryRunID(ws, run["id"].(string)), "discovery_run_bounded_sync", `"succeeded"`,
		enums.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
}

// recordHistory waits for workflow id to start and complete with the result wantResult (its
// JSON), checks that its history has the events that make it the case it stands for, and
// writes the history to <name>.history.json (in workflows/testdata with RECORD_HISTORIES
// set, else in a temporary directory) in the protojson form of the
// histories taken with `temporal workflow show -o json` (full enum names, indented), which
// client.HistoryFromJSON reads.
func recordHistory(t *testing.T, tc client.Client, id, name, wantResult string, want ...enums.EventType) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	// The relay starts the workflow after the command's commit, a moment after the answer.
	storetest.WaitFor(t, 30*time.Second, id+" started", func() bool { return len(historyOf(t, tc, id)) > 0 })
	var result json.RawMessage
	if err := tc.GetWorkflow(ctx, id, "").Get(ctx, &result); err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	if string(result) != wantResult {
		t.Fatalf("%s returned %s, want %s", id, result, wantResult)
	}
	history := &historypb.History{Events: historyOf(t, tc, id)}
	for _, w := range want {
		if !slices.ContainsFunc(history.Events, isEvent(w)) {
			t.Fatalf("%s: no %s in its history, so it is not the case %s stands for", id, w, name)
		}
	}
	raw, err := protojson.Marshal(history)
	if err != nil {
		t.Fatal(err)
	}
	// protojson varies its whitespace on purpose; re-indenting makes the file stable.
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		t.Fatal(err)
	}
	out.WriteByte('\n')
	dir := t.TempDir()
	if os.Getenv("RECORD_HISTORIES") != "" {
		dir = recordHistoriesDir
	}
	file := filepath.Join(dir, name+".history.json")
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d events from %s", file, len(history.Events), id)
}

// historyOf is workflow id's history so far; none while it has not been started.
func historyOf(t *testing.T, tc client.Client, id string) []*historypb.HistoryEvent {
	t.Helper()
	var events []*historypb.HistoryEvent
	for it := tc.GetWorkflowHistory(t.Context(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT); it.HasNext(); {
		event, err := it.Next()
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return nil
		}
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		events = append(events, event)
	}
	return events
}

func isEvent(want enums.EventType) func(*historypb.HistoryEvent) bool {
	return func(e *historypb.HistoryEvent) bool { return e.GetEventType() == want }
}
