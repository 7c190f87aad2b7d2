DROP INDEX orders_awaiting_payment_expires_at_idx;

--bun:split

ALTER TABLE orders DROP COLUMN expires_at;
