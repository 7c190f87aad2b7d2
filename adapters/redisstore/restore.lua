-- Record a reservation the database holds as a live order but Redis lost, only while
-- the sale state is there (a partial hash counts as absent) and the user holds no
-- reservation of the voucher. The remaining units are left alone: Recount sets them.
local m = redis.call('HMGET', KEYS[1], 'stock', 'remaining', 'begins', 'ends', 'limit', 'expire')
for i = 1, 6 do
  if not m[i] then
    return 0
  end
end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
-- Buyers and orders expire with the sale state, as reserve.lua keeps them.
redis.call('PEXPIREAT', KEYS[2], m[6])
redis.call('PEXPIREAT', KEYS[3], m[6])
return 1
