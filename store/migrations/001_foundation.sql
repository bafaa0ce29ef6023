-- Foundation: workspaces, users and their API keys; the Work area; the ledger; idempotency
-- records. Every workspace-owned table leads its key with workspace_id. The write-path
-- tables deliberately carry no foreign key to workspaces: each insert would take a share
-- lock on the one workspace row, a workspace-wide hot spot. Requests reach them only
-- after the workspace was resolved from the credential.

CREATE TABLE workspaces (
    id         uuid PRIMARY KEY,
    name       text NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE TABLE users (
    id         uuid PRIMARY KEY,
    email      text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL
);

CREATE TABLE workspace_members (
    workspace_id uuid NOT NULL REFERENCES workspaces (id),
    user_id      uuid NOT NULL REFERENCES users (id),
    role         text NOT NULL DEFAULT 'owner',
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX workspace_members_user ON workspace_members (user_id);

-- Keys are stored only as SHA-256 hashes; the prefix is public and unique.
CREATE TABLE api_keys (
    id           uuid PRIMARY KEY,
    prefix       text NOT NULL UNIQUE,
    key_hash     bytea NOT NULL,
    name         text NOT NULL,
    user_id      uuid NOT NULL REFERENCES users (id),
    workspace_id uuid NOT NULL REFERENCES workspaces (id),
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz
);

CREATE TABLE tasks (
    workspace_id         uuid NOT NULL,
    id                   uuid NOT NULL,
    title                text NOT NULL,
    description          text,
    status               text NOT NULL,
    priority             text NOT NULL,
    due_date             timestamptz,
    initiative_id        uuid,
    workstream_id        uuid,
    milestone_id         uuid,
    metadata             jsonb NOT NULL DEFAULT '{}',
    estimated_cost_cents bigint,
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL,
    aggregate_version    bigint NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX tasks_list ON tasks (workspace_id, created_at DESC, id DESC);

CREATE TABLE receipts (
    workspace_id            uuid NOT NULL,
    id                      uuid NOT NULL,
    task_id                 uuid NOT NULL,
    status                  text NOT NULL,
    summary                 text NOT NULL,
    measured_duration_hours double precision,
    cost_cents              bigint,
    evidence                jsonb NOT NULL DEFAULT '{}',
    event_id                uuid NOT NULL,
    created_at              timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, id),
    FOREIGN KEY (workspace_id, task_id) REFERENCES tasks (workspace_id, id)
);
CREATE INDEX receipts_task ON receipts (workspace_id, task_id);

-- The ledger. Events of one aggregate form a hash chain (previous_hash -> event_hash of the
-- previous version). The stream orders events by (tx_id, seq) and reads only below the
-- oldest transaction still running, so an event that commits late is never skipped.
CREATE TABLE ledger_events (
    workspace_id      uuid NOT NULL,
    id                uuid NOT NULL,
    seq               bigint GENERATED ALWAYS AS IDENTITY,
    tx_id             xid8 NOT NULL DEFAULT pg_current_xact_id(),
    aggregate_type    text NOT NULL,
    aggregate_id      text NOT NULL,
    aggregate_version bigint NOT NULL CHECK (aggregate_version >= 1),
    event_type        text NOT NULL,
    schema_version    text NOT NULL,
    actor_type        text NOT NULL,
    actor_id          text NOT NULL,
    payload           jsonb NOT NULL,
    payload_digest    text NOT NULL,
    occurred_at       timestamptz NOT NULL,
    recorded_at       timestamptz NOT NULL,
    idempotency_key   text,
    causation_id      text,
    correlation_id    text,
    previous_hash     text,
    event_hash        text NOT NULL,
    PRIMARY KEY (workspace_id, id),
    CONSTRAINT ledger_events_aggregate_version UNIQUE (workspace_id, aggregate_type, aggregate_id, aggregate_version)
);
CREATE INDEX ledger_events_stream ON ledger_events (workspace_id, tx_id, seq);

-- The ledger is append-only.
CREATE FUNCTION ledger_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ledger_events is append-only' USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER ledger_events_append_only BEFORE UPDATE OR DELETE ON ledger_events
    FOR EACH ROW EXECUTE FUNCTION ledger_events_append_only();

CREATE TABLE idempotency_records (
    workspace_id   uuid NOT NULL,
    key            text NOT NULL,
    operation      text NOT NULL,
    request_digest text NOT NULL,
    result         json NOT NULL,
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, key)
);
CREATE INDEX idempotency_records_expiry ON idempotency_records (expires_at);

-- Background ledger verifications run as Temporal workflows; their results land here.
CREATE TABLE ledger_verifications (
    workspace_id          uuid NOT NULL,
    id                    uuid NOT NULL,
    status                text NOT NULL,
    requested_at          timestamptz NOT NULL,
    completed_at          timestamptz,
    verified              boolean,
    event_count           bigint,
    head_hash             text,
    first_broken_event_id uuid,
    first_broken_reason   text,
    PRIMARY KEY (workspace_id, id)
);

---- create above / drop below ----

DROP TABLE ledger_verifications;
DROP TABLE idempotency_records;
DROP TABLE ledger_events;
DROP FUNCTION ledger_events_append_only();
DROP TABLE receipts;
DROP TABLE tasks;
DROP TABLE api_keys;
DROP TABLE workspace_members;
DROP TABLE users;
DROP TABLE workspaces;
