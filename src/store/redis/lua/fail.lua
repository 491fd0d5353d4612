#!lua flags=allow-oom
--[[
  fail: jobs whose handler threw go back to `due` after a backoff, or to `dead`.
  The worker decides retry or dead (it knows the attempt count, maxAttempts and UnrecoverableError).

  KEYS: the partition keys (includes/keys.lua), then
  Reads:     meta
  Writes:    due, active, dead, jobs, errors, counters, leases, failed, group:active, group:due,
             group:jobs, group:q:<group>, group:state, groups
  Publishes: wake
  KEYS[#KEYS] failed  ZSET  token -> failedAt * 2 + (1 if dead-lettered, 0 if retried): the tokens
                      whose fail this script applied in the last FAIL_MEMO_MS (tokens are unique per
                      partition: the `seq` counter), so that a fail resent after a lost reply answers
                      as the first send did, as a resent ack answers `acked` (the `done` buckets):
                      not `stale`, and with the first send's outcome
  ARGV[2..] groups of  id, token, retryDelayMs (ms; -1 = dead-letter), error message
  Returns: { now, staleIndex1, ..., -1, resentIndex1, outcome1, ... }  0-based positions of the
           entries whose token does not hold the job (or no such job) and did not fail it lately:
           nothing changed for them, and each counts in `stale`; then, after -1 (only when there are
           any), the entries an earlier send of this fail applied, each with that send's outcome:
           -1 dead-lettered, else the retry's due time (ms) while the job still waits for it, 0 when
           it no longer does (claimed again since). Every other entry is applied now.
  Errors: none.
]]
-- includes: keys, base, records, leases, wake, groups
-- As long as a completed job is remembered at least (includes/done.lua, DONE_PERIOD_MS: 60 to 90 s), the
-- window in which a worker still resends a settle (settler.ts, RETRY_PAST_LEASE_MS past the lease).
local FAIL_MEMO_MS = 90000
local failedKey = KEYS[#KEYS]
local now = nowMs()
local out = { now }
local resent = {}
local ids, tokens = {}, {}
for i = 2, #ARGV, 4 do
  ids[#ids + 1] = ARGV[i]
  tokens[#tokens + 1] = ARGV[i + 1]
end
local held, _, takenIds = takeLeases(ids, tokens, groupLeaseKeysHere)
-- The attempt ends: the record counts it (a claim left it as it was), loses its lease fields, and
-- a dead job keeps the due time it was claimed at.
local recs = hmgetMany(jobsKey, takenIds)
local records, errors, retried, buried, failedTokens = {}, {}, {}, {}, {}
local minDue = nil
local t = 0
-- Grouped jobs (includes/groups.lua): a retry goes back to its group's queue; a job of an in-order
-- group (concurrency 1) is recorded as the one its group starts next.
local regrouped, stopped, left = groupBatch(), groupTally(), groupTally()
local firsts = {}
for i = 1, #ids do
  local lease = held[i]
  local rec = nil
  local g = nil
  if lease then
    t = t + 1
    rec = recs[t]
    g = leaseGroup(lease)
    if g then groupTallyAdd(stopped, g) end
  end
  -- (A lease without its record is an orphan: taking it cleaned it up; the entry is stale.)
  if rec then
    local id, retryDelayMs = ids[i], tonumber(ARGV[4 * i])
    errors[#errors + 1] = id
    errors[#errors + 1] = ARGV[4 * i + 1]
    local _, dueAt = readLease(lease)
    local r = readRecord(rec)
    r.attempts, r.token = r.attempts + 1, '0'
    if retryDelayMs >= 0 then
      local at = now + retryDelayMs
      r.dueAt = ''
      if g then
        groupAdd(regrouped, g, at, id, false)
        if groupLimitsOf(g) == 1 then firsts[#firsts + 1] = { g, id } end
      else
        retried[#retried + 1] = at
        retried[#retried + 1] = id
        if minDue == nil or at < minDue then minDue = at end
      end
    else
      r.dueAt = dueAt
      buried[#buried + 1] = now
      buried[#buried + 1] = id
      if g then groupTallyAdd(left, g) end
    end
    records[#records + 1] = id
    records[#records + 1] = writeRecord(r)
    failedTokens[#failedTokens + 1] = now * 2 + (retryDelayMs >= 0 and 0 or 1)
    failedTokens[#failedTokens + 1] = tokens[i]
  else
    local memo = rcall('ZSCORE', failedKey, tokens[i])
    if not memo then
      out[#out + 1] = i - 1
    else
      resent[#resent + 1] = i - 1
      if tonumber(memo) % 2 == 1 then
        resent[#resent + 1] = -1
      else
        -- The retry waits in `due` under its due time, unless a claim took it since.
        resent[#resent + 1] = tonumber(rcall('ZSCORE', dueKey, ids[i]) or rcall('ZSCORE', groupDueKey, ids[i]) or '0')
      end
    end
  end
end
if #failedTokens > 0 then
  -- Trimmed as it grows, and gone with a queue that stops failing jobs.
  rcall('ZREMRANGEBYSCORE', failedKey, '-inf', (now - FAIL_MEMO_MS) * 2)
  zaddMany(failedKey, failedTokens)
  rcall('PEXPIRE', failedKey, FAIL_MEMO_MS)
end
callMany('HSET', errorsKey, errors)
callMany('HSET', jobsKey, records)
zaddMany(dueKey, retried)
zaddMany(deadKey, buried)
if #stopped.order > 0 then
  local earliest = groupFlush(regrouped)
  for j = 1, #firsts do rcall('HSET', groupStateKey, 'b:' .. firsts[j][1], firsts[j][2]) end
  groupStopped(stopped.n, stopped.order, now)
  groupTallyLeft(left)
  if earliest then wakeIfGroupHead(earliest) end
end
if #retried > 0 then rcall('HINCRBY', countersKey, 'retried', #retried / 2) end
if #buried > 0 then rcall('HINCRBY', countersKey, 'dead', #buried / 2) end
if #out > 1 then rcall('HINCRBY', countersKey, 'stale', #out - 1) end
if minDue ~= nil then wakeIfHead(minDue) end
if #resent > 0 then
  out[#out + 1] = -1
  for k = 1, #resent do out[#out + 1] = resent[k] end
end
return out
