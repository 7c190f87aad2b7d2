-- close: the draw closes a voucher's entries, once the sale has begun by the sale's
-- clock (sale_now), so that no entry joins the set after it is read (enter.lua
-- refuses every entry once the mark exists, whatever the clock).
--
-- KEYS[1] entries, KEYS[2] closed (one voucher, one hash tag).
-- ARGV[1] begins_at, ARGV[2] expire_at (Unix ms).
-- Returns 1 closed (now or before), 0 too early.
if sale_now() < tonumber(ARGV[1]) then
  return 0
end
redis.call('SET', KEYS[2], '1', 'PXAT', ARGV[2])
return 1
