-- Fair admission: how a voucher lets its buyers in (first come, a waiting room or a
-- draw), what it asks of them first (nothing or a proof of work), the settings of
-- each, and the secret seed of a waiting room's or a draw's shuffle (32 bytes drawn
-- at creation; its SHA-256 is published, the seed itself only after the shuffle).
ALTER TABLE vouchers ADD COLUMN admission TEXT NOT NULL DEFAULT 'first_come'
    CONSTRAINT vouchers_admission_check CHECK (admission IN ('first_come', 'waiting_room', 'draw'));

--bun:split

ALTER TABLE vouchers ADD COLUMN challenge TEXT NOT NULL DEFAULT 'none'
    CONSTRAINT vouchers_challenge_check CHECK (challenge IN ('none', 'pow'));

--bun:split

ALTER TABLE vouchers ADD COLUMN pow_difficulty INTEGER NOT NULL DEFAULT 0;

--bun:split

ALTER TABLE vouchers ADD COLUMN queue_opens_at TIMESTAMPTZ NULL;

--bun:split

ALTER TABLE vouchers ADD COLUMN queue_window INTEGER NOT NULL DEFAULT 0;

--bun:split

ALTER TABLE vouchers ADD COLUMN entries_open_at TIMESTAMPTZ NULL;

--bun:split

ALTER TABLE vouchers ADD COLUMN seed {{if eq .Dialect "sqlite"}}BLOB{{else}}BYTEA{{end}} NULL;
