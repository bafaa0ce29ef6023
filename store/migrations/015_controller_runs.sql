-- Domain controller runs (shadow mode): one row per run id (the same request names the same
-- run), with its result as answered.
CREATE TABLE controller_runs (
    workspace_id uuid NOT NULL,
    run_id       text NOT NULL,
    domain       text NOT NULL,
    created_at   timestamptz NOT NULL,
    result       jsonb NOT NULL,
    PRIMARY KEY (workspace_id, run_id)
);
CREATE INDEX controller_runs_recent ON controller_runs (workspace_id, domain, created_at DESC);

---- create above / drop below ----

DROP TABLE controller_runs;
