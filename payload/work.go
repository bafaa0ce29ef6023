package payload

import "github.com/accountablework/accountable"

// The payload types of these events (Types).
func init() {
	describes[WorkCreated](accountable.EventWorkCreated)
	describes[WorkCompleted](accountable.EventWorkCompleted)
}

// WorkCreated is the payload of a work.created event.
type WorkCreated struct {
	Task      accountable.Task `json:"task"`
	CommandID *string          `json:"command_id"`
}

// WorkCompleted is the payload of a work.completed event.
type WorkCompleted struct {
	TaskID    string                 `json:"task_id"`
	Status    accountable.TaskStatus `json:"status"`
	Receipt   accountable.Receipt    `json:"receipt"`
	CommandID *string                `json:"command_id"`
}
