-- Make sure a voucher's stream has the consumer group, unless its sale is gone: when
-- neither the stream nor the sale state exists the sale's keys expired, and creating
-- the stream would bring back a key that never expires.
if redis.call('EXISTS', KEYS[1], KEYS[2]) == 0 then
  return 0
end
local created = redis.pcall('XGROUP', 'CREATE', KEYS[1], ARGV[1], '0-0', 'MKSTREAM')
if type(created) == 'table' and created.err and string.sub(created.err, 1, 9) ~= 'BUSYGROUP' then
  return redis.error_reply(created.err)
end
-- A stream made here expires with the sale state, as warm.lua and reserve.lua keep it.
if redis.call('PTTL', KEYS[1]) == -1 then
  local expire = redis.call('HGET', KEYS[2], 'expire')
  if expire then
    redis.call('PEXPIREAT', KEYS[1], expire)
  end
end
return 1
