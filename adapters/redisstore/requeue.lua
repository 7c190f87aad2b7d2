-- Append a reservation to the voucher's stream again, with the fields reserve.lua
-- writes, only while the sale state is there: without it the stream would outlive the
-- sale (it could not be given the sale's expiry).
local m = redis.call('HMGET', KEYS[2], 'stock', 'remaining', 'begins', 'ends', 'limit', 'expire')
for i = 1, 6 do
  if not m[i] then
    return 0
  end
end
-- The group exists when the voucher was warmed; bring it back if it was lost. It is
-- created at the stream's start, as warm.lua does, so entries left in a stream that
-- lost its group are delivered rather than skipped. This goes first so that a failure
-- (a key of the wrong type) leaves nothing half done.
local created = redis.pcall('XGROUP', 'CREATE', KEYS[1], ARGV[1], '0-0', 'MKSTREAM')
if type(created) == 'table' and created.err and string.sub(created.err, 1, 9) ~= 'BUSYGROUP' then
  return redis.error_reply(created.err)
end
redis.call('XADD', KEYS[1], '*',
  'order', ARGV[2], 'voucher', ARGV[3], 'user', ARGV[4], 'qty', ARGV[5], 'at', ARGV[6])
redis.call('PEXPIREAT', KEYS[1], m[6])
-- The tally of entries not yet acknowledged (see tally.go).
redis.call('HINCRBY', KEYS[2], 'queued', ARGV[5])
redis.call('HINCRBY', KEYS[2], 'queued_entries', 1)
return 1
