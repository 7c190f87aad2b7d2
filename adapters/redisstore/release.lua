-- Give an order's units back only while the user's reservation still names the order:
-- applied twice, or after the user grabbed again, it changes nothing.
if redis.call('HEXISTS', KEYS[1], 'remaining') == 0 then
  -- No sale state (the sale's keys expired): there is nothing to release into, and
  -- writing would create a partial hash.
  return 0
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
