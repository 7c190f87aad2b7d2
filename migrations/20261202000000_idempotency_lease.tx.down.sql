ALTER TABLE idempotency_keys DROP COLUMN lease_until;

--bun:split

ALTER TABLE idempotency_keys DROP COLUMN token;
