-- The idempotency claim of a command's first round trip (store.begin) in one statement:
-- take the key's lock without waiting, then read its live record. The record is read by a
-- query after the lock (a volatile function's queries each take a new snapshot), so it
-- sees the record of the request that held the key before. The record is read even when
-- the lock is held elsewhere; the caller then ignores it and answers in-progress.
CREATE FUNCTION idempotency_claim(workspace text, idempotency_key text, at timestamptz,
    OUT locked boolean, OUT operation text, OUT request_digest text, OUT status text,
    OUT workflow_id text, OUT response text)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    locked := pg_try_advisory_xact_lock(hashtextextended(workspace || '/' || idempotency_key, 0));
    SELECT r.operation, r.request_digest, r.status, r.workflow_id, r.response::text
      INTO operation, request_digest, status, workflow_id, response
      FROM idempotency_records r
     WHERE r.workspace_id = workspace::uuid AND r.key = idempotency_key AND r.expires_at > at;
END;
$$;

---- create above / drop below ----

DROP FUNCTION idempotency_claim(text, text, timestamptz);
