package payload

import "github.com/accountablework/accountable"

// The payload types of these events (Types).
func init() {
	describes[DiscoveryRunRequested](accountable.EventDiscoveryRunRequested)
	describes[DiscoveryRunFinished](accountable.EventDiscoveryRunCompleted, accountable.EventDiscoveryRunFailed)
}

// DiscoveryRunRequested is the payload of discovery_run.requested.
type DiscoveryRunRequested struct {
	RunID        string                    `json:"run_id"`
	Mode         accountable.DiscoveryMode `json:"mode"`
	Query        *string                   `json:"query"`
	SourceKinds  []accountable.SourceKind  `json:"source_kinds"`
	Observations int                       `json:"observations"`
	WorkflowID   string                    `json:"workflow_id"`
	CommandID    *string                   `json:"command_id"`
}

// DiscoveryRunFinished is the payload of discovery_run.completed and discovery_run.failed.
type DiscoveryRunFinished struct {
	RunID      string                      `json:"run_id"`
	Status     accountable.DiscoveryStatus `json:"status"`
	Counts     accountable.DiscoveryCounts `json:"counts"`
	Candidates []string                    `json:"candidate_ids"`
	Error      *string                     `json:"error,omitzero"`
}
