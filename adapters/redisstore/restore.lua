-- restore: make Redis agree with the database about the orders given, whatever it
-- held before (an older snapshot, a lost write). For a live order, its user's entry
-- names it and its record is written — replacing an entry that named another order (a
-- closed one an older snapshot remembers, or a reservation that can never be
-- persisted beside the live order: the database holds one live order per user) and
-- dropping that order's record — unless the order was released since (its id is in
-- the released set: a closed order never holds units again, and the caller may have
-- read it live before it closed). A closed order joins the released set, and its
-- entry and record are dropped while its user's entry names it. Only while the sale
-- state is there. The remaining units are left alone: recount.lua sets them.
--
-- KEYS[1] meta, KEYS[2] buyers, KEYS[3] orders, KEYS[4] released (one voucher, one
-- hash tag), and for a campaign's voucher KEYS[5] the campaign's holders
-- (Keys.CampaignHolders), to which every user named a live order's buyer is added.
-- ARGV: four per order: user_id, order_id, the order's record ("user_id:qty:at_ms[:expires_ms]",
-- codec.go's encodeRecord), '1' live or '0' closed.
-- Returns one number per order: 1 when Redis agrees with it now (a live order named,
-- a closed one not held), 0 without sale state or for a live order released since
-- (nothing written for it). Buyers, orders and the released set expire with the sale
-- state.
local n = #ARGV / 4
local out = {}
local m = sale_state(KEYS[1])
if not m then
  for j = 1, n do
    out[j] = 0
  end
  return out
end
local changed = false
for j = 1, n do
  local user, order, record, live = ARGV[4 * j - 3], ARGV[4 * j - 2], ARGV[4 * j - 1], ARGV[4 * j]
  local held = redis.call('HGET', KEYS[2], user)
  if live ~= '1' then
    redis.call('SADD', KEYS[4], order)
    if held == order then
      redis.call('HDEL', KEYS[2], user)
      redis.call('HDEL', KEYS[3], order)
      changed = true
    end
    out[j] = 1
  elseif redis.call('SISMEMBER', KEYS[4], order) == 1 then
    out[j] = 0
  else
    if held ~= order then
      if held then
        redis.call('HDEL', KEYS[3], held)
      end
      redis.call('HSET', KEYS[2], user, order)
      changed = true
    end
    if KEYS[5] then
      redis.call('SADD', KEYS[5], user)
      redis.call('PEXPIREAT', KEYS[5], m.expire)
    end
    if redis.call('HGET', KEYS[3], order) ~= record then
      redis.call('HSET', KEYS[3], order, record)
      changed = true
    end
    out[j] = 1
  end
end
if changed then
  -- Held units changed: a recount or snapshot read meanwhile must know (see gen).
  redis.call('HINCRBY', KEYS[1], 'gen', 1)
end
-- Buyers, orders and the released set expire with the sale state, as reserve.lua and
-- release.lua keep them.
-- (PEXPIREAT of a key that does not exist does nothing.)
for k = 2, 4 do
  redis.call('PEXPIREAT', KEYS[k], m.expire)
end
return out
