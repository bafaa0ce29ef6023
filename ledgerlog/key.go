package ledgerlog

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Key is the log's signing key: a C2SP signed-note Ed25519 key. It is never stored in
// the database: whoever can rewrite the database must not be able to sign a rewritten
// history.
type Key struct {
	signer   note.Signer
	verifier note.Verifier
	// VerifierKey is the public key in signed-note form ("<name>+<hash>+<base64>"), what
	// clients, auditors and witnesses are given.
	VerifierKey string
}

// ParseKey reads a signed-note private key ("PRIVATE+KEY+<name>+<hash>+<base64>").
func ParseKey(skey string) (*Key, error) {
	skey = strings.TrimSpace(skey)
	signer, err := note.NewSigner(skey)
	if err != nil {
		return nil, fmt.Errorf("ledgerlog: the signing key is not a signed-note private key: %w", err)
	}
	vkey, err := verifierKeyOf(skey, signer)
	if err != nil {
		return nil, err
	}
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("ledgerlog: %w", err)
	}
	return &Key{signer: signer, verifier: verifier, VerifierKey: vkey}, nil
}

// verifierKeyOf derives the verifier key of a signed-note Ed25519 private key
// ("PRIVATE+KEY+<name>+<hash>+<base64 of 0x01 and the seed>"): "<name>+<hash>+<base64 of
// 0x01 and the public key>".
func verifierKeyOf(skey string, signer note.Signer) (string, error) {
	parts := strings.SplitN(skey, "+", 5)
	if len(parts) != 5 {
		return "", errors.New("ledgerlog: malformed signing key")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != algEd25519 {
		return "", errors.New("ledgerlog: the signing key is not an Ed25519 signed-note key")
	}
	pub := ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey)
	vkey := parts[2] + "+" + parts[3] + "+" + base64.StdEncoding.EncodeToString(append([]byte{algEd25519}, pub...))
	if v, err := note.NewVerifier(vkey); err != nil || v.KeyHash() != signer.KeyHash() {
		return "", errors.New("ledgerlog: malformed signing key")
	}
	return vkey, nil
}

// algEd25519 is the signed-note algorithm byte of Ed25519 keys.
const algEd25519 = 1

// GenerateKey makes a new Ed25519 signing key named name (a schema-less URL, the log
// name): its private key text.
func GenerateKey(name string) (string, error) {
	skey, _, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		return "", fmt.Errorf("ledgerlog: %w", err)
	}
	return skey, nil
}

// LoadOrCreateKey reads the signing key from path, making one named name (mode 0600, in a
// directory of mode 0700) when the file does not exist: the first start of a new
// installation.
func LoadOrCreateKey(path, name string) (*Key, bool, error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		k, err := ParseKey(string(b))
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", path, err)
		}
		return k, false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, false, fmt.Errorf("ledgerlog: read the signing key: %w", err)
	}
	skey, err := GenerateKey(name)
	if err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("ledgerlog: make the signing key's directory: %w", err)
	}
	// O_EXCL: two processes starting together must not each make a key; the loser reads
	// the winner's.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return LoadOrCreateKey(path, name)
	}
	if err != nil {
		return nil, false, fmt.Errorf("ledgerlog: write the signing key: %w", err)
	}
	if _, err := f.WriteString(skey + "\n"); err != nil {
		f.Close()
		return nil, false, fmt.Errorf("ledgerlog: write the signing key: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, false, fmt.Errorf("ledgerlog: write the signing key: %w", err)
	}
	k, err := ParseKey(skey)
	return k, true, err
}

// Name is the key's name (the log name).
func (k *Key) Name() string { return k.signer.Name() }

// Verifier is the key's public half.
func (k *Key) Verifier() note.Verifier { return k.verifier }

// SignCheckpoint signs the checkpoint of tree for origin as a C2SP signed note.
func (k *Key) SignCheckpoint(origin string, tree tlog.Tree) ([]byte, error) {
	cp := torchwood.Checkpoint{Origin: origin, Tree: tree}
	signed, err := note.Sign(&note.Note{Text: cp.String()}, k.signer)
	if err != nil {
		return nil, fmt.Errorf("ledgerlog: sign the checkpoint: %w", err)
	}
	return signed, nil
}
