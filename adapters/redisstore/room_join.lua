-- room_join: put a user in a voucher's waiting room, once (O(1)).
--
-- KEYS[1] room (Keys.Room), KEYS[2] early joiners, KEYS[3] places, KEYS[4] late
-- joiners, KEYS[5] late line (all of one voucher, one hash tag).
-- ARGV[1] user_id, ARGV[2] begins_ms, ARGV[3] expire_at_ms (the keys' expiry),
-- ARGV[4] now_ms ('0': the sale's clock, sale_now).
-- Returns {early, again}: early 1 when the user is an early joiner (before begins, to
-- be shuffled), 0 when in the line by arrival; again 1 when the user had joined
-- already (nothing changed).
local user = ARGV[1]
if redis.call('HEXISTS', KEYS[4], user) == 1 then
  return {0, 1}
end
if redis.call('HEXISTS', KEYS[3], user) == 1 or redis.call('SISMEMBER', KEYS[2], user) == 1 then
  return {1, 1}
end
local now = tonumber(ARGV[4])
if now == 0 then
  now = sale_now()
end
local expire_at = tonumber(ARGV[3])
if now < tonumber(ARGV[2]) and redis.call('HGET', KEYS[1], 'closed') ~= '1' then
  redis.call('SADD', KEYS[2], user)
  redis.call('PEXPIREAT', KEYS[2], expire_at)
  return {1, 0}
end
local seq = redis.call('HINCRBY', KEYS[1], 'late', 1)
redis.call('HSET', KEYS[4], user, seq)
redis.call('RPUSH', KEYS[5], user)
for i = 1, 5 do
  if i ~= 2 and i ~= 3 then
    redis.call('PEXPIREAT', KEYS[i], expire_at)
  end
end
return {0, 0}
