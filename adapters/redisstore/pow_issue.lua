-- pow_issue: keep a fresh proof-of-work challenge for one user of one voucher, the
-- user's most recent `most` challenges at most.
--
-- KEYS[1] the user's challenges of the voucher (Keys.Challenges).
-- ARGV[1] the challenge, ARGV[2] now_ms, ARGV[3] lifetime_ms, ARGV[4] most.
-- The expired challenges are dropped, the new one is added, scored by its expiry, and
-- the oldest are dropped while more than most remain; the key lives as long as its
-- newest challenge. Returns the new challenge's expiry (Unix ms).
local now, lifetime, most = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local expires = now + lifetime
-- Each challenge is scored above the ones before it, so the oldest is the lowest even
-- when two are issued in one millisecond (a tie would be broken by the challenges'
-- bytes, and could drop the new one).
local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if newest[2] and tonumber(newest[2]) >= expires then
  expires = tonumber(newest[2]) + 1
end
redis.call('ZADD', KEYS[1], expires, ARGV[1])
local over = redis.call('ZCARD', KEYS[1]) - most
if over > 0 then
  redis.call('ZPOPMIN', KEYS[1], over)
end
redis.call('PEXPIRE', KEYS[1], expires - now)
return expires
