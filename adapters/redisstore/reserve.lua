-- Judge and take one grab atomically; every check comes before the first write, so a
-- refused grab changes nothing.
local m = redis.call('HMGET', KEYS[1], 'remaining', 'begins', 'ends', 'limit', 'expire')
for i = 1, 5 do
  -- A partial hash (a stray write to an expired voucher) counts as absent.
  if not m[i] then
    return {5}
  end
end
local user, order, now, qty = ARGV[1], ARGV[2], tonumber(ARGV[4]), tonumber(ARGV[3])
if now < tonumber(m[2]) then
  return {3}
end
if now >= tonumber(m[3]) then
  return {4}
end
if qty > tonumber(m[4]) then
  return {6}
end
local existing = redis.call('HGET', KEYS[2], user)
if existing then
  return {1, existing}
end
if tonumber(m[1]) < qty then
  return {2}
end
redis.call('HINCRBY', KEYS[1], 'remaining', -qty)
redis.call('HSET', KEYS[2], user, order)
redis.call('HSET', KEYS[3], order, user .. ':' .. ARGV[3] .. ':' .. ARGV[4])
redis.call('XADD', KEYS[4], '*',
  'order', order, 'voucher', ARGV[5], 'user', user, 'qty', ARGV[3], 'at', ARGV[4])
for i = 2, 4 do
  redis.call('PEXPIREAT', KEYS[i], m[5])
end
return {0, order}
