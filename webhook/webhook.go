// Package webhook is how deliveries of ledger events are made safe: the endpoint's signing
// secret, the X-Svc-Signature a receiver verifies, the sealing of secrets at rest, and the
// policy of which addresses and ports a delivery may reach (against SSRF). The endpoint's
// vocabulary (registration, statuses, bounds, payloads) is the root package's.
package webhook

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/accountablework/accountable"
)

// NewSecret returns a generated signing secret: "whsec_" and 32 random bytes in
// base64url.
func NewSecret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return "whsec_" + base64.RawURLEncoding.EncodeToString(b)
}

// Sign returns the X-Svc-Signature value of body sent at t.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Errors of VerifySignature.
var (
	ErrSignatureMalformed = errors.New("webhook signature: malformed header")
	ErrSignatureStale     = errors.New("webhook signature: timestamp outside the tolerance")
	ErrSignatureMismatch  = errors.New("webhook signature: no v1 signature matches")
)

// VerifySignature checks an X-Svc-Signature header against the raw body as a
// receiver does: the timestamp within tolerance of now (either way), and one of its v1
// signatures (there are several while a secret is being rotated) equal, in constant time,
// to the HMAC it recomputes.
func VerifySignature(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrSignatureMalformed
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrSignatureMalformed
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrSignatureStale
	}
	want := []byte(mac(secret, ts, body))
	for _, s := range sigs {
		if hmac.Equal([]byte(s), want) {
			return nil
		}
	}
	return ErrSignatureMismatch
}

// SecretKey encrypts and decrypts endpoints' signing secrets (AES-256-GCM).
type SecretKey struct{ aead cipher.AEAD }

// ParseSecretKey reads a key given as 32 bytes in base64 (standard or URL
// alphabet, padded or not).
func ParseSecretKey(s string) (SecretKey, error) {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	raw, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		raw, err = base64.RawURLEncoding.DecodeString(s)
	}
	if err != nil || len(raw) != 32 {
		return SecretKey{}, errors.New("a webhook secret key is 32 bytes in base64 (openssl rand -base64 32)")
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return SecretKey{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return SecretKey{}, err
	}
	return SecretKey{aead: aead}, nil
}

// Configured reports whether the key was parsed (the zero key encrypts nothing).
func (k SecretKey) Configured() bool { return k.aead != nil }

// Seal encrypts secret, bound to the endpoint it belongs to (its id is the additional
// data: a ciphertext copied to another endpoint does not open).
func (k SecretKey) Seal(webhookID, secret string) []byte {
	nonce := make([]byte, k.aead.NonceSize())
	rand.Read(nonce) // never fails (crypto/rand)
	return k.aead.Seal(nonce, nonce, []byte(secret), []byte(webhookID))
}

// Open decrypts what Seal made for webhookID.
func (k SecretKey) Open(webhookID string, sealed []byte) (string, error) {
	n := k.aead.NonceSize()
	if len(sealed) < n {
		return "", errors.New("webhook secret: ciphertext too short")
	}
	plain, err := k.aead.Open(nil, sealed[:n], sealed[n:], []byte(webhookID))
	if err != nil {
		return "", errors.New("webhook secret: does not open with this key (was WEBHOOK_SECRET_KEY changed?)")
	}
	return string(plain), nil
}

// TargetPolicy says which addresses and ports deliveries may reach: public
// addresses only, unless the configuration allows private and loopback ones (a service
// delivering inside its own network, and the tests), and ports 80 and 443 unless it names
// others. Checked when an endpoint is registered (an IP literal, the URL's port) and again
// for every connection (the address a name resolved to), so a name that resolves to a
// private address later is refused too.
type TargetPolicy struct {
	AllowPrivate bool
	// Ports are the ports deliveries may connect to (WEBHOOK_PORTS). Empty: the default,
	// 80 and 443, or every port when AllowPrivate (a receiver on this machine or network
	// listens where it likes).
	Ports []uint16
	// AnyPort allows every port (WEBHOOK_PORTS=*).
	AnyPort bool
}

// DefaultPorts are the ports deliveries may reach unless configured otherwise:
// a public receiver is a web server, and any other port of a public host (SMTP, a
// database) is not what a webhook is for.
var DefaultPorts = []uint16{80, 443}

// Allows reports whether a delivery may connect to addr.
func (p TargetPolicy) Allows(addr netip.Addr) bool {
	if p.AllowPrivate {
		return addr.IsValid()
	}
	addr = addr.Unmap()
	if !addr.IsValid() || addr.IsLoopback() || addr.IsPrivate() || addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast() ||
		addr.IsInterfaceLocalMulticast() || addr.IsMulticast() || addr.IsUnspecified() {
		return false
	}
	for _, prefix := range nonPublicPrefixes {
		if prefix.Contains(addr) {
			return false
		}
	}
	return true
}

// AllowsPort reports whether a delivery may connect to port.
func (p TargetPolicy) AllowsPort(port uint16) bool {
	switch {
	case p.AnyPort || len(p.Ports) == 0 && p.AllowPrivate:
		return true
	case len(p.Ports) == 0:
		return slices.Contains(DefaultPorts, port)
	}
	return slices.Contains(p.Ports, port)
}

// AllowsAddrPort reports whether a delivery may connect to ap (the dial-time check).
func (p TargetPolicy) AllowsAddrPort(ap netip.AddrPort) bool {
	return p.Allows(ap.Addr()) && p.AllowsPort(ap.Port())
}

// PortsText says which ports the policy allows, for messages.
func (p TargetPolicy) PortsText() string {
	if p.AnyPort || len(p.Ports) == 0 && p.AllowPrivate {
		return "any port"
	}
	ports := p.Ports
	if len(ports) == 0 {
		ports = DefaultPorts
	}
	s := make([]string, len(ports))
	for i, port := range ports {
		s[i] = strconv.Itoa(int(port))
	}
	return strings.Join(s, ", ")
}

// nonPublicPrefixes are the ranges of IANA's IPv4 and IPv6 Special-Purpose Address
// Registries that netip's predicates above do not cover and a delivery may not reach unless
// private addresses are allowed: ranges that are not globally reachable, and translation
// ranges, whose addresses carry an IPv4 address that a gateway of the service's network
// connects to (64:ff9b::7f00:1 is 127.0.0.1 behind a NAT64, 2002:a00:1:: is 10.0.0.1
// through 6to4), so they would reach the very addresses refused above.
var nonPublicPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network" (RFC 791): 0.1.2.3 may reach the host itself
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (RFC 6598, carrier-grade NAT), private in effect
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments (RFC 6890), with NAT64 discovery 192.0.0.170/31
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation (RFC 5737)
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast (RFC 7526): a translation gateway
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking (RFC 2544)
	netip.MustParsePrefix("198.51.100.0/24"), // documentation (RFC 5737)
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation (RFC 5737)
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved (RFC 1112), with the broadcast address
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated, RFC 4291): ::127.0.0.1
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated (SIIT, RFC 2765)
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64 well-known prefix (RFC 6052)
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use IPv4/IPv6 translation (RFC 8215)
	netip.MustParsePrefix("100::/64"),        // discard-only (RFC 6666)
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments (RFC 2928): Teredo 2001::/32 carries an IPv4 address
	netip.MustParsePrefix("2001:db8::/32"),   // documentation (RFC 3849)
	netip.MustParsePrefix("2002::/16"),       // 6to4 (RFC 3056): carries an IPv4 address
	netip.MustParsePrefix("3fff::/20"),       // documentation (RFC 9637)
	netip.MustParsePrefix("5f00::/16"),       // segment routing SIDs (RFC 9602)
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated, RFC 3879)
}

// CheckURL refuses a URL whose host is an address the policy does not allow, or whose
// port (given, or the scheme's) it does not allow (a name is checked when a delivery
// connects).
func (p TargetPolicy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return accountable.ValidationError(accountable.Issue{Path: "/url", Message: "must be an absolute http or https URL"})
	}
	host := u.Hostname()
	if addr, err := netip.ParseAddr(host); err == nil && !p.Allows(addr) {
		return accountable.ValidationError(accountable.Issue{Path: "/url", Message: "must not be a private, loopback, link-local or special-purpose address"})
	}
	if !p.AllowPrivate && (strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost")) {
		return accountable.ValidationError(accountable.Issue{Path: "/url", Message: "must not be a private, loopback, link-local or special-purpose address"})
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || !p.AllowsPort(uint16(n)) {
		return accountable.ValidationError(accountable.Issue{Path: "/url", Message: "must use an allowed port (" + p.PortsText() + ")"})
	}
	return nil
}
