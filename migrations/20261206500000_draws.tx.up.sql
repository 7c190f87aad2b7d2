-- The draws: each draw voucher's result, written once, before any winner's order
-- exists. The entrants are kept sorted and packed (domain.PackEntrants: each id's
-- difference to the one before it as a uvarint), so anyone can be given the list the
-- published digest and seed were computed over, after Redis has forgotten it.
CREATE TABLE draws (
    voucher_id      BIGINT      PRIMARY KEY REFERENCES vouchers (id),
    seed            {{if eq .Dialect "sqlite"}}BLOB{{else}}BYTEA{{end}} NOT NULL,
    entrants        INTEGER     NOT NULL,
    entrants_digest TEXT        NOT NULL,
    entrant_ids     {{if eq .Dialect "sqlite"}}BLOB{{else}}BYTEA{{end}} NOT NULL,
    winners         INTEGER     NOT NULL,
    drawn_at        TIMESTAMPTZ NOT NULL
);
