-- campaign: load or change a campaign's terms (Keys.Campaign), beside its vouchers'
-- sale states, which keep their own units: a grab of one of them judges the cap
-- against the units all of them hold taken (stock minus remaining), and a user's
-- units against the reservations it holds of them (reserve.lua).
--
-- KEYS[1] the campaign's terms, then KEYS[1+j] the meta of its voucher j, for j from
-- 1 to ARGV[4] (one campaign, one hash tag).
-- ARGV[1] mode: 'warm' (load the terms unless those held are of ARGV[5]'s version or a
-- later one) or 'edit' (carry them whatever version is held, refusing a cap below the
-- units taken), ARGV[2] cap ('' for none), ARGV[3] per-user limit, ARGV[4] the number
-- of vouchers (never lowered), ARGV[5] version, ARGV[6] expire_at_ms.
-- Returns 1 when it wrote the terms, 0 when it left them (held at a later version:
-- warm; absent: edit), -1 when an edit's cap is below the units taken (nothing
-- written).
local held = redis.call('HMGET', KEYS[1], 'variants', 'version')
local mode, cap, variants, version = ARGV[1], ARGV[2], tonumber(ARGV[4]), tonumber(ARGV[5])
if mode == 'edit' then
  if not held[1] then
    return 0
  end
  if cap ~= '' then
    local taken = 0
    for j = 2, #KEYS do
      local v = redis.call('HMGET', KEYS[j], 'stock', 'remaining')
      if v[1] and v[2] then
        taken = taken + tonumber(v[1]) - tonumber(v[2])
      end
    end
    if tonumber(cap) < taken then
      return -1
    end
  end
elseif held[1] and tonumber(held[2] or '0') >= version then
  -- Never lower the number of vouchers, whatever the version says.
  if tonumber(held[1]) < variants then
    redis.call('HSET', KEYS[1], 'variants', variants)
    redis.call('HDEL', KEYS[1], 'taken') -- summed over the vouchers counted before
  end
  return 0
end
if held[1] and tonumber(held[1]) > variants then
  variants = tonumber(held[1])
end
redis.call('HSET', KEYS[1], 'limit', ARGV[3], 'variants', variants, 'version', version, 'expire', ARGV[6])
redis.call('HDEL', KEYS[1], 'taken') -- summed again by the next grab (campaign_taken)
if cap == '' then
  redis.call('HDEL', KEYS[1], 'cap')
else
  redis.call('HSET', KEYS[1], 'cap', cap)
end
redis.call('PEXPIREAT', KEYS[1], ARGV[6])
return 1
