--[[
  Shared prelude, prepended by the script registry (src/store/scripts.ts) to every script.

  Every script receives the same KEYS, one queue partition's keys in this order (they share one
  hash tag, so one script touches one Cluster slot):
    KEYS[1] due       ZSET  id -> dueAt (epoch ms)          waiting jobs, delayed and ready
    KEYS[2] active    ZSET  id -> lease deadline (epoch ms) claimed jobs
    KEYS[3] dead      ZSET  id -> dead-lettered at (epoch ms)
    KEYS[4] jobs      HASH  id -> record
    KEYS[5] errors    HASH  id -> last error message
    KEYS[6] counters  HASH  running totals, and `seq`, the fencing-token sequence
    KEYS[7] meta      HASH  `format`, the storage format (initQueue.lua; absent: 1);
                            `paused` = '1' while paused; `donePeriod` (below); in partition 0 also
                            `partitions`, the queue's partition count
    KEYS[8..10] done:0..2  HASH  id -> token of the claim that completed the job: the jobs
                      completed in one 30 s period, the buckets taking turns (below)
    KEYS[11] leases   HASH  id -> "<token>,<dueAt>", the lease of an active job (below)
    KEYS[12] wheel    ZSET  far-future bucket number -> bucket start (the time wheel, at the end
                            of this file: its buckets and index shards are keys built here, under
                            the same hash tag)
    KEYS[13] schedules HASH schedule key -> schedule record (recurring schedules, "Schedules" below)
    KEYS[14] expiry   HASH  id -> "<expireAfterMs>[d]", the deadline of a waiting job ("Deadlines" below)
    KEYS[15] completed ZSET id -> finishedAt (epoch ms): completed jobs kept by the queue's
                            retention ("Retention" below)
    KEYS[16] results  HASH  id -> "<result JSON>\n<record>" of each job in `completed`
  and ARGV[1] is always the partition's wake channel. (claim also gets two more keys after these,
  the memo keys of this call and of the caller's previous one: KEYS[#KEYS - 1] and KEYS[#KEYS].)

  A record is "<attempts>,<token>,<dueAt>,<maxAttempts>,<backoff>[,<tickAt>][,<traceparent>]\n<payload JSON>"
  (a schedule's tick job has the 6th field, its tick time; a job added in a trace has a last field,
  the W3C traceparent of its producer, "00-<32 hex>-<16 hex>-<2 hex>", told from a tick time by its
  '-'; a job without one pays no byte. The scripts that rewrite a record carry both along inside
  `backoff`, which holds no comma: readRecord's last capture runs to the end of the header, so a
  retry, reaping, reschedule, retryDead, a wheel move and retention keep them as they are, and only
  a replace-add, which writes a new record, changes them). JSON.stringify
  never writes a raw newline, so the first one ends the header. `attempts` counts the deliveries that
  ended (a claim does not touch the record: an active job's current delivery is attempts + 1).
  `token` is always '0' (the lease holds it). `dueAt` is '' while the job waits (the `due` score holds
  it, and 13 bytes a job add up); a dead job's record has it, so it knows when it fell due.

  A lease is "<token>,<dueAt>" in `leases`, one per active job, written by claim (one HSET for the
  batch): the fencing token of the one claim allowed to ack, fail, extend or release the job, and the
  due score the job was claimed at (where reaping and release put it back, and what its handler is
  told). Its deadline is the job's `active` score; the attempt under way is the record's attempts + 1.

  Invariant: a job exists iff `jobs` has its id or the wheel's index has it (below), and then exactly
  one of due/active/dead/a wheel bucket holds it; `leases` has an entry iff the job is in `active`.
  A completed job kept by retention is in `completed` and `results` (both or neither) and nowhere
  else: an id is in at most one of `jobs`/the wheel's index and `completed`, so exactly one of
  due/active/dead/completed/a wheel bucket holds any id that has a place at all.
  `expiry` has an entry only for a waiting job (in `due` or a wheel bucket).

  Deadlines. A job added with `expireAfter` (or under the queue's default, `meta` field
  `expireAfter`, ms) has an `expiry` entry "<expireAfterMs>", with a 'd' suffix for
  `onExpire: 'drop'`. Its deadline is its due score + expireAfterMs, so a reschedule moves the
  deadline with the due time. It holds until the job's first start: the claim that takes the job
  removes the entry, and either starts it (from then on its retry policy rules: a retry, a reaped
  or released lease is never expired) or, when the deadline passed on the server's clock, does not
  deliver it: it goes to `dead` (its record's attempts stay 0, and only an expired job is dead with
  attempts 0: that is how getJob and listJobs tell reason 'expired' from 'failed') or, with 'd', is
  deleted. Both count in counters `expired`. `meta` field `expiring` = '1' (sticky, set by the add
  that first writes an entry) tells claim to look at `expiry` at all: a queue that never used a
  deadline pays nothing for it. Schedule ticks have no deadline.

  A completed job is remembered in the `done` bucket of its period (period = floor(now / 30 s);
  bucket = period % 3; `meta` field `donePeriod` = the period last written). When a new period
  begins, the bucket it reuses, holding jobs of three periods ago, is dropped whole (UNLINK: freed in
  the background), so an entry lives 60 to 90 s and forgetting costs O(1) per period. This lets the
  scripts, not a client's clock, tell a resent ack ("acked") from a late one of a lost lease
  ("stale") and from a typo ("not found"), and keeps an add resent after a lost reply from running
  a job again that already completed. A `done` id is never in `jobs`: the one add that writes such
  an id (a replace-add) removes its entry.
]]
local rcall = redis.call
local dueKey, activeKey, deadKey, jobsKey, errorsKey, countersKey, metaKey =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local doneKeys = { KEYS[8], KEYS[9], KEYS[10] }
local leasesKey, wheelKey, schedulesKey, expiryKey = KEYS[11], KEYS[12], KEYS[13], KEYS[14]
local completedKey, resultsKey = KEYS[15], KEYS[16]
local wakeChannel = ARGV[1]

-- One period of the `done` buckets (ms): a completed job is remembered 2 to 3 periods, the window in
-- which a resent ack still answers "acked" and a resent keep-add of its id writes nothing (README,
-- "Redis keys" and "Adding an existing id").
local DONE_PERIOD_MS = 30000

-- The Redis server's clock in epoch ms: due-ness and leases never depend on a client's clock.
local function nowMs()
  local t = rcall('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The server's clock in epoch ms, as a number and as its digits, built from TIME's strings: a
-- number argument of redis.call is formatted with printf, which for 13 digits costs more than a
-- cheap command (claim sends `now` to Redis at every call).
local function nowMsWithDigits()
  local t = rcall('TIME')
  local us = t[2]
  if #us < 6 then us = string.rep('0', 6 - #us) .. us end
  local digits = t[1] .. string.sub(us, 1, 3)
  return tonumber(digits), digits
end

-- Integers as plain digits (tostring would switch to exponent notation past 14 digits).
local function int(n)
  return string.format('%.0f', n)
end

-- `active` and `leases` hold one entry per running job: a few dozen to a few hundred. Redis stores
-- a sorted set or hash that small as a listpack, one block scanned from its start by every ZADD,
-- ZREM, HSET, HMGET and HDEL (with 50 entries, a ZADD or HSET costs about four times what it costs
-- in a skip list or hash table, and claim and ack make five such calls per job). A member or value
-- longer than `zset-max-listpack-value` / `hash-max-listpack-value` (64 by default) makes Redis
-- use the skip list and the hash table instead, for the life of the key: the claim that creates
-- the two keys writes ENCODER as their first entry and deletes it at once. It never outlives that
-- call, and no job id can take its name (ids hold no control character).
local ENCODER = '\n' .. string.rep('.', 72)

-- The decimal digits as strings: building a number's digits from them costs a table look-up, where
-- formatting it (tostring, `..`, string.format) costs a printf.
local DIGITS = { [0] = '0', '1', '2', '3', '4', '5', '6', '7', '8', '9' }

local function readRecord(rec)
  local nl = string.find(rec, '\n', 1, true)
  local attempts, token, dueAt, maxAttempts, backoff =
    string.match(string.sub(rec, 1, nl - 1), '^(%d+),(%d+),(%d*),(%d*),(.*)$')
  return {
    attempts = tonumber(attempts), token = token, dueAt = dueAt,
    maxAttempts = maxAttempts, backoff = backoff, payload = string.sub(rec, nl + 1),
  }
end

local function writeRecord(r)
  return r.attempts .. ',' .. r.token .. ',' .. r.dueAt .. ',' .. r.maxAttempts .. ',' .. r.backoff .. '\n' .. r.payload
end

-- The record of a job just added: no delivery yet, no token, its due time kept by `due` or the wheel.
local function newRecord(maxAttempts, backoff, payload)
  return '0,0,,' .. maxAttempts .. ',' .. backoff .. '\n' .. payload
end

-- Calls `command key args...` for many args in chunks of at most 1,000 (unpack stays within Lua's
-- stack limit), so that a batch costs O(1) calls whatever its size. Returns the sum of the replies.
local function callMany(command, key, args)
  local sum = 0
  for i = 1, #args, 1000 do sum = sum + rcall(command, key, unpack(args, i, math.min(i + 999, #args))) end
  return sum
end

-- HMGET of many fields in chunks: the values in order, false for a missing one.
local function hmgetMany(key, fields)
  if #fields <= 1000 then return #fields > 0 and rcall('HMGET', key, unpack(fields)) or {} end
  local values = {}
  for i = 1, #fields, 1000 do
    local part = rcall('HMGET', key, unpack(fields, i, math.min(i + 999, #fields)))
    for j = 1, #part do values[#values + 1] = part[j] end
  end
  return values
end

-- The entries of ack, extend and release travel as ONE argument, "<id>\t<token>\n" per entry (ids
-- hold no control character), not as two arguments each: one argument costs Redis one protocol
-- string and one Lua string however big the batch, and the client one length prefix. Returns the
-- ids, and the flat list id1, token1, id2, token2, ... (the `done` bucket's HSET takes it as it is).
local function readEntries(s)
  local ids, flat, n = {}, {}, 0
  for id, token in string.gmatch(s, '([^\t]*)\t([^\n]*)\n') do
    n = n + 1
    ids[n] = id
    flat[2 * n - 1] = id
    flat[2 * n] = token
  end
  return ids, flat
end

-- A lease's fields: token and dueAt (strings).
local function readLease(lease)
  return string.match(lease, '^(%d+),(%d+)$')
end

-- Whether `lease` (a string, or false when none) names `token`: a prefix test that allocates nothing.
local function leaseHeldBy(lease, token)
  return lease and string.find(lease, token, 1, true) == 1 and string.byte(lease, #token + 1) == 44
end

-- The record of an active job as its claim delivered it: attempts counting the delivery under way,
-- the lease's token and due time in the header (what getJob and listJobs answer for an active job).
local function leasedRecord(rec, lease)
  local token, dueAt = readLease(lease)
  local attempts, rest = string.match(rec, '^(%d+),%d+,%d*,(.*)$')
  return (tonumber(attempts) + 1) .. ',' .. token .. ',' .. dueAt .. ',' .. rest
end

-- The fencing check of ack, fail and release, for a batch: `ids[i]` and `tokens[i]` are one entry.
-- An entry holds the lease when `leases` names its token (and an earlier entry of the batch did not
-- take the same lease). The leases held are taken (the jobs leave `active` and `leases`: the caller
-- moves them on). Returns `held` (held[i] = the lease string, or nil), `leases` (each entry's lease
-- as read, false when none) and the ids taken.
local function takeLeases(ids, tokens)
  local leases = hmgetMany(leasesKey, ids)
  local held, taken, takenIds = {}, {}, {}
  for i = 1, #ids do
    local lease, id = leases[i], ids[i]
    if not taken[id] and leaseHeldBy(lease, tokens[i]) then
      held[i] = lease
      taken[id] = true
      takenIds[#takenIds + 1] = id
    end
  end
  if #takenIds > 0 then
    callMany('ZREM', activeKey, takenIds)
    callMany('HDEL', leasesKey, takenIds)
  end
  return held, leases, takenIds
end

-- Tells sleeping workers about a due time that is now the earliest, so that they re-arm their
-- timer. Workers never poll on a fixed interval; this is what keeps them on time.
local function wakeIfHead(dueAt)
  local head = rcall('ZRANGE', dueKey, 0, 0, 'WITHSCORES')
  if head[2] ~= nil and tonumber(head[2]) >= dueAt then
    rcall('PUBLISH', wakeChannel, int(dueAt))
  end
end

-- ZADD of many (score, member) pairs, in chunks so that unpack stays within Lua's stack limit.
local function zaddMany(key, pairs)
  callMany('ZADD', key, pairs)
end

-- Frees concurrency slots (limiter.lua `slots`, on partition 0): `members` "<partition>:<token>".
-- Only a full `slots` refused anyone, so only then is the limiter's wake channel told: the ones it
-- refused sleep until this message, with `now` (the server's, read here when the caller has none).
-- Returns how many slots went.
local function freeSlots(slotsKey, members, limiterWake, now)
  local before = rcall('ZCARD', slotsKey)
  local removed = callMany('ZREM', slotsKey, members)
  local concurrency = tonumber(rcall('HGET', metaKey, 'concurrency'))
  if removed > 0 and concurrency and before >= concurrency then rcall('PUBLISH', limiterWake, now or nowMs()) end
  return removed
end

-- Moves the `done` buckets on to the current period: a bucket that a new period reuses is dropped
-- whole, UNLINK freeing a large one in the background. Returns the current period's bucket key, the
-- period, and whether `donePeriod` is set (a queue that never completed a job has none, and this
-- writes nothing for it). One HGET while the period lasts, none when the caller read `donePeriod`
-- already and passes it as `last` (false when unset).
local function rotateDone(now, last)
  local period = math.floor(now / DONE_PERIOD_MS)
  if last == nil then last = rcall('HGET', metaKey, 'donePeriod') end
  if last and tonumber(last) ~= period then
    -- Periods last+1..period begin now (at most three buckets to drop, whatever the gap).
    for p = math.max(tonumber(last) + 1, period - 2), period do rcall('UNLINK', doneKeys[p % 3 + 1]) end
    rcall('HSET', metaKey, 'donePeriod', period)
  end
  return doneKeys[period % 3 + 1], period, last ~= false
end

-- The token that completed job `id` within the last 60 to 90 s, or nil.
local function doneBy(id)
  for b = 1, 3 do
    local token = rcall('HGET', doneKeys[b], id)
    if token then return token end
  end
  return nil
end

--[[
  Retention of completed jobs (opt-in, `queue.setRetention`). `meta` field `retain` =
  "<count>,<ageMs>,<maxResultBytes>,<queue count>" in every partition: `count` is this partition's
  share of the queue's count (ceil(queue count / partitions)), the 4th field the queue's count as
  given (read back by getRetention only); count and age '' when not set, both '' meaning the field
  only remembers maxResultBytes and no job is kept. A queue without the field
  keeps nothing and pays nothing: claim reads the field in the HMGET of `meta` it makes anyway,
  ack in the one it makes for `donePeriod`.
  While the queue keeps jobs, ack moves each completed job into `completed` (score = finishedAt,
  server clock) and `results` ("<result JSON>\n<record>", the record with the delivery that
  completed it counted, token '0' and the due time it was claimed at; result '' when none was sent;
  JSON.stringify never writes a raw newline). Then it trims: the oldest beyond `count`, and those
  finished more than `age` ago, at most RETAIN_TRIM_EXTRA more than the call kept (bounded work per
  call; a backlog after a lowered count goes down by that much per ack call, and setRetention trims
  all of it in batches). Jobs older than `age` that no ack has trimmed yet (an idle queue) are not
  shown: get, list and stats read from `now - age` on, and an add of such an id writes the job (the
  kept entry goes). A queue that gets no acks any more is trimmed by the claims: a claim asked to
  (claim.lua ARGV[9], at most once a minute per process and partition, src/store/partition-store.ts)
  trims up to RETAIN_TEND_MAX, and a full batch makes it answer "call again now".
]]
local RETAIN_TRIM_EXTRA = 100
local RETAIN_TEND_MAX = 1000

-- The retention of a `retain` field, or nil when the queue keeps no completed jobs.
local function readRetain(v)
  if not v then return nil end
  local count, age, cap = string.match(v, '^(%d*),(%d*),(%d+)')
  if not cap or (count == '' and age == '') then return nil end
  return { count = tonumber(count), age = tonumber(age), cap = tonumber(cap) }
end

-- The oldest finishedAt a kept job may have to be shown at `now` ('-inf' without an age).
local function retainFrom(retain, now)
  return retain.age and int(now - retain.age) or '-inf'
end

-- The kept form of a result: over the cap, the marker of src/types.ts ResultTooLarge (the worker
-- sends the marker itself; this holds for any sender, e.g. a PullConsumer that did not know the cap).
local function keptResult(result, cap)
  if #result <= cap then return result end
  return '{"resultTooLarge":true,"bytes":' .. #result .. '}'
end

-- Removes kept jobs beyond the retention (or all of them when `retain` is nil), the oldest first,
-- at most `budget`. Returns how many it removed.
local function trimCompleted(retain, now, budget)
  local gone = {}
  if retain == nil then
    gone = rcall('ZRANGE', completedKey, 0, budget - 1)
  else
    if retain.age then
      gone = rcall('ZRANGEBYSCORE', completedKey, '-inf', '(' .. int(now - retain.age), 'LIMIT', 0, budget)
    end
    if retain.count and #gone < budget then
      local excess = math.min(rcall('ZCARD', completedKey) - #gone - retain.count, budget - #gone)
      if excess > 0 then gone = rcall('ZRANGE', completedKey, 0, #gone + excess - 1) end
    end
  end
  if #gone > 0 then
    callMany('ZREM', completedKey, gone)
    callMany('HDEL', resultsKey, gone)
  end
  return #gone
end

--[[
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
local WHEEL_BUCKET_MAX = 1000   -- entries a bucket holds at most: get/cancel/reschedule scan one
local WHEEL_MOVE_MAX = 250      -- entries one claim moves at most (~1 ms of Redis: bounds its latency)
local WHEEL_IDX_MEAN = 40       -- mean entries per index shard: well inside a listpack (128)
local WHEEL_SPLITS_MAX = 32     -- index shards one call splits at most
local WHEEL_SPAN_DIV = 32       -- a bucket spans at most 1/32 of its jobs' distance (wheelSlot)
local WHEEL_COARSE_CELLS = 32   -- coarse cells of a span, taking its jobs past sub 0's (at most W wide)
local WHEEL_CELLS = 1000        -- fine cells of a span, taking a full coarse cell's jobs (at most W wide)
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
local hashedId, hashedValue = nil, nil
local HEX = {}
for c = 0, 9 do HEX[48 + c] = c end
for c = 0, 5 do HEX[97 + c] = 10 + c end
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
local wheelNonEmpty = nil
local function wheelMayHold()
  if wheelNonEmpty == nil then wheelNonEmpty = rcall('EXISTS', wheelKey) == 1 end
  return wheelNonEmpty
end

-- The bucket each slot's and cell's next put goes to, for this call: { name (n), start, len,
-- first }, keyed 'w<slot>' and 'c<cell name without f>:<start>'.
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
  local whole = wheelOpen['w' .. slot]
  if whole == nil then
    local n = int(slot * 100000)
    -- LLEN only a bucket `wheel` has: a new bucket's first touch is its RPUSH (write order, above).
    whole = { name = n, start = slot * w, len = 0, first = true }
    if rcall('ZSCORE', wheelKey, n) then whole.len = rcall('LLEN', wheelBucketKey(n)) end
    wheelOpen['w' .. slot] = whole
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

-- Fails the script, before it writes, unless every key of `keys` is on this node as it is: during
-- a Cluster slot migration a key not moved in yet reads as empty on the importing node, and a
-- moved one fails its first touch on the exporting node (write order, above). A multi-key command
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
-- Idempotent, so that a call stopped midway (a slot migration, write order above) or a copy left by
-- one is never delivered twice: an entry moves only if it is its job's one place, that is the id is
-- not in `jobs` (in due, active or dead: copied out before; never written over) and the index
-- points at this bucket, or at a bucket that lacks the id (left by an add stopped midway). Any
-- other entry is a stale copy and goes with the bucket's trim. The bucket and the index shards are
-- checked to be here before anything is written (wheelHere), so that the writes to them cannot fail.
local function promoteWheel(now)
  local moved = 0
  local minDue = nil
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
    -- Read, check, write the entries' new places, then trim: a stop midway (see above) loses nothing.
    local entries = rcall('LRANGE', bkey, 0, take - 1)
    local ids, shards, here, seenShard = {}, {}, { bkey }, {}
    for i = 1, #entries do
      local e = entries[i]
      local id = string.sub(e, 1, string.find(e, '\n', 1, true) - 1)
      ids[i] = id
      shards[i] = wheelShardKey(id)
      if not seenShard[shards[i]] then
        seenShard[shards[i]] = true
        here[#here + 1] = shards[i]
      end
    end
    wheelHere(here)
    local inJobs = hmgetMany(jobsKey, ids)
    local zargs, hargs = {}, {}
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
          zargs[#zargs + 1] = dueAt
          zargs[#zargs + 1] = id
          hargs[#hargs + 1] = id
          hargs[#hargs + 1] = string.sub(e, nl2 + 1)
          if minDue == nil or dueAt < minDue then minDue = dueAt end
        end
      end
    end
    if #hargs > 0 then
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
  return result
end

-- Read-only views of the wheel (stats, listJobs, dueHistogram). A bucket's entries are due in
-- [start, start + k*W) for some power of two k dividing its slot (wheelSlot), with k*W at most
-- 1/WHEEL_SPAN_DIV of a job's distance, itself at most MAX_DELAY_MS (validate.ts: ten years;
-- doubled here for a client clock ahead of the server's). So a bucket of slot s holds due times
-- before (s + wheelSpanOf(s)) * W: the views read a bucket's entries only where that bound says
-- it may straddle what they look for.
local WHEEL_VIEW_MAX_DISTANCE_MS = 2 * 10 * 365 * 86400000
local wheelKmax = nil

-- The most slots a bucket of `slot` may span.
local function wheelSpanOf(slot)
  if wheelKmax == nil then
    local w = wheelWidth()
    wheelKmax = 1
    while 2 * wheelKmax * w <= WHEEL_VIEW_MAX_DISTANCE_MS / WHEEL_SPAN_DIV do wheelKmax = 2 * wheelKmax end
  end
  local k = 1
  while k < wheelKmax and slot % (2 * k) == 0 do k = 2 * k end
  return k
end

-- The end (exclusive) of the due times a bucket may hold, and whether it is a cell (lib.lua's
-- wheel format: a cell's name begins with its end, after its start; a slot's with the slot
-- number, at most its start, and its end is where its span may reach).
local function wheelBucketEnd(n, start)
  local stop = tonumber(string.sub(n, 1, -8))
  if stop and stop > start then return stop, true end
  local w = wheelWidth()
  return start + wheelSpanOf(start / w) * w, false
end

-- The due time of a bucket entry, and where its record begins.
local function wheelEntryDue(e, start)
  local nl1 = string.find(e, '\n', 1, true)
  local nl2 = string.find(e, '\n', nl1 + 1, true)
  return start + tonumber(string.sub(e, nl1 + 1, nl2 - 1)), nl1, nl2
end

-- How many jobs of the wheel fall due at or before each of `limits` (ascending epoch ms),
-- cumulative. A bucket that surely ends by the first limit at or after its start counts whole
-- (LLEN). A bucket a limit may fall into is read entry by entry (exact) when it is a cell, starts
-- by `exactUntil` or spans at most `scanSpan` slots (nil: any); a wider one counts whole at the
-- first limit after its start, so its jobs may count up to its span early: bucket granularity,
-- only for buckets of jobs that were more than WHEEL_SPAN_DIV * scanSpan widths away when added.
-- Cost: one call per bucket starting by the last limit, plus the entries of the buckets read: per
-- limit, a slot's sub 0, a coarse and a fine cell (a few thousand entries however many jobs the
-- slot holds).
local function wheelDueCounts(limits, scanSpan, exactUntil)
  local counts = {}
  for j = 1, #limits do counts[j] = 0 end
  local w = wheelWidth()
  local buckets = rcall('ZRANGEBYSCORE', wheelKey, '-inf', int(limits[#limits]), 'WITHSCORES')
  local j = 1
  for i = 1, #buckets, 2 do
    local start = tonumber(buckets[i + 1])
    while limits[j] < start do j = j + 1 end -- buckets come in start order, all by the last limit
    local stop, cell = wheelBucketEnd(buckets[i], start)
    local span = (stop - start) / w
    if stop - 1 <= limits[j] or (not cell and scanSpan and span > scanSpan and start > exactUntil) then
      counts[j] = counts[j] + rcall('LLEN', wheelBucketKey(buckets[i]))
    else
      local entries = rcall('LRANGE', wheelBucketKey(buckets[i]), 0, -1)
      for k = 1, #entries do
        local dueAt = wheelEntryDue(entries[k], start)
        local m = j
        while m <= #limits and limits[m] < dueAt do m = m + 1 end
        if m <= #limits then counts[m] = counts[m] + 1 end
      end
    end
  end
  for m = 2, #limits do counts[m] = counts[m] + counts[m - 1] end
  return counts
end

--[[
  Schedules (recurring ticks). `schedules` HASH, one field per schedule key hashing to this
  partition; each tick is an ordinary job with id "<key>@<entry>", where an entry is
  "<tickAt>[~<n>]" (the suffix, chosen by the client, puts the id in the schedule's partition:
  src/store/schedule-record.ts) and the record's 6th header field is the tick time. A record is
    "<gen>,<runs>,<skipped>,<flags>\n<head>\n<ticks>\n<last>\n<hash>,<maxAttempts>,<backoff>,<limit>\n<payload>\n<spec JSON>"
  gen       bumped by every write of the definition or state from a client (compare-and-set)
  runs      ticks created; skipped: ticks dropped by overlap 'skip'; limit: runs allowed ('' any)
  flags     letters: p paused, e ended (no tick after head), s stalled (a client must create the
            next tick: the precomputed list ran out or its next tick had passed), o overlap 'skip'
  head      the entry of the last tick created ('' before the first): never created again
  ticks     the next entries after head, "e1,e2,...", computed by a client (cron and time zones
            live there, src/schedule-time.ts), ending in ",$" (or "$") when no tick follows them
  last      "<tickAt>,<id>" of the last tick whose job started (was claimed), '' before the first
  The chain: when the head tick's job is claimed, the claim script creates the next tick's job
  (the first entry of `ticks`) in the same call, so a crash never loses a tick and any number of
  workers create each tick once. When that entry's time has passed (every process was down, or
  the queue was behind), the claim reports the schedule and the client applies `catchUp`.
]]
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

-- The tick time (digits) of a schedule tick's record, its header's 6th field; nil for another job
-- (a traceparent in that place has a '-' after its first two digits).
local function recordTick(rec)
  return string.match(rec, '^%d+,%d+,%d*,%d*,[^,\n]*,(%d+)[,\n]')
end

-- Whether a job record is a schedule's tick.
local function isTickRecord(rec)
  return recordTick(rec) ~= nil
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
  if slot then
    local moveAt, created = wheelPut(id, dueAt, record, slot, false)
    wheelSplit()
    if created then wakeIfWheelHead(moveAt) end
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
  local record = newRecord(s.maxAttempts, s.backoff .. ',' .. int(tick), s.payload)
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
    if string.sub(rec, 1, 2) ~= '0,' or not rcall('ZSCORE', dueKey, id) then return end
    rcall('ZREM', dueKey, id)
    rcall('HDEL', jobsKey, id)
  else
    local found = wheelFind(id)
    if not found or string.sub(found.record, 1, 2) ~= '0,' then return end
    wheelRemove(id, found, false)
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
