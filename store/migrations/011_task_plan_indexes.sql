-- The tasks of an initiative and of a workstream are read by launches (a job's task count),
-- lifecycle actions and the initiative tree: without these, each read scanned every task of
-- the workspace (a launch of 20 workstreams in a workspace of a million tasks took seconds).
CREATE INDEX tasks_initiative ON tasks (workspace_id, initiative_id) WHERE initiative_id IS NOT NULL;
CREATE INDEX tasks_workstream ON tasks (workspace_id, workstream_id) WHERE workstream_id IS NOT NULL;

---- create above / drop below ----

DROP INDEX tasks_workstream;
DROP INDEX tasks_initiative;
