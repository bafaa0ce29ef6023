package accountable

import "time"

// IdempotencyKeyPattern is the specification's form of an Idempotency-Key.
const IdempotencyKeyPattern = `^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$`

// ValidIdempotencyKey reports whether k matches IdempotencyKeyPattern (1-200 characters).
// (Checked by hand, as ValidUUID is; a test keeps the two in agreement.)
func ValidIdempotencyKey(k string) bool {
	if len(k) == 0 || len(k) > 200 || !isAlphanumeric(k[0]) {
		return false
	}
	return plainToken(k[1:])
}

func isAlphanumeric(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// plainToken reports whether every byte of s is one of [A-Za-z0-9._:/-] (the characters
// of Idempotency-Keys and request ids).
func plainToken(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case isAlphanumeric(c), c == '.', c == '_', c == ':', c == '/', c == '-':
		default:
			return false
		}
	}
	return true
}

// ValidRequestID reports whether a client's X-Request-Id may be echoed: 1-128 of the
// characters of plainToken.
func ValidRequestID(id string) bool { return len(id) >= 1 && len(id) <= 128 && plainToken(id) }

// Idempotency identifies one command for safe replay: the workspace-scoped key the client
// sent, the operation it was sent to and the digest of the canonical request. The same key
// with the same digest replays the stored result; with another digest it is refused.
type Idempotency struct {
	Key           string `json:"key"`
	Operation     string `json:"operation"`
	RequestDigest string `json:"requestDigest"`
}

// IdempotencyRetention is how long a stored result answers replays.
const IdempotencyRetention = 24 * time.Hour

// Encoded is embedded in the results of commands: the JSON text the store made of a
// result when it stored it for replays, so that the response does not encode the same
// value again. It is never part of the JSON itself. It is kept only for a result as the
// command first answered it (not for replays), and a result changed after the store
// returned it must Forget it.
type Encoded struct{ text []byte }

// RememberJSON keeps text, the JSON encoding of the result it is embedded in.
func (e *Encoded) RememberJSON(text []byte) { e.text = text }

// EncodedJSON returns the kept encoding, or nil.
func (e Encoded) EncodedJSON() []byte { return e.text }

// Forget drops the kept encoding.
func (e *Encoded) Forget() { e.text = nil }
