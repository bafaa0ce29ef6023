package payload

import "github.com/accountablework/accountable"

// The payload types of these events (Types).
func init() {
	describes[StatusChanged](accountable.EventTaskStatusChanged, accountable.EventInitiativeStatusChanged)
}

// StatusChanged is the payload of work.status_changed and initiative.status_changed.
type StatusChanged struct {
	ID        string                      `json:"id"`
	From      string                      `json:"from"`
	To        string                      `json:"to"`
	Action    accountable.LifecycleAction `json:"action"`
	Reason    *string                     `json:"reason"`
	CommandID *string                     `json:"command_id"`
}
