-- Committed initiatives with their workstreams and milestones; their tasks are ordinary
-- work items (tasks.initiative_id, workstream_id, milestone_id).
CREATE TABLE initiatives (
    workspace_id      uuid NOT NULL,
    id                uuid NOT NULL,
    title             text NOT NULL,
    summary           text NOT NULL,
    status            text NOT NULL,
    proposal_id       uuid,
    receipt_id        uuid NOT NULL,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    aggregate_version bigint NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX initiatives_recent ON initiatives (workspace_id, created_at DESC, id DESC);

CREATE TABLE workstreams (
    workspace_id            uuid NOT NULL,
    id                      uuid NOT NULL,
    initiative_id           uuid NOT NULL,
    position                integer NOT NULL,
    name                    text NOT NULL,
    goal                    text NOT NULL,
    domain                  text NOT NULL,
    agent_id                text,
    agent_name              text,
    confidence              double precision NOT NULL,
    rationale               text NOT NULL,
    expected_tokens         bigint NOT NULL,
    expected_duration_hours double precision NOT NULL,
    expected_budget_usd     double precision NOT NULL,
    depends_on              jsonb NOT NULL,
    deliverables            jsonb NOT NULL,
    created_at              timestamptz NOT NULL,
    aggregate_version       bigint NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX workstreams_initiative ON workstreams (workspace_id, initiative_id, position);

CREATE TABLE milestones (
    workspace_id      uuid NOT NULL,
    id                uuid NOT NULL,
    initiative_id     uuid NOT NULL,
    workstream_id     uuid NOT NULL,
    position          integer NOT NULL,
    title             text NOT NULL,
    created_at        timestamptz NOT NULL,
    aggregate_version bigint NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX milestones_workstream ON milestones (workspace_id, workstream_id, position);

CREATE INDEX tasks_milestone ON tasks (workspace_id, milestone_id) WHERE milestone_id IS NOT NULL;

---- create above / drop below ----

DROP INDEX tasks_milestone;
DROP TABLE milestones;
DROP TABLE workstreams;
DROP TABLE initiatives;
