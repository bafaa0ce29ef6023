package accountable

import (
	"bytes"
	"errors"
	"fmt"
)

// Object is a JSON object carried verbatim (task metadata, completion evidence). Nil is an
// absent object; it renders as {}. A request's null means the same as leaving it out.
type Object []byte

// MarshalJSON renders o, or {} when it is absent.
func (o Object) MarshalJSON() ([]byte, error) {
	if len(o) == 0 {
		return []byte("{}"), nil
	}
	return o, nil
}

// UnmarshalJSON accepts a JSON object or null (absent). The object is kept in its
// canonical form (RFC 8785): the ledger must be able to hash what it stores, so an object
// without one (a number beyond double range, say) is refused here.
func (o *Object) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*o = nil
		return nil
	}
	if len(b) == 0 || b[0] != '{' {
		return errors.New("must be a JSON object")
	}
	canonical, err := canonicalFreeForm(b)
	if err != nil {
		return err
	}
	*o = canonical
	return nil
}

// MaxFreeFormDepth bounds the nesting of the free-form JSON clients give (an Object, a
// process stage's other members), the outermost object at depth 1. The ledger carries
// such JSON inside event payloads, whose canonical form is bounded at maxCanonDepth; the
// margin keeps every payload that embeds one within it.
const MaxFreeFormDepth = 64

// ErrFreeFormTooDeep is the refusal of free-form JSON nested deeper than MaxFreeFormDepth.
var ErrFreeFormTooDeep = fmt.Errorf("must not nest objects and arrays more than %d deep", MaxFreeFormDepth)

// canonicalFreeForm returns the canonical form (RFC 8785) of free-form JSON a client
// gave: ErrFreeFormTooDeep when it nests deeper than MaxFreeFormDepth, and an error
// wrapping ErrNotCanonicalizable when it has no canonical form (a number beyond double
// range, invalid Unicode).
func canonicalFreeForm(raw []byte) ([]byte, error) {
	canonical, err := canonicalizeWithin(raw, MaxFreeFormDepth)
	switch {
	case errors.Is(err, ErrNestedTooDeep):
		return nil, ErrFreeFormTooDeep
	case err != nil:
		return nil, fmt.Errorf("must be I-JSON (numbers within double precision, valid Unicode): %w", ErrNotCanonicalizable)
	}
	return canonical, nil
}
