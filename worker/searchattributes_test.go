package worker_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/worker"
	"github.com/accountablework/accountable/workflows"
)

// On a namespace that lacks them (a Temporal server of compose or of your own), the
// service registers its search attributes; registering again changes nothing.
func TestEnsureSearchAttributesRegistersWhatIsMissing(t *testing.T) {
	addr := os.Getenv("TEMPORAL_ADDRESS")
	if addr == "" {
		t.Fatal("TEMPORAL_ADDRESS is not set: run the tests with `make test`, which starts Temporal")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := client.Dial(client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ns := "accountable-test-" + uuid.NewString()[:8]
	if _, err := c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.OperatorService().DeleteNamespace(context.Background(), &operatorservice.DeleteNamespaceRequest{Namespace: ns}) //nolint:errcheck // clean-up; the dev server is discarded anyway
	})
	list := func() map[string]bool {
		res, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for name := range res.GetCustomAttributes() {
			out[name] = true
		}
		return out
	}
	if list()[workflows.WorkspaceIDAttribute] {
		t.Fatalf("a new namespace already has %s", workflows.WorkspaceIDAttribute)
	}
	// A new namespace reaches every service of the server within a few seconds.
	deadline, _ := ctx.Deadline()
	var lastErr error
	t.Cleanup(func() {
		if t.Failed() && lastErr != nil {
			t.Logf("the last registration failed: %v", lastErr)
		}
	})
	storetest.WaitFor(t, time.Until(deadline), "the search attributes to be registered in the new namespace", func() bool {
		lastErr = worker.EnsureSearchAttributes(ctx, c, ns)
		return lastErr == nil
	})
	if !list()[workflows.WorkspaceIDAttribute] {
		t.Fatalf("%s is not registered in %s", workflows.WorkspaceIDAttribute, ns)
	}
	if err := worker.EnsureSearchAttributes(ctx, c, ns); err != nil {
		t.Fatalf("registering again: %v", err)
	}
}
