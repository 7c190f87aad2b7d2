-- restoring: mark a voucher's sale state "restoring" (grabs answer unavailable, see
-- reserve.lua) while it is healed, only if the state exists: a missing one is rebuilt
-- by warm.lua.
--
-- KEYS[1] meta, then for a campaign's voucher KEYS[2] its campaign's terms, whose
-- kept units taken (campaign_taken in prelude.lua) are deleted in the same step: no
-- grab of the campaign is judged by them while the voucher restores.
-- ARGV: none.
-- Returns 1 when marked, 2 when it was marked already, 0 without sale state (nothing
-- written).
if not sale_state(KEYS[1]) then
  return 0
end
if redis.call('HGET', KEYS[1], 'restoring') == '1' then
  return 2
end
redis.call('HSET', KEYS[1], 'restoring', '1')
if KEYS[2] then
  redis.call('HDEL', KEYS[2], 'taken')
end
return 1
