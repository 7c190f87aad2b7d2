-- warm: load a voucher's sale state unless it is there, and on every warm-up make sure
-- the stream and its consumer group exist.
--
-- KEYS[1] meta, KEYS[2] stream (one voucher, one hash tag), then for a campaign's
-- voucher KEYS[3] its campaign's terms, whose kept units taken (campaign_taken in
-- prelude.lua) are deleted when a state is loaded.
-- ARGV[1] stock, ARGV[2] remaining, ARGV[3] begins_ms, ARGV[4] ends_ms,
-- ARGV[5] per_user_limit, ARGV[6] expire_at_ms, ARGV[7] group, ARGV[8] paused ('1' or
-- '0'), ARGV[9] restoring ('1': load the state "restoring", see below), ARGV[10] the
-- version of the terms (edit.lua), ARGV[11] admission ('first_come', 'waiting_room' or
-- 'draw'), ARGV[12] challenge ('none' or 'pow').
-- Returns 1 when it loaded the state; 2 when the state was there but still restoring
-- (the caller that loaded it died before it finished: the new caller restores it);
-- 3 when it was there and whole but holds terms of another version (an edit whose
-- write here did not land, or one under way), untouched; 0 when the state was there,
-- untouched. The stream expires with the sale state (at
-- the state's own expire when it was there). The admission and challenge, which never
-- change after a voucher's creation, are written to a state there without them (one
-- loaded by a version of seckill before them), so no grab of a waiting room or a
-- proof of work is ever judged as first come.

-- A live group keeps its position, a lost one comes back. This goes first so that a
-- failure (a key of the wrong type) leaves nothing half done.
local failed = create_group(KEYS[2], ARGV[7])
if failed then
  return failed
end
-- Load a voucher's sale state only if it is absent: a live counter is never reset.
-- The remaining units come apart from the stock: the database's live orders hold some.
-- With ARGV[9] '1' it is loaded "restoring": grabs answer unavailable until the
-- caller has restored the live orders' reservations and cleared the flag, so
-- no user who holds an order can grab again meanwhile.
local loaded = 0
local state = sale_state(KEYS[1], 'restoring', 'version', 'admission', 'challenge')
if not state then
  -- A partial hash is no sale state: it is replaced whole.
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1],
    'stock', ARGV[1], 'remaining', ARGV[2],
    'begins', ARGV[3], 'ends', ARGV[4], 'limit', ARGV[5], 'expire', ARGV[6], 'paused', ARGV[8],
    'version', ARGV[10], 'admission', ARGV[11], 'challenge', ARGV[12])
  if ARGV[9] == '1' then
    redis.call('HSET', KEYS[1], 'restoring', '1')
  end
  redis.call('PEXPIREAT', KEYS[1], ARGV[6])
  if KEYS[3] then
    redis.call('HDEL', KEYS[3], 'taken')
  end
  loaded = 1
else
  if state.admission ~= ARGV[11] or state.challenge ~= ARGV[12] then
    redis.call('HSET', KEYS[1], 'admission', ARGV[11], 'challenge', ARGV[12])
  end
  if state.restoring == '1' then
    -- Loaded earlier, but its restoring never finished (the caller died): again.
    loaded = 2
  elseif (state.version or '0') ~= ARGV[10] then
    loaded = 3
  end
end
-- The stream expires with the sale state it belongs to, as reserve.lua keeps it.
local expire = redis.call('HGET', KEYS[1], 'expire') or ARGV[6]
redis.call('PEXPIREAT', KEYS[2], expire)
return loaded
