package accountable

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
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

// NewSessionToken returns a new session token and the SHA-256 kept of it.
func NewSessionToken() (token string, hash []byte) {
	b := make([]byte, 32)
	rand.Read(b) //nolint:errcheck // never fails (crypto/rand)
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, HashSessionToken(token)
}

// HashSessionToken is what is kept of a session token.
func HashSessionToken(token string) []byte {
	h := sha256.Sum256([]byte("session:" + token))
	return h[:]
}

// NewCSRFToken returns a session's CSRF token.
func NewCSRFToken() string {
	b := make([]byte, 32)
	rand.Read(b) //nolint:errcheck // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}
