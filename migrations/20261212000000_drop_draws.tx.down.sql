DROP TABLE drop_draws;

--bun:split

ALTER TABLE campaigns DROP COLUMN entries_open_at;
