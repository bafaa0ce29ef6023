-- The projections (GET /projections/...) fold the workspace's ledger events of a few types
-- over a time range. This index serves exactly those types (the list is
-- accountable.ProjectionEventTypes; store/projections.go repeats it in each query as a literal
-- so the planner can use this partial index), so appends of every other event pay nothing
-- for it.
CREATE INDEX ledger_events_projection ON ledger_events (workspace_id, event_type, occurred_at)
    WHERE event_type IN ('work.completed', 'receipt.imported', 'run.finalized', 'decision.proposed',
        'decision.approved', 'decision.declined', 'artifact.created', 'episode.recorded',
        'initiative_proposal.generated');

---- create above / drop below ----

DROP INDEX ledger_events_projection;
