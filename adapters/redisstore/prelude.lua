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

