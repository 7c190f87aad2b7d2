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

-- gcra judges one attempt of a user against their rate (GCRA) at now, given tat, the
-- user's theoretical arrival time in ms (false or nil: none yet): it returns 0 and the
-- new tat when the attempt is within the rate (the caller records it), or how many ms
-- the user must wait and nil (nothing to record). interval is the ms one attempt
-- costs, tolerance the burst the user may make at once, in ms. Every attempt that
-- passes counts, whatever the grab's answer. The users' tats of a voucher are the
-- fields of one hash (Keys.Rates), which expires with the sale state: a tat in the
-- past counts as none.
local function gcra(tat, now, interval, tolerance)
  tat = tonumber(tat) or now
  if tat < now then
    tat = now
  end
  if now < tat - tolerance then
    return tat - tolerance - now, nil
  end
  return 0, tat + interval
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

-- add_reservation appends the stream entry (to stream) of a reservation of qty units
-- of user under order, taken at stamp (Unix ms, a string) with a payment window of
-- window ms, and returns its record for the orders hash, in codec.go's shapes
-- (entryValues, encodeRecord): the record "user:qty:at_ms", with ":expires_ms" after
-- it, and the entry's field "r" "user:qty:at_ms:order" with "x" expires_ms beside it,
-- where expires_ms is the deadline, stamp plus window, kept from then on — both left
-- out when window is 0 (none recorded). tp, when not '' or nil, is the grab's
-- traceparent, the entry's "tp".
local function add_reservation(stream, user, order, qty, stamp, window, tp)
  local base = user .. ':' .. qty .. ':' .. stamp
  local record, entry = base, {'r', base .. ':' .. order}
  if window > 0 then
    local expires = tostring(tonumber(stamp) + window)
    record = base .. ':' .. expires
    entry[3], entry[4] = 'x', expires
  end
  if tp and tp ~= '' then
    entry[#entry + 1] = 'tp'
    entry[#entry + 1] = tp
  end
  redis.call('XADD', stream, '*', unpack(entry))
  return record
end

-- A campaign's voucher is judged against the whole campaign (Go twin:
-- domain.CampaignSale). Its scripts take the campaign's keys last — its terms
-- (Keys.Campaign), its holders (Keys.CampaignHolders), then the meta, buyers and
-- orders of each of its vouchers in turn (Stock.campaignKeys) — and, as arguments, how
-- many vouchers the caller believes the campaign holds and the voucher's number in it.

-- campaign_terms reads the terms of the campaign whose keys start at KEYS[first],
-- for a caller who believes it holds variants vouchers, from a voucher numbered
-- number. It returns the campaign {first, variants, limit, cap (nil: none), holders},
-- or nil and why not: nil for a voucher in no campaign (variants 0), 'none' when its
-- terms are not loaded (or not yet with this voucher), 'changed' and the count it
-- holds when that is not variants (the caller calls again with it).
local function campaign_terms(first, variants, number)
  if variants == 0 then
    return nil
  end
  local c = redis.call('HMGET', KEYS[first], 'variants', 'limit', 'cap')
  if not c[1] or not c[2] or number > tonumber(c[1]) then
    return nil, 'none'
  end
  if tonumber(c[1]) ~= variants then
    return nil, 'changed', c[1]
  end
  return {first = first, variants = variants, number = number, limit = tonumber(c[2]),
    cap = tonumber(c[3]), holders = KEYS[first + 1]}
end

-- campaign_meta, campaign_buyers and campaign_orders are the keys of camp's j-th
-- voucher.
local function campaign_meta(camp, j)
  return KEYS[camp.first + 3 * j - 1]
end
local function campaign_buyers(camp, j)
  return KEYS[camp.first + 3 * j]
end
local function campaign_orders(camp, j)
  return KEYS[camp.first + 3 * j + 1]
end

-- record_qty reads the units of an orders hash's record ("user:qty:…"); 1 for none.
local function record_qty(record)
  return record and tonumber(string.match(record, '^[^:]*:([^:]*)')) or 1
end

-- campaign_taken returns the units camp's vouchers hold taken (stock minus
-- remaining, summed), or nil and why not: 'none' when one has no sale state,
-- 'restoring' while one is being restored (its buyers are not all known yet). The sum
-- is kept in the campaign's terms (field 'taken'), so a grab reads one field instead
-- of every voucher's state: summed here when absent and left there, moved by every
-- script that changes a counted voucher's stock or remaining units in the same step
-- (campaign_took: reserve, release, draw, edit), and deleted, in the same step, by
-- whatever changes them otherwise or rebuilds a voucher's state (warm, restoring,
-- recount, the WATCH strategy's grab, campaign.lua's change of the vouchers counted).
-- It is never left while a voucher restores: restoring.lua deletes it as it marks
-- one, and this sum is not kept while one is marked.
local function campaign_taken(camp)
  local kept = redis.call('HGET', KEYS[camp.first], 'taken')
  if kept then
    return tonumber(kept)
  end
  local taken = 0
  for j = 1, camp.variants do
    local f = redis.call('HMGET', campaign_meta(camp, j), 'stock', 'remaining', 'restoring')
    if not f[1] or not f[2] then
      return nil, 'none'
    end
    if f[3] == '1' then
      return nil, 'restoring'
    end
    taken = taken + tonumber(f[1]) - tonumber(f[2])
  end
  redis.call('HSET', KEYS[camp.first], 'taken', taken)
  return taken
end

-- campaign_took moves the units camp's vouchers hold taken, where they are kept (see
-- campaign_taken), by delta: what a script took (positive) or gave back (negative)
-- of a counted voucher's units, after it read them.
local function campaign_took(camp, delta)
  if delta ~= 0 and redis.call('HEXISTS', KEYS[camp.first], 'taken') == 1 then
    redis.call('HINCRBY', KEYS[camp.first], 'taken', delta)
  end
end

-- campaign_holding returns the units user holds of camp's vouchers other than its
-- own (camp.number), and the ids of those orders; 0 for a user not among its holders.
local function campaign_holding(camp, user)
  local units, orders = 0, {}
  if redis.call('SISMEMBER', camp.holders, user) == 0 then
    return units, orders
  end
  for j = 1, camp.variants do
    if j ~= camp.number then
      local order = redis.call('HGET', campaign_buyers(camp, j), user)
      if order then
        units = units + record_qty(redis.call('HGET', campaign_orders(camp, j), order))
        orders[#orders + 1] = order
      end
    end
  end
  return units, orders
end

-- hand_off gives up to units units that just came back (a release, an edit that adds
-- units) to the first users of the voucher's waitlist who may still buy, one unit
-- each, before they go back on sale: each one given becomes a reservation exactly as
-- reserve.lua takes one (the buyer, the order record, the stream entry the workers
-- persist as an awaiting_payment order, the tally), under the order id minted when
-- the user joined (waitlist.lua). A user leaves the waitlist as its turn comes: given
-- a unit, or passed over because it holds an order of the voucher already (a grab it
-- made meanwhile). The per-user limit is at least one unit, so it never passes a user
-- over; the deny list is not seen here: a denied user is kept off the waitlist at
-- join and taken off it when denied (Waitlist.Drop). Nothing is given while the sale
-- state is being restored (its buyers are not all known yet), once the sale is
-- settled, or at or after ends_ms. For a campaign's voucher (keys.campaign, from
-- campaign_terms) a user who holds the campaign's per-user limit across its vouchers
-- is passed over too, and a user given a unit joins the campaign's holders, so the
-- grab finds what it holds; the caller bounds units by the campaign's cap.
--
-- keys: meta, buyers, orders, stream, waitlist, waiting (one voucher, one hash tag),
-- and campaign (nil outside a campaign);
-- m: the sale state (sale_state with 'restoring' and 'settled'); ends_ms, expire_ms:
-- the sale's end and its keys' expiry; window: the payment window, ms, each given
-- unit's order is recorded with (add_reservation). It returns the units given and a flat list
-- {user_1, order_1, user_2, order_2, …} of whom they went to. At most units + 1000
-- users leave the waitlist in one call, so a long run of users passed over cannot
-- stall the script.
local function hand_off(keys, m, units, ends_ms, expire_ms, window)
  local given, to = 0, {}
  if units <= 0 or m.restoring == '1' or m.settled == '1' then
    return given, to
  end
  local now = sale_now()
  if now >= tonumber(ends_ms) then
    return given, to
  end
  local turns = units + 1000
  while given < units and turns > 0 do
    turns = turns - 1
    local head = redis.call('ZPOPMIN', keys.waitlist)
    if #head == 0 then
      break
    end
    local user = head[1]
    local order = redis.call('HGET', keys.waiting, user)
    redis.call('HDEL', keys.waiting, user)
    if order and not redis.call('HGET', keys.buyers, user) and
        (not keys.campaign or campaign_holding(keys.campaign, user) < keys.campaign.limit) then
      redis.call('HSET', keys.buyers, user, order)
      redis.call('HSET', keys.orders, order, add_reservation(keys.stream, user, order, '1', tostring(now), window))
      given = given + 1
      to[#to + 1] = user
      to[#to + 1] = order
    end
  end
  if given > 0 then
    redis.call('HINCRBY', keys.meta, 'queued', given)
    redis.call('HINCRBY', keys.meta, 'queued_entries', given)
    for _, k in ipairs({keys.buyers, keys.orders, keys.stream}) do
      redis.call('PEXPIREAT', k, expire_ms)
    end
    if keys.campaign then
      local who = {}
      for q = 1, #to, 2 do
        who[#who + 1] = to[q]
      end
      redis.call('SADD', keys.campaign.holders, unpack(who))
      redis.call('PEXPIREAT', keys.campaign.holders, expire_ms)
    end
  end
  return given, to
end

-- room_sale reads the sale a waiting room admits to, its keys from KEYS[first] on: a
-- voucher's sale state (variants 0), or a campaign's terms (Keys.Campaign) then the
-- sale states of its variants vouchers. It returns the state the room judges by
-- (fields paused, restoring, begins and ends, as sale_state reads them), the units a
-- grab could take now (those of vouchers not paused) and the units left at all — for
-- a campaign summed over its vouchers, at most what its cap leaves; paused only when
-- every voucher is, restoring while any is. It returns nil when there is no sale
-- state, and nil, 'changed' and the count when the campaign holds another number of
-- vouchers than variants (the caller calls again with it).
local function room_sale(first, variants)
  if variants == 0 then
    local m = sale_state(KEYS[first], 'paused', 'restoring')
    if not m then
      return nil
    end
    local left = tonumber(m.remaining)
    return m, left, left
  end
  local c = redis.call('HMGET', KEYS[first], 'variants', 'cap')
  if not c[1] then
    return nil
  end
  if tonumber(c[1]) ~= variants then
    return nil, 'changed', tonumber(c[1])
  end
  local out = {paused = '1', restoring = false}
  local on_sale, left, taken = 0, 0, 0
  for j = 1, variants do
    local m = sale_state(KEYS[first + j], 'paused', 'restoring')
    if not m then
      return nil
    end
    if m.restoring == '1' then
      out.restoring = '1'
    end
    out.begins, out.ends = m.begins, m.ends
    local remaining = tonumber(m.remaining)
    taken = taken + tonumber(m.stock) - remaining
    left = left + remaining
    if m.paused ~= '1' then
      out.paused = '0'
      on_sale = on_sale + remaining
    end
  end
  if c[2] then
    local cap_left = math.max(tonumber(c[2]) - taken, 0)
    on_sale, left = math.min(on_sale, cap_left), math.min(left, cap_left)
  end
  return out, on_sale, left
end
