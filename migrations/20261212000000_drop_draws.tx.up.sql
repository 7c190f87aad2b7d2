-- A drop's draw (issue 37): a campaign sold by one draw, each entry naming the voucher
-- chosen. campaigns.entries_open_at is when entries open (a voucher's draw keeps its
-- own in vouchers.entries_open_at); drop_draws records each campaign's draw before any
-- winner's order exists, as draws does a voucher's: the seed, the entrants (packed as
-- draws.entrant_ids are) with each one's choice (the voucher's number in the campaign,
-- one uvarint per entrant, in the entrants' order), each voucher's units when the draw
-- ran (one uvarint per voucher, by number) and the cap then (-1: none): everything the
-- walk of the shuffle needs to give the same winners again.
ALTER TABLE campaigns ADD COLUMN entries_open_at TIMESTAMPTZ NULL;

--bun:split

CREATE TABLE drop_draws (
    campaign_id     BIGINT      PRIMARY KEY REFERENCES campaigns (id),
    seed            {{if eq .Dialect "sqlite"}}BLOB{{else}}BYTEA{{end}} NOT NULL,
    entrants        INTEGER     NOT NULL,
    entrants_digest TEXT        NOT NULL,
    entrant_ids     {{if eq .Dialect "sqlite"}}BLOB{{else}}BYTEA{{end}} NOT NULL,
    choices         {{if eq .Dialect "sqlite"}}BLOB{{else}}BYTEA{{end}} NOT NULL,
    units           {{if eq .Dialect "sqlite"}}BLOB{{else}}BYTEA{{end}} NOT NULL,
    cap             BIGINT      NOT NULL,
    winners         INTEGER     NOT NULL,
    drawn_at        TIMESTAMPTZ NOT NULL
);
