#!lua
--[[
  scheduleWrite: every change of a schedule, atomic with the tick jobs it creates or removes
  (includes/schedules.lua). The client computes tick times (cron, time zones); this script checks
  that the schedule is still as the client read it (compare-and-set on `gen`, and `head` for
  advance) and applies the change.

  KEYS: the partition keys (includes/keys.lua).
  Reads:     active, dead, done:0, done:1, done:2, results
  Writes:    due, jobs, counters, meta, wheel, wheel:<n>, wheel:idx:<s>, schedules, group:due,
             group:jobs, group:q:<group>, groups
  Publishes: wake
  ARGV[2] op     'put' | 'advance' | 'pause' | 'resume' | 'remove'
  ARGV[3] key    the schedule key
  ARGV[4] gen    the generation read ('' = the schedule did not exist; ignored by pause and remove)
  put:     ARGV[5] hash, [6] maxAttempts, [7] backoff, [8] payload, [9] spec JSON, [10] flags ('o' or ''),
           [11] first entry ('' when the schedule has no tick at all), [12] the entries after it,
           [13] limit ('' none)
           The same hash stored: nothing changes ('same'). Else the pending tick (not started) is
           removed and the first entry created (not while paused: resume creates one).
  advance: [5] head read, [6] entries to create "e1,e2,..." (oldest first; '' for none), [7] the
           entries after the last one, [8] '1' when no tick follows (the schedule ended)
  resume:  [5] first entry ('' none), [6] the entries after it, [7] '1' when no tick follows
  No tick is created beyond `limit` (includes/schedules.lua scheduleFull): the client's lists ignore it.
  Returns: { status, now, record, lastRunState } (includes/schedules.lua) status 'written' | 'same' | 'conflict' | 'not_found' | 'removed'
  Errors: none.
]]
-- includes: keys, base, schedules, groups
local op, key, gen = ARGV[2], ARGV[3], ARGV[4]
local now = nowMs()
local v = rcall('HGET', schedulesKey, key)
local s = v and readSchedule(v)

local function result(status)
  if not s then return { status, now, '', '' } end
  return { status, now, writeSchedule(s), lastRunState(s) }
end
local function save()
  rcall('HSET', schedulesKey, key, writeSchedule(s))
  return result('written')
end
if op == 'put' then
  if s and s.hash == ARGV[5] then return result('same') end
  if (s and gen ~= int(s.gen)) or (not s and gen ~= '') then return result('conflict') end
  -- A schedule with a group (its payload field starts with \31) is group data (includes/groups.lua).
  if string.byte(ARGV[8], 1) == 31 then markGroupFormat() end
  if not s then
    s = { gen = 0, runs = 0, skipped = 0, flags = '', head = '', last = '' }
    rcall('HINCRBY', metaKey, 'scheduled', 1)
  elseif not scheduleHas(s, 'p') then
    dropPendingTick(key, s, now)
  end
  scheduleStall(key, s, false)
  s.gen = s.gen + 1
  s.hash, s.maxAttempts, s.backoff, s.payload, s.spec = ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9]
  s.limit = ARGV[13]
  local paused = scheduleHas(s, 'p')
  s.flags = (paused and 'p' or '') .. ARGV[10]
  s.ticks = ARGV[12]
  if ARGV[11] == '' or scheduleFull(s) then
    scheduleSet(s, 'e', true)
  elseif not paused then
    startTick(key, s, ARGV[11], now)
  end
  return save()
end

if not s then return result('not_found') end

if op == 'advance' then
  if gen ~= int(s.gen) or ARGV[5] ~= s.head or scheduleHas(s, 'p') then return result('conflict') end
  local created = false
  for entry in string.gmatch(ARGV[6], '[^,]+') do
    if scheduleFull(s) then break end
    startTick(key, s, entry, now)
    created = true
  end
  s.ticks = ARGV[7]
  scheduleStall(key, s, false)
  scheduleSet(s, 'e', ARGV[8] == '1' or (ARGV[6] ~= '' and not created))
  return save()
elseif op == 'pause' then
  if scheduleHas(s, 'p') then return result('same') end
  dropPendingTick(key, s, now)
  scheduleStall(key, s, false)
  scheduleSet(s, 'p', true)
  s.gen = s.gen + 1
  return save()
elseif op == 'resume' then
  if not scheduleHas(s, 'p') then return result('same') end
  if gen ~= int(s.gen) then return result('conflict') end
  scheduleSet(s, 'p', false)
  scheduleSet(s, 'e', ARGV[7] == '1' or scheduleFull(s))
  if ARGV[5] ~= '' and not scheduleFull(s) then
    startTick(key, s, ARGV[5], now)
  end
  s.ticks = ARGV[6]
  s.gen = s.gen + 1
  return save()
elseif op == 'remove' then
  if not scheduleHas(s, 'p') then dropPendingTick(key, s, now) end
  scheduleStall(key, s, false)
  rcall('HDEL', schedulesKey, key)
  rcall('HINCRBY', metaKey, 'scheduled', -1)
  return result('removed')
end
return redis.error_reply('ERR unknown schedule op ' .. op)
