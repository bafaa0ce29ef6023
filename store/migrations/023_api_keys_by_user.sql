-- Each workspace's settings page lists the keys of its members, wherever they were made
-- (a member's key acts in every workspace the member belongs to): keys are found by user.
CREATE INDEX api_keys_user ON api_keys (user_id);

---- create above / drop below ----

DROP INDEX api_keys_user;
