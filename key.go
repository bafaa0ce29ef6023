package accountable

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"time"
)

// APIKeyPrefix begins every API key.
const APIKeyPrefix = "svk_"

// An API key is "svk_" followed by 48 lower-case hex digits (192 random bits). Its first
// 12 characters are its public prefix: shown in lists and used to revoke it.
var apiKeyPattern = regexp.MustCompile(`^svk_[0-9a-f]{48}$`)

const apiKeyPrefixLen = 12

// NewAPIKey returns a fresh secret key and its public prefix.
func NewAPIKey() (key, prefix string) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	key = APIKeyPrefix + hex.EncodeToString(b[:])
	return key, key[:apiKeyPrefixLen]
}

// ParseAPIKey checks the form of key and returns its prefix.
func ParseAPIKey(key string) (prefix string, ok bool) {
	if !apiKeyPattern.MatchString(key) {
		return "", false
	}
	return key[:apiKeyPrefixLen], true
}

// HashAPIKey returns the SHA-256 of key: the only form in which keys are stored.
func HashAPIKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// APIKey is a stored key (never its secret).
type APIKey struct {
	ID          string
	Prefix      string
	Name        string
	UserID      string
	UserEmail   string
	WorkspaceID string
	CreatedAt   time.Time
	LastUsedAt  *time.Time
	RevokedAt   *time.Time
}

// Workspace is the unit every resource and event is scoped to.
type Workspace struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// User is a person (or the account of an agent) that holds keys.
type User struct {
	ID        string
	Email     string
	CreatedAt time.Time
}
