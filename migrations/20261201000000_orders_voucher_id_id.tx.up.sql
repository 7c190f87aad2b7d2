-- A voucher's orders are read in pages by id (the reconciliation ledger, the warm-up
-- after Redis lost its state), so the index that serves them is on (voucher_id, id):
-- each page is a range of it, whatever the planner's statistics say. Without it, on a
-- table not yet analyzed (right after a million orders arrived) the planner read every
-- order of the voucher and sorted them for each page of 10,000: 190 ms a page, 24 s
-- for a million. Stats are read from counters now, so nothing else reads the orders by
-- (voucher_id, status); the recount's sum reads the voucher's range of this one.
CREATE INDEX orders_voucher_id_id_idx ON orders (voucher_id, id);

--bun:split

DROP INDEX orders_voucher_id_status_idx;
