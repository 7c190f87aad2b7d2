-- Acknowledge queue entries of one voucher and take what they counted off the sale
-- state's tally of entries not yet acknowledged (see tally.go).
-- KEYS[1] stream, KEYS[2] meta (one voucher, one tag).
-- ARGV[1] group, then two per entry: entry id, units (0 for an entry that counted
-- nothing: one the grab path did not write).
-- Returns how many entries were pending and are acknowledged now. Only those move the
-- tally, so acknowledging an entry twice takes it off once. A sale state that is gone
-- is not written to (a stray field would outlive the sale).
--
-- Which entries are pending is read in one XPENDING over the entries' range of ids, and
-- they are acknowledged in one XACK: two commands, not one per entry. The range also
-- holds other consumers' entries; when more than the read's bound are there (or the ids
-- cannot be read, or the group is gone), each entry is acknowledged on its own instead,
-- its XACK's answer saying whether it was pending.

local ids, units_of, parsed = {}, {}, true
for i = 2, #ARGV, 2 do
  if units_of[ARGV[i]] == nil then
    ids[#ids + 1] = ARGV[i]
  end
  units_of[ARGV[i]] = tonumber(ARGV[i + 1])
end
if #ids == 0 then
  return 0
end
-- The first and last of the ids, in the stream's order ("ms-seq", each part a number).
local first, last
for _, id in ipairs(ids) do
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  -- Past 15 digits a Lua number may not hold the part exactly.
  if not ms or #ms > 15 or #seq > 15 then
    parsed = false
    break
  end
  local key = {tonumber(ms), tonumber(seq), id}
  if not first or key[1] < first[1] or (key[1] == first[1] and key[2] < first[2]) then
    first = key
  end
  if not last or key[1] > last[1] or (key[1] == last[1] and key[2] > last[2]) then
    last = key
  end
end

local acked, entries, units = 0, 0, 0
local function count(id)
  acked = acked + 1
  local n = units_of[id]
  if n > 0 then
    entries = entries + 1
    units = units + n
  end
end
-- Without the stream or its group XPENDING fails, and every XACK answers 0.
local bound = 4 * #ids + 64
local pending
if parsed then
  pending = redis.pcall('XPENDING', KEYS[1], ARGV[1], first[3], last[3], bound)
end
if type(pending) == 'table' and not pending.err and #pending < bound then
  for _, p in ipairs(pending) do
    if units_of[p[1]] then
      count(p[1])
    end
  end
  for i = 1, #ids, 1000 do
    redis.call('XACK', KEYS[1], ARGV[1], unpack(ids, i, math.min(i + 999, #ids)))
  end
else
  for _, id in ipairs(ids) do
    if redis.call('XACK', KEYS[1], ARGV[1], id) == 1 then
      count(id)
    end
  end
end
if entries > 0 and sale_state(KEYS[2]) then
  redis.call('HINCRBY', KEYS[2], 'queued', -units)
  redis.call('HINCRBY', KEYS[2], 'queued_entries', -entries)
end
return acked
