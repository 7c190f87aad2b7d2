-- Record reservations the database holds as live orders but Redis lost, only while the
-- sale state is there (a partial hash counts as absent), each only if its user holds no
-- reservation of the voucher (an earlier one of the same call included). The remaining
-- units are left alone: Recount sets them.
local m = redis.call('HMGET', KEYS[1], 'stock', 'remaining', 'begins', 'ends', 'limit', 'expire')
local n = #ARGV / 3
local out = {}
for i = 1, 6 do
  if not m[i] then
    for j = 1, n do
      out[j] = 0
    end
    return out
  end
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
  redis.call('PEXPIREAT', KEYS[2], m[6])
  redis.call('PEXPIREAT', KEYS[3], m[6])
end
return out
