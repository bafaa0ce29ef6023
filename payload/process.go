package payload

import "github.com/accountablework/accountable"

// The payload types of these events (Types).
func init() {
	describes[ProcessCreated](accountable.EventProcessDeclared, accountable.EventProcessDiscovered)
	describes[ProcessRevised](accountable.EventProcessRevised)
	for _, a := range accountable.ProcessActions {
		describes[ProcessTransitioned](a.Event())
	}
}

// Payloads of operating processes.
type (
	// ProcessCreated is the payload of operating_process.declared and
	// operating_process.discovered: the process and its first revision as they began.
	ProcessCreated struct {
		Process          accountable.OperatingProcess    `json:"process"`
		Revision         accountable.ProcessSpecRevision `json:"revision"`
		DiscoveryRunID   *string                         `json:"discovery_run_id,omitzero"`
		ProcessCandidate *string                         `json:"process_candidate_id,omitzero"`
		CommandID        *string                         `json:"command_id"`
	}
	// ProcessRevised is the payload of operating_process.revised.
	ProcessRevised struct {
		ProcessID string                          `json:"process_id"`
		Revision  accountable.ProcessSpecRevision `json:"revision"`
		CommandID *string                         `json:"command_id"`
	}
	// ProcessTransitioned is the payload of a process's lifecycle transitions
	// (operating_process.proposed, .confirmed, ...: accountable.ProcessAction.Event).
	ProcessTransitioned struct {
		ProcessID string                    `json:"process_id"`
		Action    accountable.ProcessAction `json:"action"`
		From      accountable.ProcessState  `json:"from"`
		To        accountable.ProcessState  `json:"to"`
		Reason    *string                   `json:"reason"`
		CommandID *string                   `json:"command_id"`
	}
)
