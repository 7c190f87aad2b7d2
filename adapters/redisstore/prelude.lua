-- The Lua every script of this package shares, written once: scripts.go prepends it to
-- each script at load, so it is part of each script's source and hash (EVALSHA and its
-- NOSCRIPT fallback work as for any script, on one server and on a cluster's nodes).
-- It defines local functions only and touches no key by itself.

-- The fields every sale state has (Keys.Meta): warm.lua loads them together. A hash
-- missing any of them is no sale state: a stray write to an expired voucher leaves a
-- partial hash, and nothing may be judged or written against it. Go twin: audit.go's
-- metaFields.
local SALE_STATE = {'stock', 'remaining', 'begins', 'ends', 'limit', 'expire'}

-- sale_state reads the voucher's sale state from the meta hash at key, in one HMGET:
-- a table from field name to value holding the fields of SALE_STATE and those named
-- in ... (false where a named one is absent), or nil when the voucher has no sale
-- state. This is the one test of whether a sale state exists.
local function sale_state(key, ...)
  local names = {}
  for i, name in ipairs(SALE_STATE) do
    names[i] = name
  end
  for _, name in ipairs({...}) do
    names[#names + 1] = name
  end
  local values = redis.call('HMGET', key, unpack(names))
  for i = 1, #SALE_STATE do
    if not values[i] then
      return nil
    end
  end
  local state = {}
  for i, name in ipairs(names) do
    state[name] = values[i]
  end
  return state
end

-- create_group makes sure the stream at key exists and has the consumer group named
-- group (XGROUP CREATE … MKSTREAM), created at the stream's start so that entries left
-- in a stream that lost its group are delivered rather than skipped; a live group
-- keeps its position (BUSYGROUP is no failure). The start is spelled '0-0', not '0':
-- the same to Redis, but the embedded server reports the group's position as it was
-- given, and readers expect a full id. It returns nil, or the error reply to return
-- when XGROUP failed otherwise (a key of the wrong type): callers call it before their
-- first write, so such a failure leaves nothing half done.
local function create_group(key, group)
  local created = redis.pcall('XGROUP', 'CREATE', key, group, '0-0', 'MKSTREAM')
  if type(created) == 'table' and created.err and string.sub(created.err, 1, 9) ~= 'BUSYGROUP' then
    return redis.error_reply(created.err)
  end
  return nil
end


-- sale_now is the sale's clock: Redis's own time (TIME), in Unix ms. A script judges a
-- sale's window and the users' rates by it, and stamps the reservations it takes with
-- it, so every instance is judged by one clock, whatever its own host's says. (Redis 7
-- replicates a script's effects, not the script, so reading TIME before writing is
-- allowed.)
local function sale_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- user_rate counts one attempt against a user's rate (GCRA: key holds the theoretical
-- arrival time, in ms) at now: it returns 0 when the attempt is within the rate and
-- records it, or how many ms the user must wait (recording nothing). interval is the
-- ms one attempt costs, tolerance the burst the user may make at once, in ms. Every
-- attempt that passes counts, whatever the grab's answer.
local function user_rate(key, now, interval, tolerance)
  local tat = tonumber(redis.call('GET', key) or now)
  if tat < now then
    tat = now
  end
  if now < tat - tolerance then
    return tat - tolerance - now
  end
  tat = tat + interval
  redis.call('SET', key, tat, 'PX', tat - now)
  return 0
end

-- unacked counts what the consumer group named group has not acknowledged of the
-- stream at key — the one definition of "entries waiting to be persisted" — and
-- returns pending (delivered, not acknowledged), undelivered (after the group's
-- position) and the id of the oldest of them (false when none). A stream without the
-- group waits whole (the queue recreates the group at the stream's start). The
-- undelivered entries are the group's lag where Redis can tell it (it reports how many
-- entries the group has read); where it cannot (entries deleted past the group's
-- position; the embedded server never says) they are counted, up to cap: a count of
-- cap means "at least cap". A caller that needs no count passes cap 1.
local function unacked(key, group, cap)
  if redis.call('EXISTS', key) == 0 then
    return 0, 0, false
  end
  local g
  for _, fields in ipairs(redis.call('XINFO', 'GROUPS', key)) do
    local f = {}
    for j = 1, #fields, 2 do
      f[fields[j]] = fields[j + 1]
    end
    if f['name'] == group then
      g = f
    end
  end
  if not g then
    local first = redis.call('XRANGE', key, '-', '+', 'COUNT', 1)[1]
    return 0, redis.call('XLEN', key), first and first[1] or false
  end
  local pending = tonumber(g['pending']) or 0
  local oldest = false
  if pending > 0 then
    oldest = redis.call('XPENDING', key, group)[2]
  end
  local lag = tonumber(g['lag'])
  local undelivered
  if lag and g['entries-read'] then
    undelivered = lag
  end
  local after = redis.call('XRANGE', key, '(' .. g['last-delivered-id'], '+', 'COUNT', undelivered and 1 or cap)
  if not undelivered then
    undelivered = #after
  elseif undelivered == 0 and #after > 0 then
    -- Entries after the position that Redis's lag does not count (added under an id
    -- of the past): they wait all the same.
    undelivered = 1
  end
  if not oldest and after[1] then
    oldest = after[1][1]
  end
  return pending, undelivered, oldest
end
