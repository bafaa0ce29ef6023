-- Imported Agent Work Receipts: producer-reported claims. Each row keeps the document as
-- imported (its RFC 8785 canonical JSON) beside the columns lists, projections and the
-- ledger check read. (The table "receipts" is the work completions' own.)
CREATE TABLE agent_work_receipts (
    workspace_id        uuid NOT NULL,
    id                  uuid NOT NULL,
    -- The document's own receipt_id: one document per receipt_id in a workspace.
    external_receipt_id text NOT NULL,
    schema_version      text NOT NULL,
    -- sha256:<hex> of the canonical document (the import's natural idempotency key).
    document_digest     text NOT NULL,
    actor_type          text NOT NULL,
    actor_id            text NOT NULL,
    runtime             text,
    outcome_status      text NOT NULL,
    verification_status text NOT NULL,
    content_hash_state  text NOT NULL,
    cost_currency       text NOT NULL,
    cost_total          double precision NOT NULL,
    started_at          timestamptz NOT NULL,
    completed_at        timestamptz NOT NULL,
    issued_at           timestamptz NOT NULL,
    imported_at         timestamptz NOT NULL,
    aggregate_version   bigint NOT NULL,
    document            jsonb NOT NULL,
    PRIMARY KEY (workspace_id, id),
    CONSTRAINT agent_work_receipts_external_id UNIQUE (workspace_id, external_receipt_id)
);
CREATE INDEX agent_work_receipts_recent ON agent_work_receipts (workspace_id, imported_at DESC, id DESC);
CREATE INDEX agent_work_receipts_completed ON agent_work_receipts (workspace_id, completed_at);

---- create above / drop below ----

DROP TABLE agent_work_receipts;
