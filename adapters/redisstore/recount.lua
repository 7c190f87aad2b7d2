-- recount: set the remaining units to the stock minus the units held, as the caller
-- counted them a page at a time (pages.go), only if nothing changed the remaining or
-- held units since the caller read 'gen' before counting: then the count is exact,
-- and the write lands on the state it was counted from. Announce a restock when that
-- raised the remaining units.
--
-- KEYS[1] meta (one voucher), then for a campaign's voucher KEYS[2] its campaign's
-- terms, whose kept units taken (campaign_taken in prelude.lua) are deleted when the
-- remaining units change.
-- ARGV[1] restock channel, ARGV[2] voucher_id (the message), ARGV[3] sharded ('1':
-- SPUBLISH, as on Redis Cluster; '0': PUBLISH), ARGV[4] the units held, as counted,
-- ARGV[5] the 'gen' read before counting.
-- Returns the new remaining units, -1 without sale state, -2 when 'gen' moved (nothing
-- written: count again); an error reply, changing nothing, when the stock cannot be
-- read.
local m = sale_state(KEYS[1], 'gen')
if not m then
  return -1
end
if (m.gen or '0') ~= ARGV[5] then
  return -2
end
local stock = tonumber(m.stock)
if not stock then
  return redis.error_reply('malformed stock ' .. m.stock)
end
local left = stock - tonumber(ARGV[4])
if left < 0 then
  left = 0
end
-- Only a change counts: concurrent recounts of one state write the same value, and
-- must not make each other count again.
if left ~= tonumber(m.remaining) then
  redis.call('HSET', KEYS[1], 'remaining', left)
  redis.call('HINCRBY', KEYS[1], 'gen', 1)
  if KEYS[2] then
    redis.call('HDEL', KEYS[2], 'taken')
  end
end
-- More units on sale than before: announce it, as a release does.
if left > (tonumber(m.remaining) or 0) then
  if ARGV[3] == '1' then
    redis.call('SPUBLISH', ARGV[1], ARGV[2])
  else
    redis.call('PUBLISH', ARGV[1], ARGV[2])
  end
end
return left
