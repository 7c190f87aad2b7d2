-- The answers of write requests sent with an Idempotency-Key header, so a repeat by
-- the same caller gets the first answer again instead of doing the work twice. A row
-- with status 0 is a request still in progress. Rows older than a day are forgotten.
CREATE TABLE idempotency_keys (
    user_id     BIGINT      NOT NULL,
    idem_key    TEXT        NOT NULL,
    -- sha256 of the request (method, route, path parameters, body): the same key
    -- with another request is a conflict, not a repeat.
    fingerprint TEXT        NOT NULL,
    status      INTEGER     NOT NULL DEFAULT 0,
    body        TEXT        NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, idem_key)
);

--bun:split

CREATE INDEX idempotency_keys_created_at_idx ON idempotency_keys (created_at);
