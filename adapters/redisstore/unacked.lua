-- unacked: what the consumer group has not acknowledged of one voucher's stream, as
-- unacked in prelude.lua counts it, for the Go side (the backlog, the oldest entry
-- waiting, the WATCH strategy's bound), so Go never reads XINFO itself.
--
-- KEYS[1] stream.
-- ARGV[1] group, ARGV[2] cap (see unacked).
-- Returns {pending, undelivered, the oldest unacknowledged entry's id or ''}.
local pending, undelivered, oldest = unacked(KEYS[1], ARGV[1], tonumber(ARGV[2]))
return {pending, undelivered, oldest or ''}
