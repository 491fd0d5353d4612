#!lua flags=allow-oom
--[[
  claim: reap expired leases, then take up to `limit` due jobs under a lease. Worker's one call.

  KEYS: the partition keys (lib.lua). Of `meta` it writes only `donePeriod` (lib.lua, rotateDone).
  ARGV[2] limit               integer  jobs to claim at most (0 = only reap and report)
  ARGV[3] leaseMs             ms       lease length
  ARGV[4] reapLimit           integer  expired leases to take back at most in this call
  ARGV[5] defaultMaxAttempts  integer  for jobs without their own maxAttempts (reaping counts as an attempt)
  KEYS[13] memo               STRING   <prefix>:{<queue>:<p>}:claim:<claim id>, unique per call:
                                       "<first token>\n<last token>\n<id>\n<id>..." of the jobs this
                                       call took (its tokens are that range), kept at most leaseMs:
                                       a resend of the call (after a lost reply) answers with them
                                       instead of leaving them to run out their lease
  KEYS[14] answered           STRING   the memo of the caller's previous claim, whose reply arrived
  ARGV[6] forgetAnswered      '1'|'0'  '1': delete KEYS[14] (that claim took jobs, so it left a memo);
                                       one memo per caller lives, not one per call

  Returns: { now, nextAt, id1, record1, id2, record2, ... }
    now     the server time (ms) the call used
    nextAt  when the caller should call again: `now` when more may be due at once, the earliest due
            time or lease deadline otherwise, -1 when there is nothing (or the queue is paused)
    records carry the new header: attempts + 1, a fresh fencing token, dueAt = the due score.
  Errors: none.
]]
local limit = tonumber(ARGV[2])
local leaseMs = tonumber(ARGV[3])
local reapLimit = tonumber(ARGV[4])
local defaultMaxAttempts = tonumber(ARGV[5])
local memoKey, answeredKey = KEYS[13], KEYS[14]
local forgetAnswered = ARGV[6] == '1'
local now = nowMs()
if forgetAnswered then rcall('DEL', answeredKey) end

-- An idle call (nothing due, no lease run out, nothing completed lately) reads the time, the two
-- heads and whether a `done` bucket exists, and returns: four commands for a sleeping worker.
local function head(key)
  local entry = rcall('ZRANGE', key, 0, 0, 'WITHSCORES')
  if entry[2] == nil then return nil end
  return tonumber(entry[2])
end
local leaseHead = head(activeKey)

-- A resend of a call that already ran (its reply was lost): the same jobs, if still held by it.
-- Jobs a first run took are active, so with nothing active there is nothing to look up.
local memo = leaseHead ~= nil and rcall('GET', memoKey)
if memo then
  local again = { now, now }
  local first, last = nil, nil
  for field in string.gmatch(memo, '[^\n]+') do
    if first == nil then
      first = tonumber(field)
    elseif last == nil then
      last = tonumber(field)
    else
      -- Still held by this call: its token is one of the call's (tokens are unique per call).
      local rec = rcall('HGET', jobsKey, field)
      local token = rec and tonumber(tokenOf(rec))
      if token and token >= first and token <= last then
        again[#again + 1] = field
        again[#again + 1] = rec
      end
    end
  end
  return again
end

-- The far-future tier: buckets starting soon move into `due` (bounded per call). WHEEL HOOK.
local moveAt = promoteWheel(now)
local dueHead = head(dueKey)

-- 0. Drop the `done` bucket whose time is over, also when nothing is acked any more (after a burst
-- of completions, the bucket goes as soon as a worker looks in, freed in the background).
if rcall('EXISTS', doneKeys[1], doneKeys[2], doneKeys[3]) > 0 then rotateDone(now) end

-- 1. Reap. A lease that ran out belongs to a worker that died or froze. The job goes back at its
-- original due time, so it is at the front and keeps its place in due order; a job that has used
-- all its attempts this way (a poison pill that kills workers) is dead-lettered instead.
local reaped = 0
if leaseHead ~= nil and leaseHead <= now then
  local expired = rcall('ZRANGEBYSCORE', activeKey, '-inf', now, 'LIMIT', 0, reapLimit)
  local requeuedMin = nil
  for i = 1, #expired do
    local id = expired[i]
    rcall('ZREM', activeKey, id)
    local rec = rcall('HGET', jobsKey, id)
    if rec then
      local r = readRecord(rec)
      r.token = '0'
      if r.attempts >= (tonumber(r.maxAttempts) or defaultMaxAttempts) then
        rcall('ZADD', deadKey, now, id)
        rcall('HSET', errorsKey, id, 'lease expired on attempt ' .. r.attempts .. ': the worker stopped renewing it (killed or frozen)')
        rcall('HINCRBY', countersKey, 'dead', 1)
      else
        rcall('ZADD', dueKey, r.dueAt, id)
        local dueAt = tonumber(r.dueAt)
        if requeuedMin == nil or dueAt < requeuedMin then requeuedMin = dueAt end
      end
      rcall('HSET', jobsKey, id, writeRecord(r))
      reaped = reaped + 1
    end
  end
  if reaped > 0 then rcall('HINCRBY', countersKey, 'reaped', reaped) end
  if requeuedMin ~= nil then wakeIfHead(requeuedMin) end
  leaseHead = head(activeKey)
  dueHead = head(dueKey)
end

-- 2. Claim. The due jobs are the lowest ranks of `due`, so one ZREMRANGEBYRANK removes them.
local out = { now, -1 }
local claimed = 0
local paused = false
if limit > 0 and dueHead ~= nil and dueHead <= now then
  paused = rcall('HGET', metaKey, 'paused') == '1'
  if not paused then
    local due = rcall('ZRANGEBYSCORE', dueKey, '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
    local n = #due / 2
    -- n >= 1 since the head is due; never let 0 - 1 = -1 turn the rank range into "everything".
    if n > 0 then rcall('ZREMRANGEBYRANK', dueKey, 0, n - 1) end
    local lastToken = rcall('HINCRBY', countersKey, 'seq', n)
    local deadline = now + leaseMs
    local leases = {}
    local taken = { int(lastToken - n + 1), int(lastToken) }
    for i = 1, n do
      local id = due[2 * i - 1]
      local rec = rcall('HGET', jobsKey, id)
      if rec then
        -- The hot path: rewrite the header's first three fields without decoding the record.
        local attempts, rest = string.match(rec, '^(%d+),%d+,%d*,(.*)$')
        rec = (tonumber(attempts) + 1) .. ',' .. int(lastToken - n + i) .. ',' .. due[2 * i] .. ',' .. rest
        rcall('HSET', jobsKey, id, rec)
        leases[#leases + 1] = deadline
        leases[#leases + 1] = id
        taken[#taken + 1] = id
        out[#out + 1] = id
        out[#out + 1] = rec
        claimed = claimed + 1
      end
    end
    if claimed > 0 then
      zaddMany(activeKey, leases)
      rcall('HINCRBY', countersKey, 'claimed', claimed)
      rcall('SET', memoKey, table.concat(taken, '\n'), 'PX', leaseMs)
      leaseHead = head(activeKey)
      dueHead = head(dueKey)
    end
  end
end

-- 3. When to come back. A full batch means more may be due right now.
if claimed > 0 and claimed == limit then
  out[2] = now
else
  local nextAt = -1
  if not paused and dueHead ~= nil then nextAt = dueHead end
  if leaseHead ~= nil and (nextAt == -1 or leaseHead < nextAt) then nextAt = leaseHead end
  if moveAt ~= nil and (nextAt == -1 or moveAt < nextAt) then nextAt = moveAt end
  out[2] = nextAt
end
return out
