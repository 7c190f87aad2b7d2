ALTER TABLE vouchers DROP COLUMN seed;

--bun:split

ALTER TABLE vouchers DROP COLUMN entries_open_at;

--bun:split

ALTER TABLE vouchers DROP COLUMN queue_window;

--bun:split

ALTER TABLE vouchers DROP COLUMN queue_opens_at;

--bun:split

ALTER TABLE vouchers DROP COLUMN pow_difficulty;

--bun:split

ALTER TABLE vouchers DROP COLUMN challenge;

--bun:split

ALTER TABLE vouchers DROP COLUMN admission;
