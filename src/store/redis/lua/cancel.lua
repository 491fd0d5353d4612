#!lua flags=allow-oom
--[[
  cancel: remove a waiting or dead job. A running job is not interrupted.

  KEYS: the partition keys (includes/keys.lua); a job in the wheel is found through its index (O(bucket)).
  Reads:     active, done:0, done:1, done:2, results
  Writes:    due, dead, jobs, errors, counters, meta, wheel, wheel:<n>, wheel:idx:<s>, schedules,
             expiry, group:due, group:jobs, group:q:<group>, groups
  Publishes: wake
  ARGV[2] id
  A schedule's pending tick that is cancelled is that run cancelled: the schedule goes on.
  A waiting job's deadline (`expiry` entry) goes with it.
  Returns: 1 cancelled, 0 not found, 2 running (left alone: its handler decides)
  Errors: none.
]]
-- includes: keys, base, wheel, schedules, groups
local id = ARGV[2]
if rcall('ZSCORE', activeKey, id) then return 2 end
-- A schedule's pending tick: the schedule goes on at its next tick (includes/schedules.lua tickCancelled).
local rec = rcall('HGET', jobsKey, id)
-- A grouped job waits in its group's queue and leaves its group (includes/groups.lua).
local group = rec and recordGroup(rec)
if group then groupKeysHere({ groupQueueKey(group) }) end
local waiting = rec and (group and groupUnwait(group, id, true) or (not group and rcall('ZREM', dueKey, id) == 1))
local removed = (waiting and 1 or 0) + rcall('ZREM', deadKey, id) + rcall('HDEL', jobsKey, id)
rcall('HDEL', errorsKey, id)
if removed > 0 then
  if waiting then
    rcall('HDEL', expiryKey, id)
    tickCancelled(id, rec, nowMs())
  end
  return 1
end
local found = wheelFind(id)
if found then
  wheelRemove(id, found, false)
  local wheelGroup = recordGroup(found.record)
  if wheelGroup then groupCount(wheelGroup, -1) end
  rcall('HDEL', expiryKey, id)
  tickCancelled(id, found.record, nowMs())
  return 1
end
return 0
