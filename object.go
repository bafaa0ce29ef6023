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
	canonical, err := CanonicalizeJSON(b)
	if err != nil {
		return fmt.Errorf("must be an I-JSON object (numbers within double precision, valid Unicode): %w", ErrNotCanonicalizable)
	}
	*o = canonical
	return nil
}
