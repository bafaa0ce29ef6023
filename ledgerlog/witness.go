package ledgerlog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Witnesses (C2SP tlog-witness): independent servers that cosign a checkpoint only when
// it is consistent with every checkpoint of the same log they cosigned before, so that a
// log cannot show two histories, or roll one back, to two clients that check for a
// witness's cosignature.

// algCosignatureV1 is the signed-note algorithm byte of C2SP tlog-cosignature keys.
const algCosignatureV1 = 4

// cosignatureVerifier verifies C2SP tlog-cosignature/v1 signatures: the signature is an
// 8-byte big-endian UNIX time and the Ed25519 signature of "cosignature/v1\ntime
// <t>\n" followed by the checkpoint. (torchwood makes such signatures but offers no
// verifier built from a public key alone; the tests check this one against its signer.)
type cosignatureVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (v *cosignatureVerifier) Name() string    { return v.name }
func (v *cosignatureVerifier) KeyHash() uint32 { return v.hash }
func (v *cosignatureVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig)
	m := append([]byte("cosignature/v1\ntime "+strconv.FormatUint(t, 10)+"\n"), msg...)
	return ed25519.Verify(v.key, m, sig[8:])
}

// ParseCosignatureKey reads a witness's public key ("<name>+<hash>+<base64 of 0x04 and
// the Ed25519 public key>", C2SP signed-note with the tlog-cosignature algorithm).
func ParseCosignatureKey(vkey string) (note.Verifier, error) {
	name, rest, ok1 := strings.Cut(vkey, "+")
	hash16, key64, ok2 := strings.Cut(rest, "+")
	hash, err1 := strconv.ParseUint(hash16, 16, 32)
	key, err2 := base64.StdEncoding.DecodeString(key64)
	if !ok1 || !ok2 || len(hash16) != 8 || err1 != nil || err2 != nil || !validKeyName(name) ||
		len(key) != 1+ed25519.PublicKeySize || key[0] != algCosignatureV1 {
		return nil, fmt.Errorf("ledgerlog: %q is not a tlog-cosignature/v1 verifier key", vkey)
	}
	h := sha256.Sum256(append([]byte(name+"\n"), key...))
	if binary.BigEndian.Uint32(h[:]) != uint32(hash) {
		return nil, fmt.Errorf("ledgerlog: the key hash of witness key %q is wrong", vkey)
	}
	return &cosignatureVerifier{name: name, hash: uint32(hash), key: ed25519.PublicKey(key[1:])}, nil
}

func validKeyName(name string) bool {
	return name != "" && utf8.ValidString(name) && strings.IndexFunc(name, unicode.IsSpace) < 0 && !strings.Contains(name, "+")
}

// Witness is a witness the log submits its checkpoints to.
type Witness struct {
	URL      string        // the witness's prefix: add-checkpoint is URL + "/add-checkpoint"
	Key      string        // its cosignature verifier key, as text
	Verifier note.Verifier // that key
}

// Name is the witness's key name, the name of its cosignatures.
func (w Witness) Name() string { return w.Verifier.Name() }

// ParseWitnesses reads a list of witnesses: "<url> <cosignature verifier key>" entries,
// separated by commas.
func ParseWitnesses(spec string) ([]Witness, error) {
	var out []Witness
	seen := map[string]bool{}
	for entry := range strings.SplitSeq(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		url, vkey, ok := strings.Cut(entry, " ")
		if !ok || !(strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://")) {
			return nil, fmt.Errorf("ledgerlog: witness %q is not \"<url> <verifier key>\"", entry)
		}
		v, err := ParseCosignatureKey(strings.TrimSpace(vkey))
		if err != nil {
			return nil, err
		}
		if seen[v.Name()] {
			return nil, fmt.Errorf("ledgerlog: witness %s is listed twice", v.Name())
		}
		seen[v.Name()] = true
		out = append(out, Witness{URL: strings.TrimSuffix(url, "/"), Key: strings.TrimSpace(vkey), Verifier: v})
	}
	return out, nil
}

// WitnessConflictError is a witness's 409: it knows the log at another size than the one
// the request said (Known), so the request is to be made again from that size.
type WitnessConflictError struct{ Known int64 }

func (e *WitnessConflictError) Error() string {
	return fmt.Sprintf("the witness knows the log at size %d", e.Known)
}

// WitnessRefusalError is a witness's refusal: 422, the checkpoint is not consistent with
// the one it cosigned before (Inconsistent); 403, it does not know the log or its key.
type WitnessRefusalError struct {
	Status       int
	Inconsistent bool
	Message      string
}

func (e *WitnessRefusalError) Error() string {
	if e.Inconsistent {
		return "the witness refused the checkpoint as inconsistent with the one it cosigned before: " + e.Message
	}
	return fmt.Sprintf("the witness refused the checkpoint (%d): %s", e.Status, e.Message)
}

// maxWitnessResponse bounds what is read of a witness's answer.
const maxWitnessResponse = 64 << 10

// AddCheckpoint submits a signed checkpoint to the witness with the consistency proof from
// oldSize (the size the witness last cosigned; 0 for none), and returns its cosignature
// line ("— <name> <base64>\n"), checked with its key.
func (w Witness) AddCheckpoint(ctx context.Context, hc *http.Client, oldSize int64, proof tlog.TreeProof, signed []byte) (string, error) {
	var body bytes.Buffer
	fmt.Fprintf(&body, "old %d\n", oldSize)
	for _, h := range proof {
		body.WriteString(h.String())
		body.WriteByte('\n')
	}
	body.WriteByte('\n')
	body.Write(signed)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL+"/add-checkpoint", &body)
	if err != nil {
		return "", fmt.Errorf("ledgerlog: witness %s: %w", w.Name(), err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("ledgerlog: witness %s: %w", w.Name(), err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxWitnessResponse))
	if err != nil {
		return "", fmt.Errorf("ledgerlog: witness %s: %w", w.Name(), err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusConflict:
		known, err := strconv.ParseInt(strings.TrimSpace(string(answer)), 10, 64)
		if err != nil || known < 0 {
			return "", fmt.Errorf("ledgerlog: witness %s answered 409 without a size: %q", w.Name(), answer)
		}
		return "", &WitnessConflictError{Known: known}
	case http.StatusUnprocessableEntity, http.StatusForbidden, http.StatusBadRequest:
		return "", &WitnessRefusalError{Status: resp.StatusCode, Inconsistent: resp.StatusCode == http.StatusUnprocessableEntity,
			Message: strings.TrimSpace(string(answer))}
	default:
		return "", fmt.Errorf("ledgerlog: witness %s answered %s: %q", w.Name(), resp.Status, answer)
	}
	line, err := w.cosignatureIn(signed, answer)
	if err != nil {
		return "", fmt.Errorf("ledgerlog: witness %s: %w", w.Name(), err)
	}
	return line, nil
}

// cosignatureIn finds the witness's signature line among the lines it answered and checks
// it on the checkpoint.
func (w Witness) cosignatureIn(signed, answer []byte) (string, error) {
	text, _, ok := bytes.Cut(signed, []byte("\n\n"))
	if !ok {
		return "", errors.New("the checkpoint is not a signed note")
	}
	for line := range strings.Lines(string(answer)) {
		if !strings.HasPrefix(line, "— "+w.Name()+" ") || !strings.HasSuffix(line, "\n") {
			continue
		}
		n, err := note.Open(append(append(append([]byte{}, text...), '\n', '\n'), line...), note.VerifierList(w.Verifier))
		if err == nil && len(n.Sigs) == 1 {
			return line, nil
		}
	}
	return "", fmt.Errorf("its answer holds no valid cosignature: %q", answer)
}

// WithCosignatures is the signed checkpoint with the witnesses' cosignature lines added
// after the log's signature: the note a client checks for both.
func WithCosignatures(signed []byte, lines ...string) []byte {
	out := append([]byte{}, signed...)
	for _, l := range lines {
		out = append(out, l...)
	}
	return out
}
