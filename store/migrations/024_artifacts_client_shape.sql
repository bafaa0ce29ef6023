-- Artifacts take the public clients' shape (issue 25): a name, an artifact_type of the
-- catalogue (requested_type keeps the type sent when it fell back to the generic one),
-- artifact_url/external_url, a Markdown preview, a status, an initiative, and an entity
-- that may be a project outside the service (so entity_id is any text, a UUID in lower
-- case for the entities the service holds). The inline content of earlier artifacts is
-- their preview now.
--
-- Existing rows are rewritten so that they read in the new shape: title -> name, type ->
-- artifact_type and requested_artifact_type, uri -> artifact_url, content -> preview,
-- created_by -> created_by_type/created_by_id and verification.recorded_by, status draft,
-- initiative_id from their entity (as a new artifact takes it). Their content digest is
-- the one their artifact.created event carries, which the ledger keeps as recorded:
-- verification.digest_scheme says it is the earlier one (artifact-content/v1).
ALTER TABLE artifacts RENAME COLUMN type TO artifact_type;
ALTER TABLE artifacts RENAME COLUMN content TO preview_markdown;
ALTER INDEX artifacts_by_type RENAME TO artifacts_by_artifact_type;
ALTER TABLE artifacts ALTER COLUMN entity_id TYPE text USING entity_id::text;
ALTER TABLE artifacts ADD COLUMN requested_type text, ADD COLUMN status text, ADD COLUMN initiative_id uuid;

UPDATE artifacts a SET requested_type = a.artifact_type, status = 'draft',
    initiative_id = CASE a.entity_type
        WHEN 'initiative' THEN a.entity_id::uuid
        WHEN 'task' THEN (SELECT t.initiative_id FROM tasks t WHERE t.workspace_id = a.workspace_id AND t.id = a.entity_id::uuid)
        WHEN 'decision' THEN (SELECT d.initiative_id FROM decisions d WHERE d.workspace_id = a.workspace_id AND d.id = a.entity_id::uuid)
        WHEN 'run' THEN (SELECT r.initiative_id FROM runs r WHERE r.workspace_id = a.workspace_id AND r.id = a.entity_id::uuid)
        WHEN 'launch' THEN (SELECT l.initiative_id FROM launches l WHERE l.workspace_id = a.workspace_id AND l.id = a.entity_id::uuid)
    END;

UPDATE artifacts a SET doc = jsonb_build_object(
    'id', a.doc->'id',
    'workspace_id', a.doc->'workspace_id',
    'name', a.doc->'title',
    'artifact_type', to_jsonb(a.artifact_type),
    'requested_artifact_type', to_jsonb(a.requested_type),
    'artifact_url', a.doc->'uri',
    'external_url', 'null'::jsonb,
    'media_type', a.doc->'media_type',
    'entity_type', to_jsonb(a.entity_type),
    'entity_id', to_jsonb(a.entity_id),
    'initiative_id', to_jsonb(a.initiative_id),
    'status', to_jsonb(a.status),
    'version', to_jsonb(a.version),
    'description', 'null'::jsonb,
    'metadata', COALESCE(a.doc->'metadata', '{}'::jsonb),
    'created_by_type', a.doc->'created_by'->'type',
    'created_by_id', a.doc->'created_by'->'id',
    'preview_bytes', CASE WHEN a.preview_markdown IS NULL THEN 'null'::jsonb ELSE to_jsonb(octet_length(a.preview_markdown)) END,
    'verification', jsonb_build_object(
        'content_digest', a.doc->'content_digest',
        'digest_scheme', 'artifact-content/v1',
        'event_id', (SELECT to_jsonb(e.id::text) FROM ledger_events e WHERE e.workspace_id = a.workspace_id
            AND e.aggregate_type = 'artifact' AND e.aggregate_id = a.id::text AND e.aggregate_version = 1),
        'event_hash', (SELECT to_jsonb(e.event_hash) FROM ledger_events e WHERE e.workspace_id = a.workspace_id
            AND e.aggregate_type = 'artifact' AND e.aggregate_id = a.id::text AND e.aggregate_version = 1),
        'recorded_by', a.doc->'created_by'),
    'created_at', a.doc->'created_at',
    'updated_at', a.doc->'created_at');

ALTER TABLE artifacts ALTER COLUMN requested_type SET NOT NULL, ALTER COLUMN status SET NOT NULL;
CREATE INDEX artifacts_by_initiative ON artifacts (workspace_id, initiative_id, created_at DESC, id DESC)
    WHERE initiative_id IS NOT NULL;

---- create above / drop below ----

-- Back to the earlier shape, as far as it goes: a project's non-UUID id, and the members
-- the earlier shape lacks (external_url, description, status, initiative), are lost; the
-- digest of an artifact recorded in the new shape no longer describes its members.
DROP INDEX artifacts_by_initiative;
UPDATE artifacts SET entity_type = NULL, entity_id = NULL
    WHERE entity_id !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
UPDATE artifacts a SET doc = jsonb_build_object(
    'id', a.doc->'id',
    'workspace_id', a.doc->'workspace_id',
    'type', to_jsonb(a.artifact_type),
    'title', a.doc->'name',
    'uri', a.doc->'artifact_url',
    'media_type', a.doc->'media_type',
    'content_digest', a.doc->'verification'->'content_digest',
    'size_bytes', COALESCE(a.doc->'preview_bytes', '0'::jsonb),
    'has_content', to_jsonb(a.preview_markdown IS NOT NULL),
    'entity_type', to_jsonb(a.entity_type),
    'entity_id', to_jsonb(a.entity_id),
    'metadata', a.doc->'metadata',
    'created_by', a.doc->'verification'->'recorded_by',
    'created_at', a.doc->'created_at',
    'version', a.doc->'version');
ALTER TABLE artifacts DROP COLUMN requested_type, DROP COLUMN status, DROP COLUMN initiative_id;
ALTER TABLE artifacts ALTER COLUMN entity_id TYPE uuid USING entity_id::uuid;
ALTER INDEX artifacts_by_artifact_type RENAME TO artifacts_by_type;
ALTER TABLE artifacts RENAME COLUMN preview_markdown TO content;
ALTER TABLE artifacts RENAME COLUMN artifact_type TO type;
