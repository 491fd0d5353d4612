--[[
  wheel: the far-future tier (time wheel), its buckets and index, and the puts, finds and removes
  of single jobs (the claim's moves are wheelPromote.lua, the read-only views wheelViews.lua).

  The far-future tier (time wheel). A job due later than one bucket width after its bucket starts
  does not take a `due` entry and a `jobs` field (~200 bytes with their hash-table and skiplist
  nodes): it is one string in a LIST bucket (a listpack-encoded quicklist, a few bytes of overhead)
  plus one short field in a small HASH shard of the index. Format (COMMON.md, README "Redis keys"):
    W      bucket width, `meta` field `wheelSlotMs` (default 60 s); slot = floor(dueAt / W), or
           for a far job the first slot of a k-slot span (wheelSlot): its bucket holds jobs due
           in [slot*W, slot*W + k*W)
    bucket n: LIST tag:wheel:<n>, about WHEEL_BUCKET_MAX entries at most, each
           "<id>\n<dueAt - start>\n<record>" (record as in `jobs`, token '0', dueAt ''), start
           being the bucket's score in `wheel`. Two kinds:
           - a slot's bucket: n = slot * 100000 + sub, start = slot * W, holding jobs due anywhere
             in the slot's span. A slot's first WHEEL_BUCKET_MAX jobs go to sub 0 (data written
             before cells existed may have subs 1, 2, ... too: read whole, as before);
           - a cell: once sub 0 is full, a job goes to the coarse cell of its due time, one of
             WHEEL_COARSE_CELLS equal parts of the span, and once that one holds WHEEL_BUCKET_MAX,
             to its fine cell, one of WHEEL_CELLS parts (each at most W wide): n =
             "<end><level><d><f>", end the cell's end (epoch ms, exclusive), level 1 coarse or 2
             fine, d two digits (the span is 2^d slots), f four digits numbering a fine cell's
             buckets from 0 (a coarse cell has one, 0); start = the cell's start. A cell holds due
             times in [start, end) only, so a listing or the histogram reads the cells it needs,
             not the slot, and a slot of a few thousand jobs takes a few keys, not one per job.
             (wheelBucketEnd tells the kinds apart: a slot's n without its last 7 digits is at most
             its start; a cell's is its end.)
    wheel  ZSET n -> start, the buckets
    index  HASH shards tag:wheel:idx:<s>, id -> n; s by linear hashing on the id's SHA-1 (`meta`
           fields idxLevel, idxSplit), split while the mean shard holds more than WHEEL_IDX_MEAN
    counters `wheeled`  jobs in the tier
  A job goes to the wheel iff its bucket starts more than W from now (slot*W - W > now), and the
  claim script moves each bucket W before it starts (promoteWheel): its jobs into `due` at their
  exact due times, those of a wide bucket that are still far into narrower buckets. So the tier
  never makes a job early, nor late while a worker runs, and a job enters `due` at most about 2 W
  before it is due. The move is part of a claim script: atomic.
]]
-- includes: keys, base

local WHEEL_BUCKET_MAX = 1000   -- entries a bucket holds at most: get/cancel/reschedule scan one
local WHEEL_IDX_MEAN = 40       -- mean entries per index shard: well inside a listpack (128)
local WHEEL_SPLITS_MAX = 32     -- index shards one call splits at most
local WHEEL_SPAN_DIV = 32       -- a bucket spans at most 1/32 of its jobs' distance (wheelSlot)
local WHEEL_COARSE_CELLS = 32   -- coarse cells of a span, taking its jobs past sub 0's (at most W wide)
local WHEEL_CELLS = 1000        -- fine cells of a span, taking a full coarse cell's jobs (at most W wide)
-- per call:
local wheelTag = string.sub(dueKey, 1, -5)
local wheelW = nil

-- The widest bucket width there is (the default): lets an idle claim say when to look again from the
-- wheel's head alone, without reading the width (promoteWheel).
local WHEEL_MAX_WIDTH = 60000

local function wheelWidth()
  if wheelW == nil then wheelW = math.min(tonumber(rcall('HGET', metaKey, 'wheelSlotMs')) or WHEEL_MAX_WIDTH, WHEEL_MAX_WIDTH) end
  return wheelW
end

-- The slot of the bucket a job due at `dueAt` goes to, or nil when it goes to `due` (its bucket
-- would have to move W before it starts, which is not after now). A far job's bucket spans k
-- slots, k the largest power of two with k*W <= (dueAt - now) / WHEEL_SPAN_DIV: a few dozen buckets
-- per doubling of the distance, so that sparse far slots do not cost a key each (promoteWheel
-- moves the jobs of a wide bucket on into narrower ones as they come nearer).
-- (The last answer is kept: the jobs of a bulk add often share a due time.)
-- per call:
local slotDue, slotNow, slotOf, slotSpan = nil, nil, nil, nil
local function wheelSlot(dueAt, now)
  if dueAt == slotDue and now == slotNow then return slotOf end
  local w = wheelWidth()
  local k, far = 1, (dueAt - now) / WHEEL_SPAN_DIV
  while 2 * k * w <= far do k = 2 * k end
  local slot = math.floor(dueAt / (k * w)) * k
  if slot * w - w <= now then slot = nil end
  slotDue, slotNow, slotOf, slotSpan = dueAt, now, slot, k
  return slot
end

local function wheelBucketKey(n)
  return wheelTag .. ':wheel:' .. n
end

-- Linear hashing state, read once per call: 2^level shards, plus `split` of the next level.
-- per call:
local idxLevel, idxSplit, idxLow = nil, nil, nil
local function wheelIdxState()
  if idxLevel == nil then
    local st = rcall('HMGET', metaKey, 'idxLevel', 'idxSplit')
    idxLevel, idxSplit = tonumber(st[1]) or 0, tonumber(st[2]) or 0
    idxLow = 2 ^ idxLevel
  end
end

-- The index hash of an id (memoized: add looks an id up, then writes it).
-- The value is that of the SHA-1's first 8 hex digits, read from their bytes through a table
-- (string.sub and tonumber(_, 16) cost about as much as the SHA-1 itself; a bulk add hashes every id).
-- per call:
local hashedId, hashedValue = nil, nil
-- The value of a hex digit by its byte ('0'..'9' are 48..57, 'a'..'f' 97..102).
local HEX = {
  [48] = 0, [49] = 1, [50] = 2, [51] = 3, [52] = 4, [53] = 5, [54] = 6, [55] = 7, [56] = 8, [57] = 9,
  [97] = 10, [98] = 11, [99] = 12, [100] = 13, [101] = 14, [102] = 15,
}
-- per call:
local sha1hex, byte = redis.sha1hex, string.byte
local function wheelHash(id)
  if id ~= hashedId then
    local a, b, c, d, e, f, g, h = byte(sha1hex(id), 1, 8)
    hashedId = id
    hashedValue = ((((((HEX[a] * 16 + HEX[b]) * 16 + HEX[c]) * 16 + HEX[d]) * 16 + HEX[e]) * 16 + HEX[f]) * 16 + HEX[g]) * 16 + HEX[h]
  end
  return hashedValue
end

-- Shard key names by shard number (built once a call: a bulk add names a shard per id).
-- per call:
local wheelShardNames = {}
local function wheelShardKey(id)
  wheelIdxState()
  local h = wheelHash(id)
  local s = h % idxLow
  if s < idxSplit then s = h % (2 * idxLow) end
  local name = wheelShardNames[s]
  if name == nil then
    name = wheelTag .. ':wheel:idx:' .. int(s)
    wheelShardNames[s] = name
  end
  return name
end

--[[
  Write order under a Cluster slot migration. A script names its partition's fixed keys, so it
  runs only while all of them are still on this node; a computed key (bucket, shard) may already
  have moved, and then the first command that touches it fails and ends the script there (earlier
  writes stay). A key the script has read exists here for the rest of the script, so only the
  first touch of a key can fail. The wheel writes in an order where such a stop loses nothing:
  the new place of an entry is written before its old place is removed, an index entry before its
  bucket entry (an index entry whose bucket lacks the id is ignored), and `wheeled` with each put.
  (add batches a call's puts per bucket in the same order, `wheeled` counting the pushed: add.lua.)
]]

-- Splits shards while their mean exceeds WHEEL_IDX_MEAN (at most WHEEL_SPLITS_MAX per call).
-- A split rewrites both shards whole, so one that outgrew a listpack becomes one again.
local function wheelSplit()
  wheelIdxState()
  local count = tonumber(rcall('HGET', countersKey, 'wheeled')) or 0
  local splits = 0
  while splits < WHEEL_SPLITS_MAX and count > WHEEL_IDX_MEAN * (2 ^ idxLevel + idxSplit) do
    local low = 2 ^ idxLevel
    local oldKey = wheelTag .. ':wheel:idx:' .. int(idxSplit)
    local newKey = wheelTag .. ':wheel:idx:' .. int(idxSplit + low)
    local all = rcall('HGETALL', oldKey)
    local keep, move, nk, nm = {}, {}, 0, 0
    -- An entry moves iff bit `idxLevel` of its hash is set (h % low is idxSplit for all of them):
    -- read from the one hex digit that holds it, not the whole hash (a split rehashes a shard).
    local at, bit = 8 - math.floor(idxLevel / 4), 2 ^ (idxLevel % 4)
    for i = 1, #all, 2 do
      if at >= 1 and math.floor(HEX[byte(sha1hex(all[i]), at)] / bit) % 2 == 1 then
        move[nm + 1], move[nm + 2], nm = all[i], all[i + 1], nm + 2
      else
        keep[nk + 1], keep[nk + 2], nk = all[i], all[i + 1], nk + 2
      end
    end
    -- The new shard first (a missing key's first touch may fail, see above), then the old rewritten.
    for i = 1, #move, 1000 do rcall('HSET', newKey, unpack(move, i, math.min(i + 999, #move))) end
    rcall('DEL', oldKey)
    for i = 1, #keep, 1000 do rcall('HSET', oldKey, unpack(keep, i, math.min(i + 999, #keep))) end
    idxSplit = idxSplit + 1
    if idxSplit == low then idxLevel, idxSplit, idxLow = idxLevel + 1, 0, 2 * low end
    rcall('HSET', metaKey, 'idxLevel', idxLevel, 'idxSplit', idxSplit)
    splits = splits + 1
  end
end

-- Whether the wheel may hold anything (one EXISTS a call; spares the index look-up of every add).
-- per call:
local wheelNonEmpty = nil
local function wheelMayHold()
  if wheelNonEmpty == nil then wheelNonEmpty = rcall('EXISTS', wheelKey) == 1 end
  return wheelNonEmpty
end

-- The bucket each slot's and cell's next put goes to, for this call: { name (n), start, len,
-- first }, keyed by the slot (a number: no formatting per put) and 'c<cell name without f>:<start>'.
-- per call:
local wheelOpen = {}

-- The cell of `level` (1 coarse, 2 fine) that a job due at `dueAt` goes to in the bucket of span
-- k = 2^d from `base`: its open bucket (looked up once per cell and call, then tracked).
local function wheelCell(level, base, k, d, dueAt)
  local w = wheelWidth()
  local width = math.max(1, math.min(w, math.floor(k * w / (level == 1 and WHEEL_COARSE_CELLS or WHEEL_CELLS))))
  local start = base + math.floor((dueAt - base) / width) * width
  local stop = math.min(start + width, base + k * w)
  local prefix = int(stop) .. level .. string.format('%02d', d)
  local key = 'c' .. prefix .. ':' .. int(start)
  local cell = wheelOpen[key]
  if cell == nil then
    local f = -1
    local here = rcall('ZRANGEBYSCORE', wheelKey, start, start)
    for i = 1, #here do
      local m = here[i]
      if #m == #prefix + 4 and string.sub(m, 1, #prefix) == prefix then f = math.max(f, tonumber(string.sub(m, -4))) end
    end
    cell = { prefix = prefix, f = math.max(f, 0), start = start, len = 0, first = f < 0 }
    cell.name = prefix .. string.format('%04d', cell.f)
    if f >= 0 then cell.len = rcall('LLEN', wheelBucketKey(cell.name)) end
    wheelOpen[key] = cell
  end
  return cell
end

-- The bucket that the next put of a job due at `dueAt` in `slot` (wheelSlot, called before with
-- the same dueAt) goes to: the slot's sub 0 while it has room, else the job's coarse cell while it
-- has room, else its fine cell, whose bucket f filled to WHEEL_BUCKET_MAX is followed by f + 1
-- (looked up once per slot or cell and call, then tracked). `len` 0: the bucket does not exist yet
-- (its put adds it to `wheel` with score `start`); `first`: it is the first bucket at its start
-- (its move may be the wheel's next).
local function wheelTail(slot, dueAt)
  local w = wheelWidth()
  local whole = wheelOpen[slot]
  if whole == nil then
    local n = int(slot * 100000)
    -- LLEN only a bucket `wheel` has: a new bucket's first touch is its RPUSH (write order, above).
    whole = { name = n, start = slot * w, len = 0, first = true }
    if rcall('ZSCORE', wheelKey, n) then whole.len = rcall('LLEN', wheelBucketKey(n)) end
    wheelOpen[slot] = whole
  end
  if whole.len < WHEEL_BUCKET_MAX then return whole end
  wheelSlot(dueAt, slotNow)
  local k, d = slotSpan, 0
  while 2 ^ d < k do d = d + 1 end
  local coarse = wheelCell(1, slot * w, k, d, dueAt)
  if coarse.len < WHEEL_BUCKET_MAX then return coarse end
  local fine = wheelCell(2, slot * w, k, d, dueAt)
  -- (Past 10,000 buckets, ten million jobs due in one fine cell, the last one takes the rest.)
  if fine.len >= WHEEL_BUCKET_MAX and fine.f < 9999 then
    fine.f, fine.len, fine.first = fine.f + 1, 0, false
    fine.name = fine.prefix .. string.format('%04d', fine.f)
  end
  return fine
end

-- Puts a job into the bucket of `slot` (wheelSlot) and points the index at it. `record` is in the
-- `jobs` format with token '0' and dueAt ''. `moving`: the job is in the wheel already (its old
-- entry is removed after this, with wheelRemove(id, found, true)), so `wheeled` stays.
-- Returns the time at which its bucket moves (its start - W), and whether this put created the
-- first bucket at that start. (add batches its puts instead: add.lua.)
local function wheelPut(id, dueAt, record, slot, moving)
  local open = wheelTail(slot, dueAt)
  local n = open.name
  local created = open.len == 0 and open.first
  rcall('HSET', wheelShardKey(id), id, n)
  if open.len == 0 then rcall('ZADD', wheelKey, open.start, n) end
  rcall('RPUSH', wheelBucketKey(n), id .. '\n' .. int(dueAt - open.start) .. '\n' .. record)
  open.len = open.len + 1
  if not moving then rcall('HINCRBY', countersKey, 'wheeled', 1) end
  wheelNonEmpty = true
  return open.start - wheelWidth(), created
end

-- Tells sleeping workers about a new bucket whose move is now the earliest thing to do, so that
-- they come to move it (a claim's reply carries the next move time; this covers later adds).
local function wakeIfWheelHead(moveAt)
  local dueHead = rcall('ZRANGE', dueKey, 0, 0, 'WITHSCORES')
  if dueHead[2] ~= nil and tonumber(dueHead[2]) <= moveAt then return end
  local head = rcall('ZRANGE', wheelKey, 0, 0, 'WITHSCORES')
  if head[2] ~= nil and tonumber(head[2]) - wheelWidth() < moveAt then return end
  rcall('PUBLISH', wakeChannel, int(moveAt))
end

-- Finds a job in the wheel: nil, or { n, entry, dueAt, record } (O(bucket)). An index entry whose
-- bucket does not hold the id (left by a script stopped midway, see above) finds nothing.
local function wheelFind(id)
  if not wheelMayHold() then return nil end
  local n = rcall('HGET', wheelShardKey(id), id)
  if not n then return nil end
  local entries = rcall('LRANGE', wheelBucketKey(n), 0, -1)
  local prefix = id .. '\n'
  for i = 1, #entries do
    local e = entries[i]
    if string.sub(e, 1, #prefix) == prefix then
      local nl = string.find(e, '\n', #prefix + 1, true)
      -- The bucket's start is its score (= slot * W, read rather than computed from W).
      local start = tonumber(rcall('ZSCORE', wheelKey, n)) or math.floor(tonumber(n) / 100000) * wheelWidth()
      return { n = n, entry = e, dueAt = start + tonumber(string.sub(e, #prefix + 1, nl - 1)), record = string.sub(e, nl + 1) }
    end
  end
  return nil
end

-- Removes the bucket entry wheelFind found and, unless `moved` (wheelPut put the job anew and
-- pointed the index there), its index entry.
local function wheelRemove(id, found, moved)
  local bkey = wheelBucketKey(found.n)
  rcall('LREM', bkey, 1, found.entry)
  -- The open bucket of its slot or cell (wheelTail) may be this one, now shorter or gone: look
  -- them up again.
  wheelOpen = {}
  if rcall('EXISTS', bkey) == 0 then rcall('ZREM', wheelKey, found.n) end
  if not moved then
    rcall('HDEL', wheelShardKey(id), id)
    rcall('HINCRBY', countersKey, 'wheeled', -1)
  end
end
