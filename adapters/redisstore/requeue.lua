-- requeue: append a reservation to the voucher's stream again, with the fields the
-- caller encoded (codec.go's entryValues, the fields reserve.lua writes), only while
-- the sale state is there: without it the stream would outlive the sale (it could not
-- be given the sale's expiry).
--
-- KEYS[1] stream, KEYS[2] meta (one voucher, one hash tag).
-- ARGV[1] group, ARGV[2] the entry's units, then the entry's fields and values:
-- ARGV[3] name, ARGV[4] value, ….
-- Returns 1 when it appended, 0 without sale state (nothing written); an error reply
-- when XGROUP fails otherwise. The stream expires with the sale state; the meta's
-- tally of unacknowledged entries grows by one entry of the entry's units.
local state = sale_state(KEYS[2])
if not state then
  return 0
end
-- The group exists when the voucher was warmed; bring it back if it was lost, at the
-- stream's start as warm.lua does. This goes first so that a failure leaves nothing
-- half done.
local failed = create_group(KEYS[1], ARGV[1])
if failed then
  return failed
end
redis.call('XADD', KEYS[1], '*', unpack(ARGV, 3))
redis.call('PEXPIREAT', KEYS[1], state.expire)
-- The tally of entries not yet acknowledged (see tally.go): one more entry, of the
-- entry's units.
redis.call('HINCRBY', KEYS[2], 'queued', tonumber(ARGV[2]))
redis.call('HINCRBY', KEYS[2], 'queued_entries', 1)
return 1
