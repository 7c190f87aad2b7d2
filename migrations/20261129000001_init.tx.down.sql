-- Dropping a table drops its indexes (orders_closed_unreleased_updated_at_idx among
-- them) and constraints with it.
DROP TABLE IF EXISTS orders;

--bun:split

DROP TABLE IF EXISTS vouchers;
