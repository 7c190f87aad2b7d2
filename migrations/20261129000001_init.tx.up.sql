-- The schema of PostgreSQL and of SQLite, one template (text/template, rendered by the
-- migrator with .Dialect "pg" or "sqlite") where their SQL differs: the identity
-- column and the expression of the current time, "now" below.
{{define "now"}}{{if eq .Dialect "sqlite"}}(strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')){{else}}now(){{end}}{{end}}
--
-- Vouchers on sale. sold counts the units held by live orders; fulfilment moves it
-- with a guarded update, and the CHECK below is the database's own net against
-- overselling should any path ever forget the guard.
CREATE TABLE vouchers (
    id             {{if eq .Dialect "sqlite"}}INTEGER PRIMARY KEY AUTOINCREMENT{{else}}BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY{{end}},
    title          TEXT        NOT NULL,
    stock          INTEGER     NOT NULL CONSTRAINT vouchers_stock_check CHECK (stock > 0),
    sold           INTEGER     NOT NULL DEFAULT 0,
    begins_at      TIMESTAMPTZ NOT NULL,
    ends_at        TIMESTAMPTZ NOT NULL,
    per_user_limit INTEGER     NOT NULL DEFAULT 1
        CONSTRAINT vouchers_per_user_limit_check CHECK (per_user_limit >= 1),
    paused         BOOLEAN     NOT NULL DEFAULT false,
    created_at     TIMESTAMPTZ NOT NULL DEFAULT {{template "now" .}},
    CONSTRAINT vouchers_sold_check CHECK (sold >= 0 AND sold <= stock),
    CONSTRAINT vouchers_window_check CHECK (begins_at < ends_at)
);

--bun:split

-- Active vouchers (ends_at > now) are re-warmed at start-up.
CREATE INDEX vouchers_ends_at_idx ON vouchers (ends_at);

--bun:split

-- Orders, keyed by the id the application minted at reservation time, so a
-- redelivered reservation inserts nothing twice.
CREATE TABLE orders (
    id         TEXT        PRIMARY KEY,
    voucher_id BIGINT      NOT NULL REFERENCES vouchers (id),
    user_id    BIGINT      NOT NULL CONSTRAINT orders_user_id_check CHECK (user_id > 0),
    quantity   INTEGER     NOT NULL CONSTRAINT orders_quantity_check CHECK (quantity > 0),
    status     TEXT        NOT NULL CONSTRAINT orders_status_check CHECK (
        status IN ('queued', 'awaiting_payment', 'paid', 'cancelled', 'expired', 'failed')
    ),
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT {{template "now" .}},
    -- When a closed order's units were confirmed back on sale (released in Redis).
    -- NULL means not yet: a closed order with NULL still has to be released, and the
    -- release is retried until it succeeds. Live orders keep it NULL.
    released_at TIMESTAMPTZ NULL
);

--bun:split

-- The last safety net against duplicates: one live order (a status that holds stock)
-- per user per voucher. Cancelled, expired and failed orders fall out of the index,
-- so their user may order again.
CREATE UNIQUE INDEX orders_live_voucher_user_key ON orders (voucher_id, user_id)
    WHERE status IN ('queued', 'awaiting_payment', 'paid');

--bun:split

-- A user's orders, newest first (order ids are time-ordered).
CREATE INDEX orders_user_id_id_idx ON orders (user_id, id DESC);

--bun:split

-- A voucher's orders by status, for its stats and for reconciliation.
CREATE INDEX orders_voucher_id_status_idx ON orders (voucher_id, status);

--bun:split

-- Orders waiting for payment, oldest first, for the payment-timeout sweeper.
CREATE INDEX orders_awaiting_payment_created_at_idx ON orders (created_at)
    WHERE status = 'awaiting_payment';

--bun:split

-- Closed orders whose units are not yet back on sale, oldest closing first, for the
-- job that retries releases. It stays small: an order leaves it once released.
CREATE INDEX orders_closed_unreleased_updated_at_idx ON orders (updated_at)
    WHERE status IN ('cancelled', 'expired', 'failed') AND released_at IS NULL;
