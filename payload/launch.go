package payload

import "github.com/accountablework/accountable"

// The payload types of these events (Types).
func init() {
	describes[LaunchCreated](accountable.EventLaunchCreated)
	describes[LaunchJobChanged](accountable.EventLaunchJobChanged)
	describes[LaunchEnded](accountable.EventLaunchEnded)
	describes[RunChanged](accountable.EventRunDispatched, accountable.EventRunFinalized)
	describes[RunActioned](accountable.EventRunActioned)
}

// Payloads of launches and their runs.
type (
	// LaunchCreated is the payload of launch.created.
	LaunchCreated struct {
		LaunchID     string                  `json:"launch_id"`
		InitiativeID string                  `json:"initiative_id"`
		Scope        accountable.LaunchScope `json:"scope"`
		Cost         accountable.LaunchCost  `json:"cost"`
		Jobs         []accountable.LaunchJob `json:"jobs"`
		CommandID    *string                 `json:"command_id"`
	}
	// LaunchJobChanged is the payload of launch.job_changed.
	LaunchJobChanged struct {
		JobID            string                        `json:"job_id"`
		Status           accountable.JobStatus         `json:"status"`
		BlockCode        *accountable.BlockCode        `json:"block_code"`
		DecisionID       *string                       `json:"decision_id"`
		RunID            *string                       `json:"run_id"`
		ReservationID    *string                       `json:"reservation_id"`
		SettlementStatus *accountable.SettlementStatus `json:"settlement_status"`
		ReservedCents    int64                         `json:"reserved_cents"`
		SettledCents     int64                         `json:"settled_cents"`
	}
	// LaunchEnded is the payload of launch.ended.
	LaunchEnded struct {
		LaunchID string                  `json:"launch_id"`
		State    accountable.LaunchState `json:"state"`
	}
	// RunChanged is the payload of run.dispatched and run.finalized.
	RunChanged struct {
		RunID       string                   `json:"run_id"`
		LaunchID    string                   `json:"launch_id"`
		JobID       string                   `json:"job_id"`
		Status      accountable.RunStatus    `json:"status"`
		OutcomeKind *accountable.OutcomeKind `json:"outcome_kind"`
		CostCents   int64                    `json:"cost_cents"`
		CommandID   *string                  `json:"command_id"`
	}
	// RunActioned is the payload of run.actioned.
	RunActioned struct {
		RunID     string                `json:"run_id"`
		Action    accountable.RunAction `json:"action"`
		Status    accountable.RunStatus `json:"status"`
		Reason    *string               `json:"reason"`
		CommandID *string               `json:"command_id"`
	}
)
