-- room_admit: let users in from the front of a voucher's or a campaign's waiting room.
--
-- KEYS[1] room, KEYS[2] line (shuffled early joiners), KEYS[3] late line, KEYS[4]
-- passes, KEYS[5] those let in before (a voucher's buyers, Keys.Buyers; a campaign's
-- holders, Keys.CampaignHolders), then the sale the room admits to from KEYS[6] on
-- (room_sale: a voucher's meta, or a campaign's terms and its vouchers' metas).
-- ARGV[1] window (the most passes outstanding), ARGV[2] lifetime_ms (of a pass),
-- ARGV[3] most (users taken from the line by one call at most), ARGV[4]
-- expire_at_ms, ARGV[5] now_ms ('0': sale_now), ARGV[6] variants (0 for a voucher's
-- room; for a campaign's, how many vouchers the caller believes it holds), and, for a
-- sale whose state Redis does not hold (the postgres strategy), ARGV[7] open ('1'
-- while it is on) and ARGV[8] its units on sale, as the database has them: the sale
-- is then judged by those, not read.
-- Nothing happens before the shuffled order is installed (returns {0, -1, 0}), nor
-- when the campaign holds another number of vouchers (returns {-1, count}: the
-- caller calls again with it).
-- Otherwise the expired passes are dropped, then, unless the sale is paused, ended,
-- not started, being restored or has no sale state, users are popped from the front of
-- the line (the shuffled ones first, then the late ones) while fewer than window
-- passes are outstanding and units remain on sale, each given a pass (member the
-- user, score its expiry) until now + lifetime. A user who holds an order of the
-- voucher (a buyer; of a campaign, one of its holders) is passed over, counted let in
-- but given no pass: a user buys only once let in, so a buyer met in the line was let
-- in before, and the line starts over only when Redis forgot the room (the order is
-- installed again from the database).
-- The buyers are whole once the sale state is restored, hence no admission while it
-- is restoring. The admission rate (positions passed a second) is measured over
-- windows of 5 s.
-- Returns {n, outstanding, expires_ms, user_1, …, user_n}.
local now = tonumber(ARGV[5])
if now == 0 then
  now = sale_now()
end
if redis.call('HGET', KEYS[1], 'installed') ~= '1' then
  return {0, -1, 0}
end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
local outstanding = redis.call('ZCARD', KEYS[4])
local window, most = tonumber(ARGV[1]), tonumber(ARGV[3])
local expires = now + tonumber(ARGV[2])
local out = {0, outstanding, expires}
local variants = tonumber(ARGV[6])
local open, remaining
if ARGV[7] then
  open, remaining = ARGV[7] == '1', tonumber(ARGV[8])
else
  local m, on_sale, count = room_sale(6, variants)
  if on_sale == 'changed' then
    return {-1, count}
  end
  open = m and m.paused ~= '1' and m.restoring ~= '1' and now >= tonumber(m.begins) and now < tonumber(m.ends)
  remaining = m and on_sale or 0
end
local n, passed = 0, 0
while open and outstanding < window and remaining > 0 and passed < most do
  local user = redis.call('LPOP', KEYS[2])
  if not user then
    user = redis.call('LPOP', KEYS[3])
  end
  if not user then
    break
  end
  passed = passed + 1
  local before
  if variants == 0 then
    before = redis.call('HEXISTS', KEYS[5], user)
  else
    before = redis.call('SISMEMBER', KEYS[5], user)
  end
  if before == 0 then
    redis.call('ZADD', KEYS[4], expires, user)
    outstanding = outstanding + 1
    n = n + 1
    out[#out + 1] = user
  end
end
out[1], out[2] = n, outstanding
-- The rate's window: 5 s of admissions, then the next.
local r = redis.call('HMGET', KEYS[1], 'since', 'count')
local since, count = tonumber(r[1] or 0), tonumber(r[2] or 0) + passed
if since == 0 then
  since = now
end
if now - since >= 5000 then
  redis.call('HSET', KEYS[1], 'rate', math.floor(count * 1000000 / (now - since)), 'since', now, 'count', 0)
else
  redis.call('HSET', KEYS[1], 'since', since, 'count', count)
end
if passed > 0 then
  redis.call('HINCRBY', KEYS[1], 'admitted', passed)
end
if n > 0 then
  redis.call('PEXPIREAT', KEYS[4], tonumber(ARGV[4]))
end
return out
