package oauth

import (
	"context"
	"crypto/sha256"
	"strings"
	"sync"

	"github.com/ory/fosite"

	"github.com/accountablework/accountable"
)

// Authentic reports whether token is an access token, refresh token or authorization
// code that this deployment signed (the HMAC of its token secret), without a query. A
// forged token is refused on that alone: it costs an HMAC, not a lookup, and spends
// nobody's failure budget; only tokens the server issued (to their holders) are looked up.
func (s *Server) Authentic(ctx context.Context, token string) bool {
	for _, prefix := range []string{accountable.AccessTokenPrefix, accountable.RefreshTokenPrefix, AuthorizeCodePrefix} {
		if rest, ok := strings.CutPrefix(token, prefix); ok {
			return s.enigma.Validate(ctx, rest) == nil
		}
	}
	return false
}

// AuthorizeCodePrefix begins every authorization code (fosite's prefixed HMAC strategy).
const AuthorizeCodePrefix = "ory_ac_"

// maxRememberedSecrets bounds the secrets remembered as correct (a client's secret is
// compared at each of its token requests).
const maxRememberedSecrets = 10_000

// secretHasher is fosite's client secret hasher (bcrypt) with two additions. A secret
// found correct for a hash is remembered (as the SHA-256 of the pair), so a client's
// correct secret costs a bcrypt comparison once per process, not per request, and never
// waits for admission: a confidential client is not refused for others' failures. Any
// other comparison runs only when the context's SecretAdmission lets it.
//
// The memory holds SHA-256 digests of (hash, secret) pairs: a fast hash of a secret,
// which bcrypt exists to avoid; the secrets are 256 random bits this server made
// (RegisterClient), beyond any search, fast hash or not.
type secretHasher struct {
	bcrypt fosite.Hasher

	mu   sync.Mutex
	good map[[32]byte]struct{}
}

func newSecretHasher(fc *fosite.Config) *secretHasher {
	return &secretHasher{bcrypt: &fosite.BCrypt{Config: fc}, good: map[[32]byte]struct{}{}}
}

func pairDigest(hash, secret []byte) [32]byte {
	h := sha256.New()
	h.Write(hash)
	h.Write([]byte{0})
	h.Write(secret)
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// Compare is fosite.Hasher's.
func (h *secretHasher) Compare(ctx context.Context, hash, secret []byte) error {
	d := pairDigest(hash, secret)
	h.mu.Lock()
	_, known := h.good[d]
	h.mu.Unlock()
	if known {
		return nil
	}
	done := func(bool) {}
	if admit, ok := SecretAdmissionFrom(ctx); ok {
		var err error
		if done, err = admit(); err != nil {
			return err
		}
	}
	err := h.bcrypt.Compare(ctx, hash, secret)
	done(err == nil)
	if err != nil {
		return err
	}
	h.mu.Lock()
	if len(h.good) >= maxRememberedSecrets {
		for k := range h.good { // an arbitrary one makes room: at worst one more bcrypt
			delete(h.good, k)
			break
		}
	}
	h.good[d] = struct{}{}
	h.mu.Unlock()
	return nil
}

// Hash is fosite.Hasher's.
func (h *secretHasher) Hash(ctx context.Context, data []byte) ([]byte, error) {
	return h.bcrypt.Hash(ctx, data)
}

var _ fosite.Hasher = (*secretHasher)(nil)

// SecretAdmission is asked before a client secret is compared with its stored hash
// (bcrypt: tens of milliseconds of a core): it returns done, to be called with the
// comparison's outcome once it has run, or why it may not run now. The HTTP side puts one
// in the context of each token and revocation request (its failure budget and the
// password-hash gate); the authorization server asks it.
type SecretAdmission func() (done func(correct bool), err error)

type secretAdmissionKey struct{}

// WithSecretAdmission returns ctx carrying admit.
func WithSecretAdmission(ctx context.Context, admit SecretAdmission) context.Context {
	return context.WithValue(ctx, secretAdmissionKey{}, admit)
}

// SecretAdmissionFrom returns the admission ctx carries, if any.
func SecretAdmissionFrom(ctx context.Context) (SecretAdmission, bool) {
	a, ok := ctx.Value(secretAdmissionKey{}).(SecretAdmission)
	return a, ok && a != nil
}
