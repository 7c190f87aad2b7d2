-- A receiver answering 410 Gone disables its endpoint (Standard Webhooks): a row of
-- webhook_endpoints names the endpoint's URL, disabled since disabled_at, so every
-- instance stops sending to it and a restart does not resume. An admin's retry of a
-- delivery deletes the row (enables it again); a new URL is a new endpoint. The
-- deliveries that were still to be made take status disabled.
CREATE TABLE webhook_endpoints (
    url         TEXT        PRIMARY KEY,
    disabled_at TIMESTAMPTZ NOT NULL
);

--bun:split
{{if eq .Dialect "sqlite"}}
-- SQLite cannot change a CHECK: the table is built again with the new one.
CREATE TABLE webhook_outbox_new (
    id              TEXT        PRIMARY KEY,
    type            TEXT        NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    payload         TEXT        NOT NULL,
    status          TEXT        NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'failed', 'delivered', 'disabled')),
    attempts        INTEGER     NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NULL,
    last_attempt_at TIMESTAMPTZ NULL,
    last_status     INTEGER     NOT NULL DEFAULT 0,
    last_error      TEXT        NOT NULL DEFAULT '',
    delivered_at    TIMESTAMPTZ NULL,
    given_up_at     TIMESTAMPTZ NULL,
    claim           TEXT        NOT NULL DEFAULT '',
    claimed_until   TIMESTAMPTZ NULL
);

--bun:split

INSERT INTO webhook_outbox_new SELECT * FROM webhook_outbox;

--bun:split

DROP TABLE webhook_outbox;

--bun:split

ALTER TABLE webhook_outbox_new RENAME TO webhook_outbox;

--bun:split

CREATE INDEX webhook_outbox_next_attempt_at_idx ON webhook_outbox (next_attempt_at)
    WHERE next_attempt_at IS NOT NULL;

--bun:split

CREATE INDEX webhook_outbox_status_id_idx ON webhook_outbox (status, id);
{{else}}
ALTER TABLE webhook_outbox DROP CONSTRAINT webhook_outbox_status_check;

--bun:split

ALTER TABLE webhook_outbox ADD CONSTRAINT webhook_outbox_status_check
    CHECK (status IN ('pending', 'failed', 'delivered', 'disabled'));
{{end}}
