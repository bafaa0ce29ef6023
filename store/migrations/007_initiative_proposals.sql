-- Initiative proposals: immutable, digest-addressed plans made by the ProposalGeneration
-- workflow. A proposal writes no workstream, milestone or task rows; committing it does.
CREATE TABLE initiative_proposals (
    workspace_id       uuid NOT NULL,
    id                 uuid NOT NULL,
    digest             text NOT NULL,
    status             text NOT NULL CHECK (status IN ('proposed', 'instantiated', 'expired')),
    expires_at         timestamptz NOT NULL,
    plan               jsonb NOT NULL,
    assignment_source  text NOT NULL,
    economics          jsonb NOT NULL,
    generation_receipt jsonb NOT NULL,
    request_title      text NOT NULL,
    created_at         timestamptz NOT NULL,
    aggregate_version  bigint NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

-- Proposal generation is limited per workspace (6 a minute) across every API replica:
-- the requests of the last minute, read and written under a per-workspace lock.
CREATE TABLE generation_requests (
    workspace_id uuid NOT NULL,
    id           uuid NOT NULL,
    requested_at timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX generation_requests_recent ON generation_requests (workspace_id, requested_at);

-- A workflow-backed operation's pending idempotency record names the run it waits for, so
-- a retry attaches to that very run.
ALTER TABLE idempotency_records ADD COLUMN workflow_run_id text;

---- create above / drop below ----

ALTER TABLE idempotency_records DROP COLUMN workflow_run_id;
DROP TABLE generation_requests;
DROP TABLE initiative_proposals;
