-- room_spend: forget a user's pass of a waiting room, when it is the one that expires
-- at expires_ms (an order used it that the stock took without Redis: the postgres
-- strategy).
--
-- KEYS[1] passes. ARGV[1] user_id, ARGV[2] expires_ms.
-- Returns 1 when the pass was forgotten, 0 when the user holds no such pass.
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then
  return redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0
