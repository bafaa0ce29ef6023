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

// UnmarshalJSON accepts a JSON object or null (absent), and keeps the object's text as
// given. Free-form JSON from clients is kept in its canonical form (RFC 8785), so that
// the ledger can hash what it stores and answers echo it alike: the API's request
// decoding puts it in that form, nested at most MaxFreeFormDepth deep, and refuses an
// object without one (a number beyond double range, say); the store does the same for
// what it reads back.
func (o *Object) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*o = nil
		return nil
	}
	if len(b) == 0 || b[0] != '{' {
		return errors.New("must be a JSON object")
	}
	*o = append(Object(nil), b...)
	return nil
}

// MaxFreeFormDepth bounds the nesting of the free-form JSON clients give (an Object, a
// process stage's other members), the outermost object at depth 1. The ledger carries
// such JSON inside event payloads, whose canonical form is bounded at maxCanonDepth; the
// margin keeps every payload that embeds one within it.
const MaxFreeFormDepth = 64

// ErrFreeFormTooDeep is the refusal of free-form JSON nested deeper than MaxFreeFormDepth.
var ErrFreeFormTooDeep = fmt.Errorf("must not nest objects and arrays more than %d deep", MaxFreeFormDepth)

// ErrFreeFormNotIJSON is the refusal of free-form JSON that has no canonical form (a
// number beyond double range, invalid Unicode). The API wraps it with the canonical
// package's ErrNotCanonicalizable, which makes the answer invalid_json.
var ErrFreeFormNotIJSON = errors.New("must be I-JSON (numbers within double precision, valid Unicode)")
