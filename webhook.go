package accountable

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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

// WebhookDeliveryID is the stable id of the delivery of an event to an endpoint: every
// attempt and every redelivery of it carries the same id, so a receiver can drop repeats.
func WebhookDeliveryID(webhookID, eventID string) string {
	sum := sha256.Sum256([]byte(webhookID + ":" + eventID))
	return "whd_" + hex.EncodeToString(sum[:])[:24]
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
