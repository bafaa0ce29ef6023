-- Stream positions that survive a dump and a restore into another cluster.
--
-- The stream orders events by (stream_position, seq) and reads only below the oldest
-- transaction still running, so an event that commits late is never skipped. Until now the
-- position was the writing transaction's id (pg_current_xact_id()). Transaction ids belong
-- to a cluster: a pg_dump restored into a new cluster starts counting from a few hundred,
-- so events written after the restore would sort before the old ones (and a cursor past
-- them would skip them), and the old events would sit above the new cluster's horizon.
--
-- A position is now the transaction id plus an offset of the cluster the database runs on
-- (an epoch). The first time a session of a cluster needs the offset and the newest epoch
-- belongs to another cluster (the database was restored, or moved back), a new epoch
-- starts whose offset puts every position after every position already used. Sessions
-- cache the offset (a session never changes cluster), so the check costs one lookup per
-- connection. Existing positions keep their values (epoch 1 has offset 0), so cursors
-- handed out before this migration stay valid.

CREATE TABLE ledger_stream_epochs (
    epoch             bigint PRIMARY KEY,
    system_identifier bigint NOT NULL,
    position_offset   bigint NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now()
);

INSERT INTO ledger_stream_epochs (epoch, system_identifier, position_offset)
SELECT 1, system_identifier, 0 FROM pg_control_system();

-- ledger_stream_offset returns the offset of this cluster's epoch, starting a new epoch
-- when the newest one belongs to another cluster.
CREATE FUNCTION ledger_stream_offset() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    cached text := current_setting('accountable.stream_offset', true);
    sysid  bigint;
    latest ledger_stream_epochs%ROWTYPE;
    first  bigint;
BEGIN
    IF cached IS NOT NULL AND cached <> '' THEN
        RETURN cached::bigint;
    END IF;
    SELECT system_identifier INTO sysid FROM pg_control_system();
    SELECT * INTO latest FROM ledger_stream_epochs ORDER BY epoch DESC LIMIT 1;
    IF NOT FOUND OR latest.system_identifier <> sysid THEN
        -- One session starts the epoch; the others wait and then read it.
        PERFORM pg_advisory_xact_lock(7810928364519274021);
        SELECT * INTO latest FROM ledger_stream_epochs ORDER BY epoch DESC LIMIT 1;
        IF NOT FOUND OR latest.system_identifier <> sysid THEN
            -- Every transaction that can still write has an id at or above the oldest
            -- running one, so positions of this epoch start after the highest one used.
            SELECT coalesce(max(stream_position), 0) + 1 INTO first FROM ledger_events;
            INSERT INTO ledger_stream_epochs (epoch, system_identifier, position_offset)
            VALUES (coalesce(latest.epoch, 0) + 1, sysid,
                    first - pg_snapshot_xmin(pg_current_snapshot())::text::bigint)
            RETURNING * INTO latest;
        END IF;
    END IF;
    -- A session setting: gone with the session, and undone if this transaction rolls back.
    PERFORM set_config('accountable.stream_offset', latest.position_offset::text, false);
    RETURN latest.position_offset;
END;
$$;

ALTER TABLE ledger_events ALTER COLUMN tx_id DROP DEFAULT;
ALTER TABLE ledger_events ALTER COLUMN tx_id TYPE bigint USING tx_id::text::bigint;
ALTER TABLE ledger_events RENAME COLUMN tx_id TO stream_position;
ALTER TABLE ledger_events ALTER COLUMN stream_position
    SET DEFAULT pg_current_xact_id()::text::bigint + ledger_stream_offset();

---- create above / drop below ----

ALTER TABLE ledger_events ALTER COLUMN stream_position DROP DEFAULT;
ALTER TABLE ledger_events RENAME COLUMN stream_position TO tx_id;
ALTER TABLE ledger_events ALTER COLUMN tx_id TYPE xid8 USING tx_id::text::xid8;
ALTER TABLE ledger_events ALTER COLUMN tx_id SET DEFAULT pg_current_xact_id();
DROP FUNCTION ledger_stream_offset();
DROP TABLE ledger_stream_epochs;
