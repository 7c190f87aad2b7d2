-- spend: KEYS[1] a challenge (Keys.Challenge, tagged {v<id>}). ARGV[1] the user id.
-- Deletes the challenge only if it was issued to that user: the check and the delete
-- are one step, so of two proofs of one challenge one passes.
-- Returns 1 spent; 0 no such challenge (never issued, expired or spent); 2 another
-- user's (left as it is).
local user = redis.call('GET', KEYS[1])
if not user then
  return 0
end
if user ~= ARGV[1] then
  return 2
end
redis.call('DEL', KEYS[1])
return 1
