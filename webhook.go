package accountable

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Webhooks deliver a workspace's ledger events to a URL of the workspace's choosing, in
// stream order, each POST signed with the endpoint's secret:
//
//	X-Svc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>
//
// The secret is shown once, when the endpoint is registered, and stored encrypted
// (AES-256-GCM with a key from the service's configuration), not hashed: the service must
// sign with it. A receiver recomputes the HMAC over the raw body and refuses a timestamp
// older than its tolerance (WebhookSignatureTolerance), which stops replays.

// Ledger vocabulary of webhooks. Deliveries are not ledger events: a delivery of events
// that made events would feed itself.
const (
	AggregateWebhook    = "webhook"
	EventWebhookCreated = "webhook.created"
	EventWebhookDeleted = "webhook.deleted"
)

// Bounds of a webhook endpoint.
const (
	MaxWebhookURLChars        = 2048
	MaxWebhookEventTypes      = 50
	MaxWebhookEventTypeChars  = 100
	MinWebhookSecretChars     = 16
	MaxWebhookSecretChars     = 256
	WebhookSignatureHeader    = "X-Svc-Signature"
	WebhookSignatureTolerance = 5 * time.Minute
	// WebhookAllEvents as an event type subscribes to every event of the workspace.
	WebhookAllEvents = "*"
)

// DefaultWebhookMaxEndpoints is how many active endpoints a workspace may have unless the
// configuration says otherwise (WEBHOOK_MAX_ENDPOINTS), near GitHub's 20 hooks per event
// per repository and Stripe's 16 endpoints per account. Every endpoint is a delivery
// workflow and a read of the ledger per burst of the workspace's events, so the cap bounds
// what one workspace's commits cost the worker and the database.
const DefaultWebhookMaxEndpoints = 20

// CheckWebhookCapacity refuses another endpoint to a workspace that has active ones
// already when it may have at most limit (deleted endpoints do not count).
func CheckWebhookCapacity(active, limit int) error {
	if active < limit {
		return nil
	}
	return Errorf(ECodeWebhookLimitReached,
		"The workspace has %d active webhook endpoints and this server allows at most %d (WEBHOOK_MAX_ENDPOINTS); delete one before registering another.",
		active, limit).WithDetails(map[string]any{"limit": limit, "active": active})
}

// RegisterWebhook is POST /webhooks: where to deliver, which events, and the secret to
// sign with (generated when absent).
type RegisterWebhook struct {
	URL        string   `json:"url" minLength:"1" maxLength:"2048" format:"uri" description:"http or https URL the events are POSTed to."`
	EventTypes []string `json:"event_types" minItems:"1" maxItems:"50" uniqueItems:"true" description:"Event types to deliver (\"*\": every event)."`
	Secret     *string  `json:"secret,omitempty" minLength:"16" maxLength:"256" description:"The signing secret (16-256 characters); generated when absent. Shown once."`
}

// Validate checks the registration's own rules: an absolute http(s) URL without
// credentials, event types that are names or "*", a secret of printable ASCII. Whether
// the URL's host may be reached is WebhookTargetPolicy's question.
func (r RegisterWebhook) Validate() error {
	var issues Issues
	if u, err := url.Parse(r.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		issues = append(issues, Issue{Path: "/url", Message: "must be an absolute http or https URL"})
	} else if u.User != nil {
		issues = append(issues, Issue{Path: "/url", Message: "must not carry credentials (sign with the secret instead)"})
	} else if u.Fragment != "" {
		issues = append(issues, Issue{Path: "/url", Message: "must not have a fragment"})
	}
	if n := utf8.RuneCountInString(r.URL); n > MaxWebhookURLChars {
		issues = append(issues, Issue{Path: "/url", Message: fmt.Sprintf("must be at most %d characters", MaxWebhookURLChars)})
	}
	switch n := len(r.EventTypes); {
	case n == 0:
		issues = append(issues, Issue{Path: "/event_types", Message: "must name at least one event type (\"*\" for every event)"})
	case n > MaxWebhookEventTypes:
		issues = append(issues, Issue{Path: "/event_types", Message: fmt.Sprintf("must have at most %d items", MaxWebhookEventTypes)})
	}
	for i, t := range r.EventTypes {
		path := "/event_types/" + strconv.Itoa(i)
		switch {
		case !validEventTypeName(t):
			issues = append(issues, Issue{Path: path, Message: "must be an event type (such as work.completed) or \"*\""})
		case slices.Index(r.EventTypes, t) < i:
			issues = append(issues, Issue{Path: path, Message: "is listed twice"})
		}
	}
	if r.Secret != nil {
		s := *r.Secret
		switch {
		case len(s) < MinWebhookSecretChars || len(s) > MaxWebhookSecretChars:
			issues = append(issues, Issue{Path: "/secret", Message: fmt.Sprintf("must be %d to %d characters", MinWebhookSecretChars, MaxWebhookSecretChars)})
		case strings.IndexFunc(s, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0:
			issues = append(issues, Issue{Path: "/secret", Message: "must be printable ASCII without spaces"})
		}
	}
	return issues.Err()
}

// validEventTypeName reports whether t is "*" or a dotted lower-case name.
func validEventTypeName(t string) bool {
	if t == WebhookAllEvents {
		return true
	}
	if t == "" || len(t) > MaxWebhookEventTypeChars || strings.HasPrefix(t, ".") || strings.HasSuffix(t, ".") || strings.Contains(t, "..") {
		return false
	}
	return strings.IndexFunc(t, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.') }) < 0
}

// WebhookWants reports whether an endpoint subscribed to eventTypes delivers an event of
// type t.
func WebhookWants(eventTypes []string, t string) bool {
	return slices.Contains(eventTypes, WebhookAllEvents) || slices.Contains(eventTypes, t)
}

// NewWebhookSecret returns a generated signing secret: "whsec_" and 32 random bytes in
// base64url.
func NewWebhookSecret() string {
	b := make([]byte, 32)
	rand.Read(b) //nolint:errcheck // never fails (crypto/rand)
	return "whsec_" + base64.RawURLEncoding.EncodeToString(b)
}

// SignWebhook returns the X-Svc-Signature value of body sent at t.
func SignWebhook(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + webhookMAC(secret, ts, body)
}

func webhookMAC(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Errors of VerifyWebhookSignature.
var (
	ErrWebhookSignatureMalformed = errors.New("webhook signature: malformed header")
	ErrWebhookSignatureStale     = errors.New("webhook signature: timestamp outside the tolerance")
	ErrWebhookSignatureMismatch  = errors.New("webhook signature: no v1 signature matches")
)

// VerifyWebhookSignature checks an X-Svc-Signature header against the raw body as a
// receiver does: the timestamp within tolerance of now (either way), and one of its v1
// signatures (there are several while a secret is being rotated) equal, in constant time,
// to the HMAC it recomputes.
func VerifyWebhookSignature(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrWebhookSignatureMalformed
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
		return ErrWebhookSignatureMalformed
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrWebhookSignatureStale
	}
	want := []byte(webhookMAC(secret, ts, body))
	for _, s := range sigs {
		if hmac.Equal([]byte(s), want) {
			return nil
		}
	}
	return ErrWebhookSignatureMismatch
}

// WebhookSecretKey encrypts and decrypts endpoints' signing secrets (AES-256-GCM).
type WebhookSecretKey struct{ aead cipher.AEAD }

// ParseWebhookSecretKey reads a key given as 32 bytes in base64 (standard or URL
// alphabet, padded or not).
func ParseWebhookSecretKey(s string) (WebhookSecretKey, error) {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	raw, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		raw, err = base64.RawURLEncoding.DecodeString(s)
	}
	if err != nil || len(raw) != 32 {
		return WebhookSecretKey{}, errors.New("a webhook secret key is 32 bytes in base64 (openssl rand -base64 32)")
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return WebhookSecretKey{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return WebhookSecretKey{}, err
	}
	return WebhookSecretKey{aead: aead}, nil
}

// Configured reports whether the key was parsed (the zero key encrypts nothing).
func (k WebhookSecretKey) Configured() bool { return k.aead != nil }

// Seal encrypts secret, bound to the endpoint it belongs to (its id is the additional
// data: a ciphertext copied to another endpoint does not open).
func (k WebhookSecretKey) Seal(webhookID, secret string) []byte {
	nonce := make([]byte, k.aead.NonceSize())
	rand.Read(nonce) //nolint:errcheck // never fails (crypto/rand)
	return k.aead.Seal(nonce, nonce, []byte(secret), []byte(webhookID))
}

// Open decrypts what Seal made for webhookID.
func (k WebhookSecretKey) Open(webhookID string, sealed []byte) (string, error) {
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

// WebhookTargetPolicy says which addresses and ports deliveries may reach: public
// addresses only, unless the configuration allows private and loopback ones (a service
// delivering inside its own network, and the tests), and ports 80 and 443 unless it names
// others. Checked when an endpoint is registered (an IP literal, the URL's port) and again
// for every connection (the address a name resolved to), so a name that resolves to a
// private address later is refused too.
type WebhookTargetPolicy struct {
	AllowPrivate bool
	// Ports are the ports deliveries may connect to (WEBHOOK_PORTS). Empty: the default,
	// 80 and 443, or every port when AllowPrivate (a receiver on this machine or network
	// listens where it likes).
	Ports []uint16
	// AnyPort allows every port (WEBHOOK_PORTS=*).
	AnyPort bool
}

// DefaultWebhookPorts are the ports deliveries may reach unless configured otherwise:
// a public receiver is a web server, and any other port of a public host (SMTP, a
// database) is not what a webhook is for.
var DefaultWebhookPorts = []uint16{80, 443}

// Allows reports whether a delivery may connect to addr.
func (p WebhookTargetPolicy) Allows(addr netip.Addr) bool {
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
func (p WebhookTargetPolicy) AllowsPort(port uint16) bool {
	switch {
	case p.AnyPort || len(p.Ports) == 0 && p.AllowPrivate:
		return true
	case len(p.Ports) == 0:
		return slices.Contains(DefaultWebhookPorts, port)
	}
	return slices.Contains(p.Ports, port)
}

// AllowsAddrPort reports whether a delivery may connect to ap (the dial-time check).
func (p WebhookTargetPolicy) AllowsAddrPort(ap netip.AddrPort) bool {
	return p.Allows(ap.Addr()) && p.AllowsPort(ap.Port())
}

// PortsText says which ports the policy allows, for messages.
func (p WebhookTargetPolicy) PortsText() string {
	if p.AnyPort || len(p.Ports) == 0 && p.AllowPrivate {
		return "any port"
	}
	ports := p.Ports
	if len(ports) == 0 {
		ports = DefaultWebhookPorts
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
func (p WebhookTargetPolicy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return ValidationError(Issue{Path: "/url", Message: "must be an absolute http or https URL"})
	}
	host := u.Hostname()
	if addr, err := netip.ParseAddr(host); err == nil && !p.Allows(addr) {
		return ValidationError(Issue{Path: "/url", Message: "must not be a private, loopback, link-local or special-purpose address"})
	}
	if !p.AllowPrivate && (strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost")) {
		return ValidationError(Issue{Path: "/url", Message: "must not be a private, loopback, link-local or special-purpose address"})
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || !p.AllowsPort(uint16(n)) {
		return ValidationError(Issue{Path: "/url", Message: "must use an allowed port (" + p.PortsText() + ")"})
	}
	return nil
}

// WebhookStatus says whether an endpoint receives deliveries.
type WebhookStatus string

// Endpoint states.
const (
	WebhookActive  WebhookStatus = "active"
	WebhookDeleted WebhookStatus = "deleted"
)

// Enum lists the states.
func (WebhookStatus) Enum() []any { return EnumStrings(WebhookActive, WebhookDeleted) }

// Webhook is a registered endpoint as the API shows it (never its secret).
type Webhook struct {
	ID               string        `json:"id" format:"uuid"`
	WorkspaceID      string        `json:"workspace_id" format:"uuid"`
	URL              string        `json:"url"`
	EventTypes       []string      `json:"event_types"`
	Status           WebhookStatus `json:"status"`
	CreatedAt        Time          `json:"created_at"`
	DeletedAt        *Time         `json:"deleted_at"`
	AggregateVersion int64         `json:"aggregate_version" minimum:"1"`
}

// WebhookRegistration answers POST /webhooks: the endpoint and, this once, its secret
// (null when the registration is replayed with its Idempotency-Key: the secret is not
// kept where a replay could read it).
type WebhookRegistration struct {
	Webhook
	Secret *string  `json:"secret" description:"The signing secret, shown once (null on a replay)."`
	Event  EventRef `json:"event"`
}

// WebhookCreatedPayload is the payload of webhook.created (no secret).
type WebhookCreatedPayload struct {
	ID         string   `json:"id"`
	URL        string   `json:"url"`
	EventTypes []string `json:"event_types"`
}

// WebhookDeletedPayload is the payload of webhook.deleted.
type WebhookDeletedPayload struct {
	ID string `json:"id"`
}

// WebhookDeliveryID is the stable id of the delivery of an event to an endpoint: every
// attempt and every redelivery of it carries the same id, so a receiver can drop repeats.
func WebhookDeliveryID(webhookID, eventID string) string {
	return "whd_" + Digest([]byte(webhookID + ":" + eventID))[len("sha256:"):][:24]
}

// WebhookDelivery is one event due to an endpoint.
type WebhookDelivery struct {
	WorkspaceID string         `json:"workspace_id"`
	WebhookID   string         `json:"webhook_id"`
	DeliveryID  string         `json:"delivery_id"`
	EventID     string         `json:"event_id"`
	EventType   string         `json:"event_type"`
	Position    StreamPosition `json:"position"`
}

// WebhookEndpoint is what a delivery reads of its endpoint.
type WebhookEndpoint struct {
	URL          string
	SealedSecret []byte
	Deleted      bool
	Delivered    StreamPosition // the position of the last event delivered
}

// WebhookBody is the JSON body of a delivery.
type WebhookBody struct {
	ID        string `json:"id"`   // the delivery id
	Type      string `json:"type"` // the event's type
	WebhookID string `json:"webhook_id"`
	Event     Event  `json:"event"` // as the event stream serves it
}

// WebhookNoAnswer is the reason recorded for an attempt that got no HTTP answer. It is the
// same whatever kept the answer away (an address or port the policy refuses, a name that
// does not resolve, a refused or reset connection, a timeout): the workspace reads its
// delivery records, and a dial error names addresses and tells which hosts and ports of
// the service's network answer. The worker's log keeps the cause.
const WebhookNoAnswer = "no HTTP answer: the receiver could not be reached, its address or port is not allowed, or it did not answer in time"

// WebhookAttempt is one attempt to deliver an event (GET /webhooks/{id}/deliveries).
type WebhookAttempt struct {
	DeliveryID  string  `json:"delivery_id"`
	Attempt     int     `json:"attempt" minimum:"1"`
	EventID     string  `json:"event_id" format:"uuid"`
	EventType   string  `json:"event_type"`
	AttemptedAt Time    `json:"attempted_at"`
	DurationMS  int64   `json:"duration_ms" minimum:"0"`
	StatusCode  *int    `json:"status_code" description:"The receiver's HTTP status; null when no answer came."`
	Error       *string `json:"error" description:"Why the attempt failed; null when it succeeded."`
	Succeeded   bool    `json:"succeeded"`
}
