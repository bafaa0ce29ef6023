-- Dead letters: a workflow message Temporal refuses for good (an invalid argument, such as
-- a search attribute the namespace lacks) is kept with dead_at set instead of being
-- retried forever; an operator fixes the cause and sets dead_at back to NULL to deliver it.
ALTER TABLE outbox ADD COLUMN dead_at timestamptz;
DROP INDEX outbox_available;
CREATE INDEX outbox_available ON outbox (available_at) WHERE dead_at IS NULL;

---- create above / drop below ----

DROP INDEX outbox_available;
CREATE INDEX outbox_available ON outbox (available_at);
ALTER TABLE outbox DROP COLUMN dead_at;
