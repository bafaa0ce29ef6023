package accountable

import (
	"regexp"
	"time"
)

var idempotencyKeyPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$`)

// ValidIdempotencyKey reports whether k is a well-formed Idempotency-Key (1-200 characters,
// the specification's pattern).
func ValidIdempotencyKey(k string) bool { return idempotencyKeyPattern.MatchString(k) }

// Idempotency identifies one command for safe replay: the workspace-scoped key the client
// sent, the operation it was sent to and the digest of the canonical request. The same key
// with the same digest replays the stored result; with another digest it is refused.
type Idempotency struct {
	Key           string
	Operation     string
	RequestDigest string
}

// IdempotencyRetention is how long a stored result answers replays.
const IdempotencyRetention = 24 * time.Hour
