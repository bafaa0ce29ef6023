-- Each workspace's ledger is a transparency log (issue 27; package ledgerlog): its events
-- are the leaves of an RFC 6962 Merkle tree, in stream order, and the log's state is
-- published as checkpoints signed with a key the database never holds.
--
-- The log integrator (store/ledgerlog.go) appends leaves off the request path, in
-- batches, in stream order: ledger_logs is its cursor, one row per workspace.
CREATE TABLE ledger_logs (
    workspace_id  uuid PRIMARY KEY,
    tree_size     bigint NOT NULL DEFAULT 0 CHECK (tree_size >= 0),
    -- The stream position of the newest event integrated (the stream's cursor).
    last_position bigint NOT NULL DEFAULT 0,
    last_seq      bigint NOT NULL DEFAULT 0,
    updated_at    timestamptz NOT NULL
);

-- The leaf index of each event.
CREATE TABLE ledger_log_leaves (
    workspace_id uuid NOT NULL,
    leaf_index   bigint NOT NULL CHECK (leaf_index >= 0),
    event_id     uuid NOT NULL,
    PRIMARY KEY (workspace_id, leaf_index),
    CONSTRAINT ledger_log_leaves_event UNIQUE (workspace_id, event_id)
);

-- The tree's stored hashes (tlog.StoredHashIndex order): O(log n) amortised, in fact two
-- per leaf on average; every tile, root, inclusion and consistency proof is read from them.
CREATE TABLE ledger_log_hashes (
    workspace_id uuid NOT NULL,
    hash_index   bigint NOT NULL CHECK (hash_index >= 0),
    hash         bytea NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (workspace_id, hash_index)
);

-- Every signed checkpoint is kept: a client holding an old one can always be given the
-- consistency proof to a newer one.
CREATE TABLE ledger_checkpoints (
    workspace_id uuid NOT NULL,
    tree_size    bigint NOT NULL CHECK (tree_size >= 0),
    root_hash    bytea NOT NULL CHECK (length(root_hash) = 32),
    signed_note  text NOT NULL,
    signed_at    timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, tree_size)
);

-- The witnesses' cosignatures of the checkpoints (C2SP tlog-cosignature), published with
-- them: each is the signed-note line "— <witness> <base64>".
CREATE TABLE ledger_cosignatures (
    workspace_id uuid NOT NULL,
    tree_size    bigint NOT NULL,
    witness      text NOT NULL,
    signature    text NOT NULL,
    cosigned_at  timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, tree_size, witness)
);

-- What each witness last did with each workspace's log: the size it cosigned last, and its
-- refusal of a later checkpoint (an alert: the log showed it a history inconsistent with
-- the one it cosigned) until it cosigns again.
CREATE TABLE ledger_witness_status (
    workspace_id  uuid NOT NULL,
    witness       text NOT NULL,
    cosigned_size bigint NOT NULL DEFAULT 0,
    refusal       text,
    refused_at    timestamptz,
    updated_at    timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, witness)
);

-- Like the ledger, the log is append-only for the service (store/roles.go also revokes
-- UPDATE and DELETE from the service role); only the tree's cursor and the witnesses'
-- status move.
CREATE FUNCTION ledger_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER ledger_log_leaves_append_only BEFORE UPDATE OR DELETE ON ledger_log_leaves
    FOR EACH ROW EXECUTE FUNCTION ledger_log_append_only();
CREATE TRIGGER ledger_log_hashes_append_only BEFORE UPDATE OR DELETE ON ledger_log_hashes
    FOR EACH ROW EXECUTE FUNCTION ledger_log_append_only();
CREATE TRIGGER ledger_checkpoints_append_only BEFORE UPDATE OR DELETE ON ledger_checkpoints
    FOR EACH ROW EXECUTE FUNCTION ledger_log_append_only();
CREATE TRIGGER ledger_cosignatures_append_only BEFORE UPDATE OR DELETE ON ledger_cosignatures
    FOR EACH ROW EXECUTE FUNCTION ledger_log_append_only();

---- create above / drop below ----

DROP TABLE ledger_witness_status;
DROP TABLE ledger_cosignatures;
DROP TABLE ledger_checkpoints;
DROP TABLE ledger_log_hashes;
DROP TABLE ledger_log_leaves;
DROP TABLE ledger_logs;
DROP FUNCTION ledger_log_append_only();
