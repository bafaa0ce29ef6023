// Package passwords hashes the passwords people sign in to the settings page with:
// Argon2id (golang.org/x/crypto/argon2, memory-hard), in the PHC string format
// $argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<hash> (base64 without padding), so
// the parameters travel with each hash and can be raised later without breaking the old
// ones. Never logged, never compared other than in constant time.
package passwords

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// The cost of a new hash: OWASP's recommended Argon2id setting (19 MiB, 2 passes, one
// lane), about 20 ms on this project's machines.
const (
	memoryKiB = 19 * 1024
	passes    = 2
	lanes     = 1
	saltLen   = 16
	keyLen    = 32
)

// Bounds of a password.
const (
	MinLength = 12
	MaxLength = 1024 // bytes: the hash's cost must not grow with an attacker's input
)

// ErrMalformedHash is a stored hash this package cannot read.
var ErrMalformedHash = errors.New("passwords: malformed hash")

// Check says what is wrong with a new password, or nil.
func Check(password string) error {
	switch {
	case !utf8.ValidString(password):
		return errors.New("the password must be valid UTF-8")
	case utf8.RuneCountInString(password) < MinLength:
		return fmt.Errorf("the password must have at least %d characters", MinLength)
	case len(password) > MaxLength:
		return fmt.Errorf("the password must be at most %d bytes", MaxLength)
	}
	return nil
}

// Hash returns the PHC string of password with a new random salt.
func Hash(password string) (string, error) {
	if err := Check(password); err != nil {
		return "", err
	}
	salt := make([]byte, saltLen)
	rand.Read(salt) // never fails (crypto/rand)
	key := argon2.IDKey([]byte(password), salt, passes, memoryKiB, lanes, keyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, memoryKiB, passes, lanes,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// Verify reports whether password matches the PHC string encoded.
func Verify(encoded, password string) (bool, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, ErrMalformedHash
	}
	var version int
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, ErrMalformedHash
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m == 0 || t == 0 || p == 0 || m > 1<<22 || t > 100 {
		return false, ErrMalformedHash
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	want, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 {
		return false, ErrMalformedHash
	}
	if len(password) > MaxLength {
		return false, nil
	}
	got := argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}
