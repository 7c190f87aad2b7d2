-- settle: say whether the queue is done with a voucher — its sale has ended by the
-- sale's clock (sale_now), or its sale state is gone, and its stream holds nothing
-- unacknowledged (unacked) — and, when it is and the sale state is there, mark the
-- state settled: from then on reserve.lua answers every grab ended, so no entry is
-- appended that no worker would read, whatever clock the instance that sent the grab
-- keeps.
--
-- KEYS[1] meta, KEYS[2] stream (one voucher, one hash tag).
-- ARGV[1] group.
-- Returns 1 when settled (or nothing is left to settle), 0 when not yet.
local m = sale_state(KEYS[1])
if m and sale_now() < tonumber(m.ends) then
  return 0
end
local pending, undelivered = unacked(KEYS[2], ARGV[1], 1)
if pending + undelivered > 0 then
  return 0
end
if m then
  redis.call('HSET', KEYS[1], 'settled', '1')
end
return 1
