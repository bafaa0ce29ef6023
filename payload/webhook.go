package payload

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
