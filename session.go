package accountable

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"time"
)

// Web sessions: a person signs in to the key settings page with their email and password
// and gets a session, carried by the `__session` cookie (the specification's second
// security scheme). The cookie holds a random token; the service keeps only its SHA-256,
// with the session's CSRF token, which every form (and every cookie-authenticated
// mutation) must carry.

// SessionCookie is the name of the session cookie.
const SessionCookie = "__session"

// SessionLifetime is how long a session lasts after sign-in.
const SessionLifetime = 12 * time.Hour

// Session is a signed-in browser.
type Session struct {
	UserID      string
	UserEmail   string
	WorkspaceID string
	CSRFToken   string
	ExpiresAt   time.Time
}

// A session token is "<random>.<tag>": 32 random bytes and the first 16 bytes of their
// HMAC-SHA256 under the deployment's session key, both in base64url. The tag lets a
// process tell a token it issued from a forged one without a query and without spending
// anyone's failure budget (so a flood of forged cookies neither loads the database nor
// locks out the valid sessions of its address). The tag is a filter, not the
// credential: a token is a session only while the database keeps its hash.

// SessionKeyLength is the length of a session key.
const SessionKeyLength = 32

// NewSessionToken returns a new session token tagged under key and the SHA-256 kept of it.
func NewSessionToken(key []byte) (token string, hash []byte) {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	random := base64.RawURLEncoding.EncodeToString(b)
	token = random + "." + sessionTag(key, random)
	return token, HashSessionToken(token)
}

// SessionTokenAuthentic reports whether token carries the tag of key.
func SessionTokenAuthentic(key []byte, token string) bool {
	random, tag, ok := strings.Cut(token, ".")
	if !ok || len(random) != 43 || len(tag) != 22 {
		return false
	}
	return hmac.Equal([]byte(tag), []byte(sessionTag(key, random)))
}

func sessionTag(key []byte, random string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("session-token:" + random))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// HashSessionToken is what is kept of a session token.
func HashSessionToken(token string) []byte {
	h := sha256.Sum256([]byte("session:" + token))
	return h[:]
}

// NewCSRFToken returns a session's CSRF token.
func NewCSRFToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}
