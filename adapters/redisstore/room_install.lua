-- room_install: put one chunk of a waiting room's shuffled order in place; the chunk
-- that ends the order opens admission (room_admit.lua).
--
-- KEYS[1] room, KEYS[2] places, KEYS[3] line.
-- ARGV[1] from (the position of the chunk's first user, 1 for the first chunk, which
-- starts over: the places and the line of an install cut short are dropped), ARGV[2]
-- total (the number of early joiners), ARGV[3] expire_at_ms, then the chunk's users
-- in order.
-- Returns 1 when admission is open (the last chunk), else 0; -1 when admission was
-- open already (nothing changed).
if redis.call('HGET', KEYS[1], 'installed') == '1' then
  return -1
end
local from, total, expire_at = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if from == 1 then
  redis.call('DEL', KEYS[2], KEYS[3])
end
local n = #ARGV - 3
-- In slices of 500 users: unpack's bound on the arguments of one command.
for first = 1, n, 500 do
  local last = math.min(first + 499, n)
  local places, users = {}, {}
  for i = first, last do
    places[#places + 1] = ARGV[3 + i]
    places[#places + 1] = from + i - 1
    users[#users + 1] = ARGV[3 + i]
  end
  redis.call('HSET', KEYS[2], unpack(places))
  redis.call('RPUSH', KEYS[3], unpack(users))
end
if n > 0 then
  redis.call('PEXPIREAT', KEYS[2], expire_at)
  redis.call('PEXPIREAT', KEYS[3], expire_at)
end
if from + n - 1 < total then
  return 0
end
redis.call('HSET', KEYS[1], 'installed', 1, 'closed', 1, 'early', total)
redis.call('PEXPIREAT', KEYS[1], expire_at)
return 1
