#!lua flags=allow-oom
--[[
  ack: jobs whose handler succeeded are removed (the queue keeps no completed jobs), and remembered
  for 60 to 90 s in the current `done` bucket with the token of the claim that completed them
  (lib.lua).

  KEYS: the partition keys (lib.lua).
  ARGV[2..] pairs of  id, token   the claim's fencing token
  Returns: { completed, staleIndex1, ..., -1, notFoundIndex1, ... }  0-based positions in the batch
           (positions, not ids: one batch may hold an old and a new claim of the same job):
           completed = jobs this call completed;
           stale     = the token does not hold the job: it exists under another claim (the lease ran
                       out and it was reaped or redelivered), or another claim completed it; nothing
                       changed, and each counts in `stale`;
           not found = no such job, and none completed with this id in the last 60 s (a wrong id, a
                       job cancelled or purged).
           Positions in neither list are acked: completed by this call, or earlier by this same token
           (an ack resent after a lost reply).
  Errors: none.
]]
local now = nowMs()
local bucket, period, periodKnown = rotateDone(now)
local completed = 0
local out = { 0 }
local notFound = {}
local doneFields = {}
-- Completed by this call: the bucket is written after the loop, and one batch may ack a job twice.
local doneNow = {}
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
    completed = completed + 1
  elseif rec then
    out[#out + 1] = (i - 2) / 2
  else
    local by = doneNow[id] or doneBy(id)
    if not by then
      -- A job waiting in the wheel has no `jobs` record, yet exists: the token is stale.
      if wheelMayHold() and rcall('HEXISTS', wheelShardKey(id), id) == 1 then
        out[#out + 1] = (i - 2) / 2
      else
        notFound[#notFound + 1] = (i - 2) / 2
      end
    elseif by ~= token then
      out[#out + 1] = (i - 2) / 2
    end
  end
end
if completed > 0 then
  for j = 1, #doneFields, 1000 do rcall('HSET', bucket, unpack(doneFields, j, math.min(j + 999, #doneFields))) end
  -- Normally dropped by rotateDone when its period comes round again; this expiry, half a period
  -- later, only clears the bucket of a queue that no script touches any more.
  rcall('PEXPIRE', bucket, (period + 3.5) * DONE_PERIOD_MS - now)
  if not periodKnown then rcall('HSET', metaKey, 'donePeriod', period) end
  rcall('HINCRBY', countersKey, 'completed', completed)
end
if #out > 1 then rcall('HINCRBY', countersKey, 'stale', #out - 1) end
out[1] = completed
if #notFound > 0 then
  out[#out + 1] = -1
  for j = 1, #notFound do out[#out + 1] = notFound[j] end
end
return out
