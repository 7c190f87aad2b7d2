-- release: give a closed order's units back and forget the user's reservation, only
-- while the user's reservation still names the order (applied twice, or after the
-- user grabbed again, it changes nothing), then announce the restock. The units go
-- first to the voucher's waitlist, in the same step (hand_off in prelude.lua): only
-- those nobody on it may take go back on sale. Either way the order joins the released
-- set, so no restore records it again (restore.lua). A channel is not a key, so it
-- comes as an argument.
--
-- KEYS[1] meta, KEYS[2] buyers, KEYS[3] orders, KEYS[4] released, KEYS[5] stream,
-- KEYS[6] waitlist, KEYS[7] waiting (one voucher, one hash tag), then, for a
-- campaign's voucher, the campaign's keys (campaign_terms in prelude.lua).
-- ARGV[1] user_id, ARGV[2] order_id, ARGV[3] qty, ARGV[4] restock channel,
-- ARGV[5] voucher_id (the message), ARGV[6] sharded ('1': SPUBLISH on the voucher's
-- own channel, as on Redis Cluster; '0': PUBLISH), ARGV[7] payment_window_ms (the
-- orders of the units handed off are recorded with their deadline, see
-- add_reservation in prelude.lua; 0: none), ARGV[8] how many vouchers the caller
-- believes the voucher's campaign holds (0: in no campaign), ARGV[9] the voucher's
-- number in it. The units of a campaign's voucher go to its waitlist only while the
-- whole campaign can be judged (every voucher's state loaded, none being restored),
-- else back on sale.
-- Returns {-1, count} when the campaign holds count vouchers, not ARGV[8] (nothing
-- written: call again with it), else {released, user_1, order_1, …}: released 1 when it released, 0 when there
-- was nothing to release: no sale state (nothing written), or the user holds no
-- reservation or another one (nothing released, handed off or published); then the
-- users the units were handed off to, each with the order it now holds.
local m = sale_state(KEYS[1], 'restoring', 'settled')
if not m then
  -- No sale state (the sale's keys expired): there is nothing to release into, and
  -- writing would create a partial hash.
  return {0}
end
local camp, why, count = campaign_terms(8, tonumber(ARGV[8]), tonumber(ARGV[9]))
if why == 'changed' then
  return {-1, count}
end
-- The order is closed for good: a restore from a list of live orders read before it
-- closed must not record it again, whether or not it is held now.
if redis.call('SADD', KEYS[4], ARGV[2]) == 1 then
  redis.call('PEXPIREAT', KEYS[4], m.expire)
end
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then
  return {0}
end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[2])
local units = tonumber(ARGV[3])
local offered = units
if why == 'none' or camp and not campaign_taken(camp) then
  offered = 0
end
local given, to = hand_off({meta = KEYS[1], buyers = KEYS[2], orders = KEYS[3], stream = KEYS[5],
  waitlist = KEYS[6], waiting = KEYS[7], campaign = camp}, m, offered, m.ends, m.expire, tonumber(ARGV[7]))
redis.call('HINCRBY', KEYS[1], 'remaining', units - given)
redis.call('HINCRBY', KEYS[1], 'gen', 1)
if camp then
  campaign_took(camp, given - units)
end
-- Units are back on sale: tell every instance, so they drop their sold-out flag. Only
-- a release that put units back on sale publishes, so each release announces once.
-- On Redis Cluster the channel is the voucher's own, on its shard (SPUBLISH).
if units > given then
  if ARGV[6] == '1' then
    redis.call('SPUBLISH', ARGV[4], ARGV[5])
  else
    redis.call('PUBLISH', ARGV[4], ARGV[5])
  end
end
local out = {1}
for _, v in ipairs(to) do
  out[#out + 1] = v
end
return out
