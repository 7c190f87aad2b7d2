-- Set the remaining units to the stock minus the units the recorded reservations hold,
-- in one step, so no grab or release can slip in between the count and the write.
local m = redis.call('HMGET', KEYS[1], 'stock', 'remaining', 'begins', 'ends', 'limit', 'expire')
for i = 1, 6 do
  if not m[i] then
    return -1
  end
end
local stock = tonumber(m[1])
if not stock then
  return redis.error_reply('malformed stock ' .. m[1])
end
local held = 0
for _, record in ipairs(redis.call('HVALS', KEYS[2])) do
  -- "user:qty:at_ms"; a record that cannot be read stops the recount rather than be
  -- guessed at: counting it as nothing could sell its units twice.
  -- The parentheses keep a failed match one nil: gopher-lua (the embedded server)
  -- returns no value at all from string.match then, and tonumber() refuses that.
  local qty = tonumber((string.match(record, '^%d+:(%d+):%-?%d+$')))
  if not qty or qty < 1 then
    return redis.error_reply('malformed reservation record ' .. record)
  end
  held = held + qty
end
local left = stock - held
if left < 0 then
  left = 0
end
redis.call('HSET', KEYS[1], 'remaining', left)
-- More units on sale than before: announce it, as a release does.
if left > (tonumber(m[2]) or 0) then
  if ARGV[3] == '1' then
    redis.call('SPUBLISH', ARGV[1], ARGV[2])
  else
    redis.call('PUBLISH', ARGV[1], ARGV[2])
  end
end
return left
