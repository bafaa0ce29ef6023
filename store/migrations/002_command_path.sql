-- The one command path: every command locks the heads of the aggregates it changes, appends
-- their events chained to those heads and moves the heads, in one transaction. The heads
-- also anchor each chain: verification compares them with the ledger, so deleting the
-- newest event of a chain, truncating the ledger or removing an aggregate is detected.

CREATE TABLE ledger_heads (
    workspace_id   uuid NOT NULL,
    aggregate_type text NOT NULL,
    aggregate_id   text NOT NULL,
    version        bigint NOT NULL CHECK (version >= 1),
    event_id       uuid NOT NULL,
    event_hash     text NOT NULL,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, aggregate_type, aggregate_id)
);

INSERT INTO ledger_heads (workspace_id, aggregate_type, aggregate_id, version, event_id, event_hash, updated_at)
SELECT DISTINCT ON (workspace_id, aggregate_type, aggregate_id)
       workspace_id, aggregate_type, aggregate_id, aggregate_version, id, event_hash, recorded_at
FROM ledger_events
ORDER BY workspace_id, aggregate_type, aggregate_id, aggregate_version DESC;

-- Idempotency records are versioned response documents ({"v":1,"data":...}, explicit JSON
-- names), complete when the command committed, or pending while a workflow-backed
-- operation runs. Records written before this migration stored Go field names: they are
-- dropped (they answer replays for 24 hours only).
DELETE FROM idempotency_records;
ALTER TABLE idempotency_records RENAME COLUMN result TO response;
ALTER TABLE idempotency_records ALTER COLUMN response DROP NOT NULL;
ALTER TABLE idempotency_records ADD COLUMN status text NOT NULL DEFAULT 'completed'
    CHECK (status IN ('pending', 'completed'));
ALTER TABLE idempotency_records ADD COLUMN workflow_id text;
ALTER TABLE idempotency_records ADD CONSTRAINT idempotency_records_complete
    CHECK (status = 'pending' OR response IS NOT NULL);

-- The transactional outbox: a command that needs a workflow started or signalled writes a
-- message here in its own transaction; the relay delivers it after the commit (at once, and
-- again after a failure), with the workflow id taken from the message, so a redelivery
-- changes nothing.
CREATE TABLE outbox (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id  uuid NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('start', 'signal')),
    workflow_name text NOT NULL,
    workflow_id   text NOT NULL,
    signal_name   text,
    payload       jsonb NOT NULL,
    created_at    timestamptz NOT NULL,
    available_at  timestamptz NOT NULL,
    attempts      integer NOT NULL DEFAULT 0,
    last_error    text
);
CREATE INDEX outbox_available ON outbox (available_at);

ALTER TABLE ledger_verifications ADD COLUMN workflow_id text;
UPDATE ledger_verifications SET workflow_id = 'ledger-verification/' || workspace_id || '/' || id;
ALTER TABLE ledger_verifications ALTER COLUMN workflow_id SET NOT NULL;

-- Agent keys: the agent acts for the key's user, and the ledger records it as the actor.
ALTER TABLE api_keys ADD COLUMN agent_name text;

---- create above / drop below ----

ALTER TABLE api_keys DROP COLUMN agent_name;
ALTER TABLE ledger_verifications DROP COLUMN workflow_id;
DROP TABLE outbox;
ALTER TABLE idempotency_records DROP CONSTRAINT idempotency_records_complete;
ALTER TABLE idempotency_records DROP COLUMN workflow_id;
ALTER TABLE idempotency_records DROP COLUMN status;
DELETE FROM idempotency_records WHERE response IS NULL;
ALTER TABLE idempotency_records ALTER COLUMN response SET NOT NULL;
ALTER TABLE idempotency_records RENAME COLUMN response TO result;
DROP TABLE ledger_heads;
