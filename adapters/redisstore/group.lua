-- group: make sure a voucher's stream has the consumer group, unless its sale is gone:
-- when neither the stream nor the sale state exists the sale's keys expired, and
-- creating the stream would bring back a key that never expires.
--
-- KEYS[1] stream, KEYS[2] meta (one voucher, one hash tag).
-- ARGV[1] group.
-- Returns 1 when the group exists now (created here or already there), 0 when the sale
-- is gone (nothing written); an error reply when XGROUP fails otherwise. A stream made
-- here expires with the sale state.
if redis.call('EXISTS', KEYS[1]) == 0 and not sale_state(KEYS[2]) then
  return 0
end
local failed = create_group(KEYS[1], ARGV[1])
if failed then
  return failed
end
-- A stream made here expires with the sale state, as warm.lua and reserve.lua keep it.
if redis.call('PTTL', KEYS[1]) == -1 then
  local expire = redis.call('HGET', KEYS[2], 'expire')
  if expire then
    redis.call('PEXPIREAT', KEYS[1], expire)
  end
end
return 1
