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

// AppendCanonicalJSON appends p's canonical JSON (canonical.Appender: every step of a
// launch's job digests it), as the canonical encoder writes it by reflection.
func (p LaunchJobChanged) AppendCanonicalJSON(buf []byte, _ int, _ accountable.CanonicalFreeForm) ([]byte, error) {
	buf = append(buf, `{"block_code":`...)
	buf = accountable.AppendCanonicalStringPtr(buf, (*string)(p.BlockCode))
	buf = append(buf, `,"decision_id":`...)
	buf = accountable.AppendCanonicalStringPtr(buf, p.DecisionID)
	buf = append(buf, `,"job_id":`...)
	buf = accountable.AppendCanonicalString(buf, p.JobID)
	buf = append(buf, `,"reservation_id":`...)
	buf = accountable.AppendCanonicalStringPtr(buf, p.ReservationID)
	buf = append(buf, `,"reserved_cents":`...)
	buf = accountable.AppendCanonicalInt(buf, p.ReservedCents)
	buf = append(buf, `,"run_id":`...)
	buf = accountable.AppendCanonicalStringPtr(buf, p.RunID)
	buf = append(buf, `,"settled_cents":`...)
	buf = accountable.AppendCanonicalInt(buf, p.SettledCents)
	buf = append(buf, `,"settlement_status":`...)
	buf = accountable.AppendCanonicalStringPtr(buf, (*string)(p.SettlementStatus))
	buf = append(buf, `,"status":`...)
	buf = accountable.AppendCanonicalString(buf, string(p.Status))
	return append(buf, '}'), nil
}

// AppendCanonicalJSON appends p's canonical JSON (canonical.Appender: every dispatch and
// settlement of a run digests it), as the canonical encoder writes it by reflection.
func (p RunChanged) AppendCanonicalJSON(buf []byte, _ int, _ accountable.CanonicalFreeForm) ([]byte, error) {
	buf = append(buf, `{"command_id":`...)
	buf = accountable.AppendCanonicalStringPtr(buf, p.CommandID)
	buf = append(buf, `,"cost_cents":`...)
	buf = accountable.AppendCanonicalInt(buf, p.CostCents)
	buf = append(buf, `,"job_id":`...)
	buf = accountable.AppendCanonicalString(buf, p.JobID)
	buf = append(buf, `,"launch_id":`...)
	buf = accountable.AppendCanonicalString(buf, p.LaunchID)
	buf = append(buf, `,"outcome_kind":`...)
	buf = accountable.AppendCanonicalStringPtr(buf, (*string)(p.OutcomeKind))
	buf = append(buf, `,"run_id":`...)
	buf = accountable.AppendCanonicalString(buf, p.RunID)
	buf = append(buf, `,"status":`...)
	buf = accountable.AppendCanonicalString(buf, string(p.Status))
	return append(buf, '}'), nil
}
