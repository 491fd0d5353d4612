#!lua flags=no-writes
--[[
  scheduleRead: one schedule, or all of the partition's, with the state of their last run.

  KEYS: the partition keys (includes/keys.lua; schedules: includes/schedules.lua).
  Reads:     active, dead, jobs, meta, wheel, wheel:<n>, wheel:idx:<s>, schedules
  Writes:    none
  ARGV[2] key   the schedule key, or '' for all
  Returns: { now, key1, record1, lastRunState1, key2, ... } (lastRunState: includes/schedules.lua lastRunState)
  Errors: none.
]]
-- includes: keys, base, schedules
local out = { nowMs() }
local function push(key, v)
  out[#out + 1] = key
  out[#out + 1] = v
  out[#out + 1] = lastRunState(readSchedule(v))
end
if ARGV[2] ~= '' then
  local v = rcall('HGET', schedulesKey, ARGV[2])
  if v then push(ARGV[2], v) end
else
  local all = rcall('HGETALL', schedulesKey)
  for i = 1, #all, 2 do push(all[i], all[i + 1]) end
end
return out
