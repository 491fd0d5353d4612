--[[
  wheelViews: read-only views of the wheel (stats, listJobs, dueHistogram).
]]
-- includes: keys, base, wheel

-- A bucket's entries are due in [start, start + k*W) for some power of two k dividing its slot
-- (wheelSlot), with k*W at most 1/WHEEL_SPAN_DIV of a job's distance, itself at most MAX_DELAY_MS
-- (src/core/validate.ts: ten years; doubled here for a client clock ahead of the server's). So a
-- bucket of slot s holds due times before (s + wheelSpanOf(s)) * W: the views read a bucket's
-- entries only where that bound says it may straddle what they look for.
local WHEEL_VIEW_MAX_DISTANCE_MS = 2 * 10 * 365 * 86400000
-- per call:
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

-- The end (exclusive) of the due times a bucket may hold, and whether it is a cell (wheel.lua's
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
