-- recount: set the remaining units to the stock minus the units the recorded
-- reservations hold (never below 0), in one step, so no grab or release can slip in
-- between the count and the write; announce a restock when that raised them.
--
-- KEYS[1] meta, KEYS[2] orders (one voucher, one hash tag).
-- ARGV[1] restock channel, ARGV[2] voucher_id (the message), ARGV[3] sharded ('1':
-- SPUBLISH, as on Redis Cluster; '0': PUBLISH).
-- Returns the new remaining units, or -1 without sale state (nothing written); an
-- error reply, changing nothing, when the stock or a record cannot be read.
local m = sale_state(KEYS[1])
if not m then
  return -1
end
local stock = tonumber(m.stock)
if not stock then
  return redis.error_reply('malformed stock ' .. m.stock)
end
local held = 0
for _, record in ipairs(redis.call('HVALS', KEYS[2])) do
  -- "user:qty:at_ms"; a record that cannot be read stops the recount rather than be
  -- guessed at: counting it as nothing could sell its units twice. (Go reads and
  -- writes records through codec.go.)
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
if left > (tonumber(m.remaining) or 0) then
  if ARGV[3] == '1' then
    redis.call('SPUBLISH', ARGV[1], ARGV[2])
  else
    redis.call('PUBLISH', ARGV[1], ARGV[2])
  end
end
return left
