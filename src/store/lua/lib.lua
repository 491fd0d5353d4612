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
    KEYS[7] meta      HASH  `paused` = '1' while paused; `donePeriod` (below); in partition 0 also
                            `partitions`, the queue's partition count
    KEYS[8..10] done:0..2  HASH  id -> token of the claim that completed the job: the jobs
                      completed in one 30 s period, the buckets taking turns (below)
    KEYS[11] leases   HASH  id -> "<token>,<dueAt>", the lease of an active job (below)
    KEYS[12] wheel    ZSET  far-future bucket number -> bucket start (issue 8: time wheel)
  and ARGV[1] is always the partition's wake channel. (claim also gets KEYS[13] and KEYS[14], the
  memo keys of this call and of the caller's previous one.)

  A record is "<attempts>,<token>,<dueAt>,<maxAttempts>,<backoff>\n<payload JSON>". JSON.stringify
  never writes a raw newline, so the first one ends the header. `attempts` counts the deliveries that
  ended (a claim does not touch the record: an active job's current delivery is attempts + 1).
  `token` is always '0' (the lease holds it). `dueAt` is '' while the job waits (the `due` score holds
  it, and 13 bytes a job add up); a dead job's record has it, so it knows when it fell due.

  A lease is "<token>,<dueAt>" in `leases`, one per active job, written by claim (one HSET for the
  batch): the fencing token of the one claim allowed to ack, fail, extend or release the job, and the
  due score the job was claimed at (where reaping and release put it back, and what its handler is
  told). Its deadline is the job's `active` score; the attempt under way is the record's attempts + 1.

  Invariant: a job exists iff `jobs` has its id, and then exactly one of due/active/dead holds it;
  `leases` has an entry iff the job is in `active`.

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
local leasesKey, wheelKey = KEYS[11], KEYS[12]
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

-- The far-future tier (time wheel): moves the buckets that start within the lead time into `due`,
-- in bounded batches. Returns when the claim loop must call again for the next move (server ms), or
-- nil when the wheel is empty. (Stub until the wheel lands.)
local function promoteWheel(now)
  return nil
end
