-- Launches: one job per workstream in scope, each reserving its estimated cost against the
-- launch's ceiling, dispatching a run and settling the reservation against the run's
-- reported cost. The LaunchDispatch workflow drives them; every change is a command.
CREATE TABLE launches (
    workspace_id          uuid NOT NULL,
    id                    uuid NOT NULL,
    initiative_id         uuid NOT NULL,
    state                 text NOT NULL,
    model_tier            text NOT NULL,
    autonomy              text NOT NULL,
    effective_autonomy    text NOT NULL,
    scope_workstream_id   uuid,
    scope_task_id         uuid,
    server_estimate_cents bigint NOT NULL,
    cost_ceiling_cents    bigint NOT NULL,
    reserved_cents        bigint NOT NULL DEFAULT 0,
    settled_cents         bigint NOT NULL DEFAULT 0,
    blocking_decision_id  uuid,
    workflow_id           text NOT NULL,
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    aggregate_version     bigint NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX launches_initiative ON launches (workspace_id, initiative_id, created_at DESC);

CREATE TABLE launch_jobs (
    workspace_id   uuid NOT NULL,
    id             uuid NOT NULL,
    launch_id      uuid NOT NULL,
    position       integer NOT NULL,
    workstream_id  uuid NOT NULL,
    task_id        uuid,
    agent_id       text,
    status         text NOT NULL,
    block_code     text,
    estimate_cents bigint NOT NULL,
    decision_id    uuid,
    run_id         uuid,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX launch_jobs_launch ON launch_jobs (workspace_id, launch_id, position);

-- One reservation per job: the constraint the reservation command relies on.
CREATE TABLE reservations (
    workspace_id        uuid NOT NULL,
    id                  uuid NOT NULL,
    launch_id           uuid NOT NULL,
    job_id              uuid NOT NULL,
    cost_estimate_cents bigint NOT NULL,
    settlement_status   text NOT NULL,
    settled_cents       bigint,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, id),
    CONSTRAINT reservations_one_per_job UNIQUE (workspace_id, job_id)
);

CREATE TABLE runs (
    workspace_id      uuid NOT NULL,
    id                uuid NOT NULL,
    launch_id         uuid NOT NULL,
    job_id            uuid NOT NULL,
    initiative_id     uuid NOT NULL,
    workstream_id     uuid NOT NULL,
    agent_id          text,
    status            text NOT NULL,
    outcome_kind      text,
    cost_cents        bigint NOT NULL DEFAULT 0,
    summary           text,
    evidence          jsonb NOT NULL DEFAULT '{}',
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    finalized_at      timestamptz,
    aggregate_version bigint NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX runs_recent ON runs (workspace_id, created_at DESC, id DESC);
CREATE INDEX runs_launch ON runs (workspace_id, launch_id);

ALTER TABLE decisions ADD CONSTRAINT decisions_launch_job UNIQUE (workspace_id, job_id);

---- create above / drop below ----

ALTER TABLE decisions DROP CONSTRAINT decisions_launch_job;
DROP TABLE runs;
DROP TABLE reservations;
DROP TABLE launch_jobs;
DROP TABLE launches;
