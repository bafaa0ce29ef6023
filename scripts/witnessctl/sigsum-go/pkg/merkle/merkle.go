// Package merkle is the part of sigsum.org/sigsum-go/pkg/merkle that torchwood's
// witnessctl uses: the root hash of the empty tree (RFC 6962: the SHA-256 of the empty
// string), which add-log stores for a new log.
package merkle

import "sigsum.org/sigsum-go/pkg/crypto"

// HashEmptyTree is the hash of a tree of size 0.
func HashEmptyTree() crypto.Hash { return crypto.HashBytes(nil) }
