-- draw: carries out one batch of a drawn voucher's steps (domain.DrawSteps): each
-- backfill step puts its user at the end of the voucher's waitlist (the waitlist's
-- hand-off, hand_off in prelude.lua, gives it the next unit that comes back), each
-- winner step reserves one unit for its user exactly as reserve.lua reserves a grab
-- (the buyer, the order record, the stream entry the workers persist as an
-- awaiting_payment order, the tally), bypassing the sale's window and gates but never
-- beyond the units left. The meta field draw_next counts the steps taken, in the same
-- step as the writes, so a batch is taken exactly once however often it is sent (a
-- retry, another instance resuming the draw); after the last step the field drawn is
-- '1' and the units left are on first-come sale. A user who holds an order of the
-- voucher, or waits on its waitlist already, is skipped (a draw resumed after a
-- Redis restart, whose progress is gone, starts over with the restored buyers).
--
-- KEYS[1] meta, KEYS[2] buyers, KEYS[3] orders, KEYS[4] stream, KEYS[5] waitlist,
-- KEYS[6] waiting (one voucher, one hash tag).
-- ARGV[1] voucher_id, ARGV[2] from (the first step of the batch), ARGV[3] total (the
-- number of steps of the draw), ARGV[4] payment_window_ms (each winner's order is
-- recorded with its deadline, see add_reservation in prelude.lua; 0: none), then three
-- per step: user_id, order_id, winner ('1' or '0').
-- Returns {code, next, reserved, listed}: code 0 done (next: the steps taken so far;
-- reserved and listed: what this batch did), 1 no sale state, 2 sale state being
-- restored. A batch whose from is not the steps taken does nothing and answers next.
local m = sale_state(KEYS[1], 'restoring', 'draw_next', 'drawn')
if not m then
  return {1, 0, 0, 0}
end
if m.restoring == '1' then
  return {2, 0, 0, 0}
end
local total = tonumber(ARGV[3])
if m.drawn == '1' then
  return {0, total, 0, 0}
end
local taken = tonumber(m.draw_next or '0')
local from = tonumber(ARGV[2])
if taken ~= from then
  return {0, taken, 0, 0}
end
local n = (#ARGV - 4) / 3
local window = tonumber(ARGV[4])
local remaining = tonumber(m.remaining)
local stamp = tostring(sale_now())
local reserved, listed = 0, 0
for i = 1, n do
  local base = 5 + 3 * (i - 1)
  local user, order = ARGV[base], ARGV[base + 1]
  if not redis.call('HGET', KEYS[2], user) then
    if ARGV[base + 2] == '1' then
      if remaining >= 1 then
        remaining = remaining - 1
        redis.call('HSET', KEYS[2], user, order)
        redis.call('HSET', KEYS[3], order, add_reservation(KEYS[4], user, order, '1', stamp, window))
        reserved = reserved + 1
      end
    elseif redis.call('ZADD', KEYS[5], 'NX', from + i, user) == 1 then
      redis.call('HSET', KEYS[6], user, order)
      listed = listed + 1
    end
  end
end
local next = from + n
redis.call('HSET', KEYS[1], 'draw_next', next)
if next >= total then
  redis.call('HSET', KEYS[1], 'drawn', '1')
end
if listed > 0 then
  redis.call('HSET', KEYS[6], 'seq', next)
  for k = 5, 6 do
    redis.call('PEXPIREAT', KEYS[k], m.expire)
  end
end
if reserved > 0 then
  redis.call('HSET', KEYS[1], 'remaining', remaining)
  redis.call('HINCRBY', KEYS[1], 'gen', 1)
  redis.call('HINCRBY', KEYS[1], 'queued', reserved)
  redis.call('HINCRBY', KEYS[1], 'queued_entries', reserved)
  for k = 2, 4 do
    redis.call('PEXPIREAT', KEYS[k], m.expire)
  end
end
return {0, next, reserved, listed}
