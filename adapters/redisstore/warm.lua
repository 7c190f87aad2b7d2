-- Make sure the stream and its consumer group exist, on every warm-up: a live group
-- keeps its position (BUSYGROUP), a lost one comes back. This goes first so that a
-- failure (a key of the wrong type) leaves nothing half done. The start is spelled
-- '0-0', not '0': the same to Redis, but the embedded server reports the group's
-- position as it was given, and readers expect a full id.
local created = redis.pcall('XGROUP', 'CREATE', KEYS[2], ARGV[7], '0-0', 'MKSTREAM')
if type(created) == 'table' and created.err and string.sub(created.err, 1, 9) ~= 'BUSYGROUP' then
  return redis.error_reply(created.err)
end
-- Load a voucher's sale state only if it is absent: a live counter is never reset.
-- The remaining units come apart from the stock: the database's live orders hold some.
-- With ARGV[9] '1' it is loaded "restoring": grabs answer unavailable until the
-- caller has restored the live orders' reservations and cleared the flag, so
-- no user who holds an order can grab again meanwhile.
local loaded = 0
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1],
    'stock', ARGV[1], 'remaining', ARGV[2],
    'begins', ARGV[3], 'ends', ARGV[4], 'limit', ARGV[5], 'expire', ARGV[6], 'paused', ARGV[8])
  if ARGV[9] == '1' then
    redis.call('HSET', KEYS[1], 'restoring', '1')
  end
  redis.call('PEXPIREAT', KEYS[1], ARGV[6])
  loaded = 1
elseif redis.call('HGET', KEYS[1], 'restoring') == '1' then
  -- Loaded earlier, but its restoring never finished (the caller died): again.
  loaded = 2
end
-- The stream expires with the sale state it belongs to, as reserve.lua keeps it.
local expire = redis.call('HGET', KEYS[1], 'expire') or ARGV[6]
redis.call('PEXPIREAT', KEYS[2], expire)
return loaded
