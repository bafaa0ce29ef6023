// Package crypto is the part of sigsum.org/sigsum-go/pkg/crypto that torchwood's
// witnessctl uses (its add-sigsum-log command): a public key's size and type, and the
// SHA-256 hash sigsum names its logs by. The service's tests never run add-sigsum-log;
// the values are sigsum's all the same (SHA-256, 32-byte Ed25519 keys).
package crypto

import "crypto/sha256"

const (
	HashSize      = sha256.Size
	PublicKeySize = 32
)

type (
	Hash      [HashSize]byte
	PublicKey [PublicKeySize]byte
)

// HashBytes is SHA-256, as in sigsum.
func HashBytes(b []byte) Hash { return sha256.Sum256(b) }
