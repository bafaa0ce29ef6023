-- Episodes: observed executions of operating processes.
CREATE TABLE episodes (
    workspace_id      uuid NOT NULL,
    id                uuid NOT NULL,
    process_id        uuid NOT NULL,
    created_at        timestamptz NOT NULL,
    aggregate_version bigint NOT NULL,
    doc               jsonb NOT NULL,
    PRIMARY KEY (workspace_id, id),
    FOREIGN KEY (workspace_id, process_id) REFERENCES operating_processes (workspace_id, id)
);
CREATE INDEX episodes_recent ON episodes (workspace_id, created_at DESC, id DESC);
CREATE INDEX episodes_process ON episodes (workspace_id, process_id);

---- create above / drop below ----

DROP TABLE episodes;
