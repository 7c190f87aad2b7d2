-- reserve: the grab path, for a batch of grabs of one voucher.
--
-- Judge a batch of grabs of one voucher, in order, and take each one that passes; the
-- single grab is a batch of one. Every check of a grab comes before its first write
-- (but the rate limiter's own counter), so a refused grab changes nothing. Later grabs
-- of the batch see what earlier ones took: the units, and the buyer (a user's second
-- grab in one batch is answered with the first one's order).
--
-- KEYS[1] meta, KEYS[2] buyers, KEYS[3] orders, KEYS[4] stream, KEYS[5] passes (the
-- waiting room's outstanding passes, Keys.Passes), then, with a rate limit, KEYS[6]
-- the users' rates (Keys.Rates), then, when ARGV[6] > 0, KEYS[5+r+i] the index of grab
-- i's user (Keys.UserOrders; r is 1 with a rate limit, else 0), then, for a campaign's
-- voucher (ARGV[8] = c > 0), the campaign's keys last: its terms (Keys.Campaign), its
-- holders (Keys.CampaignHolders), then the meta, buyers and orders of each of its c
-- vouchers in turn — or, lean (ARGV[8] = -c), its terms and holders alone: enough
-- while the campaign keeps its units taken and no user of the batch is among its
-- holders (the first grab of each, the most common), else answered 16.
-- ARGV[1] voucher_id, ARGV[2] rate_interval_ms (0: no limit), ARGV[3] rate_tolerance_ms,
-- ARGV[4] max_backlog (0: none), ARGV[5] group, ARGV[6] index_ttl_ms (0: the caller
-- wrote the users' index itself, as on Redis Cluster, where a user's index lives in
-- another slot; else each reservation is added to its user's index, which then expires
-- after this long), ARGV[7] payment_window_ms (each reservation is recorded with its
-- deadline, at_ms plus this; 0: none recorded, see add_reservation in prelude.lua),
-- ARGV[8] how many vouchers the caller believes the voucher's campaign holds (0: the
-- voucher is in no campaign), ARGV[9] the voucher's number in it,
-- then seven per grab i, from ARGV[10+7(i-1)]: user_id, order_id, qty,
-- at_ms (when the grab is judged; '0': now, by the sale's clock — Redis's TIME, see
-- sale_now), traceparent ('' when untraced; else the entry's "tp" field, so the batch
-- that persists the entry links to the grab's trace), pass_ms (the expiry of the pass
-- the grab carries, Unix ms; '0': none), proven ('1': the caller verified the grab's
-- proof of work; else '0').
-- Returns {remaining, code_1, extra_1, code_2, extra_2, …}: the units left after the
-- batch (-1 without sale state), then per grab 0 reserved (extra: order id), 1 already
-- purchased (extra: the held order id), 2 sold out, 3 not started, 4 ended, 5 no sale
-- state, 6 quantity above the per-user limit, 7 over the user's rate (extra: retry
-- after, ms), 8 paused, 9 backlog over its bound, 10 sale state being restored (see
-- warm.lua), 11 challenge required, 12 queue required, 13 the campaign's cap has no
-- units left for it, 14 the campaign holds another number of vouchers than ARGV[8]
-- (extra: that number; nothing judged: call again with it), 15 over the campaign's
-- per-user limit (extra: the orders the user holds of the campaign, space
-- separated), 16 a lean call needs the campaign's vouchers' keys (nothing judged:
-- call again with them); extra is '' where it says nothing. A grab a waiting room admits uses its pass up: its member leaves the
-- passes set in the same step. A sale the queue has settled
-- (settle.lua: ended by the sale's clock, every entry persisted) answers ended to
-- every grab, so no entry is appended that no worker would read.
local m = sale_state(KEYS[1], 'paused', 'restoring', 'settled', 'admission', 'challenge', 'drawn')
local n = (#ARGV - 9) / 7
local window = tonumber(ARGV[7])
local out = {-1}
-- answer_all answers every grab of the batch with code (and extra, '' when nil),
-- nothing taken.
local function answer_all(code, extra)
  for _ = 1, n do
    out[#out + 1] = code
    out[#out + 1] = extra or ''
  end
  return out
end
-- No sale state (see sale_state in prelude.lua). Go twin: saleState (strategies/watchstock).
if not m then
  return answer_all(5)
end
if m.restoring == '1' then
  out[1] = tonumber(m.remaining)
  return answer_all(10)
end
local remaining, begins, ends, limit = tonumber(m.remaining), tonumber(m.begins), tonumber(m.ends), tonumber(m.limit)
local interval, tolerance, bound = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local index_ttl, index_base = tonumber(ARGV[6]), 5
if interval > 0 then
  index_base = 6
end
-- Entries not yet persisted (see unacked in prelude.lua), counted once for the batch
-- and then kept up to date as it appends. The stream's length bounds them: only past
-- the bound are they counted.
local backlog
local function waiting()
  if backlog then
    return backlog
  end
  backlog = redis.call('XLEN', KEYS[4])
  if backlog > bound then
    local pending, undelivered = unacked(KEYS[4], ARGV[5], bound + 1)
    backlog = pending + undelivered
  end
  return backlog
end
-- The sale's clock, read once for the batch when a grab asks for it.
local clock
local function at(i)
  local given = ARGV[10 + 7 * (i - 1) + 3]
  if given ~= '0' then
    return tonumber(given), given
  end
  clock = clock or sale_now()
  return clock, tostring(clock)
end

-- What the batch took so far, written once at the end: a user's order (so a second
-- grab of the same user in the batch finds it), and the records to add.
local took, buyers, orders = {}, {}, {}
-- The orders the batch's users held before it, read in one call: the batch writes
-- the buyers hash only at its end, so a read per grab would see the same.
local users = {}
for i = 1, n do
  users[i] = ARGV[10 + 7 * (i - 1)]
end
local held = redis.call('HMGET', KEYS[2], unpack(users))
-- A campaign's voucher is judged against the whole campaign too (campaign_terms in
-- prelude.lua): the units its cap has left, the units its vouchers hold taken
-- subtracted, and what each user holds of its other vouchers. No other script runs
-- meanwhile, and this batch's writes touch only this voucher, so what is read here
-- holds for the whole batch, kept up to date as it takes.
local camp
local variants = tonumber(ARGV[8])
local lean = variants < 0
if lean then
  variants = -variants
end
if variants > 0 then
  local why, count
  local first = #KEYS - 3 * variants - 1
  if lean then
    first = #KEYS - 1
  end
  camp, why, count = campaign_terms(first, variants, tonumber(ARGV[9]))
  if why == 'changed' then
    out[1] = tonumber(m.remaining)
    return answer_all(14, count)
  end
  if not camp then
    return answer_all(5)
  end
  if lean and redis.call('HEXISTS', KEYS[first], 'taken') == 0 then
    out[1] = tonumber(m.remaining)
    return answer_all(16)
  end
  local taken
  taken, why = campaign_taken(camp)
  if why == 'restoring' then
    -- Its buyers are not all known yet: no grab of the campaign may be judged.
    out[1] = tonumber(m.remaining)
    return answer_all(10)
  end
  if not taken then
    return answer_all(5)
  end
  if camp.cap then
    camp.left = camp.cap - taken
  end
  -- Only the users who may hold an order of the campaign are looked for in its
  -- vouchers' buyers (a first grab, the most common, costs one call here), all of
  -- them in one call per voucher.
  camp.units, camp.orders = {}, {}
  local may = redis.call('SMISMEMBER', camp.holders, unpack(users))
  local looked, who = {}, {}
  for i = 1, n do
    if may[i] == 1 then
      looked[#looked + 1] = i
      who[#who + 1] = users[i]
    end
  end
  if lean and #looked > 0 then
    out[1] = tonumber(m.remaining)
    return answer_all(16)
  end
  for j = 1, variants do
    if j ~= camp.number and #looked > 0 then
      local theirs = redis.call('HMGET', campaign_buyers(camp, j), unpack(who))
      for q, i in ipairs(looked) do
        local order = theirs[q]
        if order then
          local user = users[i]
          if camp.orders[user] == nil then
            camp.orders[user] = {}
            camp.units[user] = 0
          end
          if not camp.orders[user][order] then
            camp.orders[user][order] = true
            camp.orders[user][#camp.orders[user] + 1] = order
            camp.units[user] = camp.units[user] + record_qty(redis.call('HGET', campaign_orders(camp, j), order))
          end
        end
      end
    end
  end
end
-- The users' rates (theoretical arrival times), read in one call and kept up to date
-- as the batch counts its grabs (a user twice in a batch is counted twice); the ones
-- counted are written back in one call at the end.
local tats, counted, seen = {}, {}, {}
if interval > 0 then
  local read = redis.call('HMGET', KEYS[6], unpack(users))
  for i = 1, n do
    if tats[users[i]] == nil then
      tats[users[i]] = read[i]
    end
  end
end

-- admitted is the admission gate (Go twin: domain.Sale.admit, where the modes' grab
-- rules live): a waiting room admits a grab whose pass (pass, Unix ms; '0': none) has
-- not expired at now and is outstanding — its user's member of the passes set, scored
-- with that very expiry (a pass used, or another of the user's passes, is not). It
-- returns the code refusing the grab (nil: admitted), and whether taking it uses a
-- pass up. A draw admits no grab (code 3, not started) until it has been carried out
-- (draw.lua leaves drawn = '1'), then every grab, first come. Every other mode admits
-- every grab.
local function admitted(user, pass, now)
  if m.admission == 'draw' and m.drawn ~= '1' then
    return 3, false
  end
  if m.admission ~= 'waiting_room' then
    return nil, false
  end
  local expires = tonumber(pass)
  if expires == 0 or expires <= now then
    return 12, false
  end
  local score = redis.call('ZSCORE', KEYS[5], user)
  if score ~= false and tonumber(score) == expires then
    return nil, true
  end
  return 12, true
end

local function judge(i)
  local base = 10 + 7 * (i - 1)
  local user, order, qty = ARGV[base], ARGV[base + 1], tonumber(ARGV[base + 2])
  local now, stamp = at(i)
  -- Per-user rate (GCRA): every attempt counts, whatever its answer. The WATCH
  -- strategy calls the same function before its transaction (rate.lua).
  if interval > 0 then
    local wait, tat = gcra(tats[user], now, interval, tolerance)
    if wait > 0 then
      return 7, tostring(wait)
    end
    if not seen[user] then
      seen[user] = true
      counted[#counted + 1] = user
    end
    tats[user] = tat
  end
  -- Go twin: domain.Sale.Judge, rule 1 (the challenge).
  if m.challenge == 'pow' and ARGV[base + 6] ~= '1' then
    return 11, ''
  end
  -- Go twin: domain.Sale.Judge, rule 2 (the admission).
  local refused, uses_pass = admitted(user, ARGV[base + 5], now)
  if refused then
    return refused, ''
  end
  -- Go twin: domain.Sale.Judge, rule 3 (paused).
  if m.paused == '1' then
    return 8, ''
  end
  -- Go twin: domain.Sale.Judge, rule 4 (the window).
  if now < begins then
    return 3, ''
  end
  if now >= ends or m.settled == '1' then
    return 4, ''
  end
  -- Go twin: domain.Sale.Judge, rule 5 (the per-user limit, the campaign's too).
  if qty > limit or camp and qty > camp.limit then
    return 6, ''
  end
  -- Go twin: domain.Sale.Judge, rule 6 (an order already held).
  local existing = took[user] or held[i]
  if existing then
    return 1, existing
  end
  -- Go twin: domain.Sale.Judge, rule 7 (the campaign's per-user limit).
  if camp and camp.orders[user] and camp.units[user] + qty > camp.limit then
    return 15, table.concat(camp.orders[user], ' ')
  end
  -- Go twin: domain.Sale.Judge, rule 8 (the units left).
  if remaining < qty then
    return 2, ''
  end
  -- Go twin: domain.Sale.Judge, rule 9 (the campaign's cap).
  if camp and camp.left and camp.left < qty then
    return 13, ''
  end
  -- Go twin: Stock.Backlogged (optimistic.go, for strategies/watchstock), after domain.Sale.Judge.
  if bound > 0 and waiting() > bound then
    return 9, ''
  end
  remaining = remaining - qty
  if camp and camp.left then
    camp.left = camp.left - qty
  end
  if uses_pass then
    -- Used up with the reservation it admits: a later grab of the batch sees it gone.
    redis.call('ZREM', KEYS[5], user)
  end
  took[user] = order
  buyers[#buyers + 1] = user
  buyers[#buyers + 1] = order
  orders[#orders + 1] = order
  orders[#orders + 1] = add_reservation(KEYS[4], user, order, ARGV[base + 2], stamp, window, ARGV[base + 4])
  if index_ttl > 0 then
    redis.call('HSET', KEYS[index_base + i], order, ARGV[1])
    redis.call('PEXPIRE', KEYS[index_base + i], index_ttl)
  end
  if backlog then
    backlog = backlog + 1
  end
  return 0, order
end

for i = 1, n do
  local code, extra = judge(i)
  out[#out + 1] = code
  out[#out + 1] = extra
end
if #counted > 0 then
  local fields = {}
  for _, user in ipairs(counted) do
    fields[#fields + 1] = user
    fields[#fields + 1] = tats[user]
  end
  redis.call('HSET', KEYS[6], unpack(fields))
  redis.call('PEXPIREAT', KEYS[6], m.expire)
end
if #buyers > 0 then
  -- 'gen' counts the changes to the remaining and held units, so a reader that
  -- reads the orders hash a page at a time can tell whether it read one moment.
  redis.call('HSET', KEYS[1], 'remaining', remaining)
  redis.call('HINCRBY', KEYS[1], 'gen', 1)
  if camp then
    campaign_took(camp, tonumber(m.remaining) - remaining)
  end
  -- The tally of entries not yet acknowledged (see tally.go).
  redis.call('HINCRBY', KEYS[1], 'queued', tonumber(m.remaining) - remaining)
  redis.call('HINCRBY', KEYS[1], 'queued_entries', #buyers / 2)
  redis.call('HSET', KEYS[2], unpack(buyers))
  redis.call('HSET', KEYS[3], unpack(orders))
  if camp then
    local who = {}
    for q = 1, #buyers, 2 do
      who[#who + 1] = buyers[q]
    end
    redis.call('SADD', camp.holders, unpack(who))
    redis.call('PEXPIREAT', camp.holders, m.expire)
  end
  -- Buyers, orders and stream expire with the sale state.
  for k = 2, 4 do
    redis.call('PEXPIREAT', KEYS[k], m.expire)
  end
end
out[1] = remaining
return out
