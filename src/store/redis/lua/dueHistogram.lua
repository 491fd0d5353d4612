#!lua flags=no-writes
--[[
  dueHistogram: how many waiting jobs fall due in each time window from now on (a timeline).

  KEYS: the partition keys (includes/keys.lua).
  Reads:     due, counters, meta, wheel, wheel:<n>, group:due
  Writes:    none
  ARGV[2..] bounds  ms, increasing offsets from now
  Returns: { now, ready, count1, ..., countN, countAfter }
    ready = due at or before now; count i = due after now + bound i-1 (0 for the first) and
    at or before now + bound i; countAfter = due after now + the last bound.
    Jobs in the wheel count by their exact due time too (wheelDueCounts: whole buckets by LLEN,
    entry by entry in a bucket a window edge may fall into), `ready` always exactly (as stats),
    the windows except in a bucket starting after now and spanning more than HISTOGRAM_SCAN_SPAN
    widths (jobs that were over 32 * 16 widths, 8.5 h by default, away
    when added): such a bucket that a window edge may fall into counts whole in the window of its
    start, so its jobs may count up to one bucket span (at most 1/32 of their distance when added)
    early. Jobs beyond the last bound count in countAfter by the `wheeled` counter, unread.
  Errors: none.
]]
-- includes: keys, base, wheelViews
-- The widest bucket read entry by entry: bounds the entries read to a few slots per bound.
local HISTOGRAM_SCAN_SPAN = 16
local now = nowMs()
local limits = { now }
for i = 2, #ARGV do limits[#limits + 1] = now + tonumber(ARGV[i]) end
local wheeled = tonumber(rcall('HGET', countersKey, 'wheeled')) or 0
local wheel = {}
if wheeled > 0 then wheel = wheelDueCounts(limits, HISTOGRAM_SCAN_SPAN, now) end
local function wheelBy(j) return wheel[j] or 0 end

-- Grouped waiting jobs are in `group:due` (includes/groups.lua).
local function dueCount(min, max)
  return rcall('ZCOUNT', dueKey, min, max) + rcall('ZCOUNT', groupDueKey, min, max)
end
local out = { now, dueCount('-inf', now) + wheelBy(1) }
for j = 2, #limits do
  out[#out + 1] = dueCount('(' .. int(limits[j - 1]), int(limits[j])) + wheelBy(j) - wheelBy(j - 1)
end
out[#out + 1] = dueCount('(' .. int(limits[#limits]), '+inf') + wheeled - wheelBy(#limits)
return out
