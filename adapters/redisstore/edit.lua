-- edit: carry a voucher's terms — stock, window, per-user limit, and their version —
-- into its sale state, in one step: the remaining units move by the change of the
-- stock, so the units reservations hold stay held; a sale whose end moves past now is
-- open to grabs again (no longer settled); the keys expire at the new end plus the
-- grace (never before now plus the grace: entries not yet persisted keep their time);
-- units added go first to the voucher's waitlist, in the same step (hand_off in
-- prelude.lua), and those nobody on it may take come back on sale and are announced
-- on the restock channel, as a release does, so every instance drops its sold-out
-- flag.
--
-- KEYS[1] meta, KEYS[2] buyers, KEYS[3] orders, KEYS[4] released, KEYS[5] stream,
-- KEYS[6] dead, KEYS[7] waitlist, KEYS[8] waiting (one voucher, one hash tag), then,
-- for a campaign's voucher, the campaign's keys (campaign_terms in prelude.lua).
-- ARGV[1] stock, ARGV[2] begins_ms, ARGV[3] ends_ms, ARGV[4] per_user_limit,
-- ARGV[5] grace_ms, ARGV[6] version, ARGV[7] mode: 'newer' (only over an older
-- version), 'held' (whatever version the state holds: the caller holds the voucher's
-- lock) or 'strict' ('held', refusing to take away more units than remain),
-- ARGV[8] restock channel, ARGV[9] voucher_id (the message), ARGV[10] sharded ('1':
-- SPUBLISH on the voucher's own channel, as on Redis Cluster; '0': PUBLISH),
-- ARGV[11] admission, ARGV[12] challenge (they never change; written with the terms,
-- so a state loaded without them gets them, as warm.lua does), ARGV[13]
-- payment_window_ms (the orders of the units handed off are recorded with their
-- deadline, see add_reservation in prelude.lua; 0: none), ARGV[14] how many vouchers
-- the caller believes the voucher's campaign holds (0: in no campaign), ARGV[15] the
-- voucher's number in it. A campaign's voucher hands off no more units than the
-- campaign's cap has left, and only while the whole campaign can be judged.
-- Returns {-4, count} when the campaign holds count vouchers, not ARGV[14] (nothing
-- written: call again with it), {1, user_1, order_1, …} when it changed the state (the users units were
-- handed off to, each with the order it now holds), else {code}: 0 when there was nothing to change (the same
-- terms, or in mode 'newer' a version not older than the state's); -1 without sale
-- state (nothing written); in mode 'strict', changing nothing, -2 when fewer units
-- remain than the stock loses and -3 while the state is being restored (its remaining
-- units are not known yet).
local m = sale_state(KEYS[1], 'version', 'restoring', 'settled', 'admission', 'challenge')
if not m then
  return {-1}
end
local version, want = tonumber(m.version) or 0, tonumber(ARGV[6])
if ARGV[7] == 'newer' and version >= want then
  return {0}
end
if ARGV[7] == 'strict' and m.restoring == '1' then
  return {-3}
end
local camp, why, count = campaign_terms(9, tonumber(ARGV[14]), tonumber(ARGV[15]))
if why == 'changed' then
  return {-4, count}
end
local stock, remaining = tonumber(m.stock), tonumber(m.remaining)
local left = remaining + tonumber(ARGV[1]) - stock
if left < 0 then
  if ARGV[7] == 'strict' then
    return {-2}
  end
  left = 0
end
local now = sale_now()
local ends = tonumber(ARGV[3])
local expire = math.max(ends, now) + tonumber(ARGV[5])
local reopened = m.settled == '1' and now < ends
if left == remaining and tostring(stock) == ARGV[1] and m.begins == ARGV[2] and m.ends == ARGV[3] and
    m.limit == ARGV[4] and version == want and not reopened and m.admission == ARGV[11] and
    m.challenge == ARGV[12] then
  return {0}
end
local given, to = 0, {}
if left > remaining then
  m.settled = reopened and '0' or m.settled
  local offered = left - remaining
  local taken = camp and campaign_taken(camp)
  if why == 'none' or camp and not taken then
    offered = 0
  elseif camp and camp.cap then
    offered = math.max(0, math.min(offered, camp.cap - taken))
  end
  given, to = hand_off({meta = KEYS[1], buyers = KEYS[2], orders = KEYS[3], stream = KEYS[5],
    waitlist = KEYS[7], waiting = KEYS[8], campaign = camp}, m, offered, ARGV[3], expire, tonumber(ARGV[13]))
end
redis.call('HSET', KEYS[1], 'stock', ARGV[1], 'remaining', left - given, 'begins', ARGV[2], 'ends', ARGV[3],
  'limit', ARGV[4], 'expire', expire, 'version', ARGV[6], 'admission', ARGV[11], 'challenge', ARGV[12])
if camp then
  campaign_took(camp, (tonumber(ARGV[1]) - (left - given)) - (stock - remaining))
end
if left ~= remaining then
  -- 'gen' counts the changes of the remaining and held units (see reserve.lua).
  redis.call('HINCRBY', KEYS[1], 'gen', 1)
end
if reopened then
  redis.call('HDEL', KEYS[1], 'settled')
end
for k = 1, 8 do
  redis.call('PEXPIREAT', KEYS[k], expire)
end
if left - given > remaining then
  if ARGV[10] == '1' then
    redis.call('SPUBLISH', ARGV[8], ARGV[9])
  else
    redis.call('PUBLISH', ARGV[8], ARGV[9])
  end
end
local out = {1}
for _, v in ipairs(to) do
  out[#out + 1] = v
end
return out
