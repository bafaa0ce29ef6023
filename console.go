package accountable

import "time"

// The workspace console's views (api/console.go, store/console.go): what its pages list,
// read by the store in one statement each and scoped by the session's workspace.

// ConsoleReceipt is a work completion receipt as the console lists it.
type ConsoleReceipt struct {
	ID        string
	TaskID    string
	TaskTitle string
	Status    string
	Summary   string
	CostCents *int64
	EventID   string
	CreatedAt time.Time
}

// ConsoleHandoff is an open handoff with its SLA breach and escalation decision, if any.
type ConsoleHandoff struct {
	Handoff          Handoff
	BreachedAt       *time.Time
	DecisionID       *string
	DecisionStatus   *string
	DecisionTitle    *string
	DecisionSelected *string
}

// ConsoleEvent is a ledger event as the console lists it.
type ConsoleEvent struct {
	ID, EventType, AggregateType, AggregateID, ActorType, ActorID, EventHash string
	OccurredAt                                                               time.Time
}

// ConsoleLaunch is a launch as the console lists it.
type ConsoleLaunch struct {
	ID, InitiativeID, InitiativeTitle, State  string
	CeilingCents, ReservedCents, SettledCents int64
	Jobs                                      int64
	CreatedAt                                 time.Time
}

// ConsoleJob is a launch's job with its reservation, run and settlement.
type ConsoleJob struct {
	ID, WorkstreamID, WorkstreamName, Status string
	BlockCode                                *string
	EstimateCents                            int64
	ReservationID, SettlementStatus          *string
	ReservedCents, SettledCents              *int64
	RunID, RunStatus                         *string
	RunCostCents                             *int64
	DecisionID, DecisionStatus               *string
}

// ConsoleMap is the operating map as the console lists it: the counts of the whole map and
// a bounded, ranked part of it (the picture and GET /operating-map hold all of it).
type ConsoleMap struct {
	Processes   int // the workspace's processes
	Unconfirmed int // of them, discovered or proposed and not yet confirmed
	Edges       int // the handoff edges
	EdgesAtRisk int // of them, edges with a handoff that breached its SLA

	// TopProcesses are the processes with the most episodes (then the oldest first).
	TopProcesses []MapProcess
	// TopEdges are the edges most at risk: the most breached first, then the most open,
	// then the busiest.
	TopEdges []HandoffEdge
}
