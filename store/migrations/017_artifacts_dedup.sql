-- Artifacts: what work produced. doc is the artifact as the API shows it, without its
-- inline content, which has its own column (read only by GET /artifacts/{id}, so lists
-- stay small); the other columns are what lists filter and order on.
CREATE TABLE artifacts (
    workspace_id uuid NOT NULL,
    id           uuid NOT NULL,
    type         text NOT NULL,
    entity_type  text,
    entity_id    uuid,
    created_at   timestamptz NOT NULL,
    version      bigint NOT NULL,
    doc          jsonb NOT NULL,
    content      text,
    PRIMARY KEY (workspace_id, id),
    CONSTRAINT artifacts_entity_ref CHECK ((entity_type IS NULL) = (entity_id IS NULL))
);
CREATE INDEX artifacts_recent ON artifacts (workspace_id, created_at DESC, id DESC);
CREATE INDEX artifacts_by_type ON artifacts (workspace_id, type, created_at DESC, id DESC);
CREATE INDEX artifacts_by_entity ON artifacts (workspace_id, entity_type, entity_id, created_at DESC, id DESC)
    WHERE entity_id IS NOT NULL;

-- Deduplication claims: one row per fingerprint of (workspace, source, event_key), holding
-- the standing claim. A claim is taken by INSERT ... ON CONFLICT that replaces only an
-- expired claim, so concurrent claimants serialise on the row and exactly one wins;
-- previous_claim_id is the expired claim a winner replaced.
CREATE TABLE dedup_claims (
    workspace_id      uuid NOT NULL,
    fingerprint_hash  text NOT NULL,
    claim_id          uuid NOT NULL,
    previous_claim_id uuid,
    source            text NOT NULL,
    event_key         text NOT NULL,
    initiative_id     uuid,
    active_run_id     uuid,
    claimed_by_type   text NOT NULL,
    claimed_by_id     text NOT NULL,
    claimed_at        timestamptz NOT NULL,
    expires_at        timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, fingerprint_hash)
);

---- create above / drop below ----

DROP TABLE dedup_claims;
DROP TABLE artifacts;
