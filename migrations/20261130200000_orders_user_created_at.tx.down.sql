CREATE INDEX orders_user_id_id_idx ON orders (user_id, id DESC);

--bun:split

DROP INDEX orders_user_id_created_at_id_idx;
