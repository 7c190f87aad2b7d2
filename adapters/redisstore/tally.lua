-- Read a voucher's tally (see tally.go) and the queue's own count of its entries not
-- yet acknowledged, and set the tally right when the queue holds none: so whatever
-- the tally missed (an entry deleted by hand, a lost consumer group) is forgotten at
-- the next quiet moment. O(1): a few fields and XINFO GROUPS.
-- KEYS[1] meta, KEYS[2] stream (one voucher, one tag). ARGV[1] group.
-- Returns {} when the sale state is missing or partial, else {stock, remaining,
-- queued units, queued entries, waiting}: waiting is the group's pending entries plus
-- its lag (entries not yet delivered), the stream's length when it has no such group,
-- 0 without a stream, and -1 when Redis cannot tell the lag. (The embedded server
-- reports the stream's length as the lag: more than waits, so never 0 by mistake.)
local m = redis.call('HMGET', KEYS[1], 'stock', 'remaining', 'begins', 'ends', 'limit', 'expire', 'queued', 'queued_entries')
for i = 1, 6 do
  if not m[i] then
    return {}
  end
end
local waiting = 0
if redis.call('EXISTS', KEYS[2]) == 1 then
  waiting = redis.call('XLEN', KEYS[2])
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[2])) do
    local f = {}
    for j = 1, #g, 2 do
      f[g[j]] = g[j + 1]
    end
    -- An empty stream holds nothing to wait for, whatever the group says.
    if f['name'] == ARGV[1] and waiting > 0 then
      local lag = tonumber(f['lag'])
      if lag then
        waiting = f['pending'] + lag
      else
        waiting = -1
      end
    end
  end
end
local units, entries = tonumber(m[7]) or 0, tonumber(m[8]) or 0
if waiting == 0 and (units ~= 0 or entries ~= 0) then
  redis.call('HSET', KEYS[1], 'queued', 0, 'queued_entries', 0)
  units, entries = 0, 0
end
return {tonumber(m[1]), tonumber(m[2]), units, entries, waiting}
