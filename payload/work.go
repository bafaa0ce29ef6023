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

// AppendCanonicalJSON appends p's canonical JSON (canonical.Appender: every POST /work
// digests it), as the canonical encoder writes it by reflection.
func (p WorkCreated) AppendCanonicalJSON(buf []byte, depth int, freeForm accountable.CanonicalFreeForm) ([]byte, error) {
	buf = append(buf, `{"command_id":`...)
	buf = accountable.AppendCanonicalStringPtr(buf, p.CommandID)
	buf = append(buf, `,"task":`...)
	buf, err := p.Task.AppendCanonicalJSON(buf, depth+1, freeForm)
	if err != nil {
		return buf, err
	}
	return append(buf, '}'), nil
}

// AppendCanonicalJSON appends p's canonical JSON (canonical.Appender: every completion
// digests it), as the canonical encoder writes it by reflection.
func (p WorkCompleted) AppendCanonicalJSON(buf []byte, depth int, freeForm accountable.CanonicalFreeForm) ([]byte, error) {
	buf = append(buf, `{"command_id":`...)
	buf = accountable.AppendCanonicalStringPtr(buf, p.CommandID)
	buf = append(buf, `,"receipt":`...)
	buf, err := p.Receipt.AppendCanonicalJSON(buf, depth+1, freeForm)
	if err != nil {
		return buf, err
	}
	buf = append(buf, `,"status":`...)
	buf = accountable.AppendCanonicalString(buf, string(p.Status))
	buf = append(buf, `,"task_id":`...)
	buf = accountable.AppendCanonicalString(buf, p.TaskID)
	return append(buf, '}'), nil
}
