CREATE INDEX orders_voucher_id_status_idx ON orders (voucher_id, status);

--bun:split

DROP INDEX orders_voucher_id_id_idx;
