-- Web sign-in for the key settings page: a user's password (an Argon2id PHC string, see
-- the passwords package; NULL: the user cannot sign in) and the sessions of signed-in
-- browsers. A session's token is kept only as its SHA-256 (like API keys); its CSRF token
-- is the secret every form of the session carries.
ALTER TABLE users ADD COLUMN password_hash text;
ALTER TABLE users ADD COLUMN password_set_at timestamptz;

CREATE TABLE web_sessions (
    token_hash   bytea PRIMARY KEY,
    user_id      uuid NOT NULL REFERENCES users (id),
    workspace_id uuid NOT NULL REFERENCES workspaces (id),
    csrf_token   text NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    revoked_at   timestamptz
);
CREATE INDEX web_sessions_user ON web_sessions (user_id);

---- create above / drop below ----

DROP TABLE web_sessions;
ALTER TABLE users DROP COLUMN password_set_at;
ALTER TABLE users DROP COLUMN password_hash;
