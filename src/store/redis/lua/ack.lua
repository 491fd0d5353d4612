#!lua flags=allow-oom
--[[
  ack: jobs whose handler succeeded are removed, or kept in `completed` with their results while
  the queue retains completed jobs (includes/retention.lua; then the kept ones are trimmed, bounded),
  and remembered for 60 to 90 s in the current `done` bucket with the token of the claim that
  completed them (includes/done.lua).

  KEYS: the partition keys (includes/keys.lua).
  Reads:     wheel, wheel:idx:<s>
  Writes:    active, jobs, errors, counters, meta, done:0, done:1, done:2, leases, completed, results,
             group:active, group:jobs, group:state, groups
  Publishes: wake
  ARGV[2]   entries  "<id>\t<token>\n" per entry, token = the claim's fencing token (readEntries)
  ARGV[3]   results  optional: "<result JSON>\n" per entry, in the order of the entries ('' for
                     none); sent only by callers that know the queue keeps completed jobs. Read only
                     while it does (`meta` `retain`); a result over its maxResultBytes is kept as the
                     marker { resultTooLarge: true, bytes }
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
-- includes: keys, base, leases, done, retention, wheel, groups
local now = nowMs()
-- `retain` comes with the read of `donePeriod` that rotateDone makes anyway: no command more.
local meta = rcall('HMGET', metaKey, 'donePeriod', 'retain')
local bucket, period, periodKnown = rotateDone(now, meta[1])
local retain = readRetain(meta[2])
local ids, entries = readEntries(ARGV[2])
-- The whole batch in O(1) calls: one HMGET of the leases, then ZREM, HDEL and HSET of all the jobs
-- completed. Per entry, Lua compares the token with the lease's prefix; only refused entries cost a
-- look-up each (rare). An id twice in one batch with its token is acked twice, completed once:
-- the counts come from what HDEL removed.
local leases = hmgetMany(leasesKey, ids)
local heldIds, doneFields = ids, nil
local refused = nil
for i = 1, #ids do
  -- leaseHeldBy, inlined: the one per-entry test of the hot path.
  local lease, token = leases[i], entries[2 * i]
  if not (lease and string.find(lease, token, 1, true) == 1 and string.byte(lease, #token + 1) == 44) then
    refused = refused or {}
    refused[#refused + 1] = i
  end
end
if refused then
  heldIds, doneFields = {}, {}
  local r = 1
  for i = 1, #ids do
    if refused[r] == i then
      r = r + 1
    else
      heldIds[#heldIds + 1] = ids[i]
      doneFields[#doneFields + 1] = ids[i]
      doneFields[#doneFields + 1] = entries[2 * i]
    end
  end
end
local completed = 0
if #heldIds > 0 then
  callMany('ZREM', activeKey, heldIds)
  completed = callMany('HDEL', leasesKey, heldIds)
  -- Grouped jobs (their leases name the group, includes/groups.lua) stop running and leave their
  -- group; a partition that never had groups skips this with one EXISTS.
  if rcall('EXISTS', groupJobsKey) == 1 then
    local stopped, seen, r = groupTally(), {}, 1
    for i = 1, #ids do
      if refused and refused[r] == i then
        r = r + 1
      elseif not seen[ids[i]] then
        seen[ids[i]] = true
        local g = leaseGroup(leases[i])
        if g then groupTallyAdd(stopped, g) end
      end
    end
    if #stopped.order > 0 then
      groupStopped(stopped.n, stopped.order, now)
      groupTallyLeft(stopped)
    end
  end
  if retain then
    -- Kept: the record (counting this delivery, with the due time it was claimed at) and the result
    -- move to `completed` and `results`, finished now. The results are by position in the batch.
    local results, n = {}, 0
    if ARGV[3] then
      for result in string.gmatch(ARGV[3], '([^\n]*)\n') do
        n = n + 1
        results[n] = result
      end
    end
    local recs = hmgetMany(jobsKey, heldIds)
    local kept, finished = {}, {}
    -- heldIds[h] is the h-th entry not refused.
    local h, r = 0, 1
    for i = 1, #ids do
      if refused and refused[r] == i then
        r = r + 1
      else
        h = h + 1
        local rec = recs[h]
        if rec then
          local _, dueAt = readLease(leases[i])
          local attempts, rest = string.match(rec, '^(%d+),%d+,%d*,(.*)$')
          kept[#kept + 1] = ids[i]
          kept[#kept + 1] = keptResult(results[i] or '', retain.cap) .. '\n' .. (tonumber(attempts) + 1) .. ',0,' .. dueAt .. ',' .. rest
          finished[#finished + 1] = now
          finished[#finished + 1] = ids[i]
        end
      end
    end
    callMany('HSET', resultsKey, kept)
    zaddMany(completedKey, finished)
    trimCompleted(retain, now, #finished / 2 + RETAIN_TRIM_EXTRA)
  end
  callMany('HDEL', jobsKey, heldIds)
  -- Most queues have no failed jobs: skip the HDEL of their errors then.
  if rcall('HLEN', errorsKey) > 0 then callMany('HDEL', errorsKey, heldIds) end
  -- Remembered with the token that completed them (all the entries when none was refused).
  callMany('HSET', bucket, doneFields or entries)
  -- Normally dropped by rotateDone when its period comes round again; this expiry, half a period
  -- later, only clears the bucket of a queue that no script touches any more.
  rcall('PEXPIRE', bucket, (period + 3.5) * DONE_PERIOD_MS - now)
  if not periodKnown then rcall('HSET', metaKey, 'donePeriod', period) end
  rcall('HINCRBY', countersKey, 'completed', completed)
end
local out = { completed }
local notFound = {}
for _, i in ipairs(refused or {}) do
  local id, token = ids[i], entries[2 * i]
  if leases[i] or rcall('HEXISTS', jobsKey, id) == 1 then
    -- Held by another claim (also when an earlier entry of this batch, with another token,
    -- completed it), or not active at all (waiting again, or dead).
    out[#out + 1] = i - 1
  else
    local by = doneBy(id)
    if not by then
      -- A job waiting in the wheel has no `jobs` record, yet exists: the token is stale.
      if wheelMayHold() and rcall('HEXISTS', wheelShardKey(id), id) == 1 then
        out[#out + 1] = i - 1
      else
        notFound[#notFound + 1] = i - 1
      end
    elseif by ~= token then
      out[#out + 1] = i - 1
    end
  end
end
if #out > 1 then rcall('HINCRBY', countersKey, 'stale', #out - 1) end
if #notFound > 0 then
  out[#out + 1] = -1
  for j = 1, #notFound do out[#out + 1] = notFound[j] end
end
return out
