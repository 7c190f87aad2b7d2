-- restore: record a reservation the database holds as a live order but Redis lost,
-- only while the sale state is there and the user holds no reservation of the
-- voucher. The remaining units are left alone: recount.lua sets them.
--
-- KEYS[1] meta, KEYS[2] buyers, KEYS[3] orders (one voucher, one hash tag).
-- ARGV[1] user_id, ARGV[2] order_id, ARGV[3] the order's record ("user_id:qty:at_ms",
-- codec.go's encodeRecord).
-- Returns 1 when it recorded, 0 without sale state or when the user already holds a
-- reservation (nothing written). Buyers and orders expire with the sale state.
local m = sale_state(KEYS[1])
if not m then
  return 0
end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
-- Buyers and orders expire with the sale state, as reserve.lua keeps them.
redis.call('PEXPIREAT', KEYS[2], m.expire)
redis.call('PEXPIREAT', KEYS[3], m.expire)
return 1
