#!lua flags=allow-oom
--[[
  claim: reap expired leases, then take up to `limit` due jobs under a lease. Worker's one call.

  KEYS: the partition keys (includes/keys.lua), then the two memo keys below (last, so that they keep their
        place from the end when a partition key is added). Of `meta` it writes `donePeriod`
        (includes/done.lua, rotateDone), and for schedules `stalled` and the wheel index's
        `idxLevel` and `idxSplit` (a tick it creates).
  Reads:     none
  Writes:    due, active, dead, jobs, errors, counters, meta, done:0, done:1, done:2, leases, wheel,
             wheel:<n>, wheel:idx:<s>, schedules, expiry, completed, results, claim:<claim id>,
             group:active, group:due, group:jobs, group:q:<group>, group:r:<group>, group:state, groups
  Publishes: wake
  ARGV[2] limit               integer  jobs to claim at most (0 = only reap and report)
  ARGV[3] leaseMs             ms       lease length
  ARGV[4] reapLimit           integer  expired leases to take back at most in this call
  ARGV[5] defaultMaxAttempts  integer  for jobs without their own maxAttempts (reaping counts as an attempt)
  KEYS[#KEYS-1] memo          STRING   <prefix>:{<queue>:<p>}:claim:<claim id>, unique per call:
                                       "<first token>\n<last token>\n<id>\n<id>..." of the jobs this
                                       call took (its tokens are that range), kept at most leaseMs:
                                       a resend of the call (after a lost reply) answers with them
                                       instead of leaving them to run out their lease
  KEYS[#KEYS] answered        STRING   the memo of the caller's previous claim, whose reply arrived
  ARGV[6] forgetAnswered      '1'|'0'  '1': delete KEYS[#KEYS] (that claim took jobs, so it left a memo);
                                       one memo per caller lives, not one per call
  ARGV[7] askSchedules        '1'|'0'  '1': an idle call also reads whether the partition has schedules
                                       and which are stalled (a call that finds work always does)
  ARGV[8] granted             '1'|'0'  '1': the caller holds `limit` tokens of the queue's limiter
                                       (limiter.lua). Without, a call to a queue with rate or
                                       concurrency limits (`meta` `limited`) claims nothing, only reaps,
                                       and answers limited = 1 and nextAt = now: claim again through
                                       the limiter
  ARGV[9] trimKept            '1'|'0'  '1': also trim the kept completed jobs beyond the retention
                                       (includes/retention.lua), at most RETAIN_TEND_MAX: the trimming
                                       of a queue that no ack trims any more. An idle call then also
                                       reads `meta` `retain` (one HMGET, merged with ARGV[7]'s)

  Returns: { now, nextAt, firstToken, dueList, records, tend, scheduled, limited, keep, trimmed } or, answering a resend,
           { now, nextAt, 0, dueList, records, token1, token2, ... }
    now         the server time (ms) the call used
    nextAt      when the caller should call again: `now` when more may be due at once, the earliest
                due time or lease deadline otherwise, -1 when there is nothing (or the queue is paused)
    firstToken  the fencing token of the first job; the jobs' tokens are consecutive from it. 0 in
                the answer to a resend: then each job's token follows `records`, in order.
    dueList     "<id>\t<dueAt>\t<id>\t<dueAt>..." the jobs taken and the due score each was claimed at
    records     "<record>\t<record>..." their records as stored, in the same order: a claim does not
                rewrite them, so their attempts do not count this delivery (attempt = attempts + 1).
                Ids, records and scores hold no raw tab (JSON escapes it), so '\t' splits them.
    tend        "<key>\n<key>..." schedules whose next tick the caller should create or whose list of
                next ticks it should refill (includes/schedules.lua); '' mostly
    scheduled   whether the partition has schedules: 1 or 0, -1 when the call did not read `meta`
    limited     whether the queue has rate or concurrency limits: 1 or 0, -1 when the call did not
                read `meta` (an idle call)
    keep        the queue's retention of completed jobs (includes/retention.lua): its maxResultBytes
                (> 0) while it keeps them, so the caller sends results with its acks; 0 when it
                keeps none; -1 when the call did not read `meta` (an idle call without ARGV[9])
    trimmed     kept jobs ARGV[9] trimmed, -1 without ARGV[9]; RETAIN_TEND_MAX means more may be
                left, and nextAt is then `now`
    Two strings whatever the batch size: Lua joins the replies of ZRANGEBYSCORE and HMGET as they
    came (table.concat) instead of building a reply entry per job.
  Errors: none.
]]
-- includes: keys, base, records, leases, wake, done, retention, wheelPromote, schedules, groups
local limit = tonumber(ARGV[2])
local leaseMs = tonumber(ARGV[3])
local reapLimit = tonumber(ARGV[4])
local defaultMaxAttempts = tonumber(ARGV[5])
local memoKey, answeredKey = KEYS[#KEYS - 1], KEYS[#KEYS]
local forgetAnswered = ARGV[6] == '1'
local now, nowDigits = nowMsWithDigits()
if forgetAnswered then rcall('DEL', answeredKey) end

-- An idle call (nothing due, no lease run out) reads the time and the heads of `active`, the wheel
-- and `due`, and returns: four commands for a sleeping worker (one call every safetyIntervalMs),
-- five when the caller asks about schedules (ARGV[7]).
local function head(key)
  local entry = rcall('ZRANGE', key, '0', '0', 'WITHSCORES')
  if entry[2] == nil then return nil end
  return tonumber(entry[2])
end
local leaseHead = head(activeKey)

-- A resend of a call that already ran (its reply was lost): the same jobs, if still held by it.
-- Jobs a first run took are active, so with nothing active there is nothing to look up.
local memo = leaseHead ~= nil and rcall('GET', memoKey)
if memo then
  local ids = {}
  for field in string.gmatch(memo, '[^\n]+') do ids[#ids + 1] = field end
  local first, last = tonumber(table.remove(ids, 1)), tonumber(table.remove(ids, 1))
  local leases = hmgetMany(leasesKey, ids)
  local recs = hmgetMany(jobsKey, ids)
  local dueList, records = {}, {}
  local again = { now, now, 0, '', '' }
  for i = 1, #ids do
    -- Still held by this call: its lease's token is one of the call's (tokens are unique per call).
    local token, dueAt
    if leases[i] then token, dueAt = readLease(leases[i]) end
    if recs[i] and token and tonumber(token) >= first and tonumber(token) <= last then
      dueList[#dueList + 1] = ids[i]
      dueList[#dueList + 1] = dueAt
      records[#records + 1] = recs[i]
      again[#again + 1] = token
    end
  end
  again[4] = table.concat(dueList, '\t')
  again[5] = table.concat(records, '\t')
  return again
end

-- The far-future tier: buckets starting soon move into `due` (bounded per call). WHEEL HOOK.
local moveAt = promoteWheel(now)

-- 0. Is anything due, or a lease run out? If not (a sleeping worker's call), there is nothing more
-- to read: the call has read the time and the heads of `active`, the wheel and `due`.
local dueHead = head(dueKey)
-- A partition with groups (includes/groups.lua): `groups` has an entry while a group may have due
-- work; its head is a turn (due work now) or the time to look again. A partition without groups
-- pays this one read of a missing key.
local groupHead = head(groupsKey)
local function groupWorkAt()
  if groupHead == nil then return nil end
  return groupHead < TURN_LIMIT and now or groupHead
end
local mayClaim = limit > 0 and ((dueHead ~= nil and dueHead <= now) or (groupHead ~= nil and groupWorkAt() <= now))
local mayReap = leaseHead ~= nil and leaseHead <= now
-- Else one read of `meta`: whether the queue is paused, and the period of the `done` bucket written
-- last, to drop the bucket whose time is over, also when nothing is acked any more (after a burst
-- of completions, the bucket goes with the next claim that finds work, freed in the background; a
-- quiet queue's bucket expires by itself half a period later, ack.lua).
-- With it, whether the partition has schedules (only then are claimed records looked at for ticks)
-- and its stalled ones; an idle call reads those only when the caller asks (ARGV[7]), so that a
-- sleeping worker of a queue without schedules stays at four commands.
-- And whether the queue has rate or concurrency limits: then only a caller holding the limiter's
-- tokens claims (ARGV[8]); its `limit` is the tokens it holds. The retention of completed jobs,
-- for the caller's acks (includes/retention.lua). And whether jobs with a deadline were ever added
-- (includes/keys.lua, "Deadlines": only then is `expiry` read).
local paused, scheduled, stalled, known, limited, expiring = false, false, false, false, false, false
local keep = -1
local retain = nil
local defaultGroupLimits = nil
local trimKept = ARGV[9] == '1'
if mayClaim or mayReap then
  local meta = rcall('HMGET', metaKey, 'paused', 'donePeriod', 'scheduled', 'stalled', 'limited', 'retain', 'expiring', 'groupLimits')
  paused = meta[1] == '1'
  if meta[2] then rotateDone(now, meta[2]) end
  scheduled, stalled, known = meta[3] and meta[3] ~= '0', meta[4], true
  limited = meta[5] == '1'
  retain = meta[6] and readRetain(meta[6])
  keep = retain and retain.cap or 0
  expiring = meta[7] == '1'
  defaultGroupLimits = meta[8] or nil
elseif ARGV[7] == '1' or trimKept then
  local meta = rcall('HMGET', metaKey, 'scheduled', 'stalled', 'retain')
  if ARGV[7] == '1' then scheduled, stalled, known = meta[1] and meta[1] ~= '0', meta[2], true end
  retain = meta[3] and readRetain(meta[3])
  if trimKept then keep = retain and retain.cap or 0 end
end
-- Kept completed jobs past the retention: a queue that went quiet has no ack left to trim them.
local trimmed = -1
if trimKept then trimmed = retain and trimCompleted(retain, now, RETAIN_TEND_MAX) or 0 end

-- 1. Reap. A lease that ran out belongs to a worker that died or froze. The job goes back at its
-- original due time, so it is at the front and keeps its place in due order; a job that has used
-- all its attempts this way (a poison pill that kills workers) is dead-lettered instead. Either way
-- the attempt counts: the record is rewritten (rare, unlike claim and ack).
local reaped = 0
if leaseHead ~= nil and leaseHead <= now then
  local expired = rcall('ZRANGEBYSCORE', activeKey, '-inf', nowDigits, 'LIMIT', '0', ARGV[4])
  local leases = hmgetMany(leasesKey, expired)
  -- The queues of the groups that get jobs back, touched before the first write (a slot migrating).
  groupLeaseKeysHere(leases)
  callMany('ZREM', activeKey, expired)
  local recs = hmgetMany(jobsKey, expired)
  callMany('HDEL', leasesKey, expired)
  local requeuedMin = nil
  local records, requeued, buried = {}, {}, {}
  -- Grouped jobs go back to their groups' queues, and stop counting as running.
  local regrouped, stopped, left = groupBatch(), groupTally(), groupTally()
  for i = 1, #expired do
    local id, rec, lease = expired[i], recs[i], leases[i]
    local g = lease and leaseGroup(lease)
    if g then groupTallyAdd(stopped, g) end
    if rec then
      local r = readRecord(rec)
      local dueAt
      if lease then
        local _
        _, dueAt = readLease(lease)
        r.attempts = r.attempts + 1
      else
        -- Claimed by a version that kept the lease in the record (and counted the attempt there).
        dueAt = r.dueAt ~= '' and r.dueAt or int(now)
      end
      r.token = '0'
      if r.attempts >= (tonumber(r.maxAttempts) or defaultMaxAttempts) then
        r.dueAt = dueAt
        buried[#buried + 1] = now
        buried[#buried + 1] = id
        if g then groupTallyAdd(left, g) end
        rcall('HSET', errorsKey, id, 'lease expired on attempt ' .. r.attempts .. ': the worker stopped renewing it (killed or frozen)')
      elseif g then
        r.dueAt = ''
        groupAdd(regrouped, g, tonumber(dueAt), id, false)
      else
        r.dueAt = ''
        requeued[#requeued + 1] = dueAt
        requeued[#requeued + 1] = id
        if requeuedMin == nil or tonumber(dueAt) < requeuedMin then requeuedMin = tonumber(dueAt) end
      end
      records[#records + 1] = id
      records[#records + 1] = writeRecord(r)
      reaped = reaped + 1
    end
  end
  callMany('HSET', jobsKey, records)
  zaddMany(dueKey, requeued)
  zaddMany(deadKey, buried)
  if #stopped.order > 0 then
    if groupFlush(regrouped) then groupHead = head(groupsKey) end
    groupStopped(stopped.n, stopped.order, now)
    groupTallyLeft(left)
    if groupHead == nil then groupHead = head(groupsKey) end
    mayClaim = limit > 0 and ((dueHead ~= nil and dueHead <= now) or (groupHead ~= nil and groupWorkAt() <= now))
  end
  if #buried > 0 then rcall('HINCRBY', countersKey, 'dead', #buried / 2) end
  if reaped > 0 then rcall('HINCRBY', countersKey, 'reaped', reaped) end
  if requeuedMin ~= nil then wakeIfHead(requeuedMin) end
  leaseHead = head(activeKey)
  if requeuedMin ~= nil then
    dueHead = head(dueKey)
    mayClaim = mayClaim or (limit > 0 and dueHead <= now)
  end
end

-- A duration (ms) as the largest unit that divides it: 3600000 -> '1h', 90000 -> '90s', 200 -> '200ms'.
local function durationText(ms)
  for _, unit in ipairs({ { 86400000, 'd' }, { 3600000, 'h' }, { 60000, 'm' }, { 1000, 's' } }) do
    if ms % unit[1] == 0 then return int(ms / unit[1]) .. unit[2] end
  end
  return int(ms) .. 'ms'
end

-- The deadlines of the jobs a claim took (includes/keys.lua, "Deadlines"): each one's `expiry` entry goes,
-- since this is its first start; those whose due score + expireAfter passed are not delivered but
-- dead-lettered (their record keeps its due time and attempts 0; `errors` says why) or, with 'd',
-- deleted; both count in `expired`. Sets recs[i] to false for them; returns how many.
local function expireTaken(ids, due, recs)
  local entries = hmgetMany(expiryKey, ids)
  local had, buried, records, errors, dropped = {}, {}, {}, {}, {}
  for i = 1, #ids do
    local entry = entries[i]
    if entry then
      had[#had + 1] = ids[i]
      local ms, drop = string.match(entry, '^(%d+)(d?)$')
      if recs[i] and ms and tonumber(due[2 * i]) + tonumber(ms) < now then
        local id = ids[i]
        if drop == 'd' then
          dropped[#dropped + 1] = id
        else
          local r = readRecord(recs[i])
          r.token, r.dueAt = '0', due[2 * i]
          records[#records + 1] = id
          records[#records + 1] = writeRecord(r)
          buried[#buried + 1] = nowDigits
          buried[#buried + 1] = id
          errors[#errors + 1] = id
          errors[#errors + 1] = 'expired: not started within ' .. durationText(tonumber(ms)) .. ' of its due time'
        end
        recs[i] = false
      end
    end
  end
  if #had > 0 then callMany('HDEL', expiryKey, had) end
  if #buried > 0 then
    callMany('HSET', jobsKey, records)
    callMany('HSET', errorsKey, errors)
    zaddMany(deadKey, buried)
    rcall('HINCRBY', countersKey, 'dead', #buried / 2)
  end
  if #dropped > 0 then
    callMany('HDEL', jobsKey, dropped)
    callMany('HDEL', errorsKey, dropped)
  end
  local expired = #buried / 2 + #dropped
  if expired > 0 then rcall('HINCRBY', countersKey, 'expired', expired) end
  return expired
end

-- 2. Claim. The due jobs are the lowest ranks of `due`, so one ZREMRANGEBYRANK removes them. Their
-- records are read (one HMGET) and not rewritten; the leases go into `leases` (one HSET), the
-- deadlines into `active` (one ZADD), and the reply joins what ZRANGEBYSCORE and HMGET answered.
-- Per job, Lua only stores table entries and builds the lease string: no number is formatted
-- (formatting a 13-digit number costs more than any of the commands per job).
local out = { now, -1, 0, '', '', '', -1, known and (limited and 1 or 0) or -1, keep, trimmed }
local claimed = 0
-- Due jobs taken out of `due` (delivered, or dropped from the batch).
local taken = 0
-- Whether `due` changed since dueHead was read (its head then has to be read again below).
local dueTaken = false
local refused = mayClaim and limited and not paused and ARGV[8] ~= '1'
-- With groups: whether groups with turns remain after this call (come back at once).
local moreGroups = false
if mayClaim and not paused and not refused then
  dueTaken = true
  local due, groupOf, limitsOf
  if groupHead ~= nil then
    -- The default group takes its turn like the others while `due` has due jobs.
    if dueHead ~= nil and dueHead <= now then rcall('ZADD', groupsKey, 'LT', nowDigits, '') end
    due, groupOf, limitsOf, moreGroups = claimFromGroups(limit, now, nowDigits, defaultGroupLimits)
  else
    due = rcall('ZRANGEBYSCORE', dueKey, '-inf', nowDigits, 'WITHSCORES', 'LIMIT', '0', ARGV[2])
  end
  local n = #due / 2
  taken = n
  if n > 0 then
    -- Never let 0 - 1 = -1 turn the rank range into "everything".
    if not groupOf then rcall('ZREMRANGEBYRANK', dueKey, '0', n <= 10 and DIGITS[n - 1] or n - 1) end
    local ids = {}
    for i = 1, n do ids[i] = due[2 * i - 1] end
    local recs = hmgetMany(jobsKey, ids)
    for i = 1, n do
      if recs[i] then claimed = claimed + 1 end
    end
    -- Ticks of schedules start their next tick; a tick skipped by overlap 'skip' is dropped.
    if scheduled then
      local skipped
      skipped, out[6] = claimTicks(ids, recs, now)
      if skipped then
        for i in pairs(skipped) do
          recs[i] = false
          claimed = claimed - 1
        end
      end
    end
    -- Jobs not started by their deadline are not delivered (dead-lettered or deleted).
    if expiring then claimed = claimed - expireTaken(ids, due, recs) end
    if claimed < n then
      -- Records missing (never in a consistent store), ticks skipped or jobs expired: dropped from the batch.
      local keptDue, keptIds, keptRecs, keptGroups = {}, {}, {}, {}
      local left = groupTally()
      for i = 1, n do
        if recs[i] then
          keptIds[#keptIds + 1] = ids[i]
          keptRecs[#keptRecs + 1] = recs[i]
          keptDue[#keptDue + 1] = ids[i]
          keptDue[#keptDue + 1] = due[2 * i]
          if groupOf then keptGroups[#keptGroups + 1] = groupOf[i] end
        elseif groupOf and groupOf[i] then
          groupTallyAdd(left, groupOf[i]) -- it leaves its group: expired, skipped or without a record
        end
      end
      groupTallyLeft(left)
      due, ids, recs = keptDue, keptIds, keptRecs
      if groupOf then groupOf = keptGroups end
    end
    if claimed > 0 then
      local lastToken = rcall('HINCRBY', countersKey, 'seq', claimed)
      local token = lastToken - claimed + 1
      -- Token k's digits: all but the last (`high`, formatted once per ten tokens), then the last.
      local low = token % 10
      local high = (token - low) / 10
      local highDigits = high > 0 and int(high) or ''
      local deadline = int(now + leaseMs)
      local leases, deadlines = {}, {}
      for k = 1, claimed do
        local id = ids[k]
        leases[2 * k - 1] = id
        -- A grouped job's lease names its group (includes/groups.lua).
        local g = groupOf and groupOf[k]
        if g then
          leases[2 * k] = highDigits .. DIGITS[low] .. ',' .. due[2 * k] .. ',' .. g
        else
          leases[2 * k] = highDigits .. DIGITS[low] .. ',' .. due[2 * k]
        end
        deadlines[2 * k - 1] = deadline
        deadlines[2 * k] = id
        low = low + 1
        if low == 10 then
          low, high = 0, high + 1
          highDigits = int(high)
        end
      end
      if leaseHead == nil then
        -- `active` and `leases` are created now: as a hash table and a skip list (includes/leases.lua, ENCODER).
        table.insert(leases, 1, ENCODER)
        table.insert(leases, 1, ENCODER)
        table.insert(deadlines, 1, ENCODER)
        table.insert(deadlines, 1, deadline)
      end
      callMany('HSET', leasesKey, leases)
      zaddMany(activeKey, deadlines)
      if leaseHead == nil then
        rcall('HDEL', leasesKey, ENCODER)
        rcall('ZREM', activeKey, ENCODER)
      end
      rcall('HINCRBY', countersKey, 'claimed', claimed)
      if groupOf then groupsStarted(ids, groupOf, token, now, limitsOf) end
      rcall('SET', memoKey, int(token) .. '\n' .. int(lastToken) .. '\n' .. table.concat(ids, '\n'), 'PX', ARGV[3])
      out[3] = token
      out[4] = table.concat(due, '\t')
      out[5] = table.concat(recs, '\t')
      -- The new leases end at now + leaseMs: the earliest deadline is the older one or that.
      if leaseHead == nil or now + leaseMs < leaseHead then leaseHead = now + leaseMs end
    end
  end
end

-- Schedules that need a client: those claimTicks named (stalled now, or few tick times left), and
-- every stalled one of the partition (includes/schedules.lua scheduleStall), until one tends it.
if stalled then out[6] = out[6] == '' and stalled or out[6] .. '\n' .. stalled end
out[7] = known and (scheduled and 1 or 0) or -1

-- 3. When to come back. A full batch means more may be due right now (also when some of it was
-- dropped: a backlog of expired jobs drains at the claim's pace), and so does a claim refused for
-- want of the limiter's tokens.
if refused or (taken > 0 and taken == limit) or trimmed == RETAIN_TEND_MAX or (moreGroups and not paused) then
  out[2] = now
else
  -- What is left in `due` is not due yet (unless records were missing from a full batch).
  if dueTaken then dueHead = head(dueKey) end
  local nextAt = -1
  if dueHead and not paused then nextAt = dueHead end
  if dueTaken and groupHead ~= nil then groupHead = head(groupsKey) end
  if groupHead ~= nil and not paused then
    local at = groupWorkAt()
    if nextAt == -1 or at < nextAt then nextAt = at end
  end
  if leaseHead ~= nil and (nextAt == -1 or leaseHead < nextAt) then nextAt = leaseHead end
  if moveAt ~= nil and (nextAt == -1 or moveAt < nextAt) then nextAt = moveAt end
  out[2] = nextAt
end
return out
