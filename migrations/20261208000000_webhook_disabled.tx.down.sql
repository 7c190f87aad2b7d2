-- Disabled deliveries become given up failures, which the old CHECK allows.
UPDATE webhook_outbox SET status = 'failed', given_up_at = COALESCE(last_attempt_at, created_at)
    WHERE status = 'disabled';

--bun:split

DROP TABLE webhook_endpoints;
{{if ne .Dialect "sqlite"}}
--bun:split

ALTER TABLE webhook_outbox DROP CONSTRAINT webhook_outbox_status_check;

--bun:split

ALTER TABLE webhook_outbox ADD CONSTRAINT webhook_outbox_status_check
    CHECK (status IN ('pending', 'failed', 'delivered'));
{{end}}
