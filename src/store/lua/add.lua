#!lua
--[[
  add: add one or many jobs (addBulk sends a chunk per call). Idempotent by id.

  KEYS: the partition keys (lib.lua). A job due beyond the horizon goes to the wheel (lib.lua).
  ARGV[2]   ifExists  'keep' | 'replace'   what an existing id does
  ARGV[3..] groups of 6:
    id
    delayMs      ms from the server's now, or '' when atMs is given
    atMs         epoch ms, or ''
    maxAttempts  integer or '' (the worker's default)
    backoff      'f<ms>' | 'e<ms>' | ''
    payload      JSON text
  Returns: { now, status1, dueAt1, status2, dueAt2, ... } per job, in order:
    1 added, 0 exists (kept as it was), 2 replaced, 3 exists and is running (not replaced),
    4 completed in the last 60 to 90 s (lib.lua), not added: a keep-add writes nothing (most
      likely it is the add that created the job, resent after a lost reply); a replace-add adds the
      job anew (status 1)
    An id in the wheel exists like any other waiting job; replacing it moves it where its new due
    time belongs.
  Errors: none. (A payload over the client's limit is refused before this script runs.)
]]
local replace = ARGV[2] == 'replace'
local now = nowMs()
local out = { now }
local added, minDue = 0, nil
local wheeled, minMove = 0, nil
-- Most calls come when nothing completed lately: then no id needs the `done` look-up.
local anyDone = rcall('EXISTS', doneKeys[1], doneKeys[2], doneKeys[3]) > 0
if anyDone then rotateDone(now) end
-- Which ids `jobs` holds, one HMGET per 1,000 (a call per id costs more than the look-up). An id
-- written earlier in this call (it appears twice) is looked up again.
local stored, written = {}, {}
for c = 3, #ARGV, 6000 do
  local ids = {}
  for i = c, math.min(c + 5999, #ARGV), 6 do ids[#ids + 1] = ARGV[i] end
  local recs = rcall('HMGET', jobsKey, unpack(ids))
  for j = 1, #ids do if recs[j] then stored[ids[j]] = true end end
end
for i = 3, #ARGV, 6 do
  local id = ARGV[i]
  local dueAt = ARGV[i + 1] ~= '' and now + tonumber(ARGV[i + 1]) or tonumber(ARGV[i + 2])
  local status = 1
  local inWheel = nil
  local inJobs = stored[id]
  if written[id] then inJobs = rcall('HEXISTS', jobsKey, id) == 1 end
  written[id] = true
  if inJobs then
    if not replace then
      status = 0
    elseif rcall('ZSCORE', activeKey, id) then
      status = 3
    else
      status = 2
      rcall('HDEL', errorsKey, id)
    end
  else
    inWheel = wheelFind(id)
    if inWheel then
      if replace then
        status = 2
        rcall('HDEL', errorsKey, id)
      else
        status = 0
      end
    elseif anyDone and doneBy(id) then
      if replace then
        -- A new job under this id: the earlier job's `done` entry must not answer its acks.
        for b = 1, 3 do rcall('HDEL', doneKeys[b], id) end
      else
        status = 4
      end
    end
  end
  if status == 1 or status == 2 then
    local record = '0,0,,' .. ARGV[i + 3] .. ',' .. ARGV[i + 4] .. '\n' .. ARGV[i + 5]
    local slot = wheelSlot(dueAt, now)
    -- The new place first, then the old one goes (lib.lua: a stop midway loses nothing).
    if slot then
      local moveAt, created = wheelPut(id, dueAt, record, slot, inWheel ~= nil)
      wheeled = wheeled + 1
      if created and (minMove == nil or moveAt < minMove) then minMove = moveAt end
      if inWheel then
        wheelRemove(id, inWheel, true)
      elseif status == 2 then
        rcall('ZREM', dueKey, id)
        rcall('ZREM', deadKey, id)
        rcall('HDEL', jobsKey, id)
      end
    else
      rcall('HSET', jobsKey, id, record)
      rcall('ZADD', dueKey, dueAt, id)
      if minDue == nil or dueAt < minDue then minDue = dueAt end
      if inWheel then
        wheelRemove(id, inWheel, false)
      elseif status == 2 then
        rcall('ZREM', deadKey, id)
      end
    end
    if status == 1 then added = added + 1 end
    out[#out + 1] = status
    out[#out + 1] = dueAt
  else
    out[#out + 1] = status
    out[#out + 1] = -1
  end
end
if added > 0 then rcall('HINCRBY', countersKey, 'added', added) end
if wheeled > 0 then wheelSplit() end
if minDue ~= nil then wakeIfHead(minDue) end
if minMove ~= nil then wakeIfWheelHead(minMove) end
return out
