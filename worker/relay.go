package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/workflows"
)

// OutboxStore is what the relay needs of the store.
type OutboxStore interface {
	ClaimWorkflowMessages(ctx context.Context, limit int, lease time.Duration) ([]accountable.WorkflowMessage, error)
	DeliveredWorkflowMessages(ctx context.Context, ids []int64) error
	RetryWorkflowMessage(ctx context.Context, id int64, after time.Duration, reason string) error
	DeadWorkflowMessage(ctx context.Context, id int64, reason string) error
	ReleaseWorkflowMessages(ctx context.Context) (int64, error)
}

// WorkflowStarter is the part of the Temporal client the relay uses.
type WorkflowStarter interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
	CheckHealth(ctx context.Context, request *client.CheckHealthRequest) (*client.CheckHealthResponse, error)
}

// RelayMetrics receives the relay's measurements (bound to Prometheus in cmd).
type RelayMetrics interface {
	WorkflowMessage(kind, workflow string, err error)
}

// Relay delivers the workflow messages that committed commands wrote to the outbox: it
// starts or signals their workflows under the ids the messages carry, so delivering a
// message twice changes nothing. It runs in every process that talks to Temporal; relays
// lease messages, so they never deliver one at the same time. A process that committed
// messages nudges its relay, which delivers them at once; otherwise the relay polls.
type Relay struct {
	store     OutboxStore
	client    WorkflowStarter
	taskQueue string
	log       *slog.Logger
	metrics   RelayMetrics
	interval  time.Duration

	// failing is set while deliveries fail: each poll then asks Temporal whether it is back,
	// and when it is, every message waiting out a backoff is released at once.
	failing bool

	nudge  chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// Relay tuning.
const (
	relayBatch   = 50
	relayLease   = 30 * time.Second
	relayTimeout = 5 * time.Second
	maxBackoff   = time.Minute
)

// NewRelay returns a relay that starts workflows on taskQueue; metrics may be nil.
func NewRelay(store OutboxStore, c WorkflowStarter, taskQueue string, log *slog.Logger, metrics RelayMetrics) *Relay {
	return &Relay{store: store, client: c, taskQueue: taskQueue, log: log, metrics: metrics, interval: time.Second,
		nudge: make(chan struct{}, 1), done: make(chan struct{})}
}

// Nudge asks the relay to deliver now (after a command wrote messages).
func (r *Relay) Nudge() {
	select {
	case r.nudge <- struct{}{}:
	default:
	}
}

// Start runs the relay until Stop.
func (r *Relay) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer close(r.done)
		t := time.NewTicker(r.interval)
		defer t.Stop()
		for {
			r.recover(ctx)
			r.drain(ctx)
			select {
			case <-ctx.Done():
				return
			case <-r.nudge:
			case <-t.C:
			}
		}
	}()
}

// Stop ends the relay; undelivered messages wait for the next one.
func (r *Relay) Stop() {
	r.once.Do(func() {
		if r.cancel != nil {
			r.cancel()
			<-r.done
		}
	})
}

// recover releases the messages waiting out a backoff once Temporal answers again, so a
// committed state never lacks its workflow for much longer than the outage (one poll).
func (r *Relay) recover(ctx context.Context) {
	if !r.failing {
		return
	}
	hctx, cancel := context.WithTimeout(ctx, relayTimeout)
	defer cancel()
	if _, err := r.client.CheckHealth(hctx, &client.CheckHealthRequest{}); err != nil {
		return
	}
	r.failing = false
	if n, err := r.store.ReleaseWorkflowMessages(ctx); err != nil {
		r.log.Warn("releasing workflow messages", "err", err)
		r.failing = true
	} else if n > 0 {
		r.log.Info("Temporal is reachable again; delivering the messages that waited", "count", n)
	}
}

// drain delivers every message available now.
func (r *Relay) drain(ctx context.Context) {
	for ctx.Err() == nil {
		msgs, err := r.store.ClaimWorkflowMessages(ctx, relayBatch, relayLease)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("claiming workflow messages", "err", err)
			}
			return
		}
		var delivered []int64
		for _, m := range msgs {
			err := r.deliver(ctx, m)
			if r.metrics != nil {
				r.metrics.WorkflowMessage(string(m.Kind), m.WorkflowName, err)
			}
			if err == nil {
				delivered = append(delivered, m.ID)
				continue
			}
			if permanent(err) {
				r.log.Error("Temporal refused a workflow message for good; it is kept as a dead letter (outbox.dead_at) "+
					"until an operator fixes the cause and sets dead_at to NULL", "workflow_id", m.WorkflowID, "kind", m.Kind, "err", err)
				if err := r.store.DeadWorkflowMessage(context.WithoutCancel(ctx), m.ID, err.Error()); err != nil {
					r.log.Warn("keeping a dead workflow message", "id", m.ID, "err", err)
				}
				continue
			}
			r.failing = true
			backoff := min(time.Duration(1<<min(m.Attempts, 6))*time.Second, maxBackoff)
			r.log.Warn("delivering a workflow message failed; will retry", "workflow_id", m.WorkflowID, "kind", m.Kind,
				"attempt", m.Attempts, "retry_in", backoff, "err", err)
			if err := r.store.RetryWorkflowMessage(context.WithoutCancel(ctx), m.ID, backoff, err.Error()); err != nil {
				r.log.Warn("rescheduling a workflow message", "id", m.ID, "err", err)
			}
		}
		if err := r.store.DeliveredWorkflowMessages(context.WithoutCancel(ctx), delivered); err != nil {
			r.log.Warn("removing delivered workflow messages", "err", err)
		}
		if len(msgs) < relayBatch {
			return
		}
	}
}

// permanent reports whether Temporal refused a delivery for good: retrying the same
// message cannot succeed (an invalid argument, such as a search attribute the namespace
// lacks, or a message this build cannot deliver).
func permanent(err error) bool {
	var invalid *serviceerror.InvalidArgument
	return errors.As(err, &invalid) || errors.Is(err, errUnknownKind)
}

var errUnknownKind = errors.New("worker: unknown workflow message kind")

// deliver starts or signals the message's workflow; a workflow already started under the
// message's id counts as delivered.
func (r *Relay) deliver(ctx context.Context, m accountable.WorkflowMessage) error {
	ctx, cancel := context.WithTimeout(ctx, relayTimeout)
	defer cancel()
	input := json.RawMessage(m.Input)
	switch m.Kind {
	case accountable.StartWorkflow:
		p := workflows.StartPolicyOf(m.WorkflowName)
		_, err := r.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: m.WorkflowID, TaskQueue: r.taskQueue,
			WorkflowIDReusePolicy: p.IDReuse, WorkflowIDConflictPolicy: p.IDConflict,
			WorkflowExecutionErrorWhenAlreadyStarted: p.ErrorWhenStarted, WorkflowExecutionTimeout: p.ExecutionTimeout,
			TypedSearchAttributes: workflows.SearchAttributes(m.WorkspaceID),
		}, m.WorkflowName, input)
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			return nil
		}
		return err
	case accountable.SignalWorkflow:
		err := r.client.SignalWorkflow(ctx, m.WorkflowID, "", m.SignalName, input)
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			// The workflow has ended: nothing is waiting for the signal any more.
			r.log.Info("signal to an ended workflow dropped", "workflow_id", m.WorkflowID, "signal", m.SignalName)
			return nil
		}
		return err
	}
	return fmt.Errorf("%w %q", errUnknownKind, m.Kind)
}
