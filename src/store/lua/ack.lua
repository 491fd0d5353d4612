#!lua flags=allow-oom
--[[
  ack: jobs whose handler succeeded are removed (the queue keeps no completed jobs).

  KEYS: the partition keys (lib.lua).
  ARGV[2..] pairs of  id, token   the claim's fencing token
  Returns: { completed, staleIndex1, ..., -1, goneIndex1, ... }  0-based positions in the batch:
           stale = the job exists under another claim (the lease ran out and it was reaped or
           redelivered): it is left as is; gone = the job no longer exists, which for an ack means it
           was completed: most often by this very ack, resent by the client after a lost reply.
           (Positions, not ids: one batch may hold an old and a new claim of the same job.)
  Errors: none.
]]
local completed = 0
local out = { 0 }
local gone = {}
-- Most queues have no failed jobs: skip the per-job HDEL of their error then.
local anyErrors = rcall('HLEN', errorsKey) > 0
for i = 2, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  local rec = rcall('HGET', jobsKey, id)
  if rec and tokenOf(rec) == token and rcall('ZREM', activeKey, id) == 1 then
    rcall('HDEL', jobsKey, id)
    if anyErrors then rcall('HDEL', errorsKey, id) end
    completed = completed + 1
  elseif not rec then
    gone[#gone + 1] = (i - 2) / 2
  else
    out[#out + 1] = (i - 2) / 2
  end
end
if completed > 0 then rcall('HINCRBY', countersKey, 'completed', completed) end
if #out > 1 then rcall('HINCRBY', countersKey, 'stale', #out - 1) end
out[1] = completed
if #gone > 0 then
  out[#out + 1] = -1
  for i = 1, #gone do out[#out + 1] = gone[i] end
end
return out
