-- spend: KEYS[1] a user's challenges of one voucher (Keys.Challenges, tagged {v<id>}).
-- ARGV[1] the challenge, ARGV[2] now_ms.
-- Removes the challenge, and reports whether it was there unexpired: the check and the
-- removal are one step, so of two proofs of one challenge one passes.
-- Returns 1 spent; 0 no such challenge (never issued to this user for this voucher,
-- expired, replaced by newer ones or spent).
local expires = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not expires then
  return 0
end
redis.call('ZREM', KEYS[1], ARGV[1])
if tonumber(expires) <= tonumber(ARGV[2]) then
  return 0
end
return 1
