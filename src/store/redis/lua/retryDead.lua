#!lua
--[[
  retryDead: dead letters go back to `due` at once, with a fresh set of attempts.
  Their last error stays readable until they complete. They have no deadline (`expiry`,
  includes/keys.lua "Deadlines"): an expired job retried by hand runs whenever a worker takes it.

  KEYS: the partition keys (includes/keys.lua).
  Reads:     counters
  Writes:    due, dead, jobs, group:due, group:jobs, group:q:<group>, groups
  Publishes: wake
  ARGV[2]   limit  integer  how many to move at most when no ids are given (oldest first)
  ARGV[3..] ids    optional: exactly these
  Returns: number of jobs moved (ids that are not dead are skipped)
  Errors: none.
]]
-- includes: keys, base, records, wake, groups
local ids = {}
if #ARGV > 2 then
  for i = 3, #ARGV do ids[#ids + 1] = ARGV[i] end
else
  ids = rcall('ZRANGE', deadKey, 0, tonumber(ARGV[2]) - 1)
end
local now = nowMs()
local moved = 0
-- Grouped ones go back to their groups' queues (includes/groups.lua), whose keys are touched
-- before the first write (a slot migrating).
local grouped = groupBatch()
-- The records, read once (an id given twice is moved once: the second ZREM finds nothing).
local recs = hmgetMany(jobsKey, ids)
groupQueuesHere(recs, recordGroup)
for i = 1, #ids do
  local id = ids[i]
  local rec = recs[i]
  if rec and rcall('ZREM', deadKey, id) == 1 then
    local r = readRecord(rec)
    r.attempts = 0
    r.token = '0'
    r.dueAt = ''
    rcall('HSET', jobsKey, id, writeRecord(r))
    local group = recordGroup(rec)
    if group then groupAdd(grouped, group, now, id, true) else rcall('ZADD', dueKey, now, id) end
    moved = moved + 1
  end
end
if groupFlush(grouped) then wakeIfGroupHead(now) end
if moved > 0 then wakeIfHead(now) end
return moved
