-- Discovery runs: the run as the API shows it (doc), its request (observations included)
-- and, once it has one, its result (candidates).
CREATE TABLE discovery_runs (
    workspace_id      uuid NOT NULL,
    id                uuid NOT NULL,
    status            text NOT NULL,
    created_at        timestamptz NOT NULL,
    aggregate_version bigint NOT NULL,
    doc               jsonb NOT NULL,
    request           jsonb NOT NULL,
    cards             jsonb NOT NULL DEFAULT '[]',
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX discovery_runs_recent ON discovery_runs (workspace_id, created_at DESC, id DESC);

-- A process proposed from a discovery run's candidate: one per candidate.
ALTER TABLE operating_processes ADD COLUMN discovery_run_id uuid, ADD COLUMN discovery_candidate_id uuid;
CREATE UNIQUE INDEX operating_processes_candidate ON operating_processes (workspace_id, discovery_candidate_id)
    WHERE discovery_candidate_id IS NOT NULL;

---- create above / drop below ----

DROP INDEX operating_processes_candidate;
ALTER TABLE operating_processes DROP COLUMN discovery_candidate_id, DROP COLUMN discovery_run_id;
DROP TABLE discovery_runs;
