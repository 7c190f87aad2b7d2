-- enter: a user enters a voucher's draw, judged by the sale's clock (sale_now): from
-- the opening of entries until the sale begins, and never once the draw has closed
-- them (close.lua). An entry is a member of a set: one per user, however often sent.
--
-- KEYS[1] entries (set of user ids, decimal), KEYS[2] closed (the draw's mark that
-- entries are over) (one voucher, one hash tag).
-- ARGV[1] user_id, ARGV[2] entries_open_at, ARGV[3] begins_at, ARGV[4] expire_at (Unix
-- ms; the set expires with the voucher's keys).
-- Returns {code, count}: 0 entered (or had entered), 1 not open yet, 2 closed; count is
-- the number of entrants.
local now = sale_now()
if now < tonumber(ARGV[2]) then
  return {1, redis.call('SCARD', KEYS[1])}
end
if now >= tonumber(ARGV[3]) or redis.call('EXISTS', KEYS[2]) == 1 then
  return {2, redis.call('SCARD', KEYS[1])}
end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
return {0, redis.call('SCARD', KEYS[1])}
