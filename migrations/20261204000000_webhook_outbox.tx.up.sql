-- The webhook outbox: one row per event to tell the webhook endpoint (an order that
-- changed status, a voucher sold out or changed), written in the same transaction as
-- the change, so a change that rolls back leaves no event and one that commits never
-- loses its event. The dispatcher delivers each row at least once under its id, the
-- webhook-id, and records every attempt in it. payload is the order or the voucher as
-- the change left it (JSON of its domain fields); the body is rendered from it when
-- it is sent. status is pending (not yet tried), failed (its last attempt failed) or
-- delivered; next_attempt_at is when it is due, NULL once delivered or given up
-- (given_up_at). claim and claimed_until are the lease of the dispatcher sending it:
-- no other one claims the row until claimed_until.
CREATE TABLE webhook_outbox (
    id              TEXT        PRIMARY KEY,
    type            TEXT        NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    payload         TEXT        NOT NULL,
    status          TEXT        NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'failed', 'delivered')),
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

-- The rows due, soonest first: only those still to be delivered.
CREATE INDEX webhook_outbox_next_attempt_at_idx ON webhook_outbox (next_attempt_at)
    WHERE next_attempt_at IS NOT NULL;

--bun:split

-- The list of deliveries in one status, newest (highest id) first.
CREATE INDEX webhook_outbox_status_id_idx ON webhook_outbox (status, id);
