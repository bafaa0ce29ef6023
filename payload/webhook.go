package payload

import "github.com/accountablework/accountable"

// The payload types of these events (Types).
func init() {
	describes[WebhookCreated](accountable.EventWebhookCreated)
	describes[WebhookDeleted](accountable.EventWebhookDeleted)
}

// WebhookCreated is the payload of webhook.created (no secret).
type WebhookCreated struct {
	ID         string   `json:"id"`
	URL        string   `json:"url"`
	EventTypes []string `json:"event_types"`
}

// WebhookDeleted is the payload of webhook.deleted.
type WebhookDeleted struct {
	ID string `json:"id"`
}
