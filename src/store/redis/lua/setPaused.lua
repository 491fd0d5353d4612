#!lua flags=allow-oom
--[[
  setPaused: pause or resume claiming. Running jobs are not affected.

  KEYS: the partition keys (includes/keys.lua).
  Reads:     due, groups
  Writes:    meta
  Publishes: wake
  ARGV[2] paused  '1' | '0'
  Returns: 1
  Errors: none.
]]
-- includes: keys, base
if ARGV[2] == '1' then
  rcall('HSET', metaKey, 'paused', '1')
else
  rcall('HDEL', metaKey, 'paused')
  -- Workers slept without a due time while paused: tell them the earliest one.
  local head = rcall('ZRANGE', dueKey, 0, 0, 'WITHSCORES')
  if head[2] ~= nil then rcall('PUBLISH', wakeChannel, head[2]) end
  -- And the groups' (includes/keys.lua KEYS[17]): a turn means due work now.
  local groupHead = rcall('ZRANGE', groupsKey, 0, 0, 'WITHSCORES')
  if groupHead[2] ~= nil then
    local at = tonumber(groupHead[2])
    rcall('PUBLISH', wakeChannel, at < 1000000000000 and nowMs() or groupHead[2])
  end
end
return 1
