-- room_close: end a waiting room's early joining at the start of its sale, and read
-- who joined early.
--
-- KEYS[1] room, KEYS[2] early joiners.
-- ARGV[1] begins_ms, ARGV[2] expire_at_ms, ARGV[3] now_ms ('0': sale_now).
-- Returns {0} while the sale's clock is before begins (nothing changed), else {1,
-- user_1, user_2, …}: every early joiner, in no order. From then on every joiner is a
-- late one (room_join.lua).
local now = tonumber(ARGV[3])
if now == 0 then
  now = sale_now()
end
if now < tonumber(ARGV[1]) then
  return {0}
end
redis.call('HSET', KEYS[1], 'closed', 1)
redis.call('PEXPIREAT', KEYS[1], tonumber(ARGV[2]))
local out = redis.call('SMEMBERS', KEYS[2])
table.insert(out, 1, 1)
return out
