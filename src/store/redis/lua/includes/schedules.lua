--[[
  schedules: recurring schedules and their ticks. `schedules` HASH, one field per schedule key
  hashing to this partition; each tick is an ordinary job with id "<key>@<entry>", where an entry is
  "<tickAt>[~<n>]" (the suffix, chosen by the client, puts the id in the schedule's partition:
  src/store/redis/schedule-record.ts) and the record's 6th header field is the tick time. A
  schedule record is
    "<gen>,<runs>,<skipped>,<flags>\n<head>\n<ticks>\n<last>\n<hash>,<maxAttempts>,<backoff>,<limit>\n<payload>\n<spec JSON>"
  gen       bumped by every write of the definition or state from a client (compare-and-set)
  runs      ticks created; skipped: ticks dropped by overlap 'skip'; limit: runs allowed ('' any)
  flags     letters: p paused, e ended (no tick after head), s stalled (a client must create the
            next tick: the precomputed list ran out or its next tick had passed), o overlap 'skip'
  head      the entry of the last tick created ('' before the first): never created again
  ticks     the next entries after head, "e1,e2,...", computed by a client (cron and time zones
            live there, src/schedules/time.ts), ending in ",$" (or "$") when no tick follows them
  last      "<tickAt>,<id>" of the last tick whose job started (was claimed), '' before the first
  The chain: when the head tick's job is claimed, the claim script creates the next tick's job
  (the first entry of `ticks`) in the same call, so a crash never loses a tick and any number of
  workers create each tick once. When that entry's time has passed (every process was down, or
  the queue was behind), the claim reports the schedule and the client applies `catchUp`.
]]
-- includes: keys, base, records, done, wake, wheel, groups
local function readSchedule(v)
  local gen, runs, skipped, flags, head, ticks, last, hash, maxAttempts, backoff, limit, payload, spec =
    string.match(v, '^(%d+),(%d+),(%d+),(%a*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n(%x*),(%d*),([^,\n]*),(%d*)\n([^\n]*)\n(.*)$')
  return {
    gen = tonumber(gen), runs = tonumber(runs), skipped = tonumber(skipped), flags = flags, head = head, ticks = ticks,
    last = last, hash = hash, maxAttempts = maxAttempts, backoff = backoff, limit = limit, payload = payload, spec = spec,
  }
end

local function writeSchedule(s)
  return int(s.gen) .. ',' .. int(s.runs) .. ',' .. int(s.skipped) .. ',' .. s.flags .. '\n' .. s.head .. '\n' .. s.ticks
    .. '\n' .. s.last .. '\n' .. s.hash .. ',' .. s.maxAttempts .. ',' .. s.backoff .. ',' .. s.limit .. '\n' .. s.payload
    .. '\n' .. s.spec
end

-- Whether the schedule created all the ticks its `limit` allows.
local function scheduleFull(s)
  return s.limit ~= '' and s.runs >= tonumber(s.limit)
end

local function scheduleHas(s, flag)
  return string.find(s.flags, flag, 1, true) ~= nil
end

local function scheduleSet(s, flag, on)
  s.flags = string.gsub(s.flags, flag, '') .. (on and flag or '')
end

-- Marks schedule `key` stalled or not. The keys of a partition's stalled schedules are also kept in
-- `meta` field `stalled` ("k1\nk2"), which claims report (claim.lua: every claim that finds work,
-- and idle ones of callers that know the partition has schedules): a stall outlives a lost claim
-- reply, a process killed before it tended the schedule, or a failed tend, until some process
-- tends it. Written only when a schedule's state changes (rare).
local function scheduleStall(key, s, on)
  if scheduleHas(s, 's') == on then return end
  scheduleSet(s, 's', on)
  local keys = {}
  for k in string.gmatch(rcall('HGET', metaKey, 'stalled') or '', '[^\n]+') do
    if k ~= key then keys[#keys + 1] = k end
  end
  if on then keys[#keys + 1] = key end
  if #keys == 0 then rcall('HDEL', metaKey, 'stalled') else rcall('HSET', metaKey, 'stalled', table.concat(keys, '\n')) end
end



-- The schedule key of a tick's job id "<key>@<entry>".
local function tickKey(id)
  return string.match(id, '^(.*)@[%d~]+$')
end

-- The tick time of an entry "<tickAt>[~<n>]".
local function entryTick(entry)
  return tonumber(string.match(entry, '^%d+'))
end

-- Writes a new waiting job, unless its id exists (waiting, running or dead: creating a tick twice
-- is a no-op), completed in the last 60 to 90 s, or is kept completed. Returns whether it was written.
local function placeNewJob(id, dueAt, record, now)
  if rcall('HEXISTS', jobsKey, id) == 1 or doneBy(id) or rcall('HEXISTS', resultsKey, id) == 1 or wheelFind(id) then return false end
  local slot = wheelSlot(dueAt, now)
  -- A schedule with a group makes grouped ticks (includes/groups.lua): its record carries the group.
  local group = recordGroup(record)
  if group then groupKeysHere({ groupQueueKey(group) }) end
  if slot then
    local moveAt, created = wheelPut(id, dueAt, record, slot, false)
    wheelSplit()
    if group then groupCount(group, 1) end
    if created then wakeIfWheelHead(moveAt) end
  elseif group then
    rcall('HSET', jobsKey, id, record)
    local batch = groupBatch()
    groupAdd(batch, group, dueAt, id, true)
    groupFlush(batch)
    wakeIfGroupHead(dueAt)
  else
    rcall('HSET', jobsKey, id, record)
    rcall('ZADD', dueKey, dueAt, id)
    wakeIfHead(dueAt)
  end
  rcall('HINCRBY', countersKey, 'added', 1)
  return true
end

-- Creates the job of one tick entry of schedule `key` (due at the tick time, in the past for a
-- missed tick being caught up). Returns whether it was written.
local function createTick(key, s, entry, now)
  local tick = entryTick(entry)
  -- A schedule with a group stores "\31<group>\31<payload JSON>" (a record field holds no newline):
  -- its ticks' records get the group line (includes/groups.lua).
  local payload = s.payload
  if string.byte(payload, 1) == 31 then
    local e = string.find(payload, '\31', 2, true)
    payload = string.sub(payload, 1, e - 1) .. '\n' .. string.sub(payload, e + 1)
  end
  local record = newRecord(s.maxAttempts, s.backoff .. ',' .. int(tick), payload)
  local placed = placeNewJob(key .. '@' .. entry, tick, record, now)
  -- `ticks`: the queue's running total of tick jobs created (metrics; a schedule's `runs` can go down).
  if placed then rcall('HINCRBY', countersKey, 'ticks', 1) end
  return placed
end

-- Creates the tick of `entry` and makes it the schedule's head: one more run. Returns whether its
-- job was written.
local function startTick(key, s, entry, now)
  local placed = createTick(key, s, entry, now)
  s.head, s.runs = entry, s.runs + 1
  return placed
end

-- Whether `tick` (digits) is the schedule's head while the schedule goes on (not paused, not ended):
-- the tick whose start (or cancellation) creates the next one.
local function isPendingHead(s, tick)
  return s.head ~= '' and entryTick(s.head) == tonumber(tick) and not scheduleHas(s, 'p') and not scheduleHas(s, 'e')
end

-- Removes a schedule's head tick if its time is still to come and its job never started (pause, a
-- changed definition, unschedule): one tick fewer was created. A tick whose time has come (due, not
-- yet claimed: the workers are busy or down) is left to run, as a running or retried one is: it
-- belongs to the definition it was created by, and removing it would lose a run.
local function dropPendingTick(key, s, now)
  if s.head == '' or entryTick(s.head) <= now then return end
  local id = key .. '@' .. s.head
  if rcall('ZSCORE', activeKey, id) then return end
  local rec = rcall('HGET', jobsKey, id)
  if rec then
    local group = recordGroup(rec)
    if group then
      groupKeysHere({ groupQueueKey(group) })
      if string.sub(rec, 1, 2) ~= '0,' or not rcall('ZSCORE', groupDueKey, id) then return end
      groupUnwait(group, id, true)
    else
      if string.sub(rec, 1, 2) ~= '0,' or not rcall('ZSCORE', dueKey, id) then return end
      rcall('ZREM', dueKey, id)
    end
    rcall('HDEL', jobsKey, id)
  else
    local found = wheelFind(id)
    if not found or string.sub(found.record, 1, 2) ~= '0,' then return end
    wheelRemove(id, found, false)
    local group = recordGroup(found.record)
    if group then groupCount(group, -1) end
  end
  s.runs = s.runs - 1
end

-- The head tick's job was claimed: create the next tick from the precomputed list, if its time is
-- still to come; else mark the schedule stalled (a client applies catchUp: scheduleStall).
-- Returns whether a client should look at the schedule: it stalled, or few tick times are left.
local function advanceSchedule(key, s, now)
  local entry, rest = string.match(s.ticks, '^([^,]+),?(.*)$')
  if entry == '$' or scheduleFull(s) then
    scheduleSet(s, 'e', true)
    return false
  end
  if entry == nil or entryTick(entry) <= now then
    scheduleStall(key, s, true)
    return true
  end
  startTick(key, s, entry, now)
  s.ticks = rest
  scheduleStall(key, s, false)
  -- Fewer than 3 entries left and more ticks to come: the client computes more.
  local _, commas = string.gsub(rest, ',', '')
  return rest ~= '$' and string.sub(rest, -1) ~= '$' and commas < 2
end

--[[
  The claim's part: of the jobs a claim took (ids[i], recs[i]), the schedules' ticks start their
  next tick (advanceSchedule), and with overlap 'skip' a first delivery whose schedule's previous
  run is still active is dropped (deleted, counted in `skipped`) instead of delivered. Returns the
  positions to drop (a set, or nil) and the keys the client should look at ("k1\nk2", or '').
]]
local function claimTicks(ids, recs, now)
  local schedules, order, drop, started = {}, {}, nil, {}
  local tend = {}
  for i = 1, #ids do
    local id = ids[i]
    local tick = recs[i] and recordTick(recs[i])
    local key = tick and tickKey(id)
    local s = key and schedules[key]
    if key and s == nil then
      local v = rcall('HGET', schedulesKey, key)
      s = v and readSchedule(v) or false
      schedules[key] = s
      order[#order + 1] = key
    end
    if s then
      local first = string.sub(recs[i], 1, 2) == '0,'
      local skip = false
      if first and scheduleHas(s, 'o') and s.last ~= '' then
        local lastId = string.match(s.last, '^%d+,(.*)$')
        skip = lastId ~= id and (started[lastId] or rcall('ZSCORE', activeKey, lastId) ~= false)
      end
      if skip then
        s.skipped = s.skipped + 1
        rcall('HINCRBY', countersKey, 'ticksSkipped', 1)
        rcall('HDEL', jobsKey, id)
        drop = drop or {}
        drop[i] = true
      elseif first then
        s.last = tick .. ',' .. id
        started[id] = true
      end
      if isPendingHead(s, tick) and advanceSchedule(key, s, now) then tend[#tend + 1] = key end
    end
  end
  for _, key in ipairs(order) do
    local s = schedules[key]
    if s then rcall('HSET', schedulesKey, key, writeSchedule(s)) end
  end
  return drop, table.concat(tend, '\n')
end

-- A waiting tick's job was cancelled: if it was its schedule's head (the pending tick), the
-- schedule goes on at its next tick, as if the head had started (a cancelled run, not a stopped schedule).
local function tickCancelled(id, rec, now)
  local tick = recordTick(rec)
  local key = tick and tickKey(id)
  local v = key and rcall('HGET', schedulesKey, key)
  if not v then return end
  local s = readSchedule(v)
  if not isPendingHead(s, tick) then return end
  advanceSchedule(key, s, now)
  rcall('HSET', schedulesKey, key, writeSchedule(s))
end

-- Where the last started tick's job is now: 'active', 'waiting' (to be retried), 'dead', or 'done'
-- (completed, or gone), '' when none started.
local function lastRunState(s)
  local id = string.match(s.last, '^%d+,(.*)$')
  if not id then return '' end
  if rcall('ZSCORE', activeKey, id) then return 'active' end
  if rcall('ZSCORE', deadKey, id) then return 'dead' end
  if rcall('HEXISTS', jobsKey, id) == 1 or wheelFind(id) then return 'waiting' end
  return 'done'
end
