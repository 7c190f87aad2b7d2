-- A user's orders are listed newest first by (created_at, id) and paged by that key,
-- so the index that serves the list is on it; the one on (user_id, id) served the
-- list when it was ordered by id, and nothing else reads by it.
CREATE INDEX orders_user_id_created_at_id_idx ON orders (user_id, created_at, id);

--bun:split

DROP INDEX orders_user_id_id_idx;
