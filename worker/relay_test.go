package worker_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/worker"
	"github.com/accountablework/accountable/workflows"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// starter is a Temporal client that refuses some workflow ids for good, fails others for
// now, and starts the rest; it counts the attempts per id.
type starter struct {
	mu       sync.Mutex
	refuse   map[string]error
	attempts map[string]int
}

func (s *starter) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts[o.ID]++
	return nil, s.refuse[o.ID]
}

func (s *starter) SignalWorkflow(context.Context, string, string, string, any) error { return nil }

func (s *starter) CheckHealth(context.Context, *client.CheckHealthRequest) (*client.CheckHealthResponse, error) {
	return &client.CheckHealthResponse{}, nil
}

func (s *starter) count(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts[id]
}

// A message Temporal refuses for good (an invalid argument) becomes a dead letter and is
// not retried; one it cannot take now stays pending for a retry; the others are delivered.
func TestRelayKeepsPermanentRefusalsAsDeadLetters(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	db.UseWorkflowMessages(workflows.Messages{})
	p := storetest.NewTenant(t, db).Principal
	send := func() string {
		job, _, err := db.StartLedgerVerification(ctx, p, nil, uuid.NewString())
		if err != nil {
			t.Fatal(err)
		}
		return job.WorkflowID
	}
	refused, unavailable := send(), send()
	s := &starter{attempts: map[string]int{}, refuse: map[string]error{
		refused:     serviceerror.NewInvalidArgument("search attribute WorkspaceId is not defined"),
		unavailable: serviceerror.NewUnavailable("try later"),
	}}
	relay := worker.NewRelay(db, s, "relay-test", slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	relay.Start()
	defer relay.Stop()
	storetest.WaitFor(t, 20*time.Second, "the refused message to be a dead letter", func() bool {
		n, err := db.DeadWorkflowMessages(ctx)
		return err == nil && n == 1
	})
	// A later message is delivered by a later pass; the dead letter is not tried again.
	later := send()
	relay.Nudge()
	storetest.WaitFor(t, 20*time.Second, "the later message to be delivered", func() bool { return s.count(later) == 1 })
	if n := s.count(refused); n != 1 {
		t.Fatalf("the dead letter was tried %d times", n)
	}
	if s.count(unavailable) < 1 {
		t.Fatal("the message Temporal could not take now was never tried")
	}
	// The delivered message is removed after its pass; the unavailable one stays.
	storetest.WaitFor(t, 20*time.Second, "only the unavailable message to be pending", func() bool {
		n, err := db.PendingWorkflowMessages(ctx)
		return err == nil && n == 1
	})
}

// Relays recovering from an outage release the messages waiting out a backoff, never one
// another relay holds: the lease of a message being delivered is not a backoff (both relays
// delivered such a message after a Temporal outage, found by TestTemporalStoppedAndStarted).
func TestReleaseLeavesLeasedMessagesToTheirRelay(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	db.UseWorkflowMessages(workflows.Messages{})
	p := storetest.NewTenant(t, db).Principal
	job, _, err := db.StartLedgerVerification(ctx, p, nil, uuid.NewString())
	if err != nil {
		t.Fatal(err)
	}
	claim := func() (int64, bool) {
		msgs, err := db.ClaimWorkflowMessages(ctx, 1000, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if m.WorkflowID == job.WorkflowID {
				return m.ID, true
			}
		}
		return 0, false
	}
	release := func() {
		if _, err := db.ReleaseWorkflowMessages(ctx); err != nil {
			t.Fatal(err)
		}
	}
	first, ok := claim() // relay A
	if !ok {
		t.Fatal("the message was not claimed")
	}
	if err := db.RetryWorkflowMessage(ctx, first, time.Minute, "unavailable"); err != nil { // A's delivery failed
		t.Fatal(err)
	}
	release()                  // Temporal is back: the backoff is cut short
	if _, ok := claim(); !ok { // A takes it again
		t.Fatal("a message waiting out its backoff was not released")
	}
	release() // B recovers too
	if _, ok := claim(); ok {
		t.Fatal("relay B claimed the message relay A holds")
	}
}
