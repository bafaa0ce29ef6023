-- Context packs (issue 28) read a scope's decisions, the workspace's open handoffs and the
-- newest receipts, each ranked and bounded. Without these each read scanned and sorted
-- every row of its kind in the workspace: in a workspace of 20,000 decisions the two
-- decision reads took 55-110 ms (JIT compilation included), the open handoffs 30-50 ms.
CREATE INDEX decisions_initiative ON decisions (workspace_id, initiative_id) WHERE initiative_id IS NOT NULL;
CREATE INDEX decisions_pending ON decisions (workspace_id) WHERE status = 'pending';
CREATE INDEX decisions_decided ON decisions (workspace_id, decided_at DESC) WHERE status IN ('approved', 'declined');
-- In the order the capsule ranks them: breached first, then by due time, newest first.
CREATE INDEX handoffs_open ON handoffs (workspace_id, (sla_breached_at IS NULL), due_at, created_at DESC, id)
    WHERE status NOT IN ('fulfilled', 'cancelled');
CREATE INDEX receipts_recent ON receipts (workspace_id, created_at DESC, id DESC);

---- create above / drop below ----

DROP INDEX receipts_recent;
DROP INDEX handoffs_open;
DROP INDEX decisions_decided;
DROP INDEX decisions_pending;
DROP INDEX decisions_initiative;
