#!lua
--[[
  reschedule: move a waiting job to a new due time in one step (no window where it is absent). A
  dead job is revived at the new time with a fresh set of attempts. The job moves into or out of the
  wheel (includes/wheel.lua) as its new due time says. A waiting job's deadline (`expiry`,
  includes/keys.lua "Deadlines") is relative to its due time, so it moves with it; a revived dead
  job has none.

  KEYS: the partition keys (includes/keys.lua).
  Reads:     active
  Writes:    due, dead, jobs, counters, meta, wheel, wheel:<n>, wheel:idx:<s>, group:due, group:jobs,
             group:q:<group>, groups
  Publishes: wake
  ARGV[2] id
  ARGV[3] delayMs  ms from the server's now, or '' when atMs is given
  ARGV[4] atMs     epoch ms, or ''
  Returns: { status, dueAt }  status 1 rescheduled, 0 not found, 2 running (unchanged)
  Errors: none.
]]
-- includes: keys, base, records, wake, wheel, groups
local id = ARGV[2]
local rec = rcall('HGET', jobsKey, id)
local found = nil
if not rec then
  found = wheelFind(id)
  if not found then return { 0, -1 } end
  rec = found.record
elseif rcall('ZSCORE', activeKey, id) then
  return { 2, -1 }
end
local now = nowMs()
local dueAt = ARGV[3] ~= '' and now + tonumber(ARGV[3]) or tonumber(ARGV[4])
local r = readRecord(rec)
local wasDead = not found and rcall('ZSCORE', deadKey, id)
if wasDead then r.attempts = 0 end
-- A grouped job moves within its group (includes/groups.lua); a revived dead one joins it again.
local group = recordGroup(rec)
if group then
  groupKeysHere({ groupQueueKey(group) })
  if wasDead then groupCount(group, 1) end
end
r.dueAt = ''
-- The new place first, then the old one goes (includes/wheel.lua, "Write order": a stop midway
-- loses nothing).
local slot = wheelSlot(dueAt, now)
if slot then
  local moveAt, created = wheelPut(id, dueAt, writeRecord(r), slot, found ~= nil)
  if found then
    wheelRemove(id, found, true)
  else
    if group then groupUnwait(group, id, false) else rcall('ZREM', dueKey, id) end
    rcall('ZREM', deadKey, id)
    rcall('HDEL', jobsKey, id)
    wheelSplit()
  end
  if created then wakeIfWheelHead(moveAt) end
else
  rcall('HSET', jobsKey, id, writeRecord(r))
  if group then
    -- Out of the group's queue first: its tie fraction is found anew for the new due time.
    if not found then groupUnwait(group, id, false) end
    local batch = groupBatch()
    groupAdd(batch, group, dueAt, id, false)
    groupFlush(batch)
  else
    rcall('ZADD', dueKey, dueAt, id)
  end
  if found then wheelRemove(id, found, false) end
  if wasDead then rcall('ZREM', deadKey, id) end
  if group then wakeIfGroupHead(dueAt) else wakeIfHead(dueAt) end
end
return { 1, dueAt }
