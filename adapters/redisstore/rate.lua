-- rate: count one grab against its user's rate with the limiter reserve.lua applies
-- to each grab (user_rate in prelude.lua), for the WATCH strategy, which judges the
-- rest of the grab in Go: one limiter, written once.
--
-- KEYS[1] the user's rate counter for the voucher (Keys.Rate).
-- ARGV[1] interval_ms, ARGV[2] tolerance_ms, ARGV[3] at_ms ('0': the sale's clock,
-- sale_now).
-- Returns 0 when the grab is within the rate (and counted), else the ms to wait.
local now = tonumber(ARGV[3])
if now == 0 then
  now = sale_now()
end
return user_rate(KEYS[1], now, tonumber(ARGV[1]), tonumber(ARGV[2]))
