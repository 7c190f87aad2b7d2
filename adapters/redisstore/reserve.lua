-- Judge and take one grab atomically; every check comes before the first write (but
-- the rate limiter's own counter), so a refused grab changes nothing.
local m = redis.call('HMGET', KEYS[1], 'remaining', 'begins', 'ends', 'limit', 'expire', 'paused')
for i = 1, 5 do
  -- A partial hash (a stray write to an expired voucher) counts as absent.
  if not m[i] then
    return {5}
  end
end
local user, order, now, qty = ARGV[1], ARGV[2], tonumber(ARGV[4]), tonumber(ARGV[3])
-- Per-user rate (GCRA): every attempt counts, whatever its answer.
local interval, tolerance = tonumber(ARGV[6]), tonumber(ARGV[7])
if interval > 0 then
  local tat = tonumber(redis.call('GET', KEYS[5]) or now)
  if tat < now then
    tat = now
  end
  if now < tat - tolerance then
    return {7, tostring(tat - tolerance - now)}
  end
  tat = tat + interval
  redis.call('SET', KEYS[5], tat, 'PX', tat - now)
end
if m[6] == '1' then
  return {8}
end
if now < tonumber(m[2]) then
  return {3}
end
if now >= tonumber(m[3]) then
  return {4}
end
if qty > tonumber(m[4]) then
  return {6}
end
local existing = redis.call('HGET', KEYS[2], user)
if existing then
  return {1, existing}
end
if tonumber(m[1]) < qty then
  return {2}
end
-- Backpressure: entries not yet persisted (delivered and pending, or never read).
local bound = tonumber(ARGV[8])
if bound > 0 then
  local backlog = redis.call('XLEN', KEYS[4])
  if backlog > bound then
    for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[4])) do
      local f = {}
      for i = 1, #g, 2 do
        f[g[i]] = g[i + 1]
      end
      if f['name'] == ARGV[9] then
        backlog = f['pending'] + (tonumber(f['lag']) or 0)
      end
    end
    if backlog > bound then
      return {9}
    end
  end
end
redis.call('HINCRBY', KEYS[1], 'remaining', -qty)
redis.call('HSET', KEYS[2], user, order)
redis.call('HSET', KEYS[3], order, user .. ':' .. ARGV[3] .. ':' .. ARGV[4])
local entry = {'order', order, 'voucher', ARGV[5], 'user', user, 'qty', ARGV[3], 'at', ARGV[4]}
if ARGV[10] ~= nil and ARGV[10] ~= '' then
  -- The grab's trace context (W3C traceparent), for the batch that persists it.
  entry[#entry + 1], entry[#entry + 2] = 'tp', ARGV[10]
end
redis.call('XADD', KEYS[4], '*', unpack(entry))
for i = 2, 4 do
  redis.call('PEXPIREAT', KEYS[i], m[5])
end
return {0, order}
