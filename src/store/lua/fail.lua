#!lua flags=allow-oom
--[[
  fail: jobs whose handler threw go back to `due` after a backoff, or to `dead`.
  The worker decides retry or dead (it knows the attempt count, maxAttempts and UnrecoverableError).

  KEYS: the partition keys (lib.lua).
  ARGV[2..] groups of  id, token, retryDelayMs (ms; -1 = dead-letter), error message
  Returns: { now, staleIndex1, ... }  0-based positions of the entries whose token does not hold
           the job (or no such job): nothing changed for them, and each counts in `stale`.
  Errors: none.
]]
local now = nowMs()
local out = { now }
local retried, buried, minDue = 0, 0, nil
for i = 2, #ARGV, 4 do
  local id, token, retryDelayMs, message = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3]
  local rec, held = takeLease(id, token)
  if held then
    local r = readRecord(rec)
    r.token = '0'
    rcall('HSET', errorsKey, id, message)
    if retryDelayMs >= 0 then
      local dueAt = now + retryDelayMs
      r.dueAt = ''
      rcall('ZADD', dueKey, dueAt, id)
      if minDue == nil or dueAt < minDue then minDue = dueAt end
      retried = retried + 1
    else
      rcall('ZADD', deadKey, now, id)
      buried = buried + 1
    end
    rcall('HSET', jobsKey, id, writeRecord(r))
  else
    out[#out + 1] = (i - 2) / 4
  end
end
if retried > 0 then rcall('HINCRBY', countersKey, 'retried', retried) end
if buried > 0 then rcall('HINCRBY', countersKey, 'dead', buried) end
if #out > 1 then rcall('HINCRBY', countersKey, 'stale', #out - 1) end
if minDue ~= nil then wakeIfHead(minDue) end
return out
