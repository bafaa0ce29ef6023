// Package payload is the one home of the ledger's event payloads: for each event type, the
// Go type whose JSON is the event's payload, the shape clients read from GET /events/stream
// (its pages, its live leases and webhook deliveries) and the bytes verification digests
// (payloadDigest is the SHA-256 of their canonical JSON). A field's JSON name is therefore a
// promise to clients: change it and new events differ from the ones recorded before, which
// keep their shape, so a changed shape says so in its type's comment (ArtifactCreated).
//
// Store appends the events (tx.Append) and makes their payloads from these types; readers
// of the ledger (discovery's mining) decode them into the same types. Types maps every event
// type of the root package to its payload type; a test fails when an event type has none.
// An event whose payload is a resource as it was recorded (handoff.proposed, decision.proposed,
// episode.recorded) names it with an alias: the resource's type stays the one place of its
// shape, and a change to it is a change to the event.
//
// It imports the root package (for the domain types payloads carry) and the standard library
// only, so that nothing else can change a payload's bytes.
package payload

import (
	"reflect"

	"github.com/accountablework/accountable"
)

// Types maps each ledger event type to the type of its payload. receipt.imported is not
// here: its payload, receipt.ReceiptImported, is made of the receipt format's own types and
// lives with them in package receipt (TestEveryEventTypeHasAPayload lists it with why).
var Types = func() map[string]reflect.Type {
	t := map[string]reflect.Type{
		accountable.EventArtifactCreated: reflect.TypeFor[ArtifactCreated](),

		accountable.EventControllerReconcile: reflect.TypeFor[ControllerReconciled](),

		accountable.EventDecisionProposed: reflect.TypeFor[DecisionProposed](),
		accountable.EventDecisionApproved: reflect.TypeFor[DecisionDecided](),
		accountable.EventDecisionDeclined: reflect.TypeFor[DecisionDecided](),

		accountable.EventDedupClaimed: reflect.TypeFor[DedupClaimed](),

		accountable.EventDiscoveryRunRequested: reflect.TypeFor[DiscoveryRunRequested](),
		accountable.EventDiscoveryRunCompleted: reflect.TypeFor[DiscoveryRunFinished](),
		accountable.EventDiscoveryRunFailed:    reflect.TypeFor[DiscoveryRunFinished](),

		accountable.EventEpisodeRecorded: reflect.TypeFor[EpisodeRecorded](),

		accountable.EventHandoffProposed:    reflect.TypeFor[HandoffProposed](),
		accountable.EventHandoffSLABreached: reflect.TypeFor[HandoffSLABreached](),

		accountable.EventProposalGenerated:    reflect.TypeFor[ProposalGenerated](),
		accountable.EventInitiativeCreated:    reflect.TypeFor[InitiativeCreated](),
		accountable.EventWorkstreamCreated:    reflect.TypeFor[WorkstreamCreated](),
		accountable.EventMilestoneCreated:     reflect.TypeFor[MilestoneCreated](),
		accountable.EventProposalInstantiated: reflect.TypeFor[ProposalInstantiated](),

		accountable.EventWorkspaceCreated:      reflect.TypeFor[WorkspaceCreated](),
		accountable.EventUserCreated:           reflect.TypeFor[UserCreated](),
		accountable.EventMemberAdded:           reflect.TypeFor[MemberAdded](),
		accountable.EventMemberRemoved:         reflect.TypeFor[MemberRemoved](),
		accountable.EventAPIKeyCreated:         reflect.TypeFor[APIKeyCreated](),
		accountable.EventAPIKeyRevoked:         reflect.TypeFor[APIKeyRevoked](),
		accountable.EventOAuthClientAuthorized: reflect.TypeFor[OAuthClientAuthorized](),

		accountable.EventLaunchCreated:    reflect.TypeFor[LaunchCreated](),
		accountable.EventLaunchJobChanged: reflect.TypeFor[LaunchJobChanged](),
		accountable.EventLaunchEnded:      reflect.TypeFor[LaunchEnded](),
		accountable.EventRunDispatched:    reflect.TypeFor[RunChanged](),
		accountable.EventRunFinalized:     reflect.TypeFor[RunChanged](),
		accountable.EventRunActioned:      reflect.TypeFor[RunActioned](),

		accountable.EventLedgerVerificationRequested: reflect.TypeFor[LedgerVerificationRequested](),
		accountable.EventLedgerVerificationCompleted: reflect.TypeFor[LedgerVerificationCompleted](),
		accountable.EventLedgerVerificationFailed:    reflect.TypeFor[LedgerVerificationFailed](),

		accountable.EventTaskStatusChanged:       reflect.TypeFor[StatusChanged](),
		accountable.EventInitiativeStatusChanged: reflect.TypeFor[StatusChanged](),

		accountable.EventProcessDeclared:   reflect.TypeFor[ProcessCreated](),
		accountable.EventProcessDiscovered: reflect.TypeFor[ProcessCreated](),
		accountable.EventProcessRevised:    reflect.TypeFor[ProcessRevised](),

		accountable.EventWebhookCreated: reflect.TypeFor[WebhookCreated](),
		accountable.EventWebhookDeleted: reflect.TypeFor[WebhookDeleted](),

		accountable.EventWorkCreated:   reflect.TypeFor[WorkCreated](),
		accountable.EventWorkCompleted: reflect.TypeFor[WorkCompleted](),
	}
	// The transitions' event types are made from their actions.
	for _, a := range accountable.HandoffActions {
		t[a.Event()] = reflect.TypeFor[HandoffChanged]()
	}
	for _, a := range accountable.ProcessActions {
		t[a.Event()] = reflect.TypeFor[ProcessTransitioned]()
	}
	return t
}()
