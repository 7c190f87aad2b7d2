-- tally: read a voucher's tally (see tally.go) and the queue's own count of its entries
-- not yet acknowledged (unacked in prelude.lua), and set the tally right when the
-- queue holds none: so whatever the tally missed (an entry deleted by hand, a lost
-- consumer group) is forgotten at the next quiet moment. A few fields and O(1)
-- stream commands.
--
-- KEYS[1] meta, KEYS[2] stream (one voucher, one tag). ARGV[1] group.
-- Returns {} without sale state (see sale_state), else {stock, remaining, queued
-- units, queued entries, waiting, oldest_at_ms}: waiting is the queue's own count of
-- its entries not yet acknowledged (at least 1 while any is), and oldest_at_ms when
-- the oldest of them was reserved (the at of its entry; its id's time when it has
-- none; 0 when none waits).
local m = sale_state(KEYS[1], 'queued', 'queued_entries')
if not m then
  return {}
end
local pending, undelivered, oldest = unacked(KEYS[2], ARGV[1], 1)
local waiting = pending + undelivered
local units, entries = tonumber(m.queued) or 0, tonumber(m.queued_entries) or 0
if waiting == 0 and (units ~= 0 or entries ~= 0) then
  redis.call('HSET', KEYS[1], 'queued', 0, 'queued_entries', 0)
  units, entries = 0, 0
end
local oldest_at = 0
if oldest then
  oldest_at = tonumber(string.match(oldest, '^(%d+)')) or 0
  local e = redis.call('XRANGE', KEYS[2], oldest, oldest)[1]
  if e then
    -- The grab's time, from the entry's one field (codec.go: user:qty:at:order) or,
    -- in an entry of the earlier shape, its own.
    for j = 1, #e[2], 2 do
      if e[2][j] == 'r' then
        oldest_at = tonumber(string.match(e[2][j + 1], '^[^:]*:[^:]*:([^:]*):')) or oldest_at
      elseif e[2][j] == 'at' then
        oldest_at = tonumber(e[2][j + 1]) or oldest_at
      end
    end
  end
end
return {tonumber(m.stock), tonumber(m.remaining), units, entries, waiting, oldest_at}
