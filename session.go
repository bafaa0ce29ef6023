package accountable

import "time"

// Web sessions: a person signs in to the key settings page with their email and password
// and gets a session, carried by the `__session` cookie (the specification's second
// security scheme). The cookie holds a random token; the service keeps only its SHA-256,
// with the session's CSRF token, which every form (and every cookie-authenticated
// mutation) must carry. Package tokens makes and checks the tokens.

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
