#!lua flags=allow-oom
--[[
  release: a closing worker hands back jobs it will not finish, so that they are delivered again
  at once rather than after their lease runs out. The attempt does not count.

  KEYS: the partition keys (lib.lua).
  ARGV[2]   entries  "<id>\t<token>\n" per entry (readEntries)
  Returns: number of jobs released (the others were no longer held by the caller).
  Errors: none.
]]
local ids, entries = readEntries(ARGV[2])
local tokens = {}
for i = 1, #ids do tokens[i] = entries[2 * i] end
local held, _, takenIds = takeLeases(ids, tokens)
-- The attempt does not count, and the record never counted it: only the lease goes, and the job
-- goes back to `due` at its original due time (it is overdue, so at the front).
local recs = hmgetMany(jobsKey, takenIds)
local requeued, minDue = {}, nil
local t = 0
for i = 1, #ids do
  local lease = held[i]
  if lease then t = t + 1 end
  -- (A lease without its record is an orphan: taking it cleaned it up; nothing to hand back.)
  if lease and recs[t] then
    local _, dueAt = readLease(lease)
    requeued[#requeued + 1] = dueAt
    requeued[#requeued + 1] = ids[i]
    if minDue == nil or tonumber(dueAt) < minDue then minDue = tonumber(dueAt) end
  end
end
zaddMany(dueKey, requeued)
if minDue ~= nil then wakeIfHead(minDue) end
return #requeued / 2
