-- pause: set a voucher's paused flag, only while its sale state exists (a missing one
-- is loaded with the flag by warm.lua).
--
-- KEYS[1] meta.
-- ARGV[1] paused: '1' paused, '0' not.
-- Returns 1 when it set the flag, 0 without sale state (nothing written).
if not sale_state(KEYS[1]) then
  return 0
end
redis.call('HSET', KEYS[1], 'paused', ARGV[1])
return 1
