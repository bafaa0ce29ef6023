package workflows_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/activities"
	"github.com/accountablework/accountable/workflows"
)

// webhookEnv runs WebhookDelivery with its reads answered by next (given the read's
// offset from the start, on the workflow's clock) and its deliveries taking deliver each;
// it returns the offsets of the reads and of the deliveries.
type webhookEnv struct {
	env        *testsuite.TestWorkflowEnvironment
	start      time.Time
	reads      []time.Duration
	deliveries []time.Duration
}

func newWebhookEnv(t *testing.T, next func(n int, at time.Duration) activities.WebhookBatch, deliver time.Duration) *webhookEnv {
	var s testsuite.WorkflowTestSuite
	w := &webhookEnv{env: s.NewTestWorkflowEnvironment()}
	w.start = w.env.Now()
	var a *activities.Webhooks
	w.env.OnActivity(a.NextWebhookDeliveries, mock.Anything, mock.Anything).Return(func(context.Context, activities.WebhookRef) (activities.WebhookBatch, error) {
		at := w.env.Now().Sub(w.start)
		w.reads = append(w.reads, at)
		return next(len(w.reads), at), nil
	})
	w.env.OnActivity(a.DeliverWebhook, mock.Anything, mock.Anything).After(deliver).Return(func(context.Context, accountable.WebhookDelivery) error {
		w.deliveries = append(w.deliveries, w.env.Now().Sub(w.start))
		return nil
	})
	return w
}

func (w *webhookEnv) run(t *testing.T) {
	t.Helper()
	w.env.ExecuteWorkflow(workflows.WebhookDelivery, activities.WebhookRef{WorkspaceID: "ws", WebhookID: "wh"})
	if err := w.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
}

// wakeAt sends n wake signals (one when n is omitted) together at d.
func (w *webhookEnv) wakeAt(d time.Duration, n ...int) {
	count := 1
	if len(n) > 0 {
		count = n[0]
	}
	w.env.RegisterDelayedCallback(func() {
		for range count {
			w.env.SignalWorkflow(workflows.WebhookWakeSignal, nil)
		}
	}, d)
}

func dues(n int) []accountable.WebhookDelivery {
	out := make([]accountable.WebhookDelivery, n)
	for i := range out {
		out[i] = accountable.WebhookDelivery{WorkspaceID: "ws", WebhookID: "wh", DeliveryID: fmt.Sprintf("whd_%d", i), EventID: fmt.Sprint(i),
			Position: accountable.StreamPosition{Position: int64(i + 1)}}
	}
	return out
}

// An idle endpoint reads when woken, at once, and otherwise only at the fallback timer:
// 14 reads in an hour with two bursts of wakes (it read every 2 s before: 1,800). Wakes
// that arrive during a read make one more read, not one each.
func TestWebhookDeliveryWaitsForWakes(t *testing.T) {
	w := newWebhookEnv(t, func(_ int, at time.Duration) activities.WebhookBatch {
		return activities.WebhookBatch{Parked: true, Ended: at >= time.Hour}
	}, 0)
	w.wakeAt(90*time.Second, 3)
	w.wakeAt(40 * time.Minute)
	w.run(t)
	s, fallback := time.Second, workflows.WebhookIdleFallback
	want := []time.Duration{0, 90 * s, 90 * s}
	for i := 1; i <= 7; i++ {
		want = append(want, 90*s+time.Duration(i)*fallback) // up to 2,190 s
	}
	for i := 0; i <= 4; i++ {
		want = append(want, 40*time.Minute+time.Duration(i)*fallback) // the wake at 2,400 s; the last, at 3,600 s, ends it
	}
	if fmt.Sprint(w.reads) != fmt.Sprint(want) {
		t.Fatalf("reads at %v, want %v", w.reads, want)
	}
}

// A wake that comes while events are being delivered is not lost: the next read follows
// the deliveries at once instead of waiting for another wake.
func TestWebhookDeliveryWakeDuringDeliveries(t *testing.T) {
	w := newWebhookEnv(t, func(n int, _ time.Duration) activities.WebhookBatch {
		switch n {
		case 1:
			return activities.WebhookBatch{Parked: true}
		case 2:
			return activities.WebhookBatch{Parked: true, Deliveries: dues(2)}
		case 3:
			return activities.WebhookBatch{Parked: true}
		}
		return activities.WebhookBatch{Ended: true}
	}, 10*time.Second)
	w.wakeAt(time.Minute)                  // read 2 at 1 min: two deliveries of 10 s
	w.wakeAt(time.Minute + time.Second)    // during the first delivery: read 3 right after the second
	w.wakeAt(time.Minute + 30*time.Second) // idle again: read 4
	w.run(t)
	want := []time.Duration{0, time.Minute, time.Minute + 20*time.Second, time.Minute + 30*time.Second}
	if fmt.Sprint(w.reads) != fmt.Sprint(want) || len(w.deliveries) != 2 {
		t.Fatalf("reads at %v, want %v; deliveries at %v", w.reads, want, w.deliveries)
	}
}

// A full batch is followed by a read at once; events held behind an older transaction
// are read again after 100 ms, 200 ms, 400 ms (the end of that transaction may announce
// nothing); a read that could not be parked (no waker) is repeated every 2 s.
func TestWebhookDeliveryPolls(t *testing.T) {
	w := newWebhookEnv(t, func(n int, _ time.Duration) activities.WebhookBatch {
		switch {
		case n == 1:
			return activities.WebhookBatch{Parked: true, Deliveries: dues(activities.WebhookBatchSize)}
		case n <= 4:
			return activities.WebhookBatch{Parked: true, Held: true}
		case n == 5:
			return activities.WebhookBatch{Parked: true, Deliveries: dues(1)}
		case n <= 7:
			return activities.WebhookBatch{}
		}
		return activities.WebhookBatch{Ended: true}
	}, 0)
	w.run(t)
	ms := time.Millisecond
	want := []time.Duration{0, 0, 100 * ms, 300 * ms, 700 * ms, 700*ms + workflows.WebhookIdleFallback,
		700*ms + workflows.WebhookIdleFallback + workflows.WebhookIdlePoll, 700*ms + workflows.WebhookIdleFallback + 2*workflows.WebhookIdlePoll}
	if fmt.Sprint(w.reads) != fmt.Sprint(want) || len(w.deliveries) != activities.WebhookBatchSize+1 {
		t.Fatalf("reads at %v, want %v; %d deliveries", w.reads, want, len(w.deliveries))
	}
}

// Histories recorded from the dev server must replay against the current code:
// webhook_delivery_v0 before webhookWakeVersion (an endpoint that read every 2 s: a
// delivery retried after a 500, a second one, deleted), webhook_delivery_wake after it
// (woken by the ledger feed, TestWebhookDeliveries).
func TestWebhookDeliveryReplaysRecordedHistory(t *testing.T) {
	for _, h := range []string{"webhook_delivery_v0", "webhook_delivery_wake"} {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(workflows.WebhookDelivery, workflow.RegisterOptions{Name: workflows.WebhookDeliveryName})
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/"+h+".history.json"); err != nil {
			t.Fatalf("%s: %v", h, err)
		}
	}
}
