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

import "reflect"

// Types maps each ledger event type to the type of its payload, as the file of each area's
// payloads registers them (describes, in its init). receipt.imported is not here: its
// payload, receipt.ReceiptImported, is made of the receipt format's own types and lives
// with them in package receipt (TestEveryEventTypeHasAPayload lists it with why).
var Types = map[string]reflect.Type{}

// describes registers P as the payload type of eventTypes. An event type given two is a
// mistake (one would be lost): it panics at start-up.
func describes[P any](eventTypes ...string) {
	for _, ev := range eventTypes {
		if _, twice := Types[ev]; twice {
			panic("payload: two payload types for " + ev)
		}
		Types[ev] = reflect.TypeFor[P]()
	}
}
