-- waitlist: a user joins a sold-out voucher's waitlist, at its end, with the order id a
-- unit handed to it becomes (hand_off in prelude.lua); a user already on it keeps its
-- place and order id. Judged by the sale state, in one step with the write, so no
-- unit is on sale while a user joins.
--
-- KEYS[1] meta, KEYS[2] buyers, KEYS[3] waitlist (sorted set: user, scored by the
-- order of joining), KEYS[4] waiting (hash: user to order id, and 'seq', the last
-- score given) (one voucher, one hash tag), then, for a campaign's voucher, the
-- campaign's keys (campaign_terms in prelude.lua).
-- ARGV[1] user_id, ARGV[2] order_id, ARGV[3] how many vouchers the caller believes the
-- voucher's campaign holds (0: in no campaign), ARGV[4] the voucher's number in it.
-- A user who holds the campaign's per-user limit across its other vouchers is
-- refused (the hand-off judges again when its turn comes: hand_off in prelude.lua).
-- Returns {code, extra}: 0 on the waitlist (extra: the position, from 1), 1 already
-- purchased (extra: the held order id), 2 not sold out (units on sale, or not
-- started), 3 ended, 4 no sale state, 5 sale state being restored, 6 over the
-- campaign's per-user limit (extra: the orders the user holds of the campaign, space
-- separated), 7 the campaign holds another number of vouchers than ARGV[3] (extra:
-- that number; nothing written: call again with it).
local m = sale_state(KEYS[1], 'restoring', 'settled')
if not m then
  return {4, ''}
end
if m.restoring == '1' then
  return {5, ''}
end
local now = sale_now()
if now >= tonumber(m.ends) or m.settled == '1' then
  return {3, ''}
end
local held = redis.call('HGET', KEYS[2], ARGV[1])
if held then
  return {1, held}
end
local camp, why, count = campaign_terms(5, tonumber(ARGV[3]), tonumber(ARGV[4]))
if why == 'changed' then
  return {7, count}
end
if why == 'none' then
  return {4, ''}
end
if camp then
  local units, orders = campaign_holding(camp, ARGV[1])
  if units >= camp.limit then
    return {6, table.concat(orders, ' ')}
  end
end
local rank = redis.call('ZRANK', KEYS[3], ARGV[1])
if rank then
  return {0, tostring(rank + 1)}
end
if now < tonumber(m.begins) or tonumber(m.remaining) > 0 then
  return {2, ''}
end
local seq = redis.call('HINCRBY', KEYS[4], 'seq', 1)
redis.call('ZADD', KEYS[3], seq, ARGV[1])
redis.call('HSET', KEYS[4], ARGV[1], ARGV[2])
for k = 3, 4 do
  redis.call('PEXPIREAT', KEYS[k], m.expire)
end
return {0, tostring(redis.call('ZCARD', KEYS[3]))}
