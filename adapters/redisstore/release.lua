-- release: give a closed order's units back and forget the user's reservation, only
-- while the user's reservation still names the order (applied twice, or after the
-- user grabbed again, it changes nothing), then announce the restock. Either way the
-- order joins the released set, so no restore records it again (restore.lua). A
-- channel is not a key, so it comes as an argument.
--
-- KEYS[1] meta, KEYS[2] buyers, KEYS[3] orders, KEYS[4] released (one voucher, one
-- hash tag).
-- ARGV[1] user_id, ARGV[2] order_id, ARGV[3] qty, ARGV[4] restock channel,
-- ARGV[5] voucher_id (the message), ARGV[6] sharded ('1': SPUBLISH on the voucher's
-- own channel, as on Redis Cluster; '0': PUBLISH).
-- Returns 1 when it released (and published), 0 when there was nothing to release: no
-- sale state (nothing written), or the user holds no reservation or another one
-- (nothing released or published).
local m = sale_state(KEYS[1])
if not m then
  -- No sale state (the sale's keys expired): there is nothing to release into, and
  -- writing would create a partial hash.
  return 0
end
-- The order is closed for good: a restore from a list of live orders read before it
-- closed must not record it again, whether or not it is held now.
if redis.call('SADD', KEYS[4], ARGV[2]) == 1 then
  redis.call('PEXPIREAT', KEYS[4], m.expire)
end
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then
  return 0
end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[2])
redis.call('HINCRBY', KEYS[1], 'remaining', tonumber(ARGV[3]))
redis.call('HINCRBY', KEYS[1], 'gen', 1)
-- Units are back on sale: tell every instance, so they drop their sold-out flag. Only
-- a release that gave units back publishes, so each release announces once.
-- On Redis Cluster the channel is the voucher's own, on its shard (SPUBLISH).
if ARGV[6] == '1' then
  redis.call('SPUBLISH', ARGV[4], ARGV[5])
else
  redis.call('PUBLISH', ARGV[4], ARGV[5])
end
return 1
