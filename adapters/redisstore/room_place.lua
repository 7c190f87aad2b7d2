-- room_place: where a user stands in a voucher's or a campaign's waiting room (O(1)
-- for a voucher's; a campaign's reads each of its vouchers' sale states).
--
-- KEYS[1] room, KEYS[2] early joiners, KEYS[3] places, KEYS[4] late joiners,
-- KEYS[5] passes, then the sale the room admits to from KEYS[6] on (room_sale).
-- ARGV[1] user_id, ARGV[2] now_ms ('0': sale_now), ARGV[3] variants (as room_admit's).
-- Returns {0} when the user never joined, {2, count} when the campaign holds another
-- number of vouchers (the caller calls again with it), else {1, early, position,
-- admitted, sold_out, pass_expires_ms, rate}: early 1 for an early joiner; position
-- from 1, 0 while unknown; admitted how many were let in so far; sold_out 1 when no
-- unit is left on sale; pass_expires_ms 0 without an outstanding pass; rate the
-- admission rate in users per 1000 s (0 unknown).
local user = ARGV[1]
local now = tonumber(ARGV[2])
if now == 0 then
  now = sale_now()
end
local r = redis.call('HMGET', KEYS[1], 'installed', 'early', 'admitted', 'rate', 'since', 'count')
local installed = r[1] == '1'
local early_count, admitted = tonumber(r[2] or 0), tonumber(r[3] or 0)
local early, position = 0, 0
local place = redis.call('HGET', KEYS[3], user)
if place then
  early, position = 1, tonumber(place)
else
  local seq = redis.call('HGET', KEYS[4], user)
  if seq then
    if installed then
      position = early_count + tonumber(seq)
    end
  elseif redis.call('SISMEMBER', KEYS[2], user) == 1 then
    early = 1
  else
    return {0}
  end
end
local pass = 0
local expires = redis.call('ZSCORE', KEYS[5], user)
if expires and tonumber(expires) > now then
  pass = tonumber(expires)
end
local sold = 0
local m, on_sale, left = room_sale(6, tonumber(ARGV[3]))
if on_sale == 'changed' then
  return {2, left}
end
if m and left <= 0 then
  sold = 1
end
-- The rate: the window being measured once it spans a second, else the last one.
local rate = tonumber(r[4] or 0)
local since = tonumber(r[5] or 0)
if since > 0 and now - since >= 1000 then
  rate = math.floor(tonumber(r[6] or 0) * 1000000 / (now - since))
end
return {1, early, position, admitted, sold, pass, rate}
