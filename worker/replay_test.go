package worker_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.temporal.io/sdk/client"
	temporallog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/accountablework/accountable/worker"
)

// historiesDir holds the histories recorded from the Temporal dev server. Most were taken
// with `temporal workflow show -w <id> -o json`; HandoffSLA's and DiscoveryRun's are
// re-recorded by TestRecordReplayHistories (cmd/accountable, RECORD_HISTORIES=1).
const historiesDir = "../workflows/testdata"

// Every workflow the worker registers has at least one history recorded from the dev server,
// and every recorded history replays against the workflows as the worker registers them now:
// a workflow added to the worker without a history fails here, and so does a change of a
// released workflow's commands that is not behind workflow.GetVersion.
func TestEveryRegisteredWorkflowReplaysARecordedHistory(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(historiesDir, "*.history.json"))
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, wf := range worker.Workflows() {
		registered[wf.Name] = true
	}
	recorded := map[string][]string{} // workflow name -> its history files
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			history, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			wfType := history.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()
			if wfType == "" {
				t.Fatalf("%s does not begin with a workflow's start event", file)
			}
			recorded[wfType] = append(recorded[wfType], name)
			if !registered[wfType] {
				t.Fatalf("%s is a history of %s, which the worker does not register (worker.Workflows)", file, wfType)
			}
			// All of them registered, as the worker does: a history replays against exactly
			// what a worker would run it with.
			replayer := sdkworker.NewWorkflowReplayer()
			for _, wf := range worker.Workflows() {
				replayer.RegisterWorkflowWithOptions(wf.Func, workflow.RegisterOptions{Name: wf.Name})
			}
			if err := replayer.ReplayWorkflowHistory(temporallog.NewStructuredLogger(slog.New(slog.DiscardHandler)), history); err != nil {
				t.Errorf("%s (%s) no longer replays: %v", file, wfType, err)
			}
		})
	}
	for _, wf := range worker.Workflows() {
		if len(recorded[wf.Name]) == 0 {
			t.Errorf("%s is registered by the worker (worker.Workflows) but has no recorded history in workflows/testdata: "+
				"record one from the dev server (README, Adding a workflow)", wf.Name)
		} else {
			slices.Sort(recorded[wf.Name])
			t.Logf("%s: %v", wf.Name, recorded[wf.Name])
		}
	}
}
