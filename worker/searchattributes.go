package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/accountablework/accountable/workflows"
)

// searchAttributes are the custom search attributes the service's workflows carry, so
// operators can filter them in the Temporal UI (WorkspaceId = '...').
var searchAttributes = map[string]enums.IndexedValueType{
	workflows.WorkspaceIDAttribute: enums.INDEXED_VALUE_TYPE_KEYWORD,
}

// EnsureSearchAttributes registers the service's search attributes in namespace when
// they are missing (the dev server of `make run` registers them itself; a Temporal server
// of compose or of your own gets them here). Until they exist, starting a workflow that
// carries one fails and its outbox message waits.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	ops := c.OperatorService()
	have, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return err
	}
	missing := map[string]enums.IndexedValueType{}
	for name, typ := range searchAttributes {
		if got, ok := have.GetCustomAttributes()[name]; !ok {
			missing[name] = typ
		} else if got != typ {
			return errors.New("worker: search attribute " + name + " exists with type " + got.String() + ", want " + typ.String())
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing})
	var exists *serviceerror.AlreadyExists
	if errors.As(err, &exists) {
		return nil
	}
	return err
}

// KeepSearchAttributesRegistered calls EnsureSearchAttributes until it succeeds (Temporal
// may still be starting) or ctx ends, backing off up to a minute between attempts.
func KeepSearchAttributesRegistered(ctx context.Context, c client.Client, namespace string, log *slog.Logger) {
	wait := time.Second
	for {
		attempt, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := EnsureSearchAttributes(attempt, c, namespace)
		cancel()
		if err == nil {
			return
		}
		log.Warn("registering Temporal search attributes; retrying", "namespace", namespace, "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Minute)
	}
}
