#!lua flags=allow-oom
--[[
  release: a worker hands back jobs it will not run (closing, or a claim that brought more than it
  has room for), so that they are delivered again at once rather than after their lease runs out.
  The attempt does not count.

  KEYS: the partition keys (includes/keys.lua); on partition 0 of a queue with a concurrency limit also the
        limiter's keys (limiter.lua): KEYS[#KEYS - 1] starts, KEYS[#KEYS] slots.
  Reads:     jobs, meta
  Writes:    due, active, leases, limiter:slots, counters, group:active, group:due, group:jobs,
             group:q:<group>, group:state, groups
  Publishes: wake, limiter:wake
  ARGV[2]   entries  "<id>\t<token>\n" per entry (readEntries)
  ARGV[3]   optional, with the limiter's keys: the limiter's wake channel; ARGV[4] this partition's
            number. The entries' concurrency slots ("<partition>:<token>") are freed in the same
            call, so a job handed back never keeps its slot (a `concurrency: 1` queue would stall
            for a lease), and a full `slots` that frees one PUBLISHes on the channel, as
            limiter.lua `free` does.
  Returns: number of jobs released (the others were no longer held by the caller).
  Errors: none.
]]
-- includes: keys, base, leases, wake, limiterSlots, groups
local ids, entries = readEntries(ARGV[2])
local tokens = {}
for i = 1, #ids do tokens[i] = entries[2 * i] end
local held, _, takenIds = takeLeases(ids, tokens, groupLeaseKeysHere)
-- The attempt does not count, and the record never counted it: only the lease goes, and the job
-- goes back to `due` at its original due time (it is overdue, so at the front).
local recs = hmgetMany(jobsKey, takenIds)
local requeued, minDue = {}, nil
local t = 0
-- A grouped job goes back to its group's queue (includes/groups.lua), at its place.
local regrouped, stopped = groupBatch(), groupTally()
for i = 1, #ids do
  local lease = held[i]
  if lease then t = t + 1 end
  local g = lease and leaseGroup(lease)
  if g then groupTallyAdd(stopped, g) end
  -- (A lease without its record is an orphan: taking it cleaned it up; nothing to hand back.)
  if lease and recs[t] then
    local _, dueAt = readLease(lease)
    if g then
      groupAdd(regrouped, g, tonumber(dueAt), ids[i], false)
    else
      requeued[#requeued + 1] = dueAt
      requeued[#requeued + 1] = ids[i]
      if minDue == nil or tonumber(dueAt) < minDue then minDue = tonumber(dueAt) end
    end
  end
end
zaddMany(dueKey, requeued)
local regroupedCount = #regrouped.all / 2
if #stopped.order > 0 then
  local earliest = groupFlush(regrouped)
  groupStopped(stopped.n, stopped.order, nowMs())
  if earliest then wakeIfGroupHead(earliest) end
end
if minDue ~= nil then wakeIfHead(minDue) end
local limiterWake = ARGV[3]
if limiterWake then
  -- Every entry's slot goes, held or not: a token is this caller's alone, and its job does not run here.
  local partition = ARGV[4]
  local members = {}
  for i = 1, #ids do members[i] = partition .. ':' .. tokens[i] end
  freeSlots(KEYS[#KEYS], members, limiterWake)
end
return #requeued / 2 + regroupedCount
