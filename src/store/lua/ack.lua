#!lua flags=allow-oom
--[[
  ack: jobs whose handler succeeded are removed (the queue keeps no completed jobs), and remembered
  in `done` for DONE_KEEP_MS with the token of the claim that completed them (lib.lua).

  KEYS: the partition keys (lib.lua).
  ARGV[2..] pairs of  id, token   the claim's fencing token
  Returns: { completed, staleIndex1, ..., -1, notFoundIndex1, ... }  0-based positions in the batch
           (positions, not ids: one batch may hold an old and a new claim of the same job):
           completed = jobs this call completed;
           stale     = the token does not hold the job: it exists under another claim (the lease ran
                       out and it was reaped or redelivered), or another claim completed it; nothing
                       changed, and each counts in `stale`;
           not found = no such job, and none completed in the last DONE_KEEP_MS (a wrong id, or a
                       job cancelled or purged).
           Positions in neither list are acked: completed by this call, or earlier by this same token
           (an ack resent after a lost reply).
  Errors: none.
]]
local now = nowMs()
local completed = 0
local out = { 0 }
local notFound = {}
local doneFields, doneUntil = {}, {}
-- Completed by this call: `done` is written after the loop, and one batch may ack a job twice.
local doneNow = {}
local keepUntil = now + DONE_KEEP_MS
-- Most queues have no failed jobs: skip the per-job HDEL of their error then.
local anyErrors = rcall('HLEN', errorsKey) > 0
for i = 2, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  local rec, held = takeLease(id, token)
  if held then
    rcall('HDEL', jobsKey, id)
    if anyErrors then rcall('HDEL', errorsKey, id) end
    doneNow[id] = token
    doneFields[#doneFields + 1] = id
    doneFields[#doneFields + 1] = token
    doneUntil[#doneUntil + 1] = keepUntil
    doneUntil[#doneUntil + 1] = id
    completed = completed + 1
  elseif rec then
    out[#out + 1] = (i - 2) / 2
  else
    local doneBy = doneNow[id] or rcall('HGET', doneKey, id)
    if not doneBy then
      notFound[#notFound + 1] = (i - 2) / 2
    elseif doneBy ~= token then
      out[#out + 1] = (i - 2) / 2
    end
  end
end
if completed > 0 then
  -- Forget at least as many old entries as this call adds, so that the record keeps up.
  forgetDone(now, completed + 100)
  for j = 1, #doneFields, 1000 do rcall('HSET', doneKey, unpack(doneFields, j, math.min(j + 999, #doneFields))) end
  zaddMany(doneUntilKey, doneUntil)
  rcall('HINCRBY', countersKey, 'completed', completed)
end
if #out > 1 then rcall('HINCRBY', countersKey, 'stale', #out - 1) end
out[1] = completed
if #notFound > 0 then
  out[#out + 1] = -1
  for j = 1, #notFound do out[#out + 1] = notFound[j] end
end
return out
