-- Webhook endpoints: where a workspace's events are delivered. The signing secret is kept
-- sealed (AES-256-GCM with WEBHOOK_SECRET_KEY, bound to the endpoint's id), not hashed:
-- every delivery is signed with it. delivered_* is the delivery's place in the
-- workspace's stream: the position of the last event delivered (NULL: none yet; the
-- endpoint's own webhook.created event, created_event_id, is where it starts).
CREATE TABLE webhooks (
    workspace_id       uuid NOT NULL,
    id                 uuid NOT NULL,
    url                text NOT NULL,
    event_types        text[] NOT NULL,
    secret_sealed      bytea NOT NULL,
    created_at         timestamptz NOT NULL,
    created_event_id   uuid NOT NULL,
    deleted_at         timestamptz,
    aggregate_version  bigint NOT NULL,
    delivered_position bigint,
    delivered_seq      bigint,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX webhooks_recent ON webhooks (workspace_id, created_at DESC, id DESC);

-- Every attempt to deliver an event to an endpoint. delivery_id is the same for every
-- attempt and redelivery of one event to one endpoint; attempt counts from 1.
CREATE TABLE webhook_attempts (
    workspace_id uuid NOT NULL,
    webhook_id   uuid NOT NULL,
    delivery_id  text NOT NULL,
    attempt      int NOT NULL,
    event_id     uuid NOT NULL,
    event_type   text NOT NULL,
    attempted_at timestamptz NOT NULL,
    duration_ms  bigint NOT NULL,
    status_code  int,
    error        text,
    succeeded    boolean NOT NULL,
    PRIMARY KEY (workspace_id, webhook_id, delivery_id, attempt)
);
CREATE INDEX webhook_attempts_recent ON webhook_attempts (workspace_id, webhook_id, attempted_at DESC);

---- create above / drop below ----

DROP TABLE webhook_attempts;
DROP TABLE webhooks;
