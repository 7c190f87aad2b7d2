-- Acknowledge queue entries of one voucher and take what they counted off the sale
-- state's tally of entries not yet acknowledged (see tally.go).
-- KEYS[1] stream, KEYS[2] meta (one voucher, one tag).
-- ARGV[1] group, then two per entry: entry id, units (0 for an entry that counted
-- nothing: one the grab path did not write).
-- Returns how many entries were pending and are acknowledged now. Only those move the
-- tally, so acknowledging an entry twice takes it off once. A sale state that is gone
-- is not written to (a stray field would outlive the sale).
local acked, entries, units = 0, 0, 0
for i = 2, #ARGV, 2 do
  if redis.call('XACK', KEYS[1], ARGV[1], ARGV[i]) == 1 then
    acked = acked + 1
    local n = tonumber(ARGV[i + 1])
    if n > 0 then
      entries = entries + 1
      units = units + n
    end
  end
end
if entries > 0 and sale_state(KEYS[2]) then
  redis.call('HINCRBY', KEYS[2], 'queued', -units)
  redis.call('HINCRBY', KEYS[2], 'queued_entries', -entries)
end
return acked
