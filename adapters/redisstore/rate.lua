-- rate: count one grab against its user's rate with the limiter reserve.lua applies
-- to each grab (gcra in prelude.lua), for the WATCH strategy, which judges the rest of
-- the grab in Go: one limiter, written once.
--
-- KEYS[1] the voucher's rate hash (Keys.Rates), KEYS[2] its sale state (Keys.Meta).
-- ARGV[1] user_id, ARGV[2] interval_ms, ARGV[3] tolerance_ms, ARGV[4] at_ms ('0': the
-- sale's clock, sale_now).
-- Returns 0 when the grab is within the rate (and counted), else the ms to wait. The
-- hash expires with the sale state; without one (the grab is not judged then) the
-- attempt is not recorded.
local now = tonumber(ARGV[4])
if now == 0 then
  now = sale_now()
end
local wait, tat = gcra(redis.call('HGET', KEYS[1], ARGV[1]), now, tonumber(ARGV[2]), tonumber(ARGV[3]))
local expire = redis.call('HGET', KEYS[2], 'expire')
if tat and expire then
  redis.call('HSET', KEYS[1], ARGV[1], tat)
  redis.call('PEXPIREAT', KEYS[1], expire)
end
return wait
