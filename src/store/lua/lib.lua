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
    KEYS[11] leases   HASH  id -> lease of an active job (issue 8: engine)
    KEYS[12] wheel    ZSET  far-future bucket number -> bucket start (issue 8: time wheel)
  and ARGV[1] is always the partition's wake channel. (claim also gets KEYS[13] and KEYS[14], the
  memo keys of this call and of the caller's previous one.)

  A record is "<attempts>,<token>,<dueAt>,<maxAttempts>,<backoff>\n<payload JSON>". JSON.stringify
  never writes a raw newline, so the first one ends the header. `token` is '0' unless the job is
  active; a non-zero token names the one claim allowed to ack, fail, extend or release the job.
  `dueAt` is '' while the job waits (the `due` score holds it, and 13 bytes a job add up); claim
  copies the score in, so an active or dead job knows when it fell due.

  Invariant: a job exists iff `jobs` has its id, and then exactly one of due/active/dead holds it.
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

-- Integers as plain digits (tostring would switch to exponent notation past 14 digits).
local function int(n)
  return string.format('%.0f', n)
end

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

local function tokenOf(rec)
  return string.match(rec, '^%d+,(%d+),')
end

-- The fencing check of ack, fail and release: the claim `token` still holds the job's lease when the
-- record names that token and the job is active. On success the job leaves `active` (the caller
-- moves it on). Returns the record (nil when the job does not exist) and whether the lease was held.
local function takeLease(id, token)
  local rec = rcall('HGET', jobsKey, id)
  if rec and tokenOf(rec) == token and rcall('ZREM', activeKey, id) == 1 then return rec, true end
  return rec, false
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
  for i = 1, #pairs, 1000 do
    rcall('ZADD', key, unpack(pairs, i, math.min(i + 999, #pairs)))
  end
end

-- Moves the `done` buckets on to the current period: a bucket that a new period reuses is dropped
-- whole, UNLINK freeing a large one in the background. Returns the current period's bucket key, the
-- period, and whether `donePeriod` is set (a queue that never completed a job has none, and this
-- writes nothing for it). One HGET while the period lasts.
local function rotateDone(now)
  local period = math.floor(now / DONE_PERIOD_MS)
  local last = rcall('HGET', metaKey, 'donePeriod')
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
-- TEMP (views helper, not committed): the wheel's helpers until h-wheel is merged.
local wheelTag = string.sub(dueKey, 1, -5)
local wheelW = nil
local function wheelWidth()
  if wheelW == nil then wheelW = tonumber(rcall('HGET', metaKey, 'wheelSlotMs')) or 60000 end
  return wheelW
end
local function wheelBucketKey(n)
  return wheelTag .. ':wheel:' .. n
end

-- Read-only views of the wheel (stats, dueHistogram): how many of its jobs fall due at or before
-- each of `limits` (ascending epoch ms), cumulative. A bucket that ends by the first limit at or
-- after its start counts whole (LLEN); a bucket a limit falls into is read entry by entry, so the
-- counts are exact. Cost: one call per bucket starting at or before the last limit (none while
-- claims move buckets in time and the limits are near), plus the entries of the slots a limit
-- falls into.
local function wheelDueCounts(limits)
  local counts = {}
  for j = 1, #limits do counts[j] = 0 end
  local w = wheelWidth()
  local buckets = rcall('ZRANGEBYSCORE', wheelKey, '-inf', int(limits[#limits]), 'WITHSCORES')
  local j = 1
  for i = 1, #buckets, 2 do
    local start = tonumber(buckets[i + 1])
    while limits[j] < start do j = j + 1 end -- buckets come in start order, all by the last limit
    if start + w - 1 <= limits[j] then
      counts[j] = counts[j] + rcall('LLEN', wheelBucketKey(buckets[i]))
    else
      local entries = rcall('LRANGE', wheelBucketKey(buckets[i]), 0, -1)
      for k = 1, #entries do
        local e = entries[k]
        local dueAt = start + tonumber(string.match(e, '^(%d+)\n', string.find(e, '\n', 1, true) + 1))
        local m = j
        while m <= #limits and limits[m] < dueAt do m = m + 1 end
        if m <= #limits then counts[m] = counts[m] + 1 end
      end
    end
  end
  for m = 2, #limits do counts[m] = counts[m] + counts[m - 1] end
  return counts
end
