#!lua flags=allow-oom
--[[
  groupAdmin: a partition's group limits, pauses and counts (queue.setGroupLimits, pauseGroup,
  listGroups, ...; includes/groups.lua, "Groups").

  KEYS: the partition keys (includes/keys.lua).
  Reads:     none
  Writes:    counters, meta, groups, group:jobs, group:active, group:state, group:q:<group>, group:r:<group>
  Publishes: wake
  ARGV[2] op, then per op (Returns: per op, below):
  setDefault ARGV[3] limits "<concurrency>,<rateMax>,<ratePer>" ('' clears): `meta` `groupLimits`,
             the default of every group of the partition (the caller writes every partition).
             Returns 1.
  setGroup   ARGV[3] group, ARGV[4] limits ('' removes the group's own: it follows the default).
             A group held by its concurrency gets its turn back (the claim checks the new limit).
             Returns 1.
  read       ARGV[3] group ('' for none). Returns { own limits | false, default | false }.
  pause      ARGV[3] group: it starts nothing until resumed (its waiting jobs stay). Returns 1 when
             it was not paused, else 0.
  resume     ARGV[3] group. Returns 1 when it was paused, else 0.
  list       ARGV[3] from (rank in `group:jobs`, busiest first), ARGV[4] limit. Returns
             { now, total, group1, jobs1, active1, ready1, limited1, paused1, ... }: `jobs` waiting
             and active, `ready` due in its queue now, `limited` 1 when its concurrency or rate holds
             it back, `paused` 1 or 0.
  totals     Returns { groups with jobs, held by their concurrency, paused }.
  Errors: none.
]]
-- includes: keys, base, groups
local op = ARGV[2]
-- Every op but the reads writes group data: the partition is in the groups' storage format from then on.
if op ~= 'read' and op ~= 'list' and op ~= 'totals' then markGroupFormat() end

if op == 'setDefault' then
  if ARGV[3] == '' then rcall('HDEL', metaKey, 'groupLimits') else rcall('HSET', metaKey, 'groupLimits', ARGV[3]) end
  return 1
end

if op == 'setGroup' then
  local g = ARGV[3]
  if ARGV[4] == '' then rcall('HDEL', groupStateKey, 'l:' .. g) else rcall('HSET', groupStateKey, 'l:' .. g, ARGV[4]) end
  if rcall('HDEL', groupStateKey, 'h:' .. g) == 1 then
    rcall('HINCRBY', countersKey, 'groupsHeld', -1)
    local now = nowMs()
    rcall('ZADD', groupsKey, 'LT', now, g)
    rcall('PUBLISH', wakeChannel, int(now))
  end
  return 1
end

if op == 'read' then
  local own = ARGV[3] ~= '' and rcall('HGET', groupStateKey, 'l:' .. ARGV[3]) or false
  return { own, rcall('HGET', metaKey, 'groupLimits') }
end

if op == 'pause' then
  local g = ARGV[3]
  local added = rcall('HSET', groupStateKey, 'p:' .. g, '1')
  rcall('ZREM', groupsKey, g)
  if added == 1 then rcall('HINCRBY', countersKey, 'groupsPaused', 1) end
  return added
end

if op == 'resume' then
  local g = ARGV[3]
  local removed = rcall('HDEL', groupStateKey, 'p:' .. g)
  if removed == 1 then
    rcall('HINCRBY', countersKey, 'groupsPaused', -1)
    groupKeysHere({ groupQueueKey(g) })
    local head = rcall('ZRANGE', groupQueueKey(g), 0, 0, 'WITHSCORES')
    if head[2] ~= nil then
      local at = math.floor(tonumber(head[2]))
      rcall('ZADD', groupsKey, 'LT', at, g)
      wakeIfGroupHead(at)
    end
  end
  return removed
end

if op == 'list' then
  local from, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
  local now = nowMs()
  local out = { now, rcall('ZCARD', groupJobsKey) }
  local page = rcall('ZREVRANGE', groupJobsKey, from, from + limit - 1, 'WITHSCORES')
  if #page == 0 then return out end
  local names, fields = {}, {}
  for i = 1, #page, 2 do
    local g = page[i]
    names[#names + 1] = g
    fields[#fields + 1] = 'p:' .. g
    fields[#fields + 1] = 'h:' .. g
    fields[#fields + 1] = 'l:' .. g
  end
  local active = hmgetMany(groupActiveKey, names)
  local state = hmgetMany(groupStateKey, fields)
  local default = rcall('HGET', metaKey, 'groupLimits')
  for i = 1, #names do
    local g = names[i]
    local running = tonumber(active[i]) or 0
    local limited = state[3 * i - 1] and 1 or 0
    local concurrency, rateMax, ratePer = readGroupLimits(state[3 * i] or default)
    if limited == 0 and concurrency and running >= concurrency then limited = 1 end
    if limited == 0 and rateMax and rcall('ZCOUNT', groupRateKey(g), '(' .. int(now - ratePer), '+inf') >= rateMax then limited = 1 end
    out[#out + 1] = g
    out[#out + 1] = page[2 * i]
    out[#out + 1] = running
    out[#out + 1] = rcall('ZCOUNT', groupQueueKey(g), '-inf', '(' .. int(now + 1))
    out[#out + 1] = limited
    out[#out + 1] = state[3 * i - 2] and 1 or 0
  end
  return out
end

if op == 'totals' then
  local counts = rcall('HMGET', countersKey, 'groupsHeld', 'groupsPaused')
  return { rcall('ZCARD', groupJobsKey), tonumber(counts[1]) or 0, tonumber(counts[2]) or 0 }
end

return redis.error_reply('ERR groupAdmin: unknown op ' .. tostring(op))
