-- Set the remaining units to the stock minus the units held, as counted by the caller a
-- page at a time, only if nothing changed the remaining or held units since the caller
-- read 'gen' before counting: then the count is exact, and the write lands on the state
-- it was counted from.
local m = redis.call('HMGET', KEYS[1], 'stock', 'remaining', 'begins', 'ends', 'limit', 'expire', 'gen')
for i = 1, 6 do
  if not m[i] then
    return -1
  end
end
if (m[7] or '0') ~= ARGV[5] then
  return -2
end
local stock = tonumber(m[1])
if not stock then
  return redis.error_reply('malformed stock ' .. m[1])
end
local left = stock - tonumber(ARGV[4])
if left < 0 then
  left = 0
end
-- Only a change counts: concurrent recounts of one state write the same value, and
-- must not make each other count again.
if left ~= tonumber(m[2]) then
  redis.call('HSET', KEYS[1], 'remaining', left)
  redis.call('HINCRBY', KEYS[1], 'gen', 1)
end
-- More units on sale than before: announce it, as a release does.
if left > (tonumber(m[2]) or 0) then
  if ARGV[3] == '1' then
    redis.call('SPUBLISH', ARGV[1], ARGV[2])
  else
    redis.call('PUBLISH', ARGV[1], ARGV[2])
  end
end
return left
