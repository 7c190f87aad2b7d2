-- A campaign's waiting room (issue 37): one queue for the whole drop, with the settings
-- and the seed a voucher's room has (vouchers.queue_opens_at, queue_window, seed). The
-- room's shuffle is saved in room_shuffles under the campaign's room id, the number 0
-- of its block of voucher ids (domain.CampaignID.Room), which no voucher takes.
ALTER TABLE campaigns ADD COLUMN queue_opens_at TIMESTAMPTZ NULL;

--bun:split

ALTER TABLE campaigns ADD COLUMN queue_window INTEGER NOT NULL DEFAULT 0;

--bun:split

ALTER TABLE campaigns ADD COLUMN seed {{if eq .Dialect "sqlite"}}BLOB{{else}}BYTEA{{end}} NULL;
