-- Secrets every process of a deployment shares without being configured with them: made
-- once, here, from the server's strong random source (gen_random_uuid: 122 random bits
-- each, two of them), and read by each process at start. The service role may only read
-- them. session_mac tags the session tokens a deployment issues, so that a process tells
-- its own tokens from forged ones without a query (see accountable.NewSessionToken).
CREATE TABLE service_secrets (
    name   text PRIMARY KEY,
    secret bytea NOT NULL
);
INSERT INTO service_secrets (name, secret)
VALUES ('session_mac', decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));

---- create above / drop below ----

DROP TABLE service_secrets;
