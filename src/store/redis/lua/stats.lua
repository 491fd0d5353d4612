#!lua flags=no-writes
--[[
  stats: job counts by state and the running totals, read atomically.

  KEYS: the partition keys (includes/keys.lua); on partition 0 then the limiter's `starts` and `slots`
        (limiter.lua), with ARGV[2] = '1'.
  Reads:     due, active, dead, counters, meta, wheel, wheel:<n>, completed, limiter:starts,
             limiter:slots, group:due
  Writes:    none
  Returns: { now, waiting, ready, active, dead, paused (0|1), limitedAt, completed, counterName1, value1, ... }
    waiting  all of `due` (delayed + ready) and of the wheel (counter `wheeled`);
    ready    due at or before now: in `due`, and in wheel buckets no claim has moved yet (exact:
             see wheelDueCounts; such buckets exist only while no claim runs, since a claim moves
             each one a bucket width before it starts)
    limitedAt when the queue's limit last held work back (partition 0's `meta`, limiter.lua), or
             now when a limit has no room right now (concurrency slots all held, or the rate's
             window full); -1 if never
    completed  kept completed jobs not older than the retention's age (includes/retention.lua); 0
               while the queue keeps none
  Errors: none.
]]
-- includes: keys, base, retention, wheelViews
local now = nowMs()
local wheeled = tonumber(rcall('HGET', countersKey, 'wheeled')) or 0
local wheelReady = wheeled > 0 and wheelDueCounts({ now }, nil, now)[1] or 0
local meta = rcall('HMGET', metaKey, 'paused', 'limitedAt', 'retain', 'concurrency', 'rateMax', 'ratePer')
local retain = readRetain(meta[3])
-- Partition 0 of a limited queue also gets the limiter's keys (ARGV[2] = '1'): a limit with no room
-- left right now holds back whatever is ready, whether or not a worker asked lately.
local limitedAt = tonumber(meta[2]) or -1
if ARGV[2] == '1' then
  local startsKey, slotsKey = KEYS[#KEYS - 1], KEYS[#KEYS]
  local concurrency, rateMax, ratePer = tonumber(meta[4]), tonumber(meta[5]), tonumber(meta[6])
  local full = (concurrency and rcall('ZCOUNT', slotsKey, '(' .. now, '+inf') >= concurrency)
    or (rateMax and rcall('ZCOUNT', startsKey, '(' .. (now - ratePer), '+inf') >= rateMax)
  if full then limitedAt = now end
end
local out = {
  now,
  rcall('ZCARD', dueKey) + rcall('ZCARD', groupDueKey) + wheeled,
  rcall('ZCOUNT', dueKey, '-inf', now) + rcall('ZCOUNT', groupDueKey, '-inf', now) + wheelReady,
  rcall('ZCARD', activeKey),
  rcall('ZCARD', deadKey),
  meta[1] == '1' and 1 or 0,
  limitedAt,
  retain and rcall('ZCOUNT', completedKey, retainFrom(retain, now), '+inf') or 0,
}
local counters = rcall('HGETALL', countersKey)
for i = 1, #counters do out[#out + 1] = counters[i] end
return out
