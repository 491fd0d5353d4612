--[[
  wheelPromote: the claim's move of the wheel's buckets that start soon into `due` (promoteWheel),
  safe under a Cluster slot migration (wheel.lua, "Write order").
]]
-- includes: keys, base, wake, wheel, groups

-- Entries one claim moves at most (~1 ms of Redis: bounds its latency).
local WHEEL_MOVE_MAX = 250

-- Fails the script, before it writes, unless every key of `keys` is on this node as it is: during
-- a Cluster slot migration a key not moved in yet reads as empty on the importing node, and a
-- moved one fails its first touch on the exporting node (wheel.lua, "Write order"). A multi-key command
-- with a key missing fails on both (TRYAGAIN, ASK), outside a migration it is a mere EXISTS. The
-- caller retries later, on the slot's owner.
local function wheelHere(keys)
  keys[#keys + 1] = countersKey -- declared, so here: makes the command multi-key
  for i = 1, #keys, 1000 do rcall('EXISTS', unpack(keys, i, math.min(i + 999, #keys))) end
end

-- Whether bucket n holds an entry of `id` (a look into another bucket: rare, see below).
local function wheelHolds(n, id)
  local bkey = wheelBucketKey(n)
  wheelHere({ bkey })
  local prefix = id .. '\n'
  local entries = rcall('LRANGE', bkey, 0, -1)
  for i = 1, #entries do
    if string.sub(entries[i], 1, #prefix) == prefix then return true end
  end
  return false
end

-- Moves the buckets that start within W on, at most WHEEL_MOVE_MAX entries per call: an entry due
-- within reach goes into `due` (its exact due time); one of a wide far bucket (wheelSlot) that is
-- still far goes into the narrower bucket its distance now calls for (always a later slot), so that
-- a wide bucket never brings its jobs into `due` (the costly tier) long before they are due.
-- Returns `now` when more is to move at once, else when the next bucket is to move, or nil when
-- the wheel is empty.
-- Idempotent, so that a call stopped midway (a slot migration, wheel.lua "Write order") or a copy left by
-- one is never delivered twice: an entry moves only if it is its job's one place, that is the id is
-- not in `jobs` (in due, active or dead: copied out before; never written over) and the index
-- points at this bucket, or at a bucket that lacks the id (left by an add stopped midway). Any
-- other entry is a stale copy and goes with the bucket's trim. The bucket and the index shards are
-- checked to be here before anything is written (wheelHere), so that the writes to them cannot fail.
local function promoteWheel(now)
  local moved = 0
  local minDue, groupMin = nil, nil
  local result = nil
  while true do
    local head = rcall('ZRANGE', wheelKey, 0, 0, 'WITHSCORES')
    if head[1] == nil then break end
    local start = tonumber(head[2])
    -- Far from its move whatever the width (an idle worker's call): come back then, and read the width only then.
    if start - WHEEL_MAX_WIDTH > now then result = start - WHEEL_MAX_WIDTH break end
    local w = wheelWidth()
    if start - w > now then result = start - w break end
    if moved >= WHEEL_MOVE_MAX then result = now break end
    local n = head[1]
    local bkey = wheelBucketKey(n)
    local take = WHEEL_MOVE_MAX - moved
    -- Read, check, write the entries' new places, then trim: a stop midway (wheel.lua, "Write order") loses nothing.
    local entries = rcall('LRANGE', bkey, 0, take - 1)
    local ids, shards, here, seenShard = {}, {}, { bkey }, {}
    for i = 1, #entries do
      local e = entries[i]
      local nl1 = string.find(e, '\n', 1, true)
      local id = string.sub(e, 1, nl1 - 1)
      ids[i] = id
      shards[i] = wheelShardKey(id)
      if not seenShard[shards[i]] then
        seenShard[shards[i]] = true
        here[#here + 1] = shards[i]
      end
      -- A grouped job's queue key is touched with the others (includes/groups.lua).
      local g = recordGroup(string.sub(e, string.find(e, '\n', nl1 + 1, true) + 1))
      local qkey = g and groupQueueKey(g)
      if qkey and not seenShard[qkey] then
        seenShard[qkey] = true
        here[#here + 1] = qkey
      end
    end
    wheelHere(here)
    local inJobs = hmgetMany(jobsKey, ids)
    local zargs, hargs = {}, {}
    local grouped = groupBatch() -- grouped jobs go to their groups' queues (includes/groups.lua)
    local gone = 0 -- entries out of the wheel already whose index entry a stopped call left
    for i = 1, #entries do
      local e, id = entries[i], ids[i]
      local at = rcall('HGET', shards[i], id)
      local live = false
      if inJobs[i] then
        if at == n then
          rcall('HDEL', shards[i], id)
          gone = gone + 1
        end
      elseif at == n then
        live = true
      elseif at then
        live = not wheelHolds(at, id)
      end
      if live then
        local nl1 = #id + 1
        local nl2 = string.find(e, '\n', nl1 + 1, true)
        local dueAt = start + tonumber(string.sub(e, nl1 + 1, nl2 - 1))
        local slot = wheelSlot(dueAt, now)
        if slot then
          wheelPut(id, dueAt, string.sub(e, nl2 + 1), slot, true)
        else
          local record = string.sub(e, nl2 + 1)
          local g = recordGroup(record)
          if g then
            groupAdd(grouped, g, dueAt, id, false)
          else
            zargs[#zargs + 1] = dueAt
            zargs[#zargs + 1] = id
            if minDue == nil or dueAt < minDue then minDue = dueAt end
          end
          hargs[#hargs + 1] = id
          hargs[#hargs + 1] = record
        end
      end
    end
    if #hargs > 0 then
      local earliest = groupFlush(grouped)
      if earliest and (groupMin == nil or earliest < groupMin) then groupMin = earliest end
      zaddMany(dueKey, zargs)
      for i = 1, #hargs, 1000 do rcall('HSET', jobsKey, unpack(hargs, i, math.min(i + 999, #hargs))) end
      for i = 1, #hargs, 2 do rcall('HDEL', wheelShardKey(hargs[i]), hargs[i]) end
    end
    if #hargs > 0 or gone > 0 then rcall('HINCRBY', countersKey, 'wheeled', -#hargs / 2 - gone) end
    moved = moved + #entries
    if #entries < take then
      rcall('DEL', bkey)
    else
      rcall('LTRIM', bkey, #entries, -1)
    end
    if rcall('EXISTS', bkey) == 0 then rcall('ZREM', wheelKey, n) end
  end
  if minDue ~= nil then wakeIfHead(minDue) end
  if groupMin ~= nil then wakeIfGroupHead(groupMin) end
  return result
end
