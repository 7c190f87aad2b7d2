-- Dropping a table drops its indexes and constraints with it.
DROP TABLE IF EXISTS orders;

--bun:split

DROP TABLE IF EXISTS vouchers;
