#!lua
--[[
  add: add one or many jobs (addBulk sends a chunk per call). Idempotent by id.

  KEYS: the partition keys (includes/keys.lua). A job due beyond the horizon goes to the wheel
  (includes/wheel.lua).
  Reads:     active
  Writes:    due, dead, jobs, errors, counters, meta, done:0, done:1, done:2, wheel, wheel:<n>,
             wheel:idx:<s>, expiry, completed, results, group:due, group:jobs, group:q:<group>, groups
  Publishes: wake
  ARGV[2]   ifExists  'keep' | 'replace'   what an existing id does
  ARGV[3..] groups of 7:
    id
    delayMs      ms from the server's now, or '' when atMs is given
    atMs         epoch ms, or ''
    maxAttempts  integer or '' (the worker's default)
    backoff      'f<ms>' | 'e<ms>' | '', followed by ',<traceparent>' for a job added in a trace:
                 the rest of the record's header after maxAttempts (includes/records.lua), written as it is
    payload      JSON text
    expiry       '<expireAfterMs>' | '<expireAfterMs>d' (onExpire 'drop'): the job's deadline, its
                 `expiry` entry (includes/keys.lua, "Deadlines"); '' | 'd': the queue's default (`meta` field
                 `expireAfter`), if it has one, else none. A replace rewrites the entry.
  Returns: { now, status1, dueAt1, status2, dueAt2, ... } per job, in order:
    1 added, 0 exists (kept as it was), 2 replaced, 3 exists and is running (not replaced),
    4 completed in the last 60 to 90 s (includes/done.lua), or completed and kept while the queue retains
      completed jobs (includes/retention.lua; a kept job past the retention's age counts as gone:
      its id is added as new, and its kept entry removed), not added: a keep-add writes nothing (most likely it is the add that
      created the job, resent after a lost reply); a replace-add adds the job anew (status 1),
      and the kept completed job is gone
    5 exists and is a schedule's tick (includes/schedules.lua): a replace-add writes nothing (as a
      plain job it would no longer start the schedule's next tick)
    An id in the wheel exists like any other waiting job; replacing it moves it where its new due
    time belongs.
  Errors: none. (A payload over the client's limit is refused before this script runs.)
]]
-- includes: keys, base, records, done, retention, wake, wheel, groups
local replace = ARGV[2] == 'replace'
local now = nowMs()
local out = { now }
local added, minDue = 0, nil
local wheeled, minMove = 0, nil
-- Most calls come when nothing completed lately and none is kept: then no id needs the `done` and
-- `results` look-ups (one EXISTS answers for both). The `results` look-up is made only while the
-- queue keeps completed jobs (`retain`). One read of `meta` also gives the deadlines' default and
-- whether the partition has deadlines (includes/keys.lua, "Deadlines").
local anyDone = rcall('EXISTS', doneKeys[1], doneKeys[2], doneKeys[3], completedKey) > 0
local meta = rcall('HMGET', metaKey, 'donePeriod', 'retain', 'expireAfter', 'expiring')
local retain = nil
if anyDone then
  rotateDone(now, meta[1])
  retain = readRetain(meta[2])
end
local retaining = retain ~= nil
-- Which ids `jobs` holds and which completed lately (`done`) or are kept completed (`kept`), one
-- HMGET per key and 1,000 ids (a call per id costs more than the look-up). An id written earlier in
-- this call (it appears twice) is looked up in `jobs` again; `done` and `kept` change only here (a
-- replace-add's HDEL), tracked in `done` and `kept`. A kept job finished more than the retention's
-- `age` ago is gone for every read (includes/retention.lua) though no trim removed it yet: its id is
-- free (`aged`), and the add that writes the id removes the old entry (an id has one place).
local stored, done, kept, aged, written, ticks = {}, {}, {}, {}, {}, {}
-- Groups (includes/groups.lua): the group of each job given, and of each stored job a replace may
-- move out of its group's queue; their queue keys are touched before anything is written.
local groupOfArg, oldGroupOf, groupKeys, groupKeySeen = {}, {}, {}, {}
local function noteGroupKey(g)
  if not groupKeySeen[g] then
    groupKeySeen[g] = true
    groupKeys[#groupKeys + 1] = groupQueueKey(g)
  end
end
for i = 3, #ARGV, 7 do
  local g = payloadGroup(ARGV[i + 5])
  if g then
    groupOfArg[i] = g
    noteGroupKey(g)
  end
end
for c = 3, #ARGV, 7000 do
  local ids = {}
  for i = c, math.min(c + 6999, #ARGV), 7 do ids[#ids + 1] = ARGV[i] end
  local recs = rcall('HMGET', jobsKey, unpack(ids))
  for j = 1, #ids do
    if recs[j] then
      stored[ids[j]] = true
      if replace and isTickRecord(recs[j]) then ticks[ids[j]] = true end
      if replace then
        local og = recordGroup(recs[j])
        if og then
          oldGroupOf[ids[j]] = og
          noteGroupKey(og)
        end
      end
    end
  end
  if anyDone then
    for b = 1, 3 do
      local tokens = rcall('HMGET', doneKeys[b], unpack(ids))
      for j = 1, #ids do if tokens[j] then done[ids[j]] = true end end
    end
    if retaining then
      local results = rcall('HMGET', resultsKey, unpack(ids))
      local found = {}
      for j = 1, #ids do
        if results[j] then found[#found + 1] = ids[j] end
      end
      -- Their finish times, only while the retention has an age (one ZMSCORE for the kept ones).
      local finished = retain.age and #found > 0 and rcall('ZMSCORE', completedKey, unpack(found))
      local oldest = retain.age and now - retain.age
      for j = 1, #found do
        local at = finished and tonumber(finished[j])
        if at and at < oldest then
          aged[found[j]] = true
        else
          done[found[j]] = true
          kept[found[j]] = true
        end
      end
    end
  end
end

-- Deadlines (includes/keys.lua, "Deadlines"): the queue's default, and whether the partition has `expiry`
-- entries at all (else a replace has none to remove). The entries this call writes (false:
-- removes), by id, last one winning, in one HSET and one HDEL at the end.
local defaultExpiry, expiring = meta[3], meta[4] == '1'
local expiries, expiryIds = {}, {}
local function expiryOf(field)
  if field == '' or field == 'd' then return defaultExpiry and defaultExpiry .. field end
  return field
end

--[[
  The wheel writes of this call, batched: each far job's index entry is written at once (HSETNX:
  the look-up and the write in one call), its bucket entry is staged, and flushWheel writes the
  staged entries with one RPUSH per bucket (new buckets first, in one ZADD of `wheel`), one HINCRBY
  of `wheeled`, and only then removes the old places of jobs that moved (the `after` list). This
  keeps the wheel's write order under a slot migration (includes/wheel.lua, "Write order": a
  computed key's first touch may fail and end the script): every index entry before its bucket
  entry, every new place before its old one, and `wheeled` counting exactly the entries pushed (a
  failed RPUSH is caught, the pushed ones are counted, then the error ends the script with the old
  places untouched).
  Anything that must see the wheel as written (an id given again in this call, a job leaving the
  wheel for `due`) flushes first.
]]
if #groupKeys > 0 then
  groupKeysHere(groupKeys)
  markGroupFormat()
end
-- The grouped jobs of the due tier, written at the end (and before an id given again is looked at).
local grouped = groupBatch()
local groupedEarliest = nil
local function flushGroups()
  local earliest = groupFlush(grouped)
  if earliest and (groupedEarliest == nil or earliest < groupedEarliest) then groupedEarliest = earliest end
  grouped = groupBatch()
end

local staged, stagedEntries, stagedNew, stagedNewOf = {}, {}, 0, {}
local newBuckets, after = {}, {}

-- The bucket entry of the job at ARGV[i] (the wheel's format, includes/wheel.lua), in one
-- concatenation. The jobs of a bulk add often share a due time: its offset's digits are formatted
-- once.
local offsetDue, offsetStart, offsetDigits = nil, nil, nil
local function wheelEntry(i, id, dueAt, open)
  if dueAt ~= offsetDue or open.start ~= offsetStart then
    offsetDue, offsetStart, offsetDigits = dueAt, open.start, int(dueAt - open.start)
  end
  return id .. '\n' .. offsetDigits .. '\n' .. newRecord(ARGV[i + 3], ARGV[i + 4], ARGV[i + 5])
end

-- Stages `entry` for the bucket `open` (wheelTail). `moving`: the job is in the wheel already
-- (counted in `wheeled`).
local function stage(open, entry, moving)
  local n = open.name
  local entries = stagedEntries[n]
  if entries == nil then
    entries = {}
    stagedEntries[n] = entries
    staged[#staged + 1] = n
    stagedNewOf[n] = 0
  end
  if open.len == 0 then
    local moveAt = open.start - wheelWidth()
    newBuckets[#newBuckets + 1] = open.start
    newBuckets[#newBuckets + 1] = n
    -- The first bucket at its start: workers may have to come earlier to move it.
    if open.first and (minMove == nil or moveAt < minMove) then minMove = moveAt end
  end
  entries[#entries + 1] = entry
  open.len = open.len + 1
  if not moving then stagedNew, stagedNewOf[n] = stagedNew + 1, stagedNewOf[n] + 1 end
  wheeled = wheeled + 1
  wheelNonEmpty = true
end

-- A replaced job's old place in `due` or `dead` (it moves into the wheel).
local function leaveDueOrDead(id)
  rcall('ZREM', dueKey, id)
  rcall('ZREM', deadKey, id)
  rcall('HDEL', jobsKey, id)
end

local function flushWheel()
  if #newBuckets > 0 then callMany('ZADD', wheelKey, newBuckets) end
  local pushed = 0
  for j = 1, #staged do
    local n = staged[j]
    local entries = stagedEntries[n]
    local reply = redis.pcall('RPUSH', wheelBucketKey(n), unpack(entries))
    if type(reply) == 'table' and reply.err then
      if pushed > 0 then rcall('HINCRBY', countersKey, 'wheeled', pushed) end
      error(reply)
    end
    pushed = pushed + stagedNewOf[n]
  end
  -- Every staged entry is in its bucket now: count the new ones (moved ones were counted already).
  if stagedNew > 0 then rcall('HINCRBY', countersKey, 'wheeled', stagedNew) end
  for j = 1, #after do after[j]() end
  staged, stagedEntries, stagedNew, stagedNewOf, newBuckets, after = {}, {}, 0, {}, {}, {}
end

-- The due time and wheel slot (wheelSlot; nil: not far) of each job, and the slots' buckets looked
-- up at once: one ZMSCORE for all (and an LLEN of each that exists) instead of a ZSCORE per slot in
-- wheelTail, as due times spread over minutes to weeks name a new slot for about every other job.
-- Their open buckets go into wheelOpen as wheelTail makes them. (Reads only: the LLEN of a bucket
-- that moved in a slot migration fails before anything is written, includes/wheel.lua "Write order".)
local dueOfArg, slotOfArg = {}, {}
do
  local slots, names, seen = {}, {}, {}
  for i = 3, #ARGV, 7 do
    local dueAt = ARGV[i + 1] ~= '' and now + tonumber(ARGV[i + 1]) or tonumber(ARGV[i + 2])
    local slot = wheelSlot(dueAt, now)
    dueOfArg[i], slotOfArg[i] = dueAt, slot
    if slot and not seen[slot] then
      seen[slot] = true
      slots[#slots + 1] = slot
      names[#names + 1] = int(slot * 100000)
    end
  end
  for c = 1, #names, 1000 do
    local scores = rcall('ZMSCORE', wheelKey, unpack(names, c, math.min(c + 999, #names)))
    for k = 1, #scores do
      local slot, n = slots[c + k - 1], names[c + k - 1]
      local open = { name = n, start = slot * wheelWidth(), len = 0, first = true }
      if scores[k] then open.len = rcall('LLEN', wheelBucketKey(n)) end
      wheelOpen[slot] = open
    end
  end
end

for i = 3, #ARGV, 7 do
  local id = ARGV[i]
  local dueAt = dueOfArg[i]
  local status = 1
  local inWheel = nil
  local slot = slotOfArg[i]
  local open = nil -- a far job's bucket, its index entry already written
  local repeated = written[id]
  written[id] = true
  local g = groupOfArg[i]
  if repeated then
    flushWheel()
    flushGroups()
  end
  local inJobs = stored[id]
  local oldRec = nil
  if repeated then
    oldRec = rcall('HGET', jobsKey, id)
    inJobs = oldRec ~= false
    oldGroupOf[id] = oldRec and recordGroup(oldRec) or nil
  end
  if inJobs then
    if not replace then
      status = 0
    elseif rcall('ZSCORE', activeKey, id) then
      status = 3
    elseif ticks[id] then
      status = 5
    else
      status = 2
      rcall('HDEL', errorsKey, id)
    end
  elseif slot and not repeated and not (done[id] and not replace) then
    -- A far job not in `jobs`: its index entry is claimed and looked up in one call. (A keep-add of
    -- an id completed lately writes nothing: such an id is in no bucket, see includes/done.lua.)
    open = wheelTail(slot, dueAt)
    if rcall('HSETNX', wheelShardKey(id), id, open.name) == 0 then
      -- The index has the id: in its bucket (exists), or left by a script stopped midway.
      inWheel = wheelFind(id)
      if inWheel and not replace then
        status, open = 0, nil
      elseif inWheel and isTickRecord(inWheel.record) then
        status, open = 5, nil
      else
        if inWheel then
          status = 2
          rcall('HDEL', errorsKey, id)
        end
        rcall('HSET', wheelShardKey(id), id, open.name)
      end
    end
  else
    inWheel = wheelFind(id)
    if inWheel then
      if not replace then
        status = 0
      elseif isTickRecord(inWheel.record) then
        status = 5
      else
        status = 2
        rcall('HDEL', errorsKey, id)
      end
    end
  end
  if status == 1 and done[id] then
    if replace then
      -- A new job under this id: the earlier job's `done` entry must not answer its acks, and its
      -- kept record goes (an id has one place).
      for b = 1, 3 do rcall('HDEL', doneKeys[b], id) end
      done[id] = nil
      if kept[id] then
        rcall('ZREM', completedKey, id)
        rcall('HDEL', resultsKey, id)
        kept[id] = nil
      end
    else
      status = 4
    end
  end
  if status == 1 and aged[id] then
    rcall('ZREM', completedKey, id)
    rcall('HDEL', resultsKey, id)
    aged[id] = nil
  end
  if status == 1 or status == 2 then
    -- A replaced grouped job leaves its group (its queue, when it waited in the due tier; its
    -- count, unless it was dead); the new job joins its own (includes/groups.lua).
    local oldGroup = status == 2 and (inWheel and recordGroup(inWheel.record) or (inJobs and oldGroupOf[id])) or nil
    local oldDead = status == 2 and inJobs and rcall('ZSCORE', deadKey, id)
    if oldGroup and not oldDead then
      groupCount(oldGroup, -1)
      if not inWheel then groupUnwait(oldGroup, id, false) end
    elseif status == 2 and inJobs and not oldDead and g and not slot then
      rcall('ZREM', dueKey, id) -- an ungrouped job of `due` becomes grouped
    end
    if g and slot then groupCount(g, 1) end
    -- The new place first, then the old one goes (includes/wheel.lua, "Write order": a stop midway
    -- loses nothing).
    if slot and not repeated then
      if open == nil then
        -- Replacing a job of due or dead: its index entry (over any left midway), staged entry.
        open = wheelTail(slot, dueAt)
        rcall('HSET', wheelShardKey(id), id, open.name)
      end
      stage(open, wheelEntry(i, id, dueAt, open), inWheel ~= nil)
      if inWheel then
        local found = inWheel
        after[#after + 1] = function() wheelRemove(id, found, true) end
      elseif status == 2 then
        after[#after + 1] = function() leaveDueOrDead(id) end
      end
    elseif slot then
      local moveAt, created = wheelPut(id, dueAt, newRecord(ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]), slot, inWheel ~= nil)
      wheeled = wheeled + 1
      if created and (minMove == nil or moveAt < minMove) then minMove = moveAt end
      if inWheel then
        wheelRemove(id, inWheel, true)
      elseif status == 2 then
        leaveDueOrDead(id)
      end
    else
      rcall('HSET', jobsKey, id, newRecord(ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]))
      if g then
        groupAdd(grouped, g, dueAt, id, true)
      else
        rcall('ZADD', dueKey, dueAt, id)
        if minDue == nil or dueAt < minDue then minDue = dueAt end
      end
      if inWheel then
        -- Its bucket may hold staged entries: they go in first.
        flushWheel()
        wheelRemove(id, inWheel, false)
      elseif status == 2 then
        rcall('ZREM', deadKey, id)
      end
    end
    local expiry = expiryOf(ARGV[i + 6])
    -- (A replace may remove an entry: one written before, or earlier in this call.)
    if expiry or (status == 2 and (expiring or expiries[id] ~= nil)) then
      if expiries[id] == nil then expiryIds[#expiryIds + 1] = id end
      expiries[id] = expiry or false
    end
    if status == 1 then added = added + 1 end
    out[#out + 1] = status
    out[#out + 1] = dueAt
  else
    out[#out + 1] = status
    out[#out + 1] = -1
  end
end
flushWheel()
flushGroups()
if #expiryIds > 0 then
  local set, unset = {}, {}
  for _, id in ipairs(expiryIds) do
    local expiry = expiries[id]
    if expiry then
      set[#set + 1] = id
      set[#set + 1] = expiry
    else
      unset[#unset + 1] = id
    end
  end
  if #set > 0 then
    callMany('HSET', expiryKey, set)
    if not expiring then rcall('HSET', metaKey, 'expiring', '1') end
  end
  if #unset > 0 then callMany('HDEL', expiryKey, unset) end
end
if added > 0 then rcall('HINCRBY', countersKey, 'added', added) end
if wheeled > 0 then wheelSplit() end
if minDue ~= nil then wakeIfHead(minDue) end
if groupedEarliest ~= nil then wakeIfGroupHead(groupedEarliest) end
if minMove ~= nil then wakeIfWheelHead(minMove) end
return out
