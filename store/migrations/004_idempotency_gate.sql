-- The idempotency gate of commands sent in one round trip (store.runBlind): BEGIN, this
-- gate, the command's writes, its idempotency record and COMMIT go together, so the
-- gate decides before any write whether the command may run. It takes the key's lock (the
-- same advisory lock the two-round-trip path takes) and checks that the key has no live
-- record; otherwise it raises, which aborts the transaction before any write, and the
-- service answers the request the long way (a replay, or idempotency_request_in_progress).
CREATE FUNCTION idempotency_gate(workspace text, idempotency_key text, at timestamptz) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtextextended(workspace || '/' || idempotency_key, 0)) THEN
        RAISE EXCEPTION 'the idempotency key is held by another request' USING ERRCODE = 'AW001';
    END IF;
    IF EXISTS (SELECT 1 FROM idempotency_records r
               WHERE r.workspace_id = workspace::uuid AND r.key = idempotency_key AND r.expires_at > at) THEN
        RAISE EXCEPTION 'the idempotency key has a record' USING ERRCODE = 'AW002';
    END IF;
    RETURN true;
END;
$$;

---- create above / drop below ----

DROP FUNCTION idempotency_gate(text, text, timestamptz);
