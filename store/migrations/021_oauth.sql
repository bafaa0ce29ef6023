-- The OAuth 2.1 authorization server of MCP clients: registered clients (RFC 7591) and
-- the grants issued to them. A grant row is an authorization code, an access token, a
-- refresh token or a PKCE request; it is kept under the SHA-256 of the token's HMAC
-- signature (never the token), with the serialized request it stands for. request_id is
-- the family: every token that rotated out of one consent shares it, so a reused refresh
-- token revokes them all.
CREATE TABLE oauth_clients (
    id                          text PRIMARY KEY,
    name                        text NOT NULL,
    client_uri                  text NOT NULL DEFAULT '',
    redirect_uris               text[] NOT NULL,
    grant_types                 text[] NOT NULL,
    response_types              text[] NOT NULL,
    token_endpoint_auth_method  text NOT NULL,
    secret_hash                 bytea,
    scope                       text NOT NULL DEFAULT '',
    created_at                  timestamptz NOT NULL
);

CREATE TABLE oauth_grants (
    kind          text NOT NULL CHECK (kind IN ('code', 'access', 'refresh', 'pkce')),
    signature     bytea NOT NULL,
    request_id    text NOT NULL,
    client_id     text NOT NULL REFERENCES oauth_clients (id),
    user_id       uuid REFERENCES users (id),
    workspace_id  uuid REFERENCES workspaces (id),
    request       jsonb NOT NULL,
    active        boolean NOT NULL DEFAULT true,
    expires_at    timestamptz NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, signature)
);
CREATE INDEX oauth_grants_family ON oauth_grants (request_id, kind);
CREATE INDEX oauth_grants_expiry ON oauth_grants (expires_at);

---- create above / drop below ----

DROP TABLE oauth_grants;
DROP TABLE oauth_clients;
