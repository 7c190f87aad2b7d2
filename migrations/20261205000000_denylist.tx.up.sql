-- The deny list: users an admin refused. Their grabs are answered 403 denied by every
-- instance, which keeps the list in memory (loaded at start, reloaded every few
-- seconds and at once when a change is announced on Redis Pub/Sub).
CREATE TABLE denylist (
    user_id BIGINT      PRIMARY KEY,
    reason  TEXT        NOT NULL DEFAULT '',
    at      TIMESTAMPTZ NOT NULL
);
