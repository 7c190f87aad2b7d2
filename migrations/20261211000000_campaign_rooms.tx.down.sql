-- The campaigns' rooms' shuffles go with their settings.
DELETE FROM room_shuffles WHERE voucher_id >= 1099511627776;

--bun:split

ALTER TABLE campaigns DROP COLUMN seed;

--bun:split

ALTER TABLE campaigns DROP COLUMN queue_window;

--bun:split

ALTER TABLE campaigns DROP COLUMN queue_opens_at;
