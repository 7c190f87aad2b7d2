-- A request in progress holds its idempotency key under a lease: token names the
-- claim, lease_until says until when it holds the key. A retry that finds the lease
-- passed with no answer kept (the holder died, or lost its answer) takes the key over
-- with a token of its own, and every later write under the old token is refused, so
-- a key is never stuck "in progress" for longer than a lease.
ALTER TABLE idempotency_keys ADD COLUMN token TEXT NOT NULL DEFAULT '';

--bun:split

ALTER TABLE idempotency_keys ADD COLUMN lease_until TIMESTAMPTZ NULL;

--bun:split

-- A request left in progress before the lease existed holds its key no longer.
UPDATE idempotency_keys SET lease_until = created_at;
