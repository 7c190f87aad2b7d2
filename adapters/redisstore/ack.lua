-- Acknowledge queue entries of one voucher and take what they counted off the sale
-- state's tally of entries not yet acknowledged (see tally.go).
-- KEYS[1] stream, KEYS[2] meta (one voucher, one tag).
-- ARGV[1] group, then two per entry: entry id, units (0 for an entry that counted
-- nothing: one the grab path did not write).
-- Returns how many entries were pending and are acknowledged now. Only those move the
-- tally, so acknowledging an entry twice takes it off once. A sale state that is gone
-- is not written to (a stray field would outlive the sale).
--
-- The entries are acknowledged in one XACK per distinct number of units (one, in a
-- sale of one unit a grab), not one per entry: an XACK answers how many of its entries
-- were pending, and as they all count the same units, that says what to take off.
local by_units, order = {}, {}
for i = 2, #ARGV, 2 do
  local n = tonumber(ARGV[i + 1])
  if not by_units[n] then
    by_units[n] = {}
    order[#order + 1] = n
  end
  local ids = by_units[n]
  ids[#ids + 1] = ARGV[i]
end
local acked, entries, units = 0, 0, 0
for _, n in ipairs(order) do
  local ids = by_units[n]
  for i = 1, #ids, 1000 do
    local k = redis.call('XACK', KEYS[1], ARGV[1], unpack(ids, i, math.min(i + 999, #ids)))
    acked = acked + k
    if n > 0 then
      entries = entries + k
      units = units + k * n
    end
  end
end
if entries > 0 and sale_state(KEYS[2]) then
  redis.call('HINCRBY', KEYS[2], 'queued', -units)
  redis.call('HINCRBY', KEYS[2], 'queued_entries', -entries)
end
return acked
