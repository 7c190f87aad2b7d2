-- room_figures: a voucher's waiting room's counts, of one moment (O(1)).
--
-- KEYS[1] room, KEYS[2] early joiners, KEYS[3] passes.
-- ARGV[1] now_ms ('0': sale_now).
-- Returns {early, late, admitted, outstanding}: early the early joiners (the set's
-- size until the shuffled order is installed, then the order's length); late the
-- joiners from the start on; admitted how many were taken from the line; outstanding
-- the passes not yet used (a grab removes its pass) nor expired.
local now = tonumber(ARGV[1])
if now == 0 then
  now = sale_now()
end
local r = redis.call('HMGET', KEYS[1], 'installed', 'early', 'late', 'admitted')
local early
if r[1] == '1' then
  early = tonumber(r[2] or 0)
else
  early = redis.call('SCARD', KEYS[2])
end
local outstanding = redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf')
return {early, tonumber(r[3] or 0), tonumber(r[4] or 0), outstanding}
