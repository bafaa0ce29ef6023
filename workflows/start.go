package workflows

import (
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
)

// StartPolicy is how a workflow is started, whoever starts it: the outbox relay after the
// command that asked for it committed, or a request that waits for its result. It is a
// property of the workflow, so every starter of one workflow starts it alike; the starter
// copies it into the SDK's client.StartWorkflowOptions (which this package cannot import:
// the client does I/O), with the workflow's id, the task queue and SearchAttributes.
type StartPolicy struct {
	IDReuse    enums.WorkflowIdReusePolicy
	IDConflict enums.WorkflowIdConflictPolicy
	// ErrorWhenStarted makes a start that finds the workflow running fail with
	// WorkflowExecutionAlreadyStarted; otherwise the SDK hands back the running execution
	// as if it had just started it.
	ErrorWhenStarted bool
	// ExecutionTimeout bounds the whole run (0: none).
	ExecutionTimeout time.Duration
}

// startOnce is the policy of a workflow whose id names one piece of committed state (a
// launch, a handoff, a verification, a webhook endpoint): started once, a redelivery of its
// outbox message is a no-op (the relay counts AlreadyStarted as delivered).
var startOnce = StartPolicy{
	IDReuse:          enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	IDConflict:       enums.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
	ErrorWhenStarted: true,
}

// startPolicies are the workflows whose start differs from startOnce, and why.
var startPolicies = map[string]StartPolicy{
	// One generation per workspace at a time under one id, again and again: a second start
	// while one runs is refused (429 generation_in_progress), a start after it ended runs.
	ProposalGenerationName: {
		IDReuse:          enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		IDConflict:       enums.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		ErrorWhenStarted: true,
		ExecutionTimeout: ProposalGenerationTTL,
	},
	// A bounded-sync request starts the run or joins the one its outbox message started, to
	// wait for it; the relay's start of a running one is delivered all the same.
	DiscoveryRunName: {
		IDReuse:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		IDConflict: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	},
}

// StartPolicyOf returns how the workflow registered as name is started.
func StartPolicyOf(name string) StartPolicy {
	if p, ok := startPolicies[name]; ok {
		return p
	}
	return startOnce
}

// SearchAttributes are the search attributes every workflow of workspaceID carries
// (WorkspaceIDAttribute), so an operator can filter by workspace in the Temporal UI.
func SearchAttributes(workspaceID string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(temporal.NewSearchAttributeKeyKeyword(WorkspaceIDAttribute).ValueSet(workspaceID))
}
