-- restore: record reservations the database holds as live orders but Redis lost, only
-- while the sale state is there, each only if its user holds no reservation of the
-- voucher (an earlier one of the same call included). The remaining units are left
-- alone: recount.lua sets them.
--
-- KEYS[1] meta, KEYS[2] buyers, KEYS[3] orders (one voucher, one hash tag).
-- ARGV: three per reservation: user_id, order_id, the order's record
-- ("user_id:qty:at_ms", codec.go's encodeRecord).
-- Returns one number per reservation: 1 when it recorded it, 0 without sale state or
-- when the user already holds a reservation (nothing written for it). Buyers and
-- orders expire with the sale state.
local n = #ARGV / 3
local out = {}
local m = sale_state(KEYS[1])
if not m then
  for j = 1, n do
    out[j] = 0
  end
  return out
end
local recorded = 0
for j = 1, n do
  local user, order = ARGV[3 * j - 2], ARGV[3 * j - 1]
  if redis.call('HSETNX', KEYS[2], user, order) == 1 then
    redis.call('HSET', KEYS[3], order, ARGV[3 * j])
    recorded = recorded + 1
    out[j] = 1
  else
    out[j] = 0
  end
end
if recorded > 0 then
  -- Held units changed: a recount or snapshot read meanwhile must know (see gen).
  redis.call('HINCRBY', KEYS[1], 'gen', 1)
  -- Buyers and orders expire with the sale state, as reserve.lua keeps them.
  redis.call('PEXPIREAT', KEYS[2], m.expire)
  redis.call('PEXPIREAT', KEYS[3], m.expire)
end
return out
