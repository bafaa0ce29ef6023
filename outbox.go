package accountable

// The consistency rule between PostgreSQL and Temporal is the transactional outbox: a
// command whose committed state needs a workflow (an SLA timer, a launch dispatch, a
// verification) writes a WorkflowMessage in its own transaction; a relay delivers it after
// the commit, under a workflow id taken from the message, so a redelivery is a no-op. A
// committed state therefore never lacks its workflow for longer than Temporal is
// unreachable, and no workflow acts on a state that was not committed.

// WorkflowMessageKind says what delivering a WorkflowMessage does.
type WorkflowMessageKind string

// Kinds of workflow messages.
const (
	StartWorkflow  WorkflowMessageKind = "start"  // start the workflow unless it already exists
	SignalWorkflow WorkflowMessageKind = "signal" // signal the running workflow
)

// WorkflowMessage asks for a workflow to be started or signalled once the command that
// wrote it has committed.
type WorkflowMessage struct {
	ID           int64
	WorkspaceID  string
	Kind         WorkflowMessageKind
	WorkflowName string
	WorkflowID   string
	SignalName   string
	// Input is the workflow's input (start) or the signal's argument (signal), as JSON.
	Input    []byte
	Attempts int
}

// WorkflowRun names a workflow run a request waits for (a workflow-backed operation that
// answers with its workflow's result).
type WorkflowRun struct {
	WorkflowID string
	RunID      string // empty while the run is being started
}
