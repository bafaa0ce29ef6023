package api

import (
	"errors"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// Free-form JSON in a request (an accountable.Object: task metadata, evidence, ...; a
// process stage's other members) is kept in its canonical form (RFC 8785), so that the
// ledger can hash what it stores and an answer echoes it alike: sorted members, ECMAScript
// numbers. The root checks that it is an object and keeps it as given; request decoding
// canonicalises it, nested at most accountable.MaxFreeFormDepth deep, and refuses what
// has no canonical form. The functions take the value's text, as the types' UnmarshalJSON
// methods do, so a refusal has the same JSON Pointer and the same answer (invalid_json for
// text that is not I-JSON, validation_failed for the rest: see decodeError).
var freeFormUnmarshalers = jsonv2.JoinUnmarshalers(
	jsonv2.UnmarshalFunc(unmarshalObject),
	jsonv2.UnmarshalFunc(unmarshalStage),
)

// unmarshalObject decodes an Object and canonicalises it.
func unmarshalObject(b []byte, o *accountable.Object) error {
	if err := o.UnmarshalJSON(b); err != nil || *o == nil {
		return err
	}
	c, err := canonicalFreeForm(*o)
	if err != nil {
		return err
	}
	*o = c
	return nil
}

// unmarshalStage decodes a process stage and canonicalises its other members.
func unmarshalStage(b []byte, s *accountable.ProcessStage) error {
	if err := s.UnmarshalJSON(b); err != nil {
		return err
	}
	others := s.Others()
	for name, v := range others {
		c, err := canonicalFreeForm(v)
		if err != nil {
			return accountable.OtherMemberError(name, err)
		}
		others[name] = c
	}
	return nil
}

// canonicalFreeForm returns the canonical form of free-form JSON a client gave:
// accountable.ErrFreeFormTooDeep when it nests deeper than MaxFreeFormDepth, and an error
// wrapping canonical.ErrNotCanonicalizable (accountable.ErrFreeFormNotIJSON) when it has
// no canonical form (a number beyond double range, invalid Unicode).
func canonicalFreeForm(raw []byte) ([]byte, error) {
	c, err := canonical.TransformWithin(raw, accountable.MaxFreeFormDepth)
	switch {
	case errors.Is(err, canonical.ErrNestedTooDeep):
		return nil, accountable.ErrFreeFormTooDeep
	case err != nil:
		return nil, fmt.Errorf("%w: %w", accountable.ErrFreeFormNotIJSON, canonical.ErrNotCanonicalizable)
	}
	return c, nil
}
