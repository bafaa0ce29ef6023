-- Decisions put to people (budget approvals, routes, admitted proposals), decided once.
CREATE TABLE decisions (
    workspace_id      uuid NOT NULL,
    id                uuid NOT NULL,
    title             text NOT NULL,
    summary           text,
    shape             text NOT NULL,
    urgency           text NOT NULL,
    status            text NOT NULL,
    options           jsonb NOT NULL,
    selected_option   text,
    initiative_id     uuid,
    launch_id         uuid,
    job_id            uuid,
    context           jsonb NOT NULL,
    due_at            timestamptz,
    requested_by_type text NOT NULL,
    requested_by_id   text NOT NULL,
    decided_by_type   text,
    decided_by_id     text,
    decided_at        timestamptz,
    note              text,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    aggregate_version bigint NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX decisions_recent ON decisions (workspace_id, created_at DESC, id DESC);

---- create above / drop below ----

DROP TABLE decisions;
