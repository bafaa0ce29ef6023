package api

import (
	"context"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/contextpack"
	"github.com/accountablework/accountable/sizedlru"
)

// ContextStore is what the Context packs area needs.
type ContextStore interface {
	ReadContextSources(ctx context.Context, workspaceID string, req accountable.ContextScopeRequest) (accountable.ContextSources, error)
}

// contextStore is the store of the Context packs area.
var contextStore = needsStore[ContextStore]()

func init() { servesOperations(145, (*Server).contextOperations) }

// contextArea is the area of POST /context-pack: a read of the Work family's scope (its
// anchor is a task, a workstream or an initiative).
const contextArea = "Context packs"

func (s *Server) contextOperations() []operation {
	return []operation{
		op(Operation{ID: "prepareContext", Method: fiber.MethodPost, Path: "/context-pack", Area: contextArea,
			BodyWorkspaceRequired: true, ReadOnly: true,
			Summary: "Prepare an agent's context: one capsule of its scope (the task, workstream or initiative named, narrowest first; " +
				"the workspace when none is) with the scope's pending decisions (active_constraints), decided ones, the workspace's " +
				"open handoffs (open_risks), runs, newest ledger events (with their hashes), artifacts (with their versions) and " +
				"receipts, each section ranked and trimmed to max_payload_tokens counted with reader_tokenizer. data is " +
				"{context_capsule, context_delivery, context_transfer}: with delivery_mode, context_transfer carries the capsule " +
				"text whole (mode full, serialized) or as line operations against the text acknowledged_context_version names " +
				"(mode delta: {copy: [start, count]} of its lines, or {insert: text}); version is sha256 of the text. A delta " +
				"leaves out context_capsule. A base this credential was not served for this scope in the last 30 minutes is " +
				"answered in full with rebootstrap_required. Reads only: no Idempotency-Key.",
			Description: "The text is the RFC 8785 canonical JSON of {context_capsule, context_delivery}, indented one member per " +
				"line; context_delivery.accounting counts its bytes and tokens. A capsule is never authority for a consequential " +
				"action (reusable_for_consequential_action false): recheck what you act on. response_profile prepared answers the " +
				"capsule alone, within 64 KiB (meets_prepared_byte_bound)."},
			s.prepareContext),
	}
}

// prepareContext: POST /context-pack.
func (s *Server) prepareContext(c *call, in *accountable.PrepareContext) (accountable.ContextPreparation, error) {
	src, err := contextStore.of(s).ReadContextSources(c.ctx, c.principal.WorkspaceID,
		accountable.ContextScopeRequest{InitiativeID: in.InitiativeID, WorkstreamID: in.WorkstreamID, TaskID: in.TaskID})
	if err != nil {
		return accountable.ContextPreparation{}, err
	}
	tokens, err := contextpack.Tokenizer(in.Tokenizer())
	if err != nil {
		return accountable.ContextPreparation{}, err
	}
	o := contextpack.Options{Tokens: tokens, Budget: in.Budget(), Mode: accountable.ContextDeliveryFull,
		AcknowledgedCapsuleID: in.AcknowledgedCapsuleID}
	transfer := in.DeliveryMode != nil && !in.Prepared()
	if in.Prepared() {
		o.ByteBound = accountable.ContextPreparedMaxBytes
		if in.DeliveryMode != nil {
			o.Reasons = append(o.Reasons, "response_profile prepared answers the capsule alone: no context_transfer")
		}
	}
	scopeKey := contextScopeKey(c.principal, src.Scope)
	var base string
	if transfer && *in.DeliveryMode == accountable.ContextDeliveryDelta {
		if in.AcknowledgedContextVersion == nil {
			o.Reasons = append(o.Reasons, "no acknowledged_context_version: the full text is the base of the next delta")
		} else if held, ok := s.contextBases.get(scopeKey, *in.AcknowledgedContextVersion); ok {
			base, o.Mode, o.BaseVerified = held, accountable.ContextDeliveryDelta, true
		} else {
			o.Rebootstrap = true
			o.Reasons = append(o.Reasons, "acknowledged_context_version is not a text this credential was served for this scope "+
				"in the last 30 minutes (never served, expired or evicted): answered in full")
		}
	}
	pack, err := contextpack.Build(src, o)
	if err != nil {
		return accountable.ContextPreparation{}, err
	}
	if o.Mode == accountable.ContextDeliveryDelta {
		ops := contextpack.Delta(base, pack.Text)
		rebuilt, err := contextpack.Apply(base, ops)
		if err == nil && rebuilt == pack.Text && len(ops) <= accountable.ContextTransferMaxOperations &&
			contextpack.DeltaBytes(ops) < len(pack.Text) {
			s.contextBases.add(scopeKey, pack.Version, pack.Text)
			return accountable.ContextPreparation{ContextDelivery: pack.Delivery, ContextTransfer: &accountable.ContextTransfer{
				SchemaVersion: accountable.ContextTransferSchema, Mode: string(accountable.ContextDeliveryDelta),
				Version: pack.Version, BaseVersion: in.AcknowledgedContextVersion, Operations: ops}}, nil
		}
		// A delta no smaller than the text (or one that would not rebuild it) is sent whole.
		o.Mode = accountable.ContextDeliveryFull
		o.Reasons = append(o.Reasons, "a delta would not be smaller than the text: answered in full")
		if pack, err = contextpack.Build(src, o); err != nil {
			return accountable.ContextPreparation{}, err
		}
	}
	out := accountable.ContextPreparation{ContextCapsule: &pack.Capsule, ContextDelivery: pack.Delivery}
	if transfer {
		if len(pack.Text) > accountable.ContextTransferMaxBytes {
			return accountable.ContextPreparation{}, fmt.Errorf("api: a capsule of %d bytes is over the transfer bound", len(pack.Text))
		}
		s.contextBases.add(scopeKey, pack.Version, pack.Text)
		text := pack.Text
		out.ContextTransfer = &accountable.ContextTransfer{SchemaVersion: accountable.ContextTransferSchema,
			Mode: string(accountable.ContextDeliveryFull), Version: pack.Version, Serialized: &text}
	}
	return out, nil
}

// contextScopeKey names the (credential, scope) whose texts are kept as bases: a text is
// a base only for the credential it was served to, in the scope it was read for.
func contextScopeKey(p accountable.Principal, s accountable.ContextScope) string {
	credential := p.KeyID
	if credential == "" {
		credential = "user:" + p.UserID
	}
	id := ""
	switch {
	case s.Task != nil:
		id = s.Task.Ref.ID
	case s.Workstream != nil:
		id = s.Workstream.Ref.ID
	case s.Initiative != nil:
		id = s.Initiative.Ref.ID
	}
	return credential + "|" + p.WorkspaceID + "|" + string(s.Kind) + ":" + id
}

// The capsule texts served are kept, so that a client's next request can name one as its
// delta's base by version alone (it uploads nothing): for contextBaseTTL, within
// contextBasesBytes in all (the least recently used go first). A text is in one process's
// memory: behind a balancer without affinity, a delta asked of another process is answered
// in full (rebootstrap_required), never against a guess.
const (
	contextBaseTTL    = 30 * time.Minute
	contextBasesBytes = 64 << 20
)

// contextBases keeps the texts served, by (credential, scope) and version.
type contextBases struct {
	texts *sizedlru.Cache[string, string]
}

func newContextBases() *contextBases {
	return &contextBases{sizedlru.New[string, string](contextBasesBytes, contextBaseTTL, func(t string) int { return len(t) }, time.Now)}
}

func (b *contextBases) get(scopeKey, version string) (string, bool) {
	return b.texts.Get(scopeKey + "|" + version)
}

func (b *contextBases) add(scopeKey, version, text string) { b.texts.Add(scopeKey+"|"+version, text) }
