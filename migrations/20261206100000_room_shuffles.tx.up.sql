-- The shuffles of the waiting rooms (and draws): one row per voucher, written once by
-- the instance that ran the shuffle, before anyone is admitted, so the order survives
-- that instance and Redis. entrants holds the users shuffled, ascending by id, as
-- 8-byte big-endian integers one after another; the order is recomputed from them and
-- the seed (domain.Shuffle).
CREATE TABLE room_shuffles (
    voucher_id      BIGINT      PRIMARY KEY,
    seed            {{if eq .Dialect "sqlite"}}BLOB{{else}}BYTEA{{end}} NOT NULL,
    entrants_count  INTEGER     NOT NULL,
    entrants_digest TEXT        NOT NULL,
    entrants        {{if eq .Dialect "sqlite"}}BLOB{{else}}BYTEA{{end}} NOT NULL,
    shuffled_at     TIMESTAMPTZ NOT NULL
);
