package payload

import "github.com/accountablework/accountable"

// The payload types of these events (Types).
func init() {
	describes[ProposalGenerated](accountable.EventProposalGenerated)
	describes[InitiativeCreated](accountable.EventInitiativeCreated)
	describes[WorkstreamCreated](accountable.EventWorkstreamCreated)
	describes[MilestoneCreated](accountable.EventMilestoneCreated)
	describes[ProposalInstantiated](accountable.EventProposalInstantiated)
}

// ProposalGenerated is the payload of an initiative_proposal.generated event: the
// proposal's identity and digest (its content is addressed by the digest).
type ProposalGenerated struct {
	ProposalID       string                       `json:"proposal_id"`
	ProposalDigest   string                       `json:"proposal_digest"`
	Title            string                       `json:"title"`
	AssignmentSource accountable.AssignmentSource `json:"assignment_source"`
	Workstreams      int                          `json:"workstreams"`
	ExpiresAt        accountable.Time             `json:"expires_at"`
	CommandID        *string                      `json:"command_id"`
	// The plan's economics and what generating it cost travel in the event, so that the
	// value-case and meter-usage projections fold from the ledger alone.
	Economics         *accountable.Economics         `json:"economics,omitempty"`
	GenerationReceipt *accountable.GenerationReceipt `json:"generation_receipt,omitempty"`
}

// Payloads of committing an initiative: the initiative and each of its parts.
type (
	// InitiativeCreated is the payload of initiative.created.
	InitiativeCreated struct {
		InitiativeID   string  `json:"initiative_id"`
		Title          string  `json:"title"`
		Summary        string  `json:"summary"`
		ProposalID     *string `json:"proposal_id"`
		ProposalDigest *string `json:"proposal_digest"`
		ReceiptID      string  `json:"receipt_id"`
		CommandID      *string `json:"command_id"`
	}
	// WorkstreamCreated is the payload of workstream.created.
	WorkstreamCreated struct {
		WorkstreamID string                        `json:"workstream_id"`
		InitiativeID string                        `json:"initiative_id"`
		Position     int                           `json:"position"`
		Workstream   accountable.PlannedWorkstream `json:"workstream"`
	}
	// MilestoneCreated is the payload of milestone.created.
	MilestoneCreated struct {
		MilestoneID  string `json:"milestone_id"`
		InitiativeID string `json:"initiative_id"`
		WorkstreamID string `json:"workstream_id"`
		Position     int    `json:"position"`
		Title        string `json:"title"`
	}
	// ProposalInstantiated is the payload of initiative_proposal.instantiated.
	ProposalInstantiated struct {
		ProposalID   string `json:"proposal_id"`
		InitiativeID string `json:"initiative_id"`
	}
)

// AppendCanonicalJSON appends p's canonical JSON (canonical.Appender: committing a plan
// digests one), as the canonical encoder writes it by reflection.
func (p InitiativeCreated) AppendCanonicalJSON(buf []byte, _ int, _ accountable.CanonicalFreeForm) ([]byte, error) {
	buf = append(buf, `{"command_id":`...)
	buf = accountable.AppendCanonicalStringPtr(buf, p.CommandID)
	buf = append(buf, `,"initiative_id":`...)
	buf = accountable.AppendCanonicalString(buf, p.InitiativeID)
	buf = append(buf, `,"proposal_digest":`...)
	buf = accountable.AppendCanonicalStringPtr(buf, p.ProposalDigest)
	buf = append(buf, `,"proposal_id":`...)
	buf = accountable.AppendCanonicalStringPtr(buf, p.ProposalID)
	buf = append(buf, `,"receipt_id":`...)
	buf = accountable.AppendCanonicalString(buf, p.ReceiptID)
	buf = append(buf, `,"summary":`...)
	buf = accountable.AppendCanonicalString(buf, p.Summary)
	buf = append(buf, `,"title":`...)
	buf = accountable.AppendCanonicalString(buf, p.Title)
	return append(buf, '}'), nil
}

// AppendCanonicalJSON appends p's canonical JSON (canonical.Appender: committing a plan
// digests one for each of its milestones), as the canonical encoder writes it by
// reflection.
func (p MilestoneCreated) AppendCanonicalJSON(buf []byte, _ int, _ accountable.CanonicalFreeForm) ([]byte, error) {
	buf = append(buf, `{"initiative_id":`...)
	buf = accountable.AppendCanonicalString(buf, p.InitiativeID)
	buf = append(buf, `,"milestone_id":`...)
	buf = accountable.AppendCanonicalString(buf, p.MilestoneID)
	buf = append(buf, `,"position":`...)
	buf = accountable.AppendCanonicalInt(buf, int64(p.Position))
	buf = append(buf, `,"title":`...)
	buf = accountable.AppendCanonicalString(buf, p.Title)
	buf = append(buf, `,"workstream_id":`...)
	buf = accountable.AppendCanonicalString(buf, p.WorkstreamID)
	return append(buf, '}'), nil
}
