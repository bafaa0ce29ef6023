// Package tokens makes and recognises the service's own bearer secrets, and the hashes
// kept of them: API keys ("svk_" and 48 hex digits; only their SHA-256 is stored), web
// session tokens (tagged under the deployment's session key, so that a forged one is told
// apart without a query) and the CSRF tokens of sessions. OAuth codes and tokens are
// package oauth's (fosite's HMAC strategy).
package tokens

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/accountablework/accountable"
)

// APIKeyPattern is the form of an API key: "svk_" followed by 48 lower-case hex digits
// (192 random bits). Its first 12 characters are its public prefix: shown in lists and
// used to revoke it. (ParseAPIKey checks the form by hand; a test keeps the two in
// agreement.)
const APIKeyPattern = `^svk_[0-9a-f]{48}$`

// keyPrefix begins every API key; apiKeyPrefixLen is the length of a key's public prefix.
const (
	keyPrefix       = accountable.APIKeyPrefix
	apiKeyPrefixLen = 12
)

// NewAPIKey returns a fresh secret key and its public prefix.
func NewAPIKey() (key, prefix string) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	key = keyPrefix + hex.EncodeToString(b[:])
	return key, key[:apiKeyPrefixLen]
}

// ParseAPIKey checks the form of key and returns its prefix.
func ParseAPIKey(key string) (prefix string, ok bool) {
	if len(key) != len(keyPrefix)+48 || key[:len(keyPrefix)] != keyPrefix {
		return "", false
	}
	for i := len(keyPrefix); i < len(key); i++ {
		if c := key[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", false
		}
	}
	return key[:apiKeyPrefixLen], true
}

// HashAPIKey returns the SHA-256 of key: the only form in which keys are stored.
func HashAPIKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
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
