-- Each order's payment deadline, decided when it was reserved and kept from then on
-- (DESIGN.md v1.3 "Time": a change of SECKILL_PAYMENT_TIMEOUT applies to the orders
-- created after it). NULL for an order stored before this column was, or by an older
-- instance during a rolling upgrade: its deadline is then created_at plus the window of
-- whoever reads it, as before; `seckill serve` records it at start-up for the orders
-- still awaiting payment (created_at plus the window it runs with), so from then on
-- it is kept too.
ALTER TABLE orders ADD COLUMN expires_at TIMESTAMPTZ;

--bun:split

-- Orders waiting for payment by their deadline, for the payment-timeout sweeper.
CREATE INDEX orders_awaiting_payment_expires_at_idx ON orders (expires_at)
    WHERE status = 'awaiting_payment';
