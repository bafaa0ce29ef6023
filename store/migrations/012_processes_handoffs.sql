-- Operating processes with their revisions, and handoffs between stages. Each row keeps its
-- resource as the API shows it (doc) beside the columns lists filter and order on.
CREATE TABLE operating_processes (
    workspace_id      uuid NOT NULL,
    id                uuid NOT NULL,
    lifecycle_state   text NOT NULL,
    provenance_mode   text NOT NULL,
    created_at        timestamptz NOT NULL,
    aggregate_version bigint NOT NULL,
    doc               jsonb NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX operating_processes_recent ON operating_processes (workspace_id, created_at DESC, id DESC);

CREATE TABLE process_revisions (
    workspace_id    uuid NOT NULL,
    id              uuid NOT NULL,
    process_id      uuid NOT NULL,
    revision_number bigint NOT NULL,
    doc             jsonb NOT NULL,
    PRIMARY KEY (workspace_id, id),
    CONSTRAINT process_revisions_number UNIQUE (workspace_id, process_id, revision_number),
    FOREIGN KEY (workspace_id, process_id) REFERENCES operating_processes (workspace_id, id)
);

CREATE TABLE handoffs (
    workspace_id      uuid NOT NULL,
    id                uuid NOT NULL,
    status            text NOT NULL,
    due_at            timestamptz,
    sla_breached_at   timestamptz,
    created_at        timestamptz NOT NULL,
    aggregate_version bigint NOT NULL,
    doc               jsonb NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX handoffs_recent ON handoffs (workspace_id, created_at DESC, id DESC);

---- create above / drop below ----

DROP TABLE handoffs;
DROP TABLE process_revisions;
DROP TABLE operating_processes;
