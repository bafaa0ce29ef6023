package receipt

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// The integrity of an Agent Work Receipt (its optional integrity block), checked as the
// format's conformance vectors define it (testdata/agent-work-receipt/conformance):
//
//   - content hash: SHA-256 of the RFC 8785 canonical JSON of the document without its
//     integrity member (canonical.JSON), compared with the declared integrity.content_hash
//     (algorithm sha-256 or sha256; hex, base64 or base64url, each in its one canonical
//     spelling). States: not_present, verified, mismatch, unsupported, malformed.
//   - signatures: Ed25519 over the canonical JSON of the signature payload
//     {content_hash: {algorithm: "sha-256", value: <declared digest, lower-case hex>},
//     profile: "agent-work-receipt-signature/v0.1", protected: {algorithm, encoding,
//     key_id, signer?, signed_at?}}: a signature binds the declared hash and its own
//     header. Its cryptographic state is not_checked unless the key_id is one of the
//     configured signer keys (ReceiptSignerKeys); then verified or invalid. A key that is
//     configured is trusted (trust_state trusted); an unknown key_id is trust_state
//     unknown; without configured keys trust is not_evaluated.
//
// The three claims (content equality, cryptographic proof, signer trust) are reported
// separately and never collapsed into validity.

// Integrity vocabulary.
const (
	ReceiptIntegrityReportVersion = "agent-work-receipt-integrity-report/v0.1"
	ReceiptCanonicalization       = "RFC 8785"
	ReceiptHashScope              = "receipt_without_integrity"
	ReceiptSignatureProfile       = "agent-work-receipt-signature/v0.1"
	receiptSignatureAlgorithm     = "ed25519"
	receiptSignatureEncoding      = "base64url"
)

// ContentHashState is what the declared content hash proves.
type ContentHashState string

// Content hash states (the integrity report schema's).
const (
	ContentHashNotPresent  ContentHashState = "not_present"
	ContentHashVerified    ContentHashState = "verified"
	ContentHashMismatch    ContentHashState = "mismatch"
	ContentHashUnsupported ContentHashState = "unsupported"
	ContentHashMalformed   ContentHashState = "malformed"
)

// Enum lists the states.
func (ContentHashState) Enum() []any {
	return accountable.EnumStrings(ContentHashNotPresent, ContentHashVerified, ContentHashMismatch, ContentHashUnsupported, ContentHashMalformed)
}

// CryptographicState is what a signature proves.
type CryptographicState string

// Cryptographic states (the integrity report schema's).
const (
	SignatureNotChecked  CryptographicState = "not_checked"
	SignatureVerified    CryptographicState = "verified"
	SignatureInvalid     CryptographicState = "invalid"
	SignatureUnsupported CryptographicState = "unsupported"
	SignatureMalformed   CryptographicState = "malformed"
	SignatureError       CryptographicState = "error"
)

// Enum lists the states.
func (CryptographicState) Enum() []any {
	return accountable.EnumStrings(SignatureNotChecked, SignatureVerified, SignatureInvalid, SignatureUnsupported, SignatureMalformed, SignatureError)
}

// TrustState is whether the signer is trusted.
type TrustState string

// Trust states (the integrity report schema's).
const (
	TrustNotEvaluated TrustState = "not_evaluated"
	TrustTrusted      TrustState = "trusted"
	TrustUntrusted    TrustState = "untrusted"
	TrustUnknown      TrustState = "unknown"
	TrustError        TrustState = "error"
)

// Enum lists the states.
func (TrustState) Enum() []any {
	return accountable.EnumStrings(TrustNotEvaluated, TrustTrusted, TrustUntrusted, TrustUnknown, TrustError)
}

// ReceiptIntegrity is the integrity report (the format's integrity report schema,
// agent-work-receipt-integrity-report/v0.1).
type ReceiptIntegrity struct {
	ReportVersion    string                   `json:"report_version" const:"agent-work-receipt-integrity-report/v0.1"`
	Canonicalization string                   `json:"canonicalization" const:"RFC 8785"`
	HashScope        string                   `json:"hash_scope" const:"receipt_without_integrity"`
	ContentHash      ReceiptContentHash       `json:"content_hash"`
	Signatures       []ReceiptSignatureReport `json:"signatures"`
}

// ReceiptContentHash is the content hash's report: the state, the digest computed (in the
// declared encoding, hex when none is declared) and the one declared, when there is one.
type ReceiptContentHash struct {
	State    ContentHashState    `json:"state"`
	Computed ReceiptDigest       `json:"computed"`
	Declared *ReceiptDeclaration `json:"declared,omitzero"`
}

// ReceiptDigest is a computed SHA-256.
type ReceiptDigest struct {
	Algorithm string `json:"algorithm" const:"sha-256"`
	Encoding  string `json:"encoding" enum:"hex,base64,base64url"`
	Value     string `json:"value"`
}

// sha256 returns the digest as "sha256:<hex>".
func (d ReceiptDigest) sha256() string {
	b, ok := decodeDigestValue(d.Value, d.Encoding)
	if !ok {
		return ""
	}
	return "sha256:" + hex.EncodeToString(b)
}

// ReceiptDeclaration is a digest as the receipt declares it.
type ReceiptDeclaration struct {
	Algorithm string  `json:"algorithm"`
	Value     string  `json:"value"`
	Encoding  *string `json:"encoding,omitzero" enum:"hex,base64,base64url"`
}

// ReceiptSignatureReport is one signature's report.
type ReceiptSignatureReport struct {
	Index              int                `json:"index" minimum:"0"`
	Profile            string             `json:"profile" const:"agent-work-receipt-signature/v0.1"`
	Algorithm          string             `json:"algorithm"`
	Encoding           string             `json:"encoding"`
	KeyID              string             `json:"key_id,omitzero"`
	CryptographicState CryptographicState `json:"cryptographic_state"`
	TrustState         TrustState         `json:"trust_state"`
}

// ReceiptSignerKeys are the Ed25519 public keys of the signers this service trusts, by
// key_id.
type ReceiptSignerKeys map[string]ed25519.PublicKey

// IDs lists the key ids, sorted.
func (k ReceiptSignerKeys) IDs() []string { return slices.Sorted(maps.Keys(k)) }

// ParseReceiptSignerKeys parses "key_id=<base64url public key>" entries separated by
// commas (the RECEIPT_SIGNER_KEYS setting).
func ParseReceiptSignerKeys(s string) (ReceiptSignerKeys, error) {
	keys := ReceiptSignerKeys{}
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		id, value, ok := strings.Cut(entry, "=")
		id = strings.TrimSpace(id)
		if !ok || id == "" {
			return nil, fmt.Errorf("receipt signer key %q: want key_id=<base64url Ed25519 public key>", entry)
		}
		pub, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(strings.TrimSpace(value), "="))
		if err != nil || len(pub) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("receipt signer key %q: the key is not a base64url Ed25519 public key (32 bytes)", id)
		}
		keys[id] = ed25519.PublicKey(pub)
	}
	return keys, nil
}

// VerifyReceiptIntegrity reports the integrity of the decoded document doc (a JSON object
// decoded with UseNumber). It fails only for a document without a canonical form.
func VerifyReceiptIntegrity(doc map[string]any, keys ReceiptSignerKeys) (ReceiptIntegrity, error) {
	content, _, err := canonicalReceipt(doc, 0)
	if err != nil {
		return ReceiptIntegrity{}, err
	}
	return verifyReceiptIntegrity(doc, content, keys)
}

// canonicalReceipt returns the canonical JSON of the document without its integrity
// member (what the content hash covers) and of the whole document. The whole is made once,
// member by member into one buffer of about sizeHint bytes (its text's size), and the
// content is the whole without the integrity member (its member order is RFC 8785's,
// canonical.CompareUTF16).
func canonicalReceipt(doc map[string]any, sizeHint int) (content, whole []byte, err error) {
	names := make([]string, 0, len(doc))
	for name := range doc {
		names = append(names, name)
	}
	slices.SortFunc(names, canonical.CompareUTF16)
	whole = append(make([]byte, 0, sizeHint+16), '{')
	cutFrom, cutTo := -1, -1 // the integrity member, with the comma that separates it
	for i, name := range names {
		if i > 0 {
			whole = append(whole, ',')
		}
		start := len(whole)
		if whole, err = canonical.AppendJSON(whole, name); err != nil {
			return nil, nil, err
		}
		whole = append(whole, ':')
		if whole, err = canonical.AppendJSON(whole, doc[name]); err != nil {
			return nil, nil, err
		}
		if name == "integrity" {
			cutFrom, cutTo = start, len(whole)
			if i > 0 {
				cutFrom-- // the comma before it
			} else if len(names) > 1 {
				cutTo++ // the comma after it
			}
		}
	}
	whole = append(whole, '}')
	if cutFrom < 0 {
		return whole, whole, nil
	}
	return slices.Concat(whole[:cutFrom], whole[cutTo:]), whole, nil
}

// verifyReceiptIntegrity is VerifyReceiptIntegrity given the canonical content.
func verifyReceiptIntegrity(doc map[string]any, canonical []byte, keys ReceiptSignerKeys) (ReceiptIntegrity, error) {
	computed := sha256.Sum256(canonical)
	report := ReceiptIntegrity{ReportVersion: ReceiptIntegrityReportVersion, Canonicalization: ReceiptCanonicalization,
		HashScope: ReceiptHashScope, Signatures: []ReceiptSignatureReport{}}
	integrity, _ := doc["integrity"].(map[string]any)
	declared, _ := integrity["content_hash"].(map[string]any)
	encoding := "hex"
	var declaredBytes []byte
	report.ContentHash.State = ContentHashNotPresent
	if declared != nil {
		d := ReceiptDeclaration{}
		d.Algorithm, _ = declared["algorithm"].(string)
		d.Value, _ = declared["value"].(string)
		if e, ok := declared["encoding"].(string); ok {
			d.Encoding = &e
			if e == "hex" || e == "base64" || e == "base64url" {
				encoding = e
			}
		}
		report.ContentHash.Declared = &d
		declaredBytes = decodeSHA256Declaration(declared)
		switch {
		case d.Algorithm != "sha-256" && d.Algorithm != "sha256":
			report.ContentHash.State = ContentHashUnsupported
		case declaredBytes == nil:
			report.ContentHash.State = ContentHashMalformed
		case bytes.Equal(declaredBytes, computed[:]):
			report.ContentHash.State = ContentHashVerified
		default:
			report.ContentHash.State = ContentHashMismatch
		}
	}
	report.ContentHash.Computed = ReceiptDigest{Algorithm: "sha-256", Encoding: encoding, Value: encodeDigestValue(computed[:], encoding)}

	signatures, _ := integrity["signatures"].([]any)
	for i, raw := range signatures {
		sig, _ := raw.(map[string]any)
		r := ReceiptSignatureReport{Index: i, Profile: ReceiptSignatureProfile, CryptographicState: SignatureNotChecked, TrustState: TrustNotEvaluated}
		r.Algorithm, _ = sig["algorithm"].(string)
		r.Encoding, _ = sig["encoding"].(string)
		r.KeyID, _ = sig["key_id"].(string)
		if len(keys) > 0 {
			r.TrustState = TrustUnknown
		}
		key, known := keys[r.KeyID]
		if known {
			r.TrustState = TrustTrusted
		}
		value, _ := sig["value"].(string)
		signature := decodeSignature(value)
		switch {
		case r.Algorithm != receiptSignatureAlgorithm || r.Encoding != receiptSignatureEncoding:
			r.CryptographicState = SignatureUnsupported
		case signature == nil || declaredBytes == nil:
			r.CryptographicState = SignatureMalformed
		case known:
			payload, err := ReceiptSignaturePayload(sig, declaredBytes)
			switch {
			case err != nil:
				r.CryptographicState = SignatureError
			case ed25519.Verify(key, payload, signature):
				r.CryptographicState = SignatureVerified
			default:
				r.CryptographicState = SignatureInvalid
			}
		}
		report.Signatures = append(report.Signatures, r)
	}
	return report, nil
}

// ReceiptSignaturePayload is the message a signature signs: the canonical JSON of the
// profile, the declared content hash (lower-case hex) and the signature's protected
// header (algorithm, encoding, key_id and, when present, signer and signed_at).
func ReceiptSignaturePayload(sig map[string]any, declaredHash []byte) ([]byte, error) {
	protected := map[string]any{"algorithm": sig["algorithm"], "encoding": sig["encoding"], "key_id": sig["key_id"]}
	for _, name := range []string{"signer", "signed_at"} {
		if v, ok := sig[name]; ok {
			protected[name] = v
		}
	}
	return canonical.JSON(map[string]any{
		"content_hash": map[string]any{"algorithm": "sha-256", "value": hex.EncodeToString(declaredHash)},
		"profile":      ReceiptSignatureProfile,
		"protected":    protected,
	})
}

// decodeSHA256Declaration returns the 32 bytes a declared SHA-256 digest names, or nil
// when it is not a supported algorithm in the one canonical spelling of its encoding.
func decodeSHA256Declaration(d map[string]any) []byte {
	alg, _ := d["algorithm"].(string)
	value, _ := d["value"].(string)
	encoding := "hex"
	if e, ok := d["encoding"]; ok {
		s, isString := e.(string)
		if !isString {
			return nil
		}
		encoding = s
	}
	if alg != "sha-256" && alg != "sha256" {
		return nil
	}
	b, ok := decodeDigestValue(value, encoding)
	if !ok {
		return nil
	}
	return b
}

// decodeDigestValue decodes a 32-byte digest in encoding, refusing any spelling but the
// canonical one (hex in either case; padded base64; unpadded base64url; no stray bits).
func decodeDigestValue(value, encoding string) ([]byte, bool) {
	switch encoding {
	case "hex":
		if len(value) != 2*sha256.Size {
			return nil, false
		}
		b, err := hex.DecodeString(value)
		return b, err == nil
	case "base64":
		b, err := base64.StdEncoding.Strict().DecodeString(value)
		return b, err == nil && len(b) == sha256.Size && base64.StdEncoding.EncodeToString(b) == value
	case "base64url":
		b, err := base64.RawURLEncoding.Strict().DecodeString(value)
		return b, err == nil && len(b) == sha256.Size && base64.RawURLEncoding.EncodeToString(b) == value
	}
	return nil, false
}

// encodeDigestValue encodes a digest in encoding (hex in lower case).
func encodeDigestValue(b []byte, encoding string) string {
	switch encoding {
	case "base64":
		return base64.StdEncoding.EncodeToString(b)
	case "base64url":
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return hex.EncodeToString(b)
}

// decodeSignature decodes an unpadded canonical base64url Ed25519 signature (nil when it
// is not one).
func decodeSignature(value string) []byte {
	b, err := base64.RawURLEncoding.Strict().DecodeString(value)
	if err != nil || len(b) != ed25519.SignatureSize || base64.RawURLEncoding.EncodeToString(b) != value {
		return nil
	}
	return b
}
