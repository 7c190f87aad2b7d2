-- enter: a user enters a voucher's draw, or a campaign's, judged by the sale's clock
-- (sale_now): from the opening of entries until the sale begins, and never once the
-- draw has closed them (close.lua). A voucher's entry is a member of a set: one per
-- user, however often sent. A campaign's is a field of a hash, the user's id, valued
-- the voucher chosen: one per user, the latest choice standing.
--
-- KEYS[1] entries (a set of user ids, decimal; for a campaign a hash of user id ->
-- voucher id), KEYS[2] closed (the draw's mark that entries are over) (one voucher, or
-- one campaign's room, one hash tag).
-- ARGV[1] user_id, ARGV[2] entries_open_at, ARGV[3] begins_at, ARGV[4] expire_at (Unix
-- ms; the entries expire with the sale's keys), ARGV[5] the voucher chosen (a
-- campaign's entry; absent for a voucher's).
-- Returns {code, count}: 0 entered (or had entered), 1 not open yet, 2 closed; count is
-- the number of entrants.
local drop = ARGV[5] ~= nil
local function count()
  if drop then
    return redis.call('HLEN', KEYS[1])
  end
  return redis.call('SCARD', KEYS[1])
end
local now = sale_now()
if now < tonumber(ARGV[2]) then
  return {1, count()}
end
if now >= tonumber(ARGV[3]) or redis.call('EXISTS', KEYS[2]) == 1 then
  return {2, count()}
end
if drop then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[5])
else
  redis.call('SADD', KEYS[1], ARGV[1])
end
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
return {0, count()}
