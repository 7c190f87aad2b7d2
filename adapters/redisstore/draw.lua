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
-- voucher, or waits on its waitlist already, is skipped, and so is a step whose order
-- id is in the released set: each step's order id is derived from the draw and the
-- step (the same on every run), so when Redis forgot the draw's progress and the
-- heal restored the voucher's orders (the closed ones into the released set), the
-- draw carried out again from its start passes over every step that was served
-- before — a winner who cancelled gets no second order, a backfilled user who was
-- handed a unit does not queue again. The meta field draw_owed counts the units the
-- backfill is owed (winners' orders given back, less the backfilled users holding
-- the units they were handed); after the last step, that many of the units left
-- (they came back while the progress was lost) go to the waitlist (hand_off), as any
-- unit a winner gives back does. On a first run it stays 0.
--
-- A campaign's voucher carries out its part of the campaign's draw (a drop's:
-- domain.Draw.DropSteps) the same way, judged against the campaign too: a winner is
-- reserved only while the campaign's cap has units (the draw handed out no more; a
-- run again after Redis forgot finds the same), and joins the campaign's holders; the
-- units owed to the backfill are bounded by the cap too. After its last step the
-- voucher is marked draw_done, not drawn: when every voucher of the campaign is
-- draw_done, all of them are marked drawn in the same step and open to grabs at once,
-- so no first-come grab of one voucher takes a unit of the cap that another voucher's
-- winner is owed.
--
-- KEYS[1] meta, KEYS[2] buyers, KEYS[3] orders, KEYS[4] stream, KEYS[5] waitlist,
-- KEYS[6] waiting, KEYS[7] released (one voucher, one hash tag), then for a campaign's
-- voucher the campaign's keys (campaign_terms in prelude.lua).
-- ARGV[1] voucher_id, ARGV[2] from (the first step of the batch), ARGV[3] total (the
-- number of steps of the draw), ARGV[4] payment_window_ms (each winner's order is
-- recorded with its deadline, see add_reservation in prelude.lua; 0: none), ARGV[5]
-- how many vouchers the caller believes the voucher's campaign holds (0: in no
-- campaign), ARGV[6] the voucher's number in it, then three per step: user_id,
-- order_id, winner ('1' or '0').
-- Returns {code, next, reserved, listed}: code 0 done (next: the steps taken so far;
-- reserved and listed: what this batch did, reserved counting the units handed to
-- the waitlist after the last step, followed by whom those went to: user_1, order_1,
-- user_2, order_2, …), 1 no sale state (or no campaign terms), 2 sale state being
-- restored; {3, count} when the campaign holds count vouchers, not ARGV[5] (nothing
-- done: the caller calls again). A batch whose from is not the steps taken does
-- nothing and answers next.
local m = sale_state(KEYS[1], 'restoring', 'settled', 'draw_next', 'drawn', 'draw_owed', 'draw_done')
if not m then
  return {1, 0, 0, 0}
end
if m.restoring == '1' then
  return {2, 0, 0, 0}
end
local camp, why, count = campaign_terms(8, tonumber(ARGV[5]), tonumber(ARGV[6]))
if why == 'changed' then
  return {3, count}
elseif why == 'none' then
  return {1, 0, 0, 0}
end
local total = tonumber(ARGV[3])
if m.drawn == '1' or m.draw_done == '1' then
  return {0, total, 0, 0}
end
-- cap_left: the units the campaign's cap leaves (nil: no cap).
local cap_left
if camp and camp.cap then
  local taken, not_taken = campaign_taken(camp)
  if not taken then
    return {not_taken == 'restoring' and 2 or 1, 0, 0, 0}
  end
  cap_left = camp.cap - taken
end
local taken = tonumber(m.draw_next or '0')
local from = tonumber(ARGV[2])
if taken ~= from then
  return {0, taken, 0, 0}
end
local n = (#ARGV - 6) / 3
local window = tonumber(ARGV[4])
local remaining = tonumber(m.remaining)
local stamp = tostring(sale_now())
local reserved, listed = 0, 0
local owed = tonumber(m.draw_owed or '0')
local won = {}
for i = 1, n do
  local base = 7 + 3 * (i - 1)
  local user, order, winner = ARGV[base], ARGV[base + 1], ARGV[base + 2] == '1'
  local held = redis.call('HGET', KEYS[2], user)
  if redis.call('SISMEMBER', KEYS[7], order) == 1 then
    -- Served before, and given back since: a winner's unit is owed to the backfill.
    if winner then
      owed = owed + 1
    end
  elseif held == order then
    -- Served before and held: a backfilled user holds a unit a winner gave back.
    if not winner then
      owed = owed - 1
    end
  elseif not held then
    if winner then
      if remaining >= 1 and (not cap_left or cap_left >= 1) then
        remaining = remaining - 1
        if cap_left then
          cap_left = cap_left - 1
        end
        redis.call('HSET', KEYS[2], user, order)
        redis.call('HSET', KEYS[3], order, add_reservation(KEYS[4], user, order, '1', stamp, window))
        reserved = reserved + 1
        won[#won + 1] = user
      end
    elseif redis.call('ZADD', KEYS[5], 'NX', from + i, user) == 1 then
      redis.call('HSET', KEYS[6], user, order)
      listed = listed + 1
    end
  end
end
local next = from + n
redis.call('HSET', KEYS[1], 'draw_next', next, 'draw_owed', owed)
local handed, to = 0, {}
if camp and #won > 0 then
  redis.call('SADD', camp.holders, unpack(won))
  redis.call('PEXPIREAT', camp.holders, m.expire)
end
if next >= total then
  local units = math.min(remaining, owed)
  if cap_left then
    units = math.min(units, cap_left)
  end
  handed, to = hand_off({meta = KEYS[1], buyers = KEYS[2], orders = KEYS[3], stream = KEYS[4],
    waitlist = KEYS[5], waiting = KEYS[6], campaign = camp}, m, units, m.ends, m.expire, window)
  remaining = remaining - handed
  if not camp then
    redis.call('HSET', KEYS[1], 'drawn', '1')
  else
    redis.call('HSET', KEYS[1], 'draw_done', '1')
    local all = true
    for j = 1, camp.variants do
      if j ~= camp.number and redis.call('HGET', campaign_meta(camp, j), 'draw_done') ~= '1' then
        all = false
        break
      end
    end
    if all then
      for j = 1, camp.variants do
        redis.call('HSET', campaign_meta(camp, j), 'drawn', '1')
      end
    end
  end
end
if listed > 0 then
  redis.call('HSET', KEYS[6], 'seq', next)
  for k = 5, 6 do
    redis.call('PEXPIREAT', KEYS[k], m.expire)
  end
end
if reserved > 0 or handed > 0 then
  redis.call('HSET', KEYS[1], 'remaining', remaining)
  redis.call('HINCRBY', KEYS[1], 'gen', 1)
  if camp then
    campaign_took(camp, reserved + handed)
  end
end
if reserved > 0 then
  redis.call('HINCRBY', KEYS[1], 'queued', reserved)
  redis.call('HINCRBY', KEYS[1], 'queued_entries', reserved)
  for k = 2, 4 do
    redis.call('PEXPIREAT', KEYS[k], m.expire)
  end
end
local out = {0, next, reserved + handed, listed}
for _, v in ipairs(to) do
  out[#out + 1] = v
end
return out
